"""Reading ir_datasets datasets into the reader contract: checked corpus streams, plain tables.

ir_datasets is imported lazily (it fixes its cache home at import time, see
:mod:`rcp_data.sources.irds_cache`). Upstream failures (a missing file offline, a broken parquet)
become :class:`~rcp_data.core.errors.InputError` naming the dataset and its cache file.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

from rcp_data.core.errors import InputError, RcpDataError, UsageError
from rcp_data.core.progress import progress
from rcp_data.sources.base import CorpusFacts, CorpusReader

log = logging.getLogger(__name__)

CORPUS_SCHEMA = pa.schema([("id", pa.string()), ("title", pa.string()), ("text", pa.string())])
BATCH_ROWS = 65_536


def load(dataset_id: str):
    """``ir_datasets.load(dataset_id)`` with a clear error for an unknown id."""
    import ir_datasets

    try:
        return ir_datasets.load(dataset_id)
    except KeyError as exc:
        raise UsageError(f"ir_datasets {ir_datasets.__version__} has no dataset "
                         f"{dataset_id!r}") from exc


def dataset_key(sub, prefix: str, family: str) -> str:
    """The ir_datasets name of a subset below ``prefix`` (``bright/earth-science`` -> ``earth-science``)."""
    if not sub.source.startswith(prefix):
        raise UsageError(f"subset {sub.name!r}: source {sub.source!r} is not a {family} dataset")
    return sub.source[len(prefix):]


def cache_file(namespace: str, prefix: str, dataset: str, key: str) -> str:
    """Where ir_datasets caches ``key`` of a dataset (for error messages), or a readable name."""
    from rcp_data.sources import irds_cache

    try:
        return str(irds_cache.cache_path(namespace, f"{dataset}/{key}"))
    except UsageError:
        return f"{prefix}{dataset} ({key})"


def reader_notes(scan: CorpusScan, queries: pd.DataFrame, qrels: pd.DataFrame) -> dict:
    """The counts every ir_datasets reader records for the build manifest and the card."""
    empty = set(scan.empty_ids)
    return {
        "documents": len(scan),
        "queries": len(queries),
        "qrels": len(qrels),
        "empty_documents": len(scan.empty_ids),
        "empty_ids": list(scan.empty_ids),
        "empty_positive_documents": int(qrels["corpus-id"].isin(empty).sum()),
        "document_repeats": scan.repeats,
        "queries_without_qrels": len(set(queries["id"]) - set(qrels["query-id"])),
    }


def require_cached(namespace: str, datasets: list[str], keys: list[str], *, family: str,
                   stager: str) -> None:
    """Offline guard (``allow_download=0``): every ``dataset/key`` file is in the cache."""
    from rcp_data.sources import irds_cache

    paths = [irds_cache.cache_path(namespace, f"{d}/{k}") for d in datasets for k in keys]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise InputError(f"{len(missing)} {family} file(s) are not in the ir_datasets cache and "
                         f"downloads are off (allow_download=0); place them with "
                         f"rcp_data.sources.irds_cache.{stager}", path=missing[0])


def irds_version() -> str:
    import ir_datasets

    return ir_datasets.__version__


@contextlib.contextmanager
def upstream(dataset_id: str, what: str, path: str) -> Iterator[None]:
    """Turn a failure inside ir_datasets into an InputError naming dataset and file."""
    try:
        yield
    except RcpDataError:
        raise
    except Exception as exc:  # ir_datasets raises anything from requests to pyarrow errors
        raise InputError(
            f"ir_datasets could not read the {what} of {dataset_id} ({type(exc).__name__}: "
            f"{exc}); offline, place the upstream file there first "
            "(rcp_data.sources.irds_cache)", path=path) from exc


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


@dataclass
class CorpusScan:
    """What one pass over an upstream corpus found.

    ``ids`` in upstream order, each once; ``repeats``: rows repeating an earlier id with the same
    text (folded: the first is kept); ``empty_ids``: documents whose text is empty or blank
    (the first at upstream row ``first_empty_row``); ``missing_id_row``: the first row without
    an id.
    """

    dataset_id: str
    path: str
    ids: list[str]
    empty_ids: list[str] = field(default_factory=list)
    repeats: int = 0
    rows: int = 0
    first_empty_row: int | None = None
    missing_id_row: int | None = None

    def __post_init__(self) -> None:
        self._set = set(self.ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._set

    def __len__(self) -> int:
        return len(self.ids)

    def known(self, ids: pd.Series) -> pd.Series:
        """Which of ``ids`` are corpus documents (vectorised membership)."""
        return ids.isin(self._set)

    def facts(self) -> CorpusFacts:
        """The scan as the reader contract's :class:`CorpusFacts` (repeats are folded here)."""
        return CorpusFacts(len(self.ids), tuple(self.empty_ids), self.first_empty_row, None,
                           self.missing_id_row, self.path)


def scan_corpus(dataset, dataset_id: str, path: str) -> CorpusScan:
    """One pass over ``docs_iter()``: ids, empty documents, repeated ids.

    A repeated id with byte-identical text is folded and counted; with different text it is an
    InputError (row numbers count upstream rows from 1).
    """
    first: dict[str, tuple[int, bytes]] = {}
    ids: list[str] = []
    empty: list[str] = []
    repeats = 0
    rows = 0
    first_empty = missing_id = None
    with upstream(dataset_id, "corpus", path):
        bar = progress(dataset.docs_iter(), desc=f"scan {dataset_id}", unit="doc", leave=False)
        for rows, doc in enumerate(bar, start=1):
            doc_id, text = str(doc.doc_id or ""), doc.text or ""
            if not doc_id:
                missing_id = missing_id or rows
            digest = _digest(text)
            seen = first.get(doc_id)
            if seen is not None:
                if seen[1] != digest:
                    raise InputError(
                        f"document id {doc_id!r} appears twice with different text "
                        f"(rows {seen[0]} and {rows})", path=path, row=rows, field="id")
                repeats += 1
                continue
            first[doc_id] = (rows, digest)
            ids.append(doc_id)
            if not text.strip():
                empty.append(doc_id)
                first_empty = first_empty or rows
    scan = CorpusScan(dataset_id, path, ids, empty, repeats, rows, first_empty, missing_id)
    log.info("%s: %d documents read (%d rows; %d repeated ids folded; %d empty)", dataset_id,
             len(ids), rows, repeats, len(empty))
    return scan


def corpus_reader(dataset_id: str, scan: CorpusScan, *, group: str | None = None,
                  batch_rows: int = BATCH_ROWS) -> CorpusReader:
    """Stream a scanned corpus from ir_datasets as ``id, title, text`` record batches.

    ir_datasets keeps no title for these datasets: ``title`` is empty. Repeated ids are skipped
    (the first row is kept, as in the scan).
    """

    def _batches() -> Iterator[pa.RecordBatch]:
        dataset = load(dataset_id)
        seen: set[str] | None = set() if scan.repeats else None
        ids: list[str] = []
        texts: list[str] = []
        with upstream(dataset_id, "corpus", scan.path):
            for doc in dataset.docs_iter():
                doc_id = str(doc.doc_id)
                if seen is not None:
                    if doc_id in seen:
                        continue
                    seen.add(doc_id)
                ids.append(doc_id)
                texts.append(doc.text or "")
                if len(ids) >= batch_rows:
                    yield _batch(ids, texts)
                    ids, texts = [], []
        if ids:
            yield _batch(ids, texts)

    return CorpusReader(_batches, group=group, size=len(scan), schema=CORPUS_SCHEMA,
                        facts_of=scan.facts, source=scan.path)


def _batch(ids: list[str], texts: list[str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(ids, pa.string()), pa.array([""] * len(ids), pa.string()),
         pa.array(texts, pa.string())], schema=CORPUS_SCHEMA)


def fold_rows(frame: pd.DataFrame, key: list[str], *, what: str,
              path: str) -> tuple[pd.DataFrame, int]:
    """Drop rows repeating an earlier row exactly; rows sharing ``key`` but differing elsewhere
    are an InputError. Returns the folded frame and the number of repeats dropped."""
    repeated = frame.duplicated(keep="first")
    folded = frame[~repeated]
    clash = folded.duplicated(subset=key, keep="first")
    if clash.any():
        pos = int(clash.to_numpy().argmax())
        row = folded.iloc[pos]
        ident = ", ".join(f"{k} {row[k]!r}" for k in key)
        raise InputError(f"{what} {ident} appears twice with different values",
                         path=path, row=int(folded.index[pos]) + 1, field=key[-1])
    return folded.reset_index(drop=True), int(repeated.sum())
