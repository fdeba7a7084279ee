"""The demo suite's SYNTHETIC source: ``queries=N`` keeps the first N queries of each subset."""

from __future__ import annotations

import pytest

from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec
from rcp_data.sources.synthetic import N_QUERIES, read_suite


def test_queries_option_keeps_the_first_queries_and_their_labels():
    spec = load_spec("demo")
    full, small = read_suite(spec), read_suite(spec, {"queries": "2"})
    assert small.facts["queries"] == 2
    for name, sub in full.subsets.items():
        mine = small.subsets[name]
        assert len(sub.queries) == N_QUERIES
        assert mine.queries["id"].tolist() == sub.queries["id"].tolist()[:2]
        want = sub.qrels[sub.qrels["query-id"].isin(mine.queries["id"])]
        assert len(mine.qrels) == len(want) > 0
        assert set(mine.qrels["query-id"]) <= set(mine.queries["id"])
        if sub.excluded is not None:
            assert mine.excluded["query-id"].tolist() == sub.excluded["query-id"].tolist()[:2]
        assert mine.corpus.size == sub.corpus.size == {"alpha": 244, "beta": 240}[name]


@pytest.mark.parametrize("value", ["0", "13", "many"])
def test_queries_option_out_of_range_is_an_input_error(value):
    with pytest.raises(InputError, match="queries"):
        read_suite(load_spec("demo"), {"queries": value})
