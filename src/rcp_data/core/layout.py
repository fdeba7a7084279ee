"""The published layout of a release directory: paths, column schemas, reading and writing.

Every stage that touches files goes through here, so the layout is defined in one place
(``../shared/design/release-layout.md``).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.core.errors import InputError
from rcp_data.core.history import RELEASES_JSON
from rcp_data.core.io import check_schema, read_json, read_parquet
from rcp_data.core.specs import SuiteSpec, known_suites, load_spec, suite_key

if TYPE_CHECKING:  # pandas is imported where a table becomes a DataFrame
    import pandas as pd

log = logging.getLogger(__name__)

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
BUILD_MANIFEST = "provenance/build_manifest.json"
MANIFEST_SCHEMA = "rcp-data.build-manifest/1"   # the build manifest's "schema"
TASK_FILE = "rcp_ndcg_tasks.py"
CARD_FILE = "README.md"


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


def corpus_file_facts(root: Path, spec: SuiteSpec, subset: str) -> list[CorpusFile]:
    """The corpus files of a subset: from their parquet footers when the files are here, else
    from the build manifest's ``corpus_files`` (a snapshot downloaded without its corpus)."""
    root = Path(root)
    group = spec.corpus_group(subset)
    single = subset_file(subset, "corpus")
    here = (root / single).exists() if group is None else \
        any((root / "corpus" / group).glob("corpus-*.parquet"))
    if here:
        return [CorpusFile(rel, meta.num_rows, tuple(meta.schema.to_arrow_schema().names))
                for rel in corpus_files(root, spec, subset)
                for meta in [pq.read_metadata(root / rel)]]
    recorded = read_manifest(root).get("corpus_files") or {}
    mine = sorted(p for p in recorded if (p == single if group is None
                                          else p.startswith(f"corpus/{group}/corpus-")))
    if not mine:
        where = single if group is None else f"corpus/{group}/"
        raise InputError(f"no corpus for subset {subset!r}: neither {where} nor a record of it "
                         f"in {BUILD_MANIFEST}", path=str(root / where))
    return [CorpusFile(p, int(recorded[p]["rows"]), tuple(recorded[p]["columns"])) for p in mine]


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


# -- reading -----------------------------------------------------------------------------------
def check_columns(schema: pa.Schema, kind: str, path: str | Path) -> None:
    """Raise :class:`SchemaError` naming the file and column when ``schema`` lacks a column of
    ``kind`` or has one of the wrong type."""
    check_schema(schema, SCHEMAS[kind], path, OPTIONAL_COLUMNS.get(kind, ()))


def read_release_table(path: str | Path, kind: str, columns: list[str] | None = None, *,
                       read_dictionary: tuple[str, ...] | list[str] = ()) -> pa.Table:
    """Read a release table of ``kind`` (arrow), its columns checked against the layout."""
    return read_parquet(path, columns, schema=SCHEMAS[kind],
                        optional=OPTIONAL_COLUMNS.get(kind, ()), what=f"the {kind} table",
                        read_dictionary=read_dictionary)


def read_table(root: Path, rel: str, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
    """Read ``root/rel`` as a DataFrame, checking the columns of ``kind``."""
    return read_release_table(Path(root) / rel, kind, columns).to_pandas()


@dataclass
class ReleaseDir:
    """A release directory in the published layout."""

    root: Path
    spec: SuiteSpec

    def path(self, rel: str) -> Path:
        return self.root / rel

    def table(self, subset: str, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
        if kind == "corpus":
            import pandas as pd

            frames = [read_table(self.root, f, "corpus", columns)
                      for f in corpus_files(self.root, self.spec, subset)]
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        return read_table(self.root, subset_file(subset, kind), kind, columns)

    def has(self, subset: str, kind: str) -> bool:
        return (self.root / subset_file(subset, kind)).exists()

    def provenance(self, kind: str, split: str, columns: list[str] | None = None) -> pd.DataFrame:
        return read_table(self.root, provenance_file(kind, split), kind, columns)

    def has_provenance(self, kind: str, split: str) -> bool:
        return (self.root / provenance_file(kind, split)).exists()

    def manifest(self) -> dict:
        return read_manifest(self.root)


def read_manifest(root: str | Path) -> dict:
    """The build manifest of a release directory (empty when there is none)."""
    path = Path(root) / BUILD_MANIFEST
    if not path.exists():
        return {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("the build manifest must be a JSON object", path=str(path))
    return data


def release_is_synthetic(root: str | Path, *, synthetic_suite: bool = False) -> bool:
    """Whether a release directory holds generated data: a synthetic suite, its build manifest's
    ``"synthetic": true``, or its releases.json marking the release it holds synthetic."""
    if synthetic_suite:
        return True
    with contextlib.suppress(InputError):
        if read_manifest(root).get("synthetic") is True:
            return True
    path = Path(root) / RELEASES_JSON
    if path.exists():
        with contextlib.suppress(InputError, AttributeError):
            releases = read_json(path).get("releases") or []
            latest = releases[-1] if releases else {}
            return isinstance(latest, dict) and latest.get("synthetic") is True
    return False


# -- the card's front matter -----------------------------------------------------------------
def card_front_matter(card_text: str, *, source: str = CARD_FILE) -> dict:
    """The YAML front matter of a card (empty without one); invalid YAML is an InputError."""
    import yaml

    if not card_text.startswith("---"):
        return {}
    try:
        # libyaml's safe loader when PyYAML has it (the pure-Python one takes 0.2 s on a
        # card of 200 configs)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        front = yaml.load(card_text.split("---", 2)[1], Loader=loader) or {}  # noqa: S506
    except (yaml.YAMLError, IndexError) as exc:
        raise InputError(f"front matter is not valid YAML ({exc})", path=source) from exc
    if not isinstance(front, dict):
        raise InputError("front matter is not a mapping", path=source)
    return front


def card_configs(card_text: str, *, source: str = CARD_FILE) -> list[dict]:
    """The ``configs:`` list of a card's YAML front matter (empty without front matter)."""
    configs = card_front_matter(card_text, source=source).get("configs") or []
    if not isinstance(configs, list):
        raise InputError("'configs' must be a list", path=source, field="configs")
    return configs



# -- which suite a release belongs to --------------------------------------------------------
def card_suite(card_text: str) -> str | None:
    """The suite a card's tags name (any spelling of a known suite), else None."""
    try:
        tags = card_front_matter(card_text).get("tags") or []
    except InputError:
        return None
    for tag in tags if isinstance(tags, list) else []:
        name = suite_key(str(tag))
        if name in known_suites():
            return name
    return None


def detect_suite(root: str | Path, *, repo: str | None = None) -> str | None:
    """The suite of a release directory: its build manifest's ``suite``, else the suite its
    card's tags name, else (given the Hub ``repo`` it came from) the suite published there."""
    root = Path(root)
    with contextlib.suppress(InputError):
        suite = read_manifest(root).get("suite")
        if suite:
            return suite_key(str(suite))
    card = root / CARD_FILE
    if card.exists():
        suite = card_suite(card.read_bytes().decode("utf-8", errors="replace"))
        if suite:
            return suite
    if repo:
        return next((n for n in known_suites() if load_spec(n).repo == repo), None)
    return None


def release_spec(root: str | Path, suite: str | None = None, *, repo: str | None = None,
                 hint: str = "") -> SuiteSpec:
    """The spec of ``suite`` when given, else of the suite the release names
    (:func:`detect_suite`); a release that names none is an :class:`InputError` (``hint``
    ends its message, e.g. which option names the suite)."""
    name = suite or detect_suite(root, repo=repo)
    if not name:
        raise InputError("cannot tell the suite of this release (no build manifest 'suite' and "
                         f"no suite tag in the card){hint}", path=str(root))
    return load_spec(name)

def config_data_files(config: dict) -> list[tuple[str, str]]:
    """``(split, path pattern)`` of every data file a card config declares."""
    files = config.get("data_files") or []
    if isinstance(files, str | dict):
        files = [files]
    out = []
    for entry in files:
        if isinstance(entry, str):
            out.append(("", entry))
        elif isinstance(entry, dict):
            paths = entry.get("path")
            for p in paths if isinstance(paths, list) else [paths]:
                out.append((str(entry.get("split", "")), str(p)))
    return out


# -- writing -----------------------------------------------------------------------------------
def write_parquet(table: pa.Table | pd.DataFrame, path: Path, schema: pa.Schema | None = None,
                  *, row_group_size: int | None = None) -> None:
    """Write a table deterministically (same input, same bytes)."""
    if not isinstance(table, pa.Table):  # a DataFrame
        table = pa.Table.from_pandas(table, schema=schema, preserve_index=False)
    elif schema is not None:
        table = table.select(schema.names).cast(schema)
    table = table.replace_schema_metadata(None)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", row_group_size=row_group_size)

