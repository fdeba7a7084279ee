"""The published layout of a release directory: paths, column schemas, the table kinds.

One home for every path and schema of a release (``../shared/design/release-layout.md``): the
writers (build, recalibration, the demo) and the readers (replay, checks, cards) take them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.core.errors import InputError
from rcp_data.core.outputs import OutputKind
from rcp_data.core.specs import SuiteSpec

STR = pa.string()
LIST_STR = pa.list_(pa.string())

SUBSET_KINDS = ("corpus", "queries", "qrels", "top_ranked", "excluded")
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

SCHEMAS: dict[str, pa.Schema] = {
    "corpus": pa.schema([("id", STR), ("title", STR), ("text", STR)]),
    "queries": pa.schema([("id", STR), ("text", STR)]),
    "qrels": pa.schema(
        [
            ("query-id", STR),
            ("corpus-id", STR),
            ("score", pa.int64()),
            ("gain", pa.float64()),
            ("theta", pa.float64()),
        ]
    ),
    "top_ranked": pa.schema([("query-id", STR), ("corpus-ids", LIST_STR)]),
    "excluded": pa.schema([("query-id", STR), ("excluded-corpus-ids", LIST_STR)]),
    "pool": pa.schema(
        [
            ("query-id", STR),
            ("corpus-id", STR),
            ("pool_rank", pa.int64()),
            ("rrf_score", pa.float64()),
            ("gt_injected", pa.bool_()),
            ("excluded", pa.bool_()),
            ("judged", pa.bool_()),
        ]
    ),
    "first_stage": pa.schema(
        [
            ("retriever", STR),
            ("query-id", STR),
            ("corpus-id", STR),
            ("rank", pa.int64()),
            ("score", pa.float64()),
        ]
    ),
    "runs": pa.schema(
        [
            ("model", STR),
            ("is_judge", pa.bool_()),
            ("query-id", STR),
            ("corpus-id", STR),
            ("score", pa.float64()),
            ("rank_by_score", pa.int64()),
            ("stored_position", pa.int64()),
        ]
    ),
    # C1..Cn int8 columns are added per release (any number of criteria).
    "judge_criteria": pa.schema(
        [("query-id", STR), ("call_index", pa.int64()), ("corpus-id", STR), ("finish_reason", STR)]
    ),
    # Stage A: one row per document shown in a window (one window = one call_index per query)
    "judge_tournament": pa.schema(
        [
            ("query-id", STR),
            ("call_index", pa.int64()),
            ("phase", STR),  # random | stratified | adaptive | other
            ("position", pa.int64()),  # 0-based place as shown
            ("corpus-id", STR),
            ("judge_rank", pa.int64()),  # 1-based place in the answer, null if absent
            ("score", pa.float64()),  # the judge's score in [-5, 5], null if absent
            ("finish_reason", STR),
        ]
    ),
    # Stage A Bradley-Terry scores, centred per query (0: no observation under the rule)
    "judge_bt": pa.schema([("query-id", STR), ("corpus-id", STR), ("theta_bt", pa.float64())]),
}

# Columns a published release may lack (the published repos differ; the verifier reports them).
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "pool": ("excluded", "judged"),
    "runs": ("is_judge",),
    "queries": ("instruction",),
    "corpus": ("title",),
}

# Paths of the top-level release files.
# Paths of the top-level release files.
BUILD_MANIFEST = "provenance/build_manifest.json"
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



def criteria_columns(columns: list[str]) -> list[str]:
    """The C1..Cn columns of a verdict table, in criterion order."""
    crit = [c for c in columns if c.startswith("C") and c[1:].isdigit()]
    return sorted(crit, key=lambda c: int(c[1:]))


def judge_criteria_schema(n_criteria: int) -> pa.Schema:
    base = SCHEMAS["judge_criteria"]
    fields = [base.field("query-id"), base.field("call_index"), base.field("corpus-id")]
    fields += [pa.field(f"C{i + 1}", pa.int8()) for i in range(n_criteria)]
    fields.append(base.field("finish_reason"))
    return pa.schema(fields)


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


def corpus_record(root: Path) -> dict[str, dict]:
    """``{path: {"rows", "columns"}}`` of every corpus file in a release directory (the build
    manifest's ``corpus_files``: what a card states about a corpus it has not downloaded)."""
    root = Path(root)
    paths = sorted({*root.glob(subset_file("*", "corpus")), *root.glob("corpus/*/corpus-*.parquet")})
    out = {}
    for p in paths:
        meta = pq.read_metadata(p)
        out[p.relative_to(root).as_posix()] = {"rows": meta.num_rows,
                                               "columns": list(meta.schema.to_arrow_schema().names)}
    return out


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
)
"""What a replay reads: qrels, top_ranked, excluded, provenance-runs, and the files naming the
suite and its releases. Never the corpus."""


