"""The judging schedules (paper App. C.2, Tables 2 and 4): exact counts, twins, adaptive picks."""

from __future__ import annotations

import numpy as np
import pytest

from rcp_data.cli.main import main
from rcp_data.core.errors import RcpDataError
from rcp_data.judging.schedule import query_rng, stage_a, stage_b
from rcp_data.judging.settings import make_schedule, plan_query, stage_b_unshown, suite_preset


def _drive(gen, answer):
    windows = []
    try:
        batch = next(gen)
        while True:
            windows += batch
            batch = gen.send({w.seq: answer(w) for w in batch})
    except StopIteration:
        return windows


def test_full_preset_at_pool_150_gives_the_paper_counts():
    p = plan_query(150, make_schedule("full"))
    assert p.calls_a == {"random": 106, "stratified": 54, "adaptive": 56}
    assert p.total_a == 216 and p.placements_a == pytest.approx(14.4)
    assert p.calls_b == {"balanced": 50, "grouped": 50}
    assert p.total_b == 100 and p.placements_b == pytest.approx(6.6667, abs=1e-4)


def test_reduced_preset_lands_in_table_4_for_trec_dl_pools():
    s = make_schedule("reduced")
    for n in range(198, 586):
        p = plan_query(n, s)
        assert p.calls_a["random"] and not p.reversed_copies
        assert 11.27 <= p.placements_a <= 13.08, n
        assert 3.90 <= p.placements_b <= 3.96, n
    mean = plan_query(287, s)  # the mean TREC-DL pool
    assert 325 <= mean.total_a <= 375
    assert mean.total_b == 113


def test_stage_b_only_and_overrides():
    p = plan_query(150, make_schedule("stage-b-only"))
    assert p.total_a == 0 and p.total_b == 100
    s = make_schedule("full", {"a.window": "5", "b.placements": "10"})
    p = plan_query(150, s)
    assert p.window_a == 5 and p.random == 106 and p.calls_a["random"] == 212
    assert p.total_b == 150


def test_suite_presets_come_from_the_specs():
    from rcp_data.core.specs import load_spec

    assert suite_preset(load_spec("trecdl")) == "reduced"
    assert suite_preset(load_spec("vidore_v3")) == "stage-b-only"
    assert suite_preset(load_spec("nanobeir")) == "full"


def test_stage_a_scheduler_twins_phases_and_adaptive_ranks():
    s = make_schedule("full")
    rng = np.random.default_rng(5)
    rel = rng.normal(0, 1.5, 150)
    noise = np.random.default_rng(6)

    def answer(w):
        d = np.asarray(w.docs)
        return np.clip(rel[d] + noise.normal(0, 0.6, len(d)), -5, 5)

    wins = _drive(stage_a(150, s, query_rng(42, "A", "q1")), answer)
    assert len(wins) == 216 and [w.seq for w in wins] == list(range(216))
    by_seq = {w.seq: w for w in wins}
    twins = [w for w in wins if w.twin is not None]
    assert len(twins) == 80
    assert all(by_seq[w.twin].docs == w.docs[::-1] for w in twins)
    assert all(len(set(w.docs)) == 10 for w in wins)
    rank = np.argsort(np.argsort(-rel))
    mean_rank = {ph: np.mean([rank[list(w.docs)].mean() for w in wins if w.phase == ph])
                 for ph in ("random", "adaptive")}
    assert mean_rank["adaptive"] < mean_rank["random"] - 3
    counts = np.bincount([d for w in wins if w.phase == "random" and w.twin is None
                          for d in w.docs], minlength=150)
    assert counts.max() - counts.min() <= 1  # balanced random windows (and their twins)
    # the same seed and answers give the same windows
    noise = np.random.default_rng(6)
    again = _drive(stage_a(150, s, query_rng(42, "A", "q1")), answer)
    assert [w.docs for w in again] == [w.docs for w in wins]


def test_stage_b_scheduler_balances_then_groups():
    s = make_schedule("full")
    rel = np.linspace(3, -3, 150)
    wins = _drive(stage_b(150, s, query_rng(42, "B", "q")),
                  lambda w: (rel[np.asarray(w.docs)][:, None] > np.array([-1, 0, 1, 2, 2.5])
                             ).astype(int))
    assert len(wins) == 100 and {w.phase for w in wins} == {"balanced", "grouped"}
    bal = np.bincount([d for w in wins[:50] for d in w.docs], minlength=150)
    assert bal.max() - bal.min() <= 1
    spread = [np.ptp(rel[list(w.docs)]) for w in wins]
    assert np.mean(spread[50:]) < 0.5 * np.mean(spread[:50])  # grouped: similar estimates


def test_judge_plan_cli(capsys):
    assert main(["judge", "plan", "--pool-size", "150", "--queries", "3", "--json"]) == 0
    import json

    r = json.loads(capsys.readouterr().out)
    assert r["calls"]["A"] == {"random": 318, "stratified": 162, "adaptive": 168, "total": 648}
    assert r["calls"]["B"]["total"] == 300
    assert r["placements_per_document"]["A"] == pytest.approx(14.4)
    assert main(["judge", "plan", "--pool-size", "150", "--preset", "nope"]) == 2


def _adaptive_starts(n: int, overrides: dict[str, str]) -> list[int]:
    """The rank (in the order the adaptive batch was picked from) where each adaptive window
    starts, on a pool of ``n`` with a noisy judge; the order is refit as the scheduler does."""
    from rcp_data.judging.estimates import fit_bt

    s = make_schedule("full", overrides)
    rel = np.random.default_rng(11).normal(0, 1.5, n)
    noise = np.random.default_rng(12)
    gen = stage_a(n, s, query_rng(42, "A", "q240"))
    answered, starts = [], []
    batch = next(gen)
    try:
        while True:
            if batch[0].phase == "adaptive":
                order = np.argsort(-fit_bt(n, answered), kind="stable")
                rank_of = np.empty(n, dtype=np.int64)
                rank_of[order] = np.arange(n)
                starts += [int(rank_of[list(w.docs)].min()) for w in batch]
            answers = {}
            for w in batch:
                d = np.asarray(w.docs)
                answers[w.seq] = np.clip(rel[d] + noise.normal(0, 0.6, len(d)), -5, 5)
                answered.append((d, answers[w.seq]))
            batch = gen.send(answers)
    except StopIteration:
        return starts


def test_adaptive_windows_stay_in_the_top_150_ranks_by_default():
    starts = _adaptive_starts(240, {})
    assert len(starts) == plan_query(240, make_schedule("full")).calls_a["adaptive"] == 91
    assert max(starts) <= 150 - 10  # every adaptive window lies within ranks 0..149
    deeper = _adaptive_starts(240, {"a.adaptive_depth": "300"})
    assert len(deeper) == 91 and sum(s >= 150 for s in deeper) > 0
    with pytest.raises(RcpDataError, match="a.adaptive_depth=5 is below the Stage A window"):
        make_schedule("full", {"a.adaptive_depth": "5"})


JUDGE = {"model": "SIMULATED"}


def test_default_depth_keeps_the_schedule_identity_of_older_stores(tmp_path):
    """A store written before ``adaptive_depth`` existed (its identity.json holds the schedule
    without it) still resumes with the default; another depth is refused, named."""
    from rcp_data.judging.store import Store

    before = {"preset": "full", "seed": 42,
              "stage_a": {"window": 10, "random_placements": 53 * 10 / 150,
                          "stratified_placements": 27 * 10 / 150, "reversed_copies": True,
                          "adaptive_placements": 7 * 8 * 10 / 150, "adaptive_batches": 7,
                          "discount": 0.3},
              "stage_b": {"window": 10, "placements": 100 * 10 / 150, "balanced_share": 0.5}}
    Store(tmp_path / "s", {"judge": JUDGE, "schedule": before}).close()
    Store(tmp_path / "s", {"judge": JUDGE, "schedule": make_schedule("full").to_dict()}).close()
    deeper = make_schedule("full", {"a.adaptive_depth": "300"}).to_dict()
    assert deeper["stage_a"]["adaptive_depth"] == 300
    with pytest.raises(RcpDataError, match=r"schedule\.stage_a\.adaptive_depth"):
        Store(tmp_path / "s", {"judge": JUDGE, "schedule": deeper})


def test_stage_b_bounds_hold_the_unshown_count_of_a_real_schedule():
    s = make_schedule("full", {"b.placements": "0.5"})
    low, high = stage_b_unshown(150, s)
    assert (low, high) == (70, 110)  # 8 windows of 10: 4 balanced (40), 4 grouped (31 or more)
    rel = np.linspace(3, -3, 150)
    for q in range(20):
        wins = _drive(stage_b(150, s, query_rng(42, "B", f"q{q}")),
                      lambda w: (rel[np.asarray(w.docs)][:, None] > np.array([-1, 0, 1])
                                 ).astype(int))
        unshown = 150 - len({d for w in wins for d in w.docs})
        assert low <= unshown <= high
    for preset in ("full", "reduced", "stage-b-only"):
        assert all(stage_b_unshown(n, make_schedule(preset)) == (0, 0) for n in range(1, 600))


def test_plan_refuses_a_schedule_that_leaves_documents_unshown(capsys):
    code = main(["judge", "plan", "--pool-size", "150", "--queries", "3",
                 "--set", "b.placements=0.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].endswith(
        "schedule leaves documents never shown to Stage B: 3 of 3 queries; a pool of 150 gets "
        "8 windows of 10 (4 balanced, 4 grouped), which leave 70 to 110 of its 150 documents "
        "unshown; raise b.placements (now 0.5)")
