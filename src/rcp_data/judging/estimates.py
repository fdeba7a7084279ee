"""The preliminary estimates the schedulers order documents by, for one query.

- Stage A: the Bradley-Terry fit of App. C.2 on the windows answered so far: every pair of a
  window enters with its soft preference ``sigmoid(s_i - s_j)`` and weight ``2/w``; the weighted
  mean cross-entropy plus a ridge of 1e-4, minimized from zero; centred.
  (The calibration's fit, :mod:`rcp_data.calibration.bt`, minimizes the same objective
  over all queries at once with torch; a scheduler refits one small query many times, so this
  is the same objective minimized by Newton's method on numpy: a pool's Hessian is small, so a
  refit between batches takes milliseconds.)
- Stage B: a Rasch (1PL) fit of the pass/fail answers so far, ``P(pass) = sigmoid(theta_d -
  b_c)``, with a small ridge on ``theta`` so that a document passing (or failing) everything
  stays finite.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

BT_RIDGE = 1e-4
RASCH_RIDGE = 0.1


def window_pairs(n_docs: int, windows: list[tuple[np.ndarray, np.ndarray]]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, soft preference of i over j, weight)`` of every pair of the answered windows
    (documents, scores), each pair of a window of ``w`` weighing ``2 / w``."""
    lo, hi, pref, weight = [], [], [], []
    for docs, scores in windows:
        w = len(docs)
        a, b = np.triu_indices(w, 1)
        lo.append(docs[a])
        hi.append(docs[b])
        pref.append(expit(scores[a] - scores[b]))
        weight.append(np.full(len(a), 2.0 / w))
    if not lo:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty.astype(np.int64), empty, empty
    return (np.concatenate(lo), np.concatenate(hi), np.concatenate(pref),
            np.concatenate(weight))


def _newton(value_grad_hess, x: np.ndarray, iters: int = 50, tol: float = 1e-10) -> np.ndarray:
    """Damped Newton steps on a strictly convex objective (step halving when a step fails to
    decrease it), until the gradient's largest entry is below ``tol``."""
    f, g, h = value_grad_hess(x)
    for _ in range(iters):
        if np.abs(g).max() < tol:
            break
        step = np.linalg.solve(h, g)
        t = 1.0
        while t > 1e-6:
            cand = x - t * step
            fc, gc, hc = value_grad_hess(cand)
            if fc <= f:
                break
            t /= 2
        else:
            break
        x, f, g, h = cand, fc, gc, hc
    return x


def fit_bt(n_docs: int, windows: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Centred Bradley-Terry scores of ``n_docs`` documents (zeros without answers): the
    objective above, minimized by Newton's method (the Hessian of a pool is small)."""
    i, j, p, wt = window_pairs(n_docs, windows)
    if len(i) == 0:
        return np.zeros(n_docs)
    wt = wt / wt.sum()
    ii, jj, ij, ji = i * n_docs + i, j * n_docs + j, i * n_docs + j, j * n_docs + i

    def vgh(theta: np.ndarray):
        d = theta[i] - theta[j]
        value = float((wt * (np.logaddexp(0.0, d) - p * d)).sum()
                      + 0.5 * BT_RIDGE * theta @ theta)
        s = expit(d)
        g = wt * (s - p)
        grad = np.bincount(i, g, n_docs) - np.bincount(j, g, n_docs) + BT_RIDGE * theta
        c = wt * s * (1 - s)
        hess = (np.bincount(ii, c, n_docs * n_docs) + np.bincount(jj, c, n_docs * n_docs)
                - np.bincount(ij, c, n_docs * n_docs) - np.bincount(ji, c, n_docs * n_docs))
        hess = hess.reshape(n_docs, n_docs) + BT_RIDGE * np.eye(n_docs)
        return value, grad, hess

    theta = _newton(vgh, np.zeros(n_docs))
    seen = np.zeros(n_docs, dtype=bool)
    seen[i] = seen[j] = True
    return np.where(seen, theta - theta[seen].mean(), 0.0)


def fit_rasch(n_docs: int, docs: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Rasch abilities of ``n_docs`` documents from rows ``docs`` (R,) and 0/1 ``answers``
    (R, C); zeros without answers."""
    if len(docs) == 0:
        return np.zeros(n_docs)
    r, c = answers.shape
    y = answers.astype(np.float64)
    scale = 1.0 / (r * c)
    ridge = np.concatenate([np.full(n_docs, RASCH_RIDGE / n_docs), np.full(c, 1e-4)])

    def vgh(x: np.ndarray):
        theta, b = x[:n_docs], x[n_docs:]
        z = theta[docs][:, None] - b[None, :]
        value = float((np.logaddexp(0.0, z) - y * z).sum() * scale + 0.5 * (ridge * x) @ x)
        s = expit(z)
        g = (s - y) * scale
        grad = np.concatenate([np.bincount(docs, g.sum(axis=1), n_docs), -g.sum(axis=0)])
        v = s * (1 - s) * scale
        hess = np.zeros((n_docs + c, n_docs + c))
        hess[np.arange(n_docs), np.arange(n_docs)] = np.bincount(docs, v.sum(axis=1), n_docs)
        hess[n_docs + np.arange(c), n_docs + np.arange(c)] = v.sum(axis=0)
        cross = np.stack([np.bincount(docs, v[:, k], n_docs) for k in range(c)], axis=1)
        hess[:n_docs, n_docs:] = -cross
        hess[n_docs:, :n_docs] = -cross.T
        return value, grad + ridge * x, hess + np.diag(ridge)

    x = _newton(vgh, np.zeros(n_docs + c))
    seen = np.bincount(docs, minlength=n_docs) > 0
    return np.where(seen, x[:n_docs], 0.0)
