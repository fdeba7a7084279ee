"""Dense first stage: a sentence-transformers model, exact inner-product top-k over a streamed
corpus (``[pool] dense``, ``rcp-data build --dense MODEL``).

The corpus is read in its record batches and embedded in chunks of ``chunk_docs`` documents
(sentence-transformers' own ``encode``, ``batch_size`` texts at a time, so the embedding speed
is the library's); each chunk is scored against every query at once and merged into a running
exact top-``depth`` per query, then dropped (one matrix product and one ``torch.topk`` per score
block, a stable sort of ``2 x depth`` candidates per merge; of equal scores at the cut the
earlier document is kept, so the run never depends on the chunk sizes). Memory: the query
embeddings, one chunk of document embeddings and its score block, the running top-k and the
document ids (about 10 MiB per million short ids), never the corpus' embeddings at once, so no
embedding file is needed for a corpus of any size. Scores are the model's embeddings' inner
products (a model that normalises, like all-MiniLM-L6-v2, gives cosine similarities), in
float32. A document is embedded as ``title + " " + text`` when it has a title (as for BM25). The
run is ranked as every first-stage run without ranks is
(:func:`rcp_data.building.pools.normalize_run`: score descending, ties by corpus-id descending). A
GPU is used when present, else the CPU; a progress bar shows on a terminal only
(:mod:`rcp_data.core.progress`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from rcp_data.building.pools import normalize_run
from rcp_data.core.errors import InputError
from rcp_data.core.progress import bars_shown, progress
from rcp_data.core.specs import SuiteSpec
from rcp_data.sources.base import CorpusReader

log = logging.getLogger(__name__)

CHUNK_DOCS = 16_384          # documents embedded and scored at a time
BATCH_SIZE = 64              # texts per forward pass
SCORE_BLOCK = 1 << 26        # at most this many query x document scores at once (256 MB)


def pick_device(device: str | None = None) -> str:
    """``device``, else ``cuda`` when a GPU is present, else ``cpu``."""
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def spec_model(spec: SuiteSpec, retriever: str) -> str:
    """The model of a ``[pool] dense`` retriever: a folder relative to the spec file when one
    is there, else the value as given (an absolute folder or a Hub id)."""
    model = spec.pool.dense[retriever]
    if spec.path and not Path(model).is_absolute():
        local = Path(spec.path).parent / model
        if local.is_dir():
            return str(local)
    return model


_MODELS: dict[tuple[str, str], object] = {}
HUB_TIMEOUT_S = 3.0          # how long to wait for the Hub before saying it is unreachable


def _hub_reachable(timeout: float = HUB_TIMEOUT_S) -> bool:
    """Whether the Hub's host answers a TCP connection within ``timeout`` seconds."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    try:
        with socket.create_connection((url.hostname or "huggingface.co",
                                       url.port or (443 if url.scheme == "https" else 80)),
                                      timeout=timeout):
            return True
    except OSError:
        return False


def resolve_model(model: str) -> str:
    """A local folder of ``model``: the folder itself, the cached snapshot of a Hub id, or
    (online) the Hub id to download. Offline (``HF_HUB_OFFLINE`` or the Hub unreachable) a
    Hub id that is not cached is one InputError at once, never a retry loop."""
    if Path(model).is_dir():
        return model
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HFValidationError

    try:
        return snapshot_download(model, local_files_only=True)
    except HFValidationError as exc:
        raise InputError("neither a local folder nor a Hub model id (OWNER/NAME)",
                         path=model) from exc
    except Exception:   # noqa: BLE001 - not in the cache (the hub raises several kinds)
        pass
    offline = constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in (
        "1", "true", "yes", "on")
    why = ("HF_HUB_OFFLINE is set" if offline else
           None if _hub_reachable() else f"the Hub ({constants.ENDPOINT}) is unreachable")
    if why:
        raise InputError(f"the Hub model is not in the local cache and {why}: download it once "
                         "online, or give a local folder", path=model)
    return model


def load_model(model, device: str | None = None):
    """A SentenceTransformer from a local folder or a cached Hub id (an object passes); the
    last one loaded is kept for the next subset."""
    if not isinstance(model, str | Path):
        return model
    key = (str(model), pick_device(device))
    if key in _MODELS:
        return _MODELS[key]
    where = resolve_model(key[0])   # before torch is imported: an offline refusal is at once
    from sentence_transformers import SentenceTransformer

    if not bars_shown():
        import transformers

        transformers.utils.logging.disable_progress_bar()
    try:
        st = SentenceTransformer(where, device=key[1])
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load the sentence-transformers model ({exc}); give a local "
                         "folder or a Hub id in the cache", path=str(model)) from exc
    _MODELS.clear()
    _MODELS[key] = st
    return st


def document_texts(batch: pa.RecordBatch) -> list[str]:
    """``title + " " + text`` (just ``text`` without a title) of every document of a batch."""
    names = batch.schema.names
    text = [t or "" for t in batch.column(names.index("text")).to_pylist()]
    if "title" not in names:
        return text
    titles = batch.column(names.index("title")).to_pylist()
    return [f"{h} {t}" if h else t for h, t in zip(titles, text, strict=True)]


def _ordered(scores, positions, k: int):
    """The first ``k`` of each row by score descending, of equal scores the earlier position."""
    import torch

    order = torch.argsort(positions, dim=1, stable=True)
    scores, positions = scores.gather(1, order), positions.gather(1, order)
    order = torch.argsort(scores, dim=1, descending=True, stable=True)[:, :k]
    return scores.gather(1, order), positions.gather(1, order)


def block_top_k(block, k: int):
    """The top ``k`` (score, column) of each row of a score block, exactly, in that order: of
    equal scores the earlier column comes first and is kept at the cut, whatever
    ``torch.topk`` picks among ties."""
    import torch

    n = block.shape[1]
    if n <= k:
        return _ordered(block, torch.arange(n, device=block.device).expand_as(block), k)
    top, columns = torch.topk(block, k + 1, dim=1, largest=True, sorted=True)
    # a row with equal scores among its top k + 1 (rare: a duplicated passage) is chosen again
    # from every column scoring at least its k-th: the earlier column first
    tied = torch.nonzero((top[:, 1:] == top[:, :-1]).any(dim=1)).flatten().tolist()
    top, columns = top[:, :k].contiguous(), columns[:, :k].contiguous()
    for r in tied:
        keep = torch.nonzero(block[r] >= top[r, k - 1]).flatten()
        row, keep = _ordered(block[r, keep][None], keep[None], k)
        top[r], columns[r] = row[0], keep[0]
    return top, columns


@dataclass
class RunningTopK:
    """The exact top ``k`` (score, document position) per query over the documents seen so far,
    in that order; of equal scores the earlier document wins, so the result does not depend on
    how the corpus was cut into chunks and blocks."""

    k: int
    scores: object = None        # torch (n_queries, <= k) float32
    positions: object = None     # torch (n_queries, <= k) int64

    def add(self, block, first: int) -> None:
        """Merge a score block (queries x documents ``first, first + 1, ...``)."""
        import torch

        top, pos = block_top_k(block, self.k)
        pos = pos + first
        if self.scores is not None:
            # both parts are in order and every kept document precedes the block's: a stable
            # sort by score alone keeps the earlier document first among equal scores
            top, pos = torch.cat([self.scores, top], dim=1), torch.cat([self.positions, pos], 1)
            order = torch.argsort(top, dim=1, descending=True, stable=True)[:, :self.k]
            top, pos = top.gather(1, order), pos.gather(1, order)
        self.scores, self.positions = top, pos

    def add_embeddings(self, queries, documents, first: int) -> None:
        """Score ``documents`` (embeddings, rows ``first, first + 1, ...``) against every
        query by inner product, at most :data:`SCORE_BLOCK` scores at a time, and merge them."""
        step = max(1, SCORE_BLOCK // max(1, queries.shape[0]))
        for lo in range(0, documents.shape[0], step):
            self.add(queries @ documents[lo:lo + step].T, first + lo)


def _encode(model, texts: list[str], batch_size: int, device: str):
    return model.encode(texts, batch_size=batch_size, convert_to_tensor=True, device=device,
                        show_progress_bar=False)


def dense_run(corpus: CorpusReader, queries: pd.DataFrame, model, *, depth: int,
              retriever: str = "dense", batch_size: int = BATCH_SIZE,
              chunk_docs: int = CHUNK_DOCS, device: str | None = None) -> pd.DataFrame:
    """The top ``depth`` documents of ``corpus`` per query (``id, text``) by the inner product
    of ``model``'s embeddings, as ``retriever, query-id, corpus-id, rank, score`` rows."""
    import torch

    device = pick_device(device)
    st = load_model(model, device)
    qids = queries["id"].astype(str).tolist()
    if not qids or depth < 1:
        return pd.DataFrame(columns=["retriever", "query-id", "corpus-id", "rank", "score"])
    with torch.inference_mode():
        q = _encode(st, queries["text"].astype(str).tolist(), batch_size, device).float()
        tops = RunningTopK(depth)
        ids: list[pa.Array] = []
        first = 0
        bar = progress(total=corpus.size, desc=f"embed {retriever}", unit="doc", leave=False)
        pending: list[str] = []
        pending_ids: list[pa.Array] = []

        def flush() -> None:
            nonlocal first, pending, pending_ids
            if not pending:
                return
            d = _encode(st, pending, batch_size, device).float()
            tops.add_embeddings(q, d, first)
            first += d.shape[0]
            ids.extend(pending_ids)
            bar.update(len(pending))
            pending, pending_ids = [], []

        try:
            for batch in corpus.batches():
                batch_ids = batch.column(batch.schema.get_field_index("id")).cast(pa.string())
                texts = document_texts(batch)
                offset = 0
                while offset < len(texts):
                    take = min(chunk_docs - len(pending), len(texts) - offset)
                    pending += texts[offset:offset + take]
                    pending_ids.append(batch_ids.slice(offset, take))
                    offset += take
                    if len(pending) >= chunk_docs:
                        flush()
            flush()
        finally:
            bar.close()
    if tops.scores is None:
        return pd.DataFrame(columns=["retriever", "query-id", "corpus-id", "rank", "score"])
    all_ids = pa.concat_arrays(ids) if ids else pa.array([], pa.string())
    scores = tops.scores.cpu().numpy().astype(np.float64)
    positions = tops.positions.cpu().numpy()
    run = pd.DataFrame({
        "query-id": np.repeat(np.asarray(qids, dtype=object), scores.shape[1]),
        "corpus-id": np.asarray(all_ids.take(pa.array(positions.ravel())).to_pylist(),
                                dtype=object),
        "score": scores.ravel(),
    })
    run = normalize_run(run, retriever, source=retriever)
    log.info("dense run %s: %d queries, %d documents, %d rows (depth %d, %s)", retriever,
             len(qids), first, len(run), depth, device)
    return run


__all__ = ["BATCH_SIZE", "CHUNK_DOCS", "RunningTopK", "block_top_k", "dense_run", "document_texts",
           "load_model", "pick_device", "spec_model"]
