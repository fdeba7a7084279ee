"""The published layout of a release directory: paths, column schemas, reading and writing.

Every stage that touches files goes through here, so the layout is defined in one place
(``../shared/design/release-layout.md``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.core.errors import InputError, SchemaError
from rcp_data.core.specs import SuiteSpec

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
RELEASES_JSON = "provenance/releases.json"
BUILD_MANIFEST = "provenance/build_manifest.json"
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


def corpus_pattern(spec: SuiteSpec, subset: str) -> str:
    """Path (glob) a card's ``{subset}-corpus`` config points at."""
    group = spec.corpus_group(subset)
    if group is None:
        return subset_file(subset, "corpus")
    return f"corpus/{group}/corpus-*.parquet"


# -- reading -----------------------------------------------------------------------------------
def check_columns(table: pa.Table | pd.DataFrame, kind: str, path: str | Path,
                  *, strict_types: bool = True) -> None:
    """Raise :class:`SchemaError` naming the file and column when ``table`` misses a column."""
    schema = SCHEMAS[kind]
    names = list(table.column_names if isinstance(table, pa.Table) else table.columns)
    optional = OPTIONAL_COLUMNS.get(kind, ())
    for f in schema:
        if f.name not in names:
            if f.name in optional:
                continue
            raise SchemaError(
                f"missing column {f.name!r} (has {', '.join(names)})", path=str(path), field=f.name
            )
        if strict_types and isinstance(table, pa.Table):
            actual = table.schema.field(f.name).type
            if not types_compatible(actual, f.type):
                raise SchemaError(
                    f"column {f.name!r} has type {actual}, expected {f.type}",
                    path=str(path),
                    field=f.name,
                )


def types_compatible(actual: pa.DataType, expected: pa.DataType) -> bool:
    if actual == expected:
        return True
    if pa.types.is_string(expected) and (pa.types.is_large_string(actual)
                                          or pa.types.is_string(actual)):
        return True
    if pa.types.is_list(expected) and (pa.types.is_list(actual) or pa.types.is_large_list(actual)):
        return True
    if pa.types.is_integer(expected) and pa.types.is_integer(actual):
        return True
    return pa.types.is_floating(expected) and (
        pa.types.is_floating(actual) or pa.types.is_null(actual)
    )


def read_table(root: Path, rel: str, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
    """Read ``root/rel`` as a DataFrame, checking the columns of ``kind``."""
    path = Path(root) / rel
    if not path.exists():
        raise InputError(f"missing file (expected the {kind} table)", path=str(path))
    try:
        table = pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read parquet ({exc})", path=str(path)) from exc
    if columns is None:
        check_columns(table, kind, path)
    return table.to_pandas()


@dataclass
class ReleaseDir:
    """A release directory in the published layout."""

    root: Path
    spec: SuiteSpec

    def path(self, rel: str) -> Path:
        return self.root / rel

    def table(self, subset: str, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
        if kind == "corpus":
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
        p = self.root / BUILD_MANIFEST
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else {}


def detect_suite(root: Path) -> str | None:
    """The suite a release directory belongs to: its build manifest, else its card's tags."""
    manifest = Path(root) / BUILD_MANIFEST
    if manifest.exists():
        with contextlib.suppress(json.JSONDecodeError):
            suite = json.loads(manifest.read_text(encoding="utf-8")).get("suite")
            if suite:
                return suite
    card = Path(root) / CARD_FILE
    if card.exists():
        from rcp_data.core.specs import SUITE_ALIASES, known_suites

        text = card.read_text(encoding="utf-8")
        if text.startswith("---"):
            import yaml

            with contextlib.suppress(yaml.YAMLError, IndexError):
                front = yaml.safe_load(text.split("---", 2)[1]) or {}
                tags = [str(t) for t in front.get("tags", [])]
                for t in tags:
                    name = SUITE_ALIASES.get(t, t)
                    if name in known_suites():
                        return name
    return None


# -- the card's configs ----------------------------------------------------------------------
def card_configs(card_text: str, *, source: str = CARD_FILE) -> list[dict]:
    """The ``configs:`` list of a card's YAML front matter (empty without front matter)."""
    import yaml

    if not card_text.startswith("---"):
        return []
    try:
        front = yaml.safe_load(card_text.split("---", 2)[1]) or {}
    except (yaml.YAMLError, IndexError) as exc:
        raise InputError(f"front matter is not valid YAML ({exc})", path=source) from exc
    configs = front.get("configs") or []
    if not isinstance(configs, list):
        raise InputError("'configs' must be a list", path=source, field="configs")
    return configs


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
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, schema=schema, preserve_index=False)
    elif schema is not None:
        table = table.select(schema.names).cast(schema)
    table = table.replace_schema_metadata(None)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", row_group_size=row_group_size)


def write_json(data: dict | list, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


@contextlib.contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Yield a temporary directory beside ``target``; move it into place only on success.

    On any error the temporary directory is removed and ``target`` is left as it was.
    """
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if target.exists():
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    log.info("wrote %s", target)
