"""Exact orders of large arrays, computed fast: each function returns exactly what its numpy
counterpart returns (the tests compare), from sorts of packed 64-bit integers, which numpy sorts
with SIMD several times faster than it argsorts floats.

- :func:`sorting_order`: a permutation that sorts a float array (ties in any order);
- :func:`dense_codes`: ``np.unique(values, return_inverse=True)``'s codes and their count;
- :func:`stable_order`: ``np.argsort(codes, kind="stable")`` of non-negative integer codes;
- :func:`lex_order`: ``np.lexsort((minor, major))`` of integer codes;
- :class:`BlockOrder`, :func:`block_order`: ``np.argsort(group + u * 0.5)`` (a random order within integer groups,
  ``u`` uniform doubles as numpy's generators draw them), when its keys are distinct.
"""

from __future__ import annotations

import numpy as np

_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)
#: Bits of a uniform double from numpy's generators: ``u * 2**53`` is an integer.
_UNIFORM_BITS = 53
#: Largest group :func:`block_order` sorts as a row (the packed value stays below 2**63).
_MAX_BLOCK_BITS = 10


def _sortable(values: np.ndarray) -> np.ndarray:
    """int64 keys in the order of float64 ``values`` (no NaN): the IEEE bits, the magnitude
    bits flipped for negative numbers (-0.0 sorts just below 0.0)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return bits ^ ((bits >> 63) & _LOW63)


def sorting_order(values: np.ndarray) -> np.ndarray:
    """A permutation that sorts ``values`` (float or integer, no NaN); ties in any order."""
    v = np.asarray(values)
    if v.dtype.kind == "f":
        return np.argsort(_sortable(v))
    return np.argsort(v.astype(np.int64, copy=False))


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``(np.unique(values, return_inverse=True)[1], number of distinct values)`` as int64."""
    v = np.asarray(values)
    if v.dtype.kind == "f" and np.isnan(v).any() or v.dtype.kind not in "fiub":
        uniq, inv = np.unique(v, return_inverse=True)
        return inv.reshape(-1).astype(np.int64), len(uniq)
    v = v.reshape(-1)
    if not len(v):
        return np.zeros(0, dtype=np.int64), 0
    order = sorting_order(v)
    s = v[order]
    steps = np.empty(len(v), dtype=np.int64)
    steps[0] = 0
    np.not_equal(s[1:], s[:-1], out=steps[1:], casting="unsafe")
    codes = np.empty(len(v), dtype=np.int64)
    codes[order] = np.cumsum(steps)
    return codes, int(steps.sum()) + 1


def stable_order(codes: np.ndarray, n_codes: int | None = None) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of non-negative integer codes below ``n_codes``:
    one sort of ``code * n + position`` when that fits in 63 bits."""
    c = np.asarray(codes, dtype=np.int64)
    n = len(c)
    if n_codes is None:
        n_codes = int(c.max()) + 1 if n else 0
    if not n or n_codes * n >= 1 << 62 or c.min() < 0:
        return np.argsort(c, kind="stable")
    packed = np.sort(c * n + np.arange(n, dtype=np.int64))
    return packed % n


def lex_order(minor: np.ndarray, n_minor: int, major: np.ndarray, n_major: int) -> np.ndarray:
    """``np.lexsort((minor, major))`` of integer codes ``0 <= minor < n_minor`` and
    ``0 <= major < n_major``: by major, then minor, then position."""
    minor = np.asarray(minor, dtype=np.int64)
    major = np.asarray(major, dtype=np.int64)
    if n_major * n_minor >= 1 << 62:
        return np.lexsort((minor, major))
    return stable_order(major * n_minor + minor, n_major * n_minor)


class BlockOrder:
    """``np.argsort(group + uniform * 0.5)`` for integer ``group`` and ``uniform`` doubles in
    [0, 1) of numpy's generators, without a float argsort: each group's draws sorted as a row of
    packed integers (one layout for the groups, then any number of draws). Calling it gives
    None where that could differ: two equal keys (their order is numpy's quicksort's then);
    :attr:`usable` is False for a group larger than 1024 or groups so unequal that the rows
    would be mostly padding."""

    def __init__(self, group: np.ndarray):
        g = np.asarray(group)
        self.usable = g.dtype.kind in "iu" and len(g) > 0
        if not self.usable:
            return
        self.group = g.astype(np.int64, copy=False)
        n = len(g)
        lo = int(self.group.min())
        span = int(self.group.max()) - lo + 1
        sizes = np.bincount(self.group - lo)
        sizes = sizes[sizes > 0]
        width = int(sizes.max())
        self.bits = max(1, (width - 1).bit_length())
        self.usable = (span * n < 1 << 62 and self.bits <= _MAX_BLOCK_BITS
                       and len(sizes) * width <= 4 * n + 1024)
        if not self.usable:
            return
        self.by_group = stable_order(self.group - lo, span)
        self.sorted = bool((self.by_group == np.arange(n)).all())
        self.shape = (len(sizes), width)
        self.full = bool((sizes == width).all())             # no padding: a reshape
        self.starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
        self.col = np.arange(n, dtype=np.int64) - self.starts
        if not self.full:
            self.row = np.repeat(np.arange(len(sizes)), sizes)
            self.taken = np.arange(width) < sizes[:, None]

    def __call__(self, uniform: np.ndarray) -> np.ndarray | None:
        u = np.asarray(uniform, dtype=np.float64)
        if not self.sorted:
            u = u[self.by_group]
        ticks = (u * float(1 << _UNIFORM_BITS)).astype(np.int64)     # exact: u = k / 2**53
        packed = (ticks << self.bits) | self.col                      # < 2**63
        if self.full:
            cells = packed.reshape(self.shape)
        else:
            cells = np.full(self.shape, np.iinfo(np.int64).max)        # padding sorts last
            cells[self.row, self.col] = packed
        cells.sort(axis=1)
        within = (cells.reshape(-1) if self.full else cells[self.taken]) & ((1 << self.bits) - 1)
        at = self.starts + within
        order = at if self.sorted else self.by_group[at]
        key = self.group[order] + np.asarray(uniform, dtype=np.float64)[order] * 0.5
        if (key[1:] == key[:-1]).any():
            return None
        return order


def block_order(group: np.ndarray, uniform: np.ndarray) -> np.ndarray | None:
    """:class:`BlockOrder` of ``group`` for one draw (None where it does not apply)."""
    blocks = BlockOrder(group)
    return blocks(uniform) if blocks.usable else None


__all__ = ["BlockOrder", "block_order", "dense_codes", "lex_order", "sorting_order", "stable_order"]
