"""Vectorized nDCG@k over many queries at once, under the three tie rules of the docs/concepts.

The engine works on plain arrays. Candidates of all queries lie in one flat array, query ``q``
owning ``[offsets[q], offsets[q + 1])``; each candidate has a reranker score, one or more gains
and (for ``doc-id``) a tie-break key. Internally the ragged groups are laid out as a padded
``(queries, longest)`` matrix and sorted row-wise, so no Python loop runs per query.

Tie rules for equal reranker scores (paper App. B.1):

- ``doc-id``: score descending, then corpus-id descending in byte-wise order (trec_eval's strcmp).
  Pass ``doc_key`` = :func:`byte_order_key` of the corpus ids.
- ``group-mean``: every document of a tie group is credited the group's mean gain (the
  expectation over all orders of the tie). A group straddling the cutoff contributes its mean
  gain at each position it occupies above the cutoff.
- ``pool-order``: ties keep the order in which the candidates are given (``top_ranked`` order).

nDCG@k = DCG@k / ideal DCG@k, discount 1/log2(rank + 1), linear gains. A query whose ideal DCG
is 0 scores 0 (the caller decides whether it stays in a mean).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rcp_data.core.rules import TIE_RULES

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "TIE_RULES",
    "CandidateLayout",
    "byte_order_key",
    "dcg_at_k_blocks",
    "ndcg_at_k_blocks",
    "discounts",
    "ideal_dcg",
    "dcg_at_k",
    "ndcg_at_k",
    "ndcg_at_k_rules",
]


def discounts(k: int) -> np.ndarray:
    """``1 / log2(rank + 1)`` for ranks 1..k."""
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def byte_order_key(ids: Sequence[str] | np.ndarray | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Rank of each id in byte-wise (UTF-8, strcmp) ascending order; equal ids share a rank.

    ``doc-id`` ties put the larger key first (corpus-id descending).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = ids if isinstance(ids, pa.Array | pa.ChunkedArray) else pa.array(ids, type=pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    enc = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
    dictionary = enc.dictionary.cast(pa.binary())      # compare as bytes, never by locale
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(dictionary), dtype=np.int64)
    rank[order] = np.arange(len(dictionary), dtype=np.int64)
    return rank[enc.indices.to_numpy(zero_copy_only=False)]


@dataclass(frozen=True)
class CandidateLayout:
    """Ragged query groups laid out as a padded matrix (computed once, reused for every run).

    ``index[q, j]`` is the flat candidate index at row position ``j`` of query ``q`` (``n`` for
    padding). Rows follow the given order (``pool-order``) or, with a ``doc_key``, the key
    descending (``doc-id``), so a stable sort by score descending applies the tie rule.
    """

    offsets: np.ndarray
    index: np.ndarray
    lengths: np.ndarray
    keyed: bool = False          # rows ordered by doc_key descending (doc-id) vs as given

    def supports(self, rule: str) -> bool:
        return rule == "group-mean" or (rule == "doc-id") == self.keyed

    @property
    def n_queries(self) -> int:
        return len(self.lengths)

    @property
    def n_candidates(self) -> int:
        return int(self.offsets[-1])

    @classmethod
    def build(cls, offsets: np.ndarray, doc_key: np.ndarray | None = None) -> CandidateLayout:
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must start at 0 and never decrease")
        lengths = np.diff(offsets)
        n = int(offsets[-1])
        n_q = len(lengths)
        width = int(lengths.max()) if n_q else 0
        qidx = np.repeat(np.arange(n_q, dtype=np.int64), lengths)
        pos = np.arange(n, dtype=np.int64) - offsets[:-1][qidx]
        if doc_key is None:
            flat = np.arange(n, dtype=np.int64)
        else:
            doc_key = np.asarray(doc_key)
            if doc_key.shape != (n,):
                raise ValueError(f"doc_key has shape {doc_key.shape}, expected ({n},)")
            key = doc_key.astype(np.int64)
            span = int(key.max()) + 1 if n else 1
            # query ascending, key descending (ids are unique within a query)
            flat = np.argsort(qidx * span + (span - 1 - key), kind="stable")
        index = np.full((n_q, width), n, dtype=np.int64)
        index[qidx, pos] = flat
        return cls(offsets=offsets, index=index, lengths=lengths, keyed=doc_key is not None)


def _pad(values: np.ndarray, fill: float) -> np.ndarray:
    """Append one padding element along the last axis (index ``n`` of a layout)."""
    pad_shape = values.shape[:-1] + (1,)
    return np.concatenate([values, np.full(pad_shape, fill, dtype=np.float64)], axis=-1)


def ideal_dcg(offsets: np.ndarray, gains: np.ndarray, k: int) -> np.ndarray:
    """Ideal DCG@k per query from ragged gains (``gains`` shape ``(n,)`` or ``(G, n)``).

    Negative gains count as 0.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    gains = np.asarray(gains, dtype=np.float64)
    lengths = np.diff(offsets)
    n_q = len(lengths)
    width = int(lengths.max()) if n_q else 0
    lead = gains.shape[:-1]
    if width == 0 or k <= 0:
        return np.zeros(lead + (n_q,), dtype=np.float64)
    qidx = np.repeat(np.arange(n_q, dtype=np.int64), lengths)
    pos = np.arange(int(offsets[-1]), dtype=np.int64) - offsets[:-1][qidx]
    mat = np.zeros(lead + (n_q, width), dtype=np.float64)
    mat[..., qidx, pos] = np.maximum(gains, 0.0)
    kk = min(k, width)
    top = -np.partition(-mat, kk - 1, axis=-1)[..., :kk] if kk < width else mat
    top = -np.sort(-top, axis=-1)[..., :kk]
    return top @ discounts(kk)


def _top_block(layout: CandidateLayout, score_mat: np.ndarray, kk: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """The candidates scoring at least each row's kk-th largest score, in row order.

    Every member of the tie group at rank kk is included, so the top kk under any tie rule, and
    the full tie group straddling the cutoff, lie in this block. Returns ``(index, scores)``
    of shape ``(Q, C)``, padded with ``n`` / ``-inf``.
    """
    n_q, width = score_mat.shape
    if kk >= width:
        return layout.index, score_mat
    kth = -np.partition(-score_mat, kk - 1, axis=1)[:, kk - 1]
    mask = score_mat >= kth[:, None]
    rows, cols = np.nonzero(mask)                       # row-major: keeps row order
    counts = np.bincount(rows, minlength=n_q)
    block = int(counts.max())
    pos = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    index = np.full((n_q, block), layout.n_candidates, dtype=np.int64)
    scores = np.full((n_q, block), -np.inf)
    index[rows, pos] = layout.index[rows, cols]
    scores[rows, pos] = score_mat[rows, cols]
    return index, scores


def _dcg_one_run(layout: CandidateLayout, scores: np.ndarray, blocks: Sequence[np.ndarray],
                 k: int, rules: Sequence[str]) -> list[dict[str, np.ndarray]]:
    """DCG@k of one run (``scores`` shape ``(n,)``) for each block of gains ``(G, n)`` under
    ``rules``: one sort of the run serves every block, and each block is reduced on its own,
    exactly as a call with that block alone reduces it."""
    n_q = layout.n_queries
    width = layout.index.shape[1]
    if n_q == 0 or width == 0:
        return [{r: np.zeros((gains.shape[0], n_q)) for r in rules} for gains in blocks]
    kk = min(k, width)
    disc = discounts(kk)
    index, score_mat = _top_block(layout, _pad(scores, -np.inf)[layout.index], kk)
    block = index.shape[1]
    perm = np.argsort(-score_mat, axis=1, kind="stable")
    ranked = np.take_along_axis(index, perm, axis=1)                  # flat index per rank
    if "group-mean" in rules:
        sorted_scores = np.take_along_axis(score_mat, perm, axis=1)
        new = np.ones((n_q, block), dtype=bool)
        new[:, 1:] = sorted_scores[:, 1:] != sorted_scores[:, :-1]
        cols = np.arange(block, dtype=np.int64)
        start = np.maximum.accumulate(np.where(new, cols, 0), axis=1)[:, :kk]
        nxt = np.full((n_q, block), block, dtype=np.int64)
        nxt[:, :-1] = np.where(new[:, 1:], cols[1:], block)
        end = np.minimum.accumulate(nxt[:, ::-1], axis=1)[:, ::-1][:, :kk]
        rows = np.arange(n_q)[:, None]
    outs = []
    for gains in blocks:
        out: dict[str, np.ndarray] = {}
        gains_p = _pad(gains, 0.0)                                    # (G, n + 1)
        for rule in rules:
            if rule in ("doc-id", "pool-order"):
                out[rule] = gains_p[:, ranked[:, :kk]] @ disc
        if "group-mean" in rules:
            ranked_gains = gains_p[:, ranked]                          # (G, Q, C)
            csum = np.zeros(ranked_gains.shape[:-1] + (block + 1,), dtype=np.float64)
            np.cumsum(ranked_gains, axis=-1, out=csum[..., 1:])
            total = csum[:, rows, end] - csum[:, rows, start]
            out["group-mean"] = (total / (end - start)) @ disc
        outs.append(out)
    return outs


def _check_rules(rules: Sequence[str]) -> None:
    for r in rules:
        if r not in TIE_RULES:
            raise ValueError(f"unknown tie rule {r!r}; choose one of {', '.join(TIE_RULES)}")


def dcg_at_k(offsets: np.ndarray | CandidateLayout, scores: np.ndarray, gains: np.ndarray, *,
             k: int = 10, tie_rules: Sequence[str] = ("doc-id",),
             doc_key: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """DCG@k per query under each tie rule.

    ``scores``: ``(n,)`` or ``(R, n)`` (R runs over the same candidates); ``gains``: ``(n,)`` or
    ``(G, n)``. Returns ``{rule: array}`` of shape ``scores.shape[:-1] + gains.shape[:-1] + (Q,)``.
    All rules share one sort per run.
    """
    return dcg_at_k_blocks(offsets, scores, [gains], k=k, tie_rules=tie_rules,
                           doc_key=doc_key)[0]


def dcg_at_k_blocks(offsets: np.ndarray | CandidateLayout, scores: np.ndarray,
                    blocks: Sequence[np.ndarray], *, k: int = 10,
                    tie_rules: Sequence[str] = ("doc-id",),
                    doc_key: np.ndarray | None = None) -> list[dict[str, np.ndarray]]:
    """:func:`dcg_at_k` of each block of gains, from one sort per run: each result equals
    ``dcg_at_k`` of that block alone, bit for bit."""
    _check_rules(tie_rules)
    scores = np.asarray(scores, dtype=np.float64)
    blocks = [np.asarray(g, dtype=np.float64) for g in blocks]
    if isinstance(offsets, CandidateLayout):
        layout = offsets
        bad = [r for r in tie_rules if not layout.supports(r)]
        if bad:
            raise ValueError(f"layout built {'with' if layout.keyed else 'without'} doc_key "
                             f"cannot apply {', '.join(bad)}")
    else:
        if "doc-id" in tie_rules and doc_key is None:
            raise ValueError("the doc-id tie rule needs doc_key (byte_order_key of corpus ids)")
        key = doc_key if "doc-id" in tie_rules else None
        if "pool-order" in tie_rules and "doc-id" in tie_rules:
            # two base orders: compute pool-order separately
            rest = [r for r in tie_rules if r != "pool-order"]
            outs = dcg_at_k_blocks(offsets, scores, blocks, k=k, tie_rules=rest,
                                   doc_key=doc_key)
            pool = dcg_at_k_blocks(offsets, scores, blocks, k=k, tie_rules=["pool-order"])
            return [{r: {**o, **p}[r] for r in tie_rules} for o, p in zip(outs, pool,
                                                                         strict=True)]
        layout = CandidateLayout.build(offsets, key)
    n = layout.n_candidates
    if scores.shape[-1] != n or any(g.shape[-1] != n for g in blocks):
        shapes = ", ".join(str(g.shape) for g in blocks)
        raise ValueError(f"scores {scores.shape} and gains {shapes} must end in {n}")
    if not (np.isfinite(scores).all() and all(np.isfinite(g).all() for g in blocks)):
        raise ValueError("scores and gains must be finite")
    # explicit leading sizes: reshape(-1, 0) is ambiguous when no query has a candidate
    runs = scores.reshape(int(np.prod(scores.shape[:-1])), n)
    mats = [g.reshape(int(np.prod(g.shape[:-1])), n) for g in blocks]
    per_rule: list[dict[str, list[np.ndarray]]] = [{r: [] for r in tie_rules} for _ in blocks]
    for r in range(runs.shape[0]):
        for acc, res in zip(per_rule, _dcg_one_run(layout, runs[r], mats, k, tie_rules),
                            strict=True):
            for rule in tie_rules:
                acc[rule].append(res[rule])
    return [{rule: np.stack(v).reshape(scores.shape[:-1] + g.shape[:-1] + (layout.n_queries,))
             for rule, v in acc.items()} for acc, g in zip(per_rule, blocks, strict=True)]


def ndcg_at_k_rules(offsets: np.ndarray | CandidateLayout, scores: np.ndarray, gains: np.ndarray,
                    ideal: np.ndarray, *, k: int = 10, tie_rules: Sequence[str] = ("doc-id",),
                    doc_key: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """nDCG@k per query under each tie rule; ``ideal`` is :func:`ideal_dcg` (``(Q,)`` or
    ``(G, Q)`` matching ``gains``). A query whose ideal is 0 scores 0."""
    return ndcg_at_k_blocks(offsets, scores, [(gains, ideal)], k=k, tie_rules=tie_rules,
                            doc_key=doc_key)[0]


def ndcg_at_k_blocks(offsets: np.ndarray | CandidateLayout, scores: np.ndarray,
                     blocks: Sequence[tuple[np.ndarray, np.ndarray]], *, k: int = 10,
                     tie_rules: Sequence[str] = ("doc-id",),
                     doc_key: np.ndarray | None = None) -> list[dict[str, np.ndarray]]:
    """:func:`ndcg_at_k_rules` of each ``(gains, ideal)`` block from one sort per run: each
    result equals ``ndcg_at_k_rules`` of that block alone, bit for bit."""
    dcgs = dcg_at_k_blocks(offsets, scores, [g for g, _ in blocks], k=k, tie_rules=tie_rules,
                           doc_key=doc_key)
    out = []
    for dcg, (_, ideal) in zip(dcgs, blocks, strict=True):
        ideal = np.asarray(ideal, dtype=np.float64)
        safe = np.where(ideal > 0, ideal, 1.0)
        out.append({rule: np.where(ideal > 0, v / safe, 0.0) for rule, v in dcg.items()})
    return out


def ndcg_at_k(offsets: np.ndarray, scores: np.ndarray, gains: np.ndarray, ideal: np.ndarray, *,
              k: int = 10, tie_rule: str = "doc-id",
              doc_key: np.ndarray | None = None) -> np.ndarray:
    """nDCG@k per query under one tie rule (see :func:`ndcg_at_k_rules`)."""
    return ndcg_at_k_rules(offsets, scores, gains, ideal, k=k, tie_rules=(tie_rule,),
                           doc_key=doc_key)[tie_rule]
