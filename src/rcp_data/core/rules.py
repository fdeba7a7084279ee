"""The names a command line chooses between before any spec is read: tie rules, table views
and the convention for queries without a positive label (re-exported by
:mod:`rcp_data.core.specs`; here so that a command's parser imports no spec machinery)."""

from __future__ import annotations

# Tie rules for equal reranker scores (paper App. B.1), their letters and what they do.
TIE_RULES = ("doc-id", "group-mean", "pool-order")
RULE_LETTERS = {"doc-id": "a", "group-mean": "b", "pool-order": "c"}
RULE_NAMES = {
    "doc-id": "document-id tie-break",
    "group-mean": "group-mean gain for ties",
    "pool-order": "pool order for ties",
}
# The tie rules whose tables a card prints (and ``verify`` replays against the card).
SHOWN_TIE_RULES = ("doc-id", "group-mean")
VIEWS = ("subsets", "native", "languages")
# what qrel-nDCG does with a query without a positive label: leave it out of the means (the
# paper's, the default) or count it (mteb's: pytrec_eval scores it 0 and mteb averages it in)
WITHOUT_POSITIVES = ("skip", "zero")
DEFAULT_WITHOUT_POSITIVES = "skip"

__all__ = ["DEFAULT_WITHOUT_POSITIVES", "RULE_LETTERS", "RULE_NAMES", "SHOWN_TIE_RULES",
           "TIE_RULES", "VIEWS", "WITHOUT_POSITIVES"]
