"""The verdict reading rule and the per-(query, document) counts the calibration fits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rcp_data.calibration.verdicts import count_verdicts, read_verdicts
from rcp_data.core.errors import InputError, SchemaError
from rcp_data.demo.simulate import simulate_verdicts


def _table(rows: list[tuple]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["query-id", "call_index", "corpus-id", "C1", "C2", "C3",
                                     "finish_reason"])
    return df.astype({"C1": "Int8", "C2": "Int8", "C3": "Int8"})


ROWS = [
    # window (q1, 0): complete
    ("q1", 0, "a", 1, 1, 0, "stop"), ("q1", 0, "b", 0, 0, 0, "stop"),
    # window (q1, 1): "b" misses C3 -> the whole window (3 rows) is left out
    ("q1", 1, "a", 1, 0, 0, "length"), ("q1", 1, "b", 1, 1, None, "length"),
    ("q1", 1, "c", 1, 1, 1, "length"),
    # window (q1, 2): complete, "a" again
    ("q1", 2, "a", 1, 1, 1, "stop"), ("q1", 2, "c", 0, 0, 0, "stop"),
    # window (q2, 1): same call_index as a left-out q1 window, but another query: kept
    ("q2", 1, "a", 0, 1, 0, "stop"),
    # window (q2, 5): every row misses C1
    ("q2", 5, "b", None, 0, 0, "stop"),
]


def test_reading_rule_counts_windows_and_rows_left_out():
    counts = count_verdicts(_table(ROWS))
    st = counts.stats
    assert (st.rows_total, st.rows_used, st.rows_left_out) == (9, 5, 4)
    assert (st.windows_total, st.windows_used, st.windows_left_out) == (5, 3, 2)
    assert st.missing_by_criterion == {"C1": 1, "C2": 0, "C3": 1}
    got = counts.frame().set_index(["query-id", "corpus-id"])
    # hand-worked from the kept windows (q1,0), (q1,2), (q2,1)
    assert got.loc[("q1", "a")].tolist() == [2, 2, 2, 1]
    assert got.loc[("q1", "b")].tolist() == [1, 0, 0, 0]
    assert got.loc[("q1", "c")].tolist() == [1, 0, 0, 0]
    assert got.loc[("q2", "a")].tolist() == [1, 0, 1, 0]
    assert ("q2", "b") not in got.index
    assert counts.n_responses == 5


def test_counts_match_a_groupby_on_simulated_verdicts():
    table, _, sim = simulate_verdicts(7, 30, 25, seed=3)
    df = table.to_pandas()
    # knock one answer out of 4 windows
    for i in (5, 300, 301, 1200):
        df.loc[i, "C2"] = None
    df["C2"] = df["C2"].astype("Int8")
    counts = count_verdicts(df)
    bad = df.loc[df["C2"].isna(), ["query-id", "call_index"]].drop_duplicates()
    assert counts.stats.windows_left_out == len(bad) == 3
    key = df.set_index(["query-id", "call_index"]).index
    keep = ~key.isin(pd.MultiIndex.from_frame(bad))
    assert counts.stats.rows_left_out == int((~keep).sum()) == 30
    ref = (df[keep].astype({"C2": "int64"}).groupby(["query-id", "corpus-id"])
           .agg(n=("C1", "size"), C1=("C1", "sum"), C2=("C2", "sum"), C3=("C3", "sum"),
                C4=("C4", "sum"), C5=("C5", "sum")).reset_index())
    got = counts.frame()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), ref, check_dtype=False)
    # without knock-outs the counts are the simulation's own
    full = count_verdicts(table)
    assert full.n.sum() == table.num_rows == sim.n.sum()
    assert full.passes.sum() == sim.passes.sum()


def test_parquet_path_reads_dictionary_ids(tmp_path):
    table, _, _ = simulate_verdicts(3, 20, 6, seed=1)
    pq.write_table(table, tmp_path / "v.parquet", row_group_size=50)
    a = count_verdicts(read_verdicts(tmp_path / "v.parquet"))
    b = count_verdicts(table.to_pandas())
    pd.testing.assert_frame_equal(a.frame(), b.frame())


def test_bad_answer_names_row_and_field():
    rows = [r for r in ROWS]
    rows[6] = ("q1", 2, "c", 0, 2, 0, "stop")
    with pytest.raises(InputError, match=r"row 6, field 'C2'.*not 0 or 1"):
        count_verdicts(_table(rows), source="criteria.parquet")


def test_schema_problems_are_named(tmp_path):
    df = _table(ROWS).drop(columns="call_index")
    with pytest.raises(SchemaError, match="call_index"):
        count_verdicts(df)
    gap = _table(ROWS).rename(columns={"C3": "C4"})
    with pytest.raises(SchemaError, match="without gaps"):
        count_verdicts(gap)
    pq.write_table(pa.table({"query-id": ["q"], "call_index": [0], "corpus-id": ["d"]}),
                   tmp_path / "x.parquet")
    with pytest.raises(SchemaError, match=r"x\.parquet.*no criterion columns"):
        read_verdicts(tmp_path / "x.parquet")
    with pytest.raises(InputError, match="missing file"):
        read_verdicts(tmp_path / "nope.parquet")


def test_no_complete_window_is_an_error():
    rows = [("q1", 0, "a", 1, None, 0, "length"), ("q1", 1, "b", None, 0, 0, "length")]
    with pytest.raises(InputError, match="nothing to fit"):
        count_verdicts(_table(rows))


def test_counts_sorted_by_query_then_document():
    counts = count_verdicts(_table(list(reversed(ROWS))))
    keys = list(zip(counts.query_id, counts.corpus_id, strict=True))
    assert keys == sorted(keys)
    assert np.array_equal(counts.n, [2, 1, 1, 1])
