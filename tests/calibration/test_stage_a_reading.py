"""Stage A answers: the table's checks, the reading rules counted on a hand-made table, and the
observations (soft pairs, the fallback's hard pairs) they give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.special import expit

from rcp_data.calibration.bt import BtObjective
from rcp_data.calibration.bt_pairs import pair_statistics
from rcp_data.calibration.tournament import (
    FALLBACK,
    PARTIAL,
    SOFT,
    UNREADABLE,
    classify_windows,
    load_tournament,
    read_tournament,
)
from rcp_data.calibration.verdicts import count_verdicts
from rcp_data.cli import main
from rcp_data.core.errors import InputError, SchemaError, UsageError
from rcp_data.model.tables import write_parquet

N = None
# (query, call, phase, docs, scores, ranks) -- what each window is, under each rule
WINDOWS = [
    ("q1", 0, "random", "abc", [1.0, -2.0, 0.5], [1, 3, 2]),  # soft
    ("q1", 1, "random", "cba", [0.5, -2.0, 1.0], [2, 3, 1]),  # soft (the reversed copy)
    ("q1", 2, "stratified", "ade", [N, N, N], [2, 1, 3]),  # unreadable; complete ranking
    ("q1", 3, "stratified", "bcd", [N, N, N], [1, N, 2]),  # unreadable; ranking incomplete
    ("q1", 4, "adaptive", "ae", [2.0, N], [1, N]),  # partial: a score missing
    ("q1", 5, "adaptive", "deb", [1.0, 6.5, 0.0], [1, 2, 3]),  # partial: 6.5 out of range
    ("q1", 6, "other", "ac", [1.0, 2.0], [N, 1]),  # partial: a rank missing
    ("q1", 7, "other", "eab", [np.nan, np.nan, np.nan], [1, 1, 2]),  # unreadable; tied ranks
    ("q2", 0, "random", "xy", [0.0, 0.0], [1, 2]),  # soft, a tie
]
STATUS = {"complete": [SOFT, SOFT, UNREADABLE, UNREADABLE, PARTIAL, PARTIAL, PARTIAL,
                       UNREADABLE, SOFT],
          "hard-fallback": [SOFT, SOFT, FALLBACK, UNREADABLE, PARTIAL, PARTIAL, PARTIAL,
                            UNREADABLE, SOFT]}


def hand_table(windows=WINDOWS) -> pd.DataFrame:
    rows = []
    for q, call, phase, docs, scores, ranks in windows:
        for pos, (d, s, r) in enumerate(zip(docs, scores, ranks, strict=True)):
            rows.append((q, call, phase, pos, f"{q}-{d}", r, s, "stop"))
    frame = pd.DataFrame(rows, columns=["query-id", "call_index", "phase", "position",
                                        "corpus-id", "judge_rank", "score", "finish_reason"])
    return frame.astype({"judge_rank": "Int64", "score": "Float64"})


@pytest.mark.parametrize("rule", ["complete", "hard-fallback"])
def test_rules_count_every_window_by_cause(rule):
    t = load_tournament(hand_table())
    reading = classify_windows(t, rule)
    assert reading.status.tolist() == STATUS[rule]
    st = reading.stats
    fallback = rule == "hard-fallback"
    assert (st.rule, st.windows_total, st.rows_total) == (rule, 9, 24)
    assert st.windows_used == 3 + fallback
    assert st.windows_fallback == int(fallback)
    assert st.windows_unreadable == 3 - fallback
    assert st.windows_partial == 3
    assert st.rows_used == 8 + 3 * fallback
    d = st.to_dict()
    assert d["windows_left_out_by_cause"] == {"unreadable": 3 - fallback, "partial": 3}
    assert d["windows_left_out"] == 6 - fallback
    # missing answers: scores null, NaN or out of range; ranks null
    assert d["missing_answers"] == {"score": 11, "judge_rank": 3}


def _pairs(t, stats) -> dict:
    return {(t.doc_id[lo], t.doc_id[hi]): w
            for lo, hi, w in zip(stats.lo, stats.hi, stats.weight, strict=True)}


def test_fallback_turns_the_ranking_into_hard_pairs():
    t = load_tournament(hand_table())
    soft_only = _pairs(t, pair_statistics(t, classify_windows(t, "complete").status))
    both = _pairs(t, pair_statistics(t, classify_windows(t, "hard-fallback").status))
    # the two soft windows of q1 show a, b, c: each pair twice, weight 2/3 each time
    for pair in (("q1-a", "q1-b"), ("q1-a", "q1-c"), ("q1-b", "q1-c")):
        assert soft_only[pair] == pytest.approx(4 / 3) and both[pair] == pytest.approx(4 / 3)
    assert soft_only[("q2-x", "q2-y")] == pytest.approx(1.0)  # a window of 2: weight 2/2
    # window 2 ranks d (1) > a (2) > e (3): three hard pairs of weight 1
    hard = {k: v for k, v in both.items() if k not in soft_only}
    assert hard == {("q1-a", "q1-d"): 1.0, ("q1-a", "q1-e"): 1.0, ("q1-d", "q1-e"): 1.0}


def observations(rule: str) -> dict[str, list[tuple[str, str, float, float]]]:
    """(winner, loser, label, weight) of every observation, written out from WINDOWS."""
    out: dict[str, list] = {}
    for q, _call, _phase, docs, scores, ranks in WINDOWS:
        s = np.array([np.nan if v is None else v for v in scores], dtype=float)
        r = np.array([np.nan if v is None else v for v in ranks], dtype=float)
        w = len(docs)
        readable = np.isfinite(s) & (np.abs(s) <= 5)
        pairs = [(i, j) for i in range(w) for j in range(i + 1, w)]
        if readable.all() and np.isfinite(r).all():
            for i, j in pairs:
                win, lose = (i, j) if s[i] >= s[j] else (j, i)
                label = min(max(expit(abs(s[i] - s[j])), 0.01), 0.99)
                out.setdefault(q, []).append((docs[win], docs[lose], label, 2 / w))
        elif (rule == "hard-fallback" and not readable.any() and np.isfinite(r).all()
              and len(set(r)) == w):
            for i, j in pairs:
                win, lose = (i, j) if r[i] < r[j] else (j, i)
                out.setdefault(q, []).append((docs[win], docs[lose], 1.0, 1.0))
    return out


@pytest.mark.parametrize("rule", ["complete", "hard-fallback"])
def test_objective_equals_the_written_out_cross_entropy(rule):
    """The reduced statistics give the design note's loss and its gradient exactly."""
    t = load_tournament(hand_table())
    stats = pair_statistics(t, classify_windows(t, rule).status)
    obj = BtObjective(stats, np.arange(t.n_queries), t.query_start, 1e-4, torch.device("cpu"))
    rng = np.random.default_rng(0)
    theta = torch.tensor(rng.normal(size=(t.n_queries, obj.dmax)))
    value, grad = obj.evaluate(theta)
    obs = observations(rule)
    for qi, q in enumerate(t.query_id):
        docs = [d.split("-")[1] for d in t.doc_id[t.query_start[qi]:t.query_start[qi + 1]]]
        th = dict(zip(docs, theta[qi, :len(docs)].numpy(), strict=True))
        total = sum(o[3] for o in obs[q])
        loss, g = 0.0, dict.fromkeys(docs, 0.0)
        for win, lose, y, w in obs[q]:
            p = expit(th[win] - th[lose])
            loss += w * -(y * np.log(p) + (1 - y) * np.log(1 - p))
            g[win] += w * (p - y) / total
            g[lose] -= w * (p - y) / total
        ridge = 0.5e-4 * sum(v * v for v in th.values())
        assert float(value[qi]) == pytest.approx(loss / total + ridge, rel=1e-13, abs=1e-13)
        expected = [g[d] + 1e-4 * th[d] for d in docs]
        np.testing.assert_allclose(grad[qi, :len(docs)].numpy(), expected, rtol=1e-12,
                                   atol=1e-14)


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda f: f.drop(columns="phase"), "phase", "missing column 'phase'"),
    (lambda f: f.assign(phase=f["phase"].replace("other", "bonus")), "phase",
     "phase 'bonus' is not one of random, stratified, adaptive, other"),
    (lambda f: f.assign(position=f["position"].mask(f.index == 2, 5)), "position",
     "positions [0, 1, 5] are not 0..2"),
    (lambda f: f.assign(**{"corpus-id": f["corpus-id"].mask(f.index == 1, "q1-a")}),
     "corpus-id", "document 'q1-a' is shown twice in one window"),
    (lambda f: f.assign(judge_rank=f["judge_rank"].mask(f.index == 4, 0)), "judge_rank",
     "judge_rank 0 is not a 1-based place"),
    (lambda f: f.assign(phase=f["phase"].mask(f.index == 1, "adaptive")), "phase",
     "rows of one window name different phases"),
    (lambda f: f.assign(**{"query-id": f["query-id"].mask(f.index == 3, None)}), "query-id",
     "1 rows have no query-id"),
])
def test_bad_tables_are_one_line_errors_naming_file_row_and_field(tmp_path, change, field,
                                                                   message):
    path = tmp_path / "tournament.parquet"
    write_parquet(change(hand_table()), path)
    with pytest.raises(InputError) as err:
        load_tournament(read_tournament(path), source=str(path))
    text = err.value.message
    assert str(path) in text and f"field {field!r}" in text and message in text
    assert "\n" not in text
    if field != "phase" or "missing" not in message:
        assert "row " in text


def test_row_numbers_are_the_files():
    frame = hand_table().sample(frac=1.0, random_state=1).reset_index(drop=True)
    bad = int(np.flatnonzero((frame["call_index"] == 4).to_numpy()
                             & (frame["query-id"] == "q1").to_numpy())[0])
    frame.loc[bad, "judge_rank"] = -3
    with pytest.raises(InputError, match=rf"row {bad + 1}, field 'judge_rank'"):
        load_tournament(frame, source="t.parquet")


def test_float_ranks_from_pandas_are_read_when_whole():
    frame = hand_table().astype({"judge_rank": "float64"})
    assert classify_windows(load_tournament(frame), "complete").stats.windows_used == 3
    frame.loc[0, "judge_rank"] = 1.5
    with pytest.raises(InputError, match="judge_rank 1.5 is not a whole number"):
        load_tournament(frame)


def test_wrong_types_are_schema_errors():
    with pytest.raises(SchemaError, match="column 'score' has type large_string, expected number"):
        load_tournament(hand_table().astype({"score": str}))


def test_cli_bad_tournament_exits_2_without_traceback(tmp_path, capsys):
    path = tmp_path / "t.parquet"
    write_parquet(hand_table().drop(columns="judge_rank"), path)
    crit = pd.DataFrame({"query-id": ["q1"], "call_index": [0], "corpus-id": ["q1-a"],
                         "C1": [1], "finish_reason": ["stop"]})
    write_parquet(crit, tmp_path / "c.parquet")
    rc = main(["calibrate", "--criteria", str(tmp_path / "c.parquet"), "--tournament",
               str(path), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "t.parquet" in err and "'judge_rank'" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_stage_b_uses_the_same_rule_vocabulary():
    rows = []
    for call, answers in enumerate([[(1, 0), (0, 0)], [(None, None), (None, None)],
                                    [(1, None), (0, 1)], [(1, 1), (1, 0)]]):
        for d, (c1, c2) in enumerate(answers):
            rows.append(("q", call, f"d{d}", c1, c2, "stop"))
    frame = pd.DataFrame(rows, columns=["query-id", "call_index", "corpus-id", "C1", "C2",
                                        "finish_reason"]).astype({"C1": "Int8", "C2": "Int8"})
    st = count_verdicts(frame).stats
    assert (st.rule, st.windows_used, st.windows_unreadable, st.windows_partial) == (
        "complete", 2, 1, 1)
    assert st.to_dict()["windows_left_out_by_cause"] == {"unreadable": 1, "partial": 1}
    with pytest.raises(UsageError, match="no ranking to fall back on"):
        count_verdicts(frame, rule="hard-fallback")
