"""The dense first stage's exact top-k (:mod:`rcp_data.building.dense`) against a brute-force
ranking of the full score matrix (numpy ``lexsort``: score descending, of equal scores the
earlier document), on SYNTHETIC scores with and without ties. The model-level check (the
stage's run equals sentence-transformers' own top-k) is in ``tests/project/test_byob.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rcp_data.building.dense import RunningTopK, block_top_k


def _brute(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first ``k`` columns by score descending, ties by column ascending."""
    cols = np.arange(scores.shape[1])
    order = np.stack([np.lexsort((cols, -row))[:k] for row in scores])
    return np.take_along_axis(scores, order, 1), order


def _running(scores: np.ndarray, k: int, step: int) -> RunningTopK:
    tops = RunningTopK(k)
    block = torch.from_numpy(scores)
    for lo in range(0, scores.shape[1], step):
        tops.add(block[:, lo:lo + step], lo)
    return tops


@pytest.mark.parametrize("step", [1, 7, 150, 151, 1000, 5000])
def test_running_top_k_equals_the_full_ranking(step):
    """Continuous scores (no ties): the running top 150 over blocks of any width equals the
    brute-force top 150 of the whole matrix, positions and scores exactly."""
    rng = np.random.default_rng(29)
    scores = rng.standard_normal((13, 4000)).astype(np.float32)
    want_scores, want_cols = _brute(scores, 150)
    tops = _running(scores, 150, step)
    assert np.array_equal(tops.positions.numpy(), want_cols)
    assert np.array_equal(tops.scores.numpy(), want_scores)


@pytest.mark.parametrize("step", [3, 64, 150, 2000])
def test_ties_keep_the_earlier_document(step):
    """Scores on a coarse grid (hundreds of exact ties per row, across the cut and across
    blocks): the earlier document wins, as in a stable sort of the full matrix."""
    rng = np.random.default_rng(150)
    scores = (rng.integers(0, 12, (9, 2000)) / 4).astype(np.float32)
    _, counts = np.unique(scores[0], return_counts=True)
    assert counts.max() > 150                         # the cut falls inside a tie
    want_scores, want_cols = _brute(scores, 150)
    tops = _running(scores, 150, step)
    assert np.array_equal(tops.positions.numpy(), want_cols)
    assert np.array_equal(tops.scores.numpy(), want_scores)
    # the same as numpy's stable argsort, what the sentence-transformers check uses
    stable = np.argsort(-scores, axis=1, kind="stable")[:, :150]
    assert np.array_equal(tops.positions.numpy(), stable)


def test_block_narrower_than_k_and_a_duplicated_passage():
    """A block of fewer columns than ``k`` keeps them all, ranked; a duplicated document (the
    same score twice, at the cut) keeps its first copy."""
    block = torch.tensor([[0.5, 0.9, 0.5, 0.1]])
    top, cols = block_top_k(block, 10)
    assert cols.tolist() == [[1, 0, 2, 3]]
    assert top[0].tolist() == pytest.approx([0.9, 0.5, 0.5, 0.1])
    top, cols = block_top_k(block, 2)
    assert cols.tolist() == [[1, 0]]


def test_add_embeddings_is_the_inner_product_top_k(monkeypatch):
    """Unit vectors scored in score blocks smaller than a chunk (``SCORE_BLOCK`` lowered):
    the top 20 of the float64 inner products, ids identical, scores to 1e-5."""
    import rcp_data.building.dense as dense

    monkeypatch.setattr(dense, "SCORE_BLOCK", 5 * 37)      # 37 documents per block
    gen = torch.Generator().manual_seed(7)
    q = torch.nn.functional.normalize(torch.randn(5, 384, generator=gen), dim=1)
    d = torch.nn.functional.normalize(torch.randn(1000, 384, generator=gen), dim=1)
    tops = RunningTopK(20)
    for lo in range(0, 1000, 300):
        tops.add_embeddings(q, d[lo:lo + 300], lo)
    full = q.double().numpy() @ d.double().numpy().T
    want_scores, want_cols = _brute(full, 20)
    assert np.array_equal(tops.positions.numpy(), want_cols)
    assert np.abs(tops.scores.numpy() - want_scores).max() < 1e-5
