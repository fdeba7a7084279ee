"""The pair-key kernels (``rcp_data.model.keys``) against plain Python and numpy references,
through both of their paths: a table over a small key range, and a sort for a wide one."""

from __future__ import annotations

import numpy as np
import pytest

from rcp_data.model.keys import KeyIds, contains, rows_of
from rcp_data.model.orders import in_order, lexsort_order

RNG = np.random.default_rng(11)


def _cases():
    for n in (0, 1, 2, 7, 40):
        for m in (0, 1, 5, 60):
            for wide in (False, True):       # wide: keys far apart, the sorting path
                scale = 10**12 if wide else 1
                a = RNG.integers(-1, 25, n) * scale
                b = RNG.integers(-1, 25, m) * scale
                yield a, b
    sorted_keys = np.sort(RNG.integers(0, 10**13, 500))     # sorted and wide: no argsort
    yield RNG.choice(sorted_keys, 300), np.repeat(sorted_keys, 2)


@pytest.mark.parametrize("probe,keys", list(_cases()))
def test_rows_of_is_the_first_row_of_each_key(probe, keys):
    want = [next((i for i, k in enumerate(keys.tolist()) if k == p), -1) for p in probe.tolist()]
    assert rows_of(keys, probe).tolist() == want


@pytest.mark.parametrize("a,b", list(_cases()))
def test_contains_is_isin(a, b):
    assert contains(a, b).tolist() == [x in set(b.tolist()) for x in a.tolist()]


@pytest.mark.parametrize("seed", range(40))
def test_stable_order_is_lexsort_sorted_or_not(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 50))
    keys = [rng.integers(-2, int(rng.integers(1, 6)), n) for _ in range(int(rng.integers(1, 4)))]
    if seed % 2 and n:                                # rows already in order: the identity
        o = np.lexsort(keys[::-1])
        keys = [k[o] for k in keys]
    want = np.lexsort(keys[::-1]) if n else np.zeros(0, dtype=np.int64)
    assert lexsort_order(*keys).tolist() == want.tolist()
    assert in_order(*keys) == (want.tolist() == list(range(n)))


def test_key_ids_number_keys_in_key_order_both_ways():
    for scale in (1, 10**12):
        parts = [RNG.integers(-1, 30, 50) * scale, np.zeros(0, dtype=np.int64),
                 RNG.integers(-1, 30, 20) * scale]
        ids = KeyIds(*parts)
        distinct = np.unique(np.concatenate(parts))
        for part, i in zip(parts, ids.ids, strict=True):
            assert ids.key(i).tolist() == part.tolist()
            assert (i >= 0).all() and (i < ids.n).all()
        # ids rise with the keys: the order of ids is the order of keys
        order = np.argsort(ids.key(np.concatenate(ids.ids)), kind="stable")
        assert np.array_equal(np.concatenate(ids.ids)[order],
                              np.sort(np.concatenate(ids.ids), kind="stable"))
        assert len(np.unique(np.concatenate(ids.ids))) == len(distinct)


def test_key_ids_within_a_known_range_are_the_keys():
    keys = RNG.integers(0, 1000, 200)
    ids = KeyIds(keys, keys[:10], within=1000)
    assert ids.n == 1000 and ids.ids[0] is keys and ids.key(ids.ids[1]).tolist() == keys[:10].tolist()
