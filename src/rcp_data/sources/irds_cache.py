"""Place files where ir_datasets looks for its downloads, so its datasets load offline.

ir_datasets keeps each download at ``<home>/<namespace>/<cache_path>``, ``cache_path`` taken from
its ``etc/downloads.json``; a file already there is used as is, without a checksum check. The
home is the ``IR_DATASETS_HOME`` seen when ir_datasets was first imported (it fixes the paths
then), so :func:`irds_home` asks ir_datasets itself rather than the environment.

Generic helpers (:func:`cache_path`, :func:`place_file`, :func:`place_parquet`) serve any
namespace; :func:`stage_nanobeir` and :func:`stage_bright` lay out one dataset's files.
Placing a corpus file removes the docstore ir_datasets built from an earlier file there.
"""

from __future__ import annotations

import ast
import gzip
import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.io import atomic_path, atomic_write_bytes

log = logging.getLogger(__name__)

NANO_BEIR = "nano-beir"
BRIGHT = "bright"
# the examples' fields that hold lists of document ids
BRIGHT_ID_LISTS = ("gold_ids", "gold_ids_long", "excluded_ids")


def irds_home() -> Path:
    """The home ir_datasets resolves its cache paths against (fixed at its first import)."""
    import ir_datasets

    # any dataset whose handler exposes its cache path publicly will do: <home>/bright/<file>
    try:
        probe = Path(ir_datasets.load("bright/pony").docs_path(force=False))
    except KeyError:  # ir_datasets < 0.6 has no BRIGHT: fall back to the current environment
        return Path(ir_datasets.util.home_path())
    return probe.parents[1]


def download_entry(namespace: str, key: str) -> dict:
    """The ``downloads.json`` entry of ``key`` (e.g. ``arguana/docs``) in ``namespace``."""
    import ir_datasets

    contents = ir_datasets.util.DownloadConfig.contents()
    try:
        return dict(contents[namespace][key])
    except KeyError as exc:
        raise UsageError(f"ir_datasets knows no download {namespace}/{key}") from exc


def cache_path(namespace: str, key: str) -> Path:
    """Where ir_datasets reads download ``key`` of ``namespace`` from."""
    entry = download_entry(namespace, key)
    if "cache_path" not in entry:
        raise UsageError(f"ir_datasets download {namespace}/{key} has no cache path")
    return irds_home() / namespace / entry["cache_path"]


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def place_file(namespace: str, key: str, source: str | Path | bytes, *,
               stale: Iterable[Path] = ()) -> Path:
    """Copy a file (or write bytes) to the cache path of ``namespace/key``, atomically.

    ``stale``: paths derived from an earlier file there (docstores), removed first.
    """
    target = cache_path(namespace, key)
    target.parent.mkdir(parents=True, exist_ok=True)
    for path in stale:
        _remove(Path(path))
    return place_at(source, target)


def place_at(source: str | Path | bytes, target: Path) -> Path:
    """Copy a file (or bytes) to ``target`` atomically: a temporary file, then a rename."""
    if isinstance(source, bytes):
        atomic_write_bytes(target, source)
    else:
        with atomic_path(target) as tmp:
            shutil.copyfile(source, tmp)
    log.info("placed %s", target)
    return target


def place_parquet(namespace: str, key: str, table: pa.Table | pd.DataFrame, *,
                  stale: Iterable[Path] = ()) -> Path:
    """Write a table as parquet at the cache path of ``namespace/key``, atomically."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    target = cache_path(namespace, key)
    for path in stale:
        _remove(Path(path))
    with atomic_path(target, suffix=".parquet") as tmp:
        pq.write_table(table, tmp)
    log.info("placed %s/%s at %s (%d rows)", namespace, key, target, table.num_rows)
    return target


# -- NanoBEIR -------------------------------------------------------------------------------
def nanobeir_docstore(dataset: str) -> Path:
    """The docstore ir_datasets builds from a nano-beir corpus (under the current home)."""
    import ir_datasets

    return ir_datasets.util.home_path() / NANO_BEIR / dataset / "docs.pklz4"


def stage_nanobeir(dataset: str, *, corpus: pd.DataFrame, queries: pd.DataFrame,
                   qrels: pd.DataFrame) -> dict[str, Path]:
    """Write one nano-beir dataset (``arguana``, ...) in the layout ir_datasets downloads.

    Tables as upstream (zeta-alpha-ai/Nano*): corpus and queries ``_id, text``, qrels
    ``query-id, corpus-id`` (an optional ``score`` column is kept; ir_datasets ignores it).
    """
    for name, frame, cols in (("corpus", corpus, ["_id", "text"]),
                              ("queries", queries, ["_id", "text"]),
                              ("qrels", qrels, ["query-id", "corpus-id"])):
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise UsageError(f"nano-beir {dataset} {name} lacks columns {missing}")
    return {
        "docs": place_parquet(NANO_BEIR, f"{dataset}/docs", corpus,
                             stale=[nanobeir_docstore(dataset)]),
        "queries": place_parquet(NANO_BEIR, f"{dataset}/queries", queries),
        "qrels": place_parquet(NANO_BEIR, f"{dataset}/qrels", qrels),
    }


# -- BRIGHT ---------------------------------------------------------------------------------
def reasoning_sources() -> list[str]:
    """The model-reasoning query files ir_datasets reads beside each BRIGHT task's examples."""
    from ir_datasets.datasets import bright

    return list(bright.REASONING_FIELDS)


def parse_id_list(value, *, path: str = "", row: int | None = None, field: str = "") -> list[str]:
    """An id list as the examples hold it: a list, or the string repr of a list."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("["):
            return [text]
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError) as exc:
            raise InputError(f"not a list of ids: {text[:80]!r}", path=path, row=row,
                             field=field) from exc
    if not isinstance(value, list | tuple):
        raise InputError(f"not a list of ids: {value!r}", path=path, row=row, field=field)
    return [str(v) for v in value]


def read_examples_jsonl(path: str | Path) -> list[dict]:
    """BRIGHT examples mirrored as JSON lines (``examples.bright-<task>.jsonl.gz``), id lists
    normalised to lists."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not JSON ({exc.msg})", path=str(path), row=n) from exc
            for field in BRIGHT_ID_LISTS:
                if field in rec:
                    rec[field] = parse_id_list(rec[field], path=str(path), row=n, field=field)
            records.append(rec)
    return records


def bright_docs_path(task: str) -> Path:
    return cache_path(BRIGHT, f"{task}/docs")


def stage_bright(task: str, *, examples: list[dict] | pa.Table | str | Path,
                 docs: pd.DataFrame | None = None, reasoning: bool = True) -> dict[str, Path]:
    """Write one BRIGHT task (``earth-science``, ...) in the layout ir_datasets downloads.

    - ``examples``: records with ``id, query, reasoning, gold_answer, gold_ids, gold_ids_long,
      excluded_ids`` (or a JSON-lines mirror of them), written as ``<task>.queries.parquet``.
    - ``docs``: ``id, content`` as ``<task>.docs.parquet`` (earth-science's file is literally
      named ``earth'science.docs.parquet``); its old docstore is removed.
    - ``reasoning``: ir_datasets' ``queries_iter`` also opens five model-reasoning files; when
      none is cached, an EMPTY placeholder (column ``id``, no rows) is written so that it runs
      offline. The readers here use no reasoning text.
    """
    if isinstance(examples, str | Path):
        examples = read_examples_jsonl(examples)
    table = examples if isinstance(examples, pa.Table) else pa.Table.from_pylist(examples)
    paths = {"queries": place_parquet(BRIGHT, f"{task}/queries", table)}
    if docs is not None:
        missing = [c for c in ("id", "content") if c not in docs.columns]
        if missing:
            raise UsageError(f"bright {task} docs lack columns {missing}")
        target = bright_docs_path(task)
        paths["docs"] = place_parquet(BRIGHT, f"{task}/docs", docs,
                                      stale=[Path(f"{target}.pklz4")])
    if reasoning:
        for source in reasoning_sources():
            key = f"{task}/{source}/queries"
            path = cache_path(BRIGHT, key)
            if not path.exists():
                place_parquet(BRIGHT, key, pa.table({"id": pa.array([], pa.string())}))
            paths[source] = path
    return paths


def stage_bright_mirror(examples_dir: str | Path, docs: Mapping[str, pd.DataFrame] | None = None,
                        tasks: Iterable[str] | None = None) -> dict[str, dict[str, Path]]:
    """Stage every ``examples.bright-<task>.jsonl.gz`` of a folder (and the given corpora)."""
    examples_dir = Path(examples_dir)
    found = sorted(examples_dir.glob("examples.bright-*.jsonl.gz"))
    if not found:
        raise InputError("no examples.bright-<task>.jsonl.gz files", path=str(examples_dir))
    wanted = set(tasks) if tasks is not None else None
    staged = {}
    for path in found:
        task = path.name[len("examples.bright-"):-len(".jsonl.gz")]
        if wanted is not None and task not in wanted:
            continue
        staged[task] = stage_bright(task, examples=path, docs=(docs or {}).get(task))
    absent = sorted(wanted - set(staged)) if wanted is not None else []
    if absent:
        raise InputError(f"no examples file for task(s) {absent}", path=str(examples_dir))
    return staged
