"""Agreement between assessors on the documents they all judged (pure functions on grades).

- :func:`cohen_kappa`: two raters, ``(p_o - p_e) / (1 - p_e)`` with ``p_e`` from each rater's
  own marginals (Cohen 1960; scikit-learn's ``cohen_kappa_score``);
- :func:`fleiss_kappa`: any number of raters who each graded every item (Fleiss 1971;
  statsmodels' ``fleiss_kappa`` on ``aggregate_raters``);
- :func:`overlap`: Jaccard of the relevant sets (Voorhees 2000): documents both call relevant
  over documents either calls relevant; ``exact=True`` counts a document as shared only when
  both gave it the same grade (the four-grade overlap); :func:`overlap_all` the same over any
  number of raters (all call it relevant over any calls it relevant);
- :func:`transitions`: the matrix of (reference grade -> other grade) counts and, per reference
  grade, the share that changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _codes(*columns: np.ndarray) -> tuple[list[np.ndarray], int]:
    values = np.unique(np.concatenate([np.asarray(c, dtype=np.float64) for c in columns]))
    return [np.searchsorted(values, np.asarray(c, dtype=np.float64)) for c in columns], \
        len(values)


def cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two raters' grades of the same items (NaN for no item; 1.0 when both
    gave every item one and the same grade)."""
    if len(a) != len(b):
        raise ValueError("two raters must grade the same items")
    if len(a) == 0:
        return float("nan")
    (ca, cb), n_cat = _codes(a, b)
    table = np.zeros((n_cat, n_cat))
    np.add.at(table, (ca, cb), 1.0)
    table /= len(a)
    p_o = float(np.trace(table))
    p_e = float(table.sum(1) @ table.sum(0))
    return 1.0 if p_e == 1.0 else (p_o - p_e) / (1.0 - p_e)


def fleiss_kappa(ratings: np.ndarray) -> float:
    """Fleiss' kappa of ``ratings`` ``(items, raters)`` (every rater graded every item)."""
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] == 0 or r.shape[1] < 2:
        return float("nan")
    n, m = r.shape
    codes, n_cat = _codes(r.ravel())
    counts = np.zeros((n, n_cat))
    np.add.at(counts, (np.repeat(np.arange(n), m), codes[0]), 1.0)
    p_j = counts.sum(0) / (n * m)
    p_i = ((counts ** 2).sum(1) - m) / (m * (m - 1))
    p_bar, p_e = float(p_i.mean()), float((p_j ** 2).sum())
    return 1.0 if p_e == 1.0 else (p_bar - p_e) / (1.0 - p_e)


def overlap(a: np.ndarray, b: np.ndarray, threshold: float, *, exact: bool = False) -> float:
    """Jaccard of the sets graded ``>= threshold`` (``exact``: a shared document needs the same
    grade); NaN when neither rater calls anything relevant."""
    return overlap_all(np.column_stack([np.asarray(a, dtype=np.float64),
                                        np.asarray(b, dtype=np.float64)]), threshold,
                       exact=exact)


def overlap_all(ratings: np.ndarray, threshold: float, *, exact: bool = False) -> float:
    """Jaccard of the relevant sets of every rater of ``ratings`` ``(items, raters)``: the
    documents all call relevant (``>= threshold``; ``exact``: with one and the same grade)
    over those any calls relevant; NaN when none calls anything relevant."""
    r = np.asarray(ratings, dtype=np.float64)
    if r.ndim != 2 or r.shape[1] < 2:
        return float("nan")
    relevant = r >= threshold
    union = int(relevant.any(axis=1).sum())
    shared = relevant.all(axis=1)
    if exact:
        shared &= (r == r[:, :1]).all(axis=1)
    return float(shared.sum()) / union if union else float("nan")


@dataclass(frozen=True)
class Transitions:
    """``counts[i, j]``: documents the reference graded ``grades[i]`` and the other rater
    ``grades[j]``; ``changed[i]``: the share of row ``i`` off the diagonal."""

    grades: tuple[float, ...]
    counts: np.ndarray

    @property
    def changed(self) -> np.ndarray:
        rows = self.counts.sum(1)
        off = rows - np.diag(self.counts)
        return np.divide(off, rows, out=np.full(len(rows), np.nan), where=rows > 0)

    def to_json(self) -> dict:
        return {"grades": list(self.grades), "counts": self.counts.astype(int).tolist(),
                "changed": [None if np.isnan(x) else float(x) for x in self.changed]}


def transitions(reference: np.ndarray, other: np.ndarray) -> Transitions:
    """The (reference grade -> other grade) matrix over the grades either rater used."""
    (cr, co), n_cat = _codes(reference, other)
    grades = np.unique(np.concatenate([np.asarray(reference, dtype=np.float64),
                                       np.asarray(other, dtype=np.float64)]))
    counts = np.zeros((n_cat, n_cat))
    np.add.at(counts, (cr, co), 1.0)
    return Transitions(tuple(float(g) for g in grades), counts)


__all__ = ["Transitions", "cohen_kappa", "fleiss_kappa", "overlap", "overlap_all",
           "transitions"]
