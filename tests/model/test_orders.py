"""The fast exact orders (``scoring.agreement.orders``) against numpy's own argsort, unique and
lexsort on SYNTHETIC arrays with ties, negative numbers and signed zeros."""

from __future__ import annotations

import numpy as np
import pytest

from rcp_data.model import orders


def _floats(rng: np.random.Generator, n: int) -> np.ndarray:
    v = np.round(rng.normal(size=n) * 3, 1)                       # many ties
    v[rng.random(n) < 0.05] = -0.0                                # signed zeros
    v[rng.random(n) < 0.01] = np.inf
    return v


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_codes_and_sorting_order_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    for v in (_floats(rng, 5000), rng.normal(size=3000), rng.integers(-5, 9, 4000),
              rng.integers(0, 2, 50).astype(bool), np.array([2.5]), np.zeros(0)):
        codes, n = orders.dense_codes(v)
        uniq, inv = np.unique(v, return_inverse=True)
        np.testing.assert_array_equal(codes, inv)
        assert n == len(uniq) and codes.dtype == np.int64
        o = orders.sorting_order(v)
        np.testing.assert_array_equal(v[o], np.sort(v))
        assert sorted(o.tolist()) == list(range(len(v)))
    with_nan = np.array([1.0, np.nan, 0.0, np.nan])               # numpy's own answer
    np.testing.assert_array_equal(orders.dense_codes(with_nan)[0],
                                  np.unique(with_nan, return_inverse=True)[1])


@pytest.mark.parametrize("seed", [3, 4])
def test_stable_and_lex_orders_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    major = rng.integers(0, 40, 6000)
    minor = rng.integers(0, 7, 6000)
    np.testing.assert_array_equal(orders.stable_order(major, 40),
                                  np.argsort(major, kind="stable"))
    np.testing.assert_array_equal(orders.stable_order(major), np.argsort(major, kind="stable"))
    np.testing.assert_array_equal(orders.lex_order(minor, 7, major, 40),
                                  np.lexsort((minor, major)))
    huge = np.array([3, 1, 2, 1])                                 # codes too wide to pack
    np.testing.assert_array_equal(orders.lex_order(huge, 1 << 40, huge, 1 << 40),
                                  np.lexsort((huge, huge)))
    assert len(orders.stable_order(np.zeros(0, dtype=np.int64))) == 0
    in_order = np.sort(major)                                     # already sorted: itself
    np.testing.assert_array_equal(orders.stable_order(in_order, 40),
                                  np.argsort(in_order, kind="stable"))


@pytest.mark.parametrize("seed", [5, 6])
def test_lexsort_order_equals_lexsort_on_every_key_type(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    cases = [
        (rng.integers(-3, 4, n), rng.integers(0, 2, n).astype(bool)),          # bool, negative
        (rng.integers(0, 1 << 20, n), rng.integers(0, 5, n)),                   # wide first key
        (rng.integers(0, 1 << 62, n, dtype=np.uint64), rng.integers(0, 3, n)),  # uint64
        (np.round(rng.normal(size=n), 1), rng.integers(0, 3, n)),               # floats
        (np.sort(rng.integers(0, 9, n)), np.zeros(n, dtype=np.int64)),          # in order
        (rng.integers(0, 1 << 40, n), rng.integers(0, 1 << 40, n)),             # too wide to pack
    ]
    for keys in cases:
        np.testing.assert_array_equal(orders.lexsort_order(*keys), np.lexsort(keys[::-1]))
    assert len(orders.lexsort_order(np.zeros(0, dtype=np.int64))) == 0
