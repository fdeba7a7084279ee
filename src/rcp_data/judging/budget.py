"""Text budgets: every window fits the judge's context.

Tokens are counted with the judge's tokenizer (``tokenizers`` on its ``tokenizer.json``, a path
or a Hugging Face repo id found in the local cache); without one a chars-per-token ratio is the
fallback and says so. A window's budget is the context minus the prompt without passages, the
output cap and a reserve, split equally among its documents; a longer document is cut at a
token boundary. Every cut is counted (the census).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from rcp_data.core.errors import InputError, UsageError

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4.0
RESERVE_TOKENS = 64
MIN_DOC_TOKENS = 16


class TokenCounter:
    """Counts and cuts text in the judge's tokens (or approximates them)."""

    def __init__(self, tokenizer: str | Path | None = None) -> None:
        self._tok = None
        self.source = f"approximate ({CHARS_PER_TOKEN:g} characters per token)"
        if tokenizer:
            self._tok, self.source = _load(str(tokenizer))
        else:
            log.info("no tokenizer given: token counts are approximate (%g characters per "
                     "token)", CHARS_PER_TOKEN)

    @property
    def exact(self) -> bool:
        return self._tok is not None

    def count(self, text: str) -> int:
        if self._tok is None:
            return int(-(-len(text) // CHARS_PER_TOKEN))
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def cut(self, text: str, limit: int) -> tuple[str, int]:
        """``text`` cut to at most ``limit`` tokens at a token boundary, and the tokens cut."""
        if self._tok is None:
            n = self.count(text)
            if n <= limit:
                return text, 0
            return text[:int(limit * CHARS_PER_TOKEN)], n - limit
        enc = self._tok.encode(text, add_special_tokens=False)
        if len(enc.ids) <= limit:
            return text, 0
        end = enc.offsets[limit - 1][1] if limit > 0 else 0
        return text[:end], len(enc.ids) - limit


def _load(name: str):
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - tokenizers comes with the judge extra
        raise UsageError("--tokenizer needs the 'tokenizers' package: pip install "
                         "'rcp-data[judge]'") from exc
    path = Path(name)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.exists():
        try:
            from huggingface_hub import try_to_load_from_cache
            cached = try_to_load_from_cache(name, "tokenizer.json")
        except Exception:  # noqa: BLE001 - a bad repo id is just "not in the cache"
            cached = None
        if not isinstance(cached, str):
            raise InputError("no tokenizer.json at this path or in the Hugging Face cache",
                             path=name)
        path = Path(cached)
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the library raises a bare Exception
        raise InputError(f"cannot read the tokenizer ({exc})", path=str(path)) from exc
    # a tokenizer.json may carry a model's truncation or padding: counts need neither
    tok.no_truncation()
    tok.no_padding()
    return tok, f"tokenizer {path}"


@dataclass
class Census:
    """Documents shown and cut, per stage."""

    shown: dict[str, int] = field(default_factory=lambda: {"A": 0, "B": 0})
    cut: dict[str, int] = field(default_factory=lambda: {"A": 0, "B": 0})
    tokens_cut: dict[str, int] = field(default_factory=lambda: {"A": 0, "B": 0})

    def add(self, stage: str, shown: int, cut: int, tokens: int) -> None:
        self.shown[stage] += shown
        self.cut[stage] += cut
        self.tokens_cut[stage] += tokens

    def to_dict(self) -> dict:
        return {s: {"documents_shown": self.shown[s], "documents_cut": self.cut[s],
                    "tokens_cut": self.tokens_cut[s]} for s in ("A", "B")}


def per_document_budget(counter: TokenCounter, empty_prompt: str, w: int, *,
                        context: int, max_output: int) -> int:
    """Tokens each of a window's ``w`` documents may use; an error when under the minimum."""
    fixed = counter.count(empty_prompt) + max_output + RESERVE_TOKENS + 8 * w
    per_doc = (context - fixed) // max(w, 1)
    if per_doc < MIN_DOC_TOKENS:
        raise UsageError(f"a context of {context} tokens is too small for one document: the "
                         f"prompt takes {fixed - max_output - RESERVE_TOKENS} tokens, the output "
                         f"cap {max_output} and the reserve {RESERVE_TOKENS}, leaving {per_doc} "
                         f"per document of a window of {w} (at least {MIN_DOC_TOKENS} needed)")
    return per_doc


def min_output_tokens(counter: TokenCounter, longest_answer: str) -> int:
    """Output tokens that hold ``longest_answer`` surely: its count with the judge's
    tokenizer, else one token per two characters (JSON's digits and quotes are short tokens)."""
    if counter.exact:
        return counter.count(longest_answer) + 8
    return -(-len(longest_answer) // 2)
