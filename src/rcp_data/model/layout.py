"""The published layout of a release directory: paths, file names and the table kinds.

One home for every path and schema of a release (``docs/concepts/release-layout.md``): the
writers (build, recalibration, the demo) and the readers (replay, checks, cards) take them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.outputs import OutputKind
from rcp_data.core.specs import SuiteSpec

# Column schemas are in rcp_data.model.schemas (this module loads no data library).

SUBSET_KINDS = ("corpus", "queries", "qrels", "gains", "top_ranked", "excluded")
# ``{subset}/gains.parquet`` (config ``{subset}-gains``): query-id, corpus-id and gain of every
# qrels row, in qrels order (a null gain reads 0.0), for mteb's float-gain loader; derived from
# the qrels (:func:`rcp_data.model.tables.gains_table`), never edited apart from them.
GAINS = "gains"
PROVENANCE_KINDS = ("pool", "first_stage", "runs", "judge_criteria")
# Provenance a release carries when its judge run gave it (this project's addition, issue 17):
# the Stage A answers and the Bradley-Terry scores fitted from them, so a refit needs nothing
# outside the release. Not required of a release; checked when present.
OPTIONAL_PROVENANCE_KINDS = ("judge_tournament", "judge_bt")
PROVENANCE_CONFIG = {
    "pool": "provenance-pool",
    "first_stage": "provenance-first-stage",
    "runs": "provenance-runs",
    "judge_criteria": "provenance-judge-criteria",
    "judge_tournament": "provenance-judge-tournament",
    "judge_bt": "provenance-judge-bt",
}
TOURNAMENT_PHASES = ("random", "stratified", "adaptive", "other")

# Paths of the top-level release files.
BUILD_MANIFEST = "provenance/build_manifest.json"
#: The spec a release of a suite outside the package was built with (a copy, listed and hashed
#: in the manifest), so that anyone who downloads it can check it with nothing else.
SPEC_COPY = "provenance/suite_spec.toml"
#: The schema of ``provenance/build_manifest.json`` (its one name).
MANIFEST_SCHEMA = "rcp-data.build-manifest/1"
TASK_FILE = "rcp_ndcg_tasks.py"
CARD_FILE = "README.md"
RELEASES_JSON = "provenance/releases.json"   # a release directory's history
#: Files a card regeneration rewrites (a commit after the release may change only these).
REGENERATED_FILES = (CARD_FILE, TASK_FILE, RELEASES_JSON)
#: Files the content manifest leaves out: itself and the regenerated files.
UNLISTED_FILES = frozenset({BUILD_MANIFEST, *REGENERATED_FILES})
#: What ``--force`` may replace: a folder holding a build manifest of this schema.
RELEASE = OutputKind("release folder", BUILD_MANIFEST, MANIFEST_SCHEMA)



# -- paths -------------------------------------------------------------------------------------
def subset_file(subset: str, kind: str) -> str:
    """Relative path of a per-subset table (``queries``, ``qrels``, ``top_ranked``, ``excluded``)."""
    return f"{subset}/{kind}.parquet"


def provenance_file(kind: str, split: str) -> str:
    return f"provenance/{kind}/{split}.parquet"


def shard_name(i: int, n: int) -> str:
    return f"corpus-{i:05d}-of-{n:05d}.parquet"


def corpus_files(root: Path, spec: SuiteSpec, subset: str) -> list[str]:
    """Relative paths of the corpus files a subset reads (several shards for a shared corpus)."""
    group = spec.corpus_group(subset)
    if group is None:
        return [subset_file(subset, "corpus")]
    folder = root / "corpus" / group
    files = sorted(p.name for p in folder.glob("corpus-*.parquet"))
    if not files:
        raise InputError(f"no corpus shards for subset {subset!r}", path=str(folder))
    return [f"corpus/{group}/{f}" for f in files]


@dataclass(frozen=True)
class CorpusFile:
    """One corpus file of a release: its path, rows and columns."""

    path: str
    rows: int
    columns: tuple[str, ...]


def corpus_pattern(spec: SuiteSpec, subset: str) -> str:
    """Path (glob) a card's ``{subset}-corpus`` config points at."""
    group = spec.corpus_group(subset)
    if group is None:
        return subset_file(subset, "corpus")
    return f"corpus/{group}/corpus-*.parquet"


# -- what each reader of a published release downloads ------------------------------------------
# snapshot_download patterns (fnmatch: ``*`` also crosses ``/``).
ITEM_PARAMS_PATTERN = "provenance/item_params.*.json"
CORPUS_PATTERNS = (subset_file("*", "corpus"), "corpus/*")
REPLAY_PATTERNS = (
    *(subset_file("*", kind) for kind in ("qrels", "top_ranked", "excluded")),
    provenance_file("runs", "*"), RELEASES_JSON, BUILD_MANIFEST, ITEM_PARAMS_PATTERN, CARD_FILE,
    provenance_file("judge_criteria", "*"), provenance_file("judge_bt", "*"),
)
"""What a replay reads: qrels, top_ranked, excluded, provenance-runs, the files naming the
suite and its releases, and the verdicts and Bradley-Terry scores of Count-nDCG and
Raw-BT-nDCG. Never the corpus."""


