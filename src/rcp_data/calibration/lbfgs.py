"""L-BFGS on many independent problems at once (one per query), in lockstep with torch.

Each block (query) runs its own L-BFGS: its own history of the last ``history`` steps, its own
initial scaling ``s.y / y.y``, its own backtracking line search (Armijo, ``c1 = 1e-4``, step 1
first tried; once the predicted decrease is below the rounding noise of the objective, a step
is taken when it shrinks the directional derivative, ``|g_new . p| <= 0.9 |g . p|``, which on
a convex objective is a decrease) and its own stopping rule: ``max |grad| <= tolerance_grad`` (converged), or
``max_iter`` iterations (not converged), or a line search that cannot decrease the objective
beyond rounding (stalled; converged when ``max |grad| <= 100 tolerance_grad``). The blocks
share only the evaluation of the objective, which computes all blocks' values and gradients
in one pass; a finished block leaves the active set, and the objective is narrowed to the
remaining blocks whenever they are at most half of those it evaluates. A backtracking step
that only a few blocks still need (under a quarter) evaluates those blocks alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

ARMIJO_C1 = 1e-4
CURVATURE_C2 = 0.9
NOISE = 1e-12  # relative size of a predicted decrease the objective's value cannot resolve
EPS = float(np.finfo(np.float64).eps)


class BlockObjective(Protocol):
    """Values ``(B,)`` and gradients ``(B, n)`` of ``B`` independent blocks at ``x`` ``(B, n)``."""

    n_blocks: int

    def evaluate(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def restrict(self, keep: torch.Tensor) -> BlockObjective: ...


@dataclass(frozen=True)
class LbfgsSettings:
    max_iter: int = 250
    history: int = 10
    tolerance_grad: float = 1e-10
    max_backtracks: int = 60


@dataclass(frozen=True)
class LbfgsResult:
    x: np.ndarray  # (B, n)
    value: np.ndarray  # (B,)
    grad_max: np.ndarray  # (B,) max |grad| at x
    iterations: np.ndarray  # (B,)
    converged: np.ndarray  # (B,) bool
    evaluations: int  # of every active block
    partial_evaluations: int  # of the few blocks still backtracking
    seconds: float


class _State:
    """Per active block: position, value, gradient, history ring, iteration count."""

    def __init__(self, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor, m: int) -> None:
        b, n = x.shape
        self.ids = torch.arange(b, device=x.device)
        self.x, self.f, self.g = x, f, g
        self.S = torch.zeros((m, b, n), dtype=x.dtype, device=x.device)
        self.Y = torch.zeros_like(self.S)
        self.rho = torch.zeros((m, b), dtype=x.dtype, device=x.device)
        self.gamma = torch.ones(b, dtype=x.dtype, device=x.device)
        self.iters = torch.zeros(b, dtype=torch.long, device=x.device)

    def keep(self, mask: torch.Tensor) -> None:
        for name in ("ids", "x", "f", "g", "gamma", "iters"):
            setattr(self, name, getattr(self, name)[mask])
        self.S, self.Y, self.rho = self.S[:, mask], self.Y[:, mask], self.rho[:, mask]


def _direction(st: _State, k: int) -> torch.Tensor:
    """``-H g`` by the two-loop recursion (ring slot of step ``j`` is ``j % m``)."""
    m = st.S.shape[0]
    q = st.g.clone()
    alpha = []
    for i in range(min(k, m)):
        slot = (k - 1 - i) % m
        a = st.rho[slot] * (st.S[slot] * q).sum(1)
        q -= a[:, None] * st.Y[slot]
        alpha.append((slot, a))
    r = st.gamma[:, None] * q
    for slot, a in reversed(alpha):
        b = st.rho[slot] * (st.Y[slot] * r).sum(1)
        r += st.S[slot] * (a - b)[:, None]
    return -r


def minimize_blocks(objective: BlockObjective, x0: torch.Tensor,
                    settings: LbfgsSettings | None = None) -> LbfgsResult:
    """Minimize every block of ``objective`` from ``x0`` (see the module docstring)."""
    s = settings or LbfgsSettings()
    t0 = time.perf_counter()
    n_blocks = x0.shape[0]
    out_x = x0.clone()
    out_f = torch.zeros(n_blocks, dtype=x0.dtype, device=x0.device)
    out_g = torch.zeros(n_blocks, dtype=x0.dtype, device=x0.device)
    out_it = torch.zeros(n_blocks, dtype=torch.long, device=x0.device)
    out_ok = torch.zeros(n_blocks, dtype=torch.bool, device=x0.device)
    obj = objective
    obj_ids = torch.arange(n_blocks, device=x0.device)  # blocks the objective evaluates
    x_obj = x0.clone()
    f, g = obj.evaluate(x_obj)
    evaluations, partial = 1, 0
    st = _State(x_obj.clone(), f, g, s.history)
    pos = torch.arange(n_blocks, device=x0.device)  # active block -> row of the objective
    k = 0

    def finish(done: torch.Tensor, ok: torch.Tensor) -> None:
        ids = st.ids[done]
        out_x[ids], out_f[ids] = st.x[done], st.f[done]
        out_g[ids] = st.g[done].abs().amax(1)
        out_it[ids], out_ok[ids] = st.iters[done], ok[done]

    while True:
        gmax = st.g.abs().amax(1)
        done = (gmax <= s.tolerance_grad) | (st.iters >= s.max_iter)
        if done.any():
            finish(done, gmax <= s.tolerance_grad)
            st.keep(~done)
            pos = pos[~done]
        if len(st.ids) == 0:
            break
        if 2 * len(st.ids) <= len(obj_ids):
            obj = obj.restrict(pos)
            obj_ids = obj_ids[pos]
            x_obj = x_obj[pos]
            pos = torch.arange(len(st.ids), device=x0.device)
        p = _direction(st, k)
        gp = (st.g * p).sum(1)
        bad = gp >= 0  # not a descent direction: forget the history, go downhill
        if bad.any():
            st.rho[:, bad] = 0.0
            st.gamma[bad] = 1.0
            p[bad] = -st.g[bad]
            gp[bad] = -(st.g[bad] ** 2).sum(1)
        step = torch.ones_like(gp)
        first = st.iters == 0
        step[first] = torch.clamp(1.0 / st.g[first].abs().sum(1), max=1.0)
        pending = torch.ones_like(gp, dtype=torch.bool)
        f_new = st.f.clone()
        g_new = st.g.clone()
        for attempt in range(s.max_backtracks):
            if attempt and 4 * int(pending.sum()) < obj.n_blocks:
                # few blocks still backtrack: evaluate only those
                ft, gt = st.f.clone(), st.g.clone()
                sub = obj.restrict(pos[pending])
                ft[pending], gt[pending] = sub.evaluate(
                    st.x[pending] + step[pending, None] * p[pending])
                partial += 1
            else:
                x_try = x_obj.clone()
                x_try[pos] = st.x + step[:, None] * p
                f_all, g_all = obj.evaluate(x_try)
                evaluations += 1
                ft, gt = f_all[pos], g_all[pos]
            slack = 4 * EPS * st.f.abs()
            armijo = ft <= st.f + ARMIJO_C1 * step * gp + slack
            tiny = (step * gp).abs() <= NOISE * st.f.abs().clamp(min=1.0)
            curvature = (gt * p).sum(1).abs() <= CURVATURE_C2 * gp.abs()
            ok = pending & (armijo | (tiny & curvature))
            f_new[ok], g_new[ok] = ft[ok], gt[ok]
            pending &= ~ok
            if not pending.any():
                break
            step[pending] *= 0.5
        stalled = pending
        x_new = st.x + step[:, None] * p
        x_new[stalled] = st.x[stalled]
        sv, yv = x_new - st.x, g_new - st.g
        sy, yy = (sv * yv).sum(1), (yv * yv).sum(1)
        store = (sy > 1e-12 * yy.sqrt() * sv.norm(dim=1)) & ~stalled
        slot = k % s.history
        st.S[slot], st.Y[slot] = sv, yv
        st.rho[slot] = torch.where(store, 1.0 / torch.where(store, sy, 1.0), 0.0)
        st.gamma = torch.where(store, sy / torch.where(store, yy, 1.0), st.gamma)
        st.x, st.f, st.g = x_new, f_new, g_new
        x_obj[pos] = x_new
        st.iters += 1
        k += 1
        if stalled.any():
            finish(stalled, st.g.abs().amax(1) <= 100 * s.tolerance_grad)
            st.keep(~stalled)
            pos = pos[~stalled]
    return LbfgsResult(
        x=out_x.cpu().numpy(), value=out_f.cpu().numpy(), grad_max=out_g.cpu().numpy(),
        iterations=out_it.cpu().numpy(), converged=out_ok.cpu().numpy(),
        evaluations=evaluations, partial_evaluations=partial, seconds=time.perf_counter() - t0)
