"""The store is the truth: every line read, lines that are not records set aside (named, kept in
the quarantine file), only answered windows stored, tables only from a complete store.

A store fuzzer damages a finished SIMULATED run's store (truncated, corrupt, duplicated,
reordered lines, NUL bytes, deep JSON, a record of another identity); a resume against the
SIMULATED server then asks only what the damage took away, and the tables equal an
uninterrupted run's. A fault plan on the server fails every call of some windows in transport
(HTTP 500, reset, truncated body): they are not stored, and the next run asks them."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from support.judge import make_pool, run_simulated

from rcp_data.core.errors import IncompleteStore, RcpDataError
from rcp_data.demo.simulated_judge import SHAPES, FaultPlan, ServerThread, SimulatedJudge
from rcp_data.judging.store import (
    QUARANTINE,
    WINDOWS,
    Store,
    read_records,
    read_runs,
)

N_Q, N_D = 2, 24


def _tables(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (pd.read_parquet(out / "judge/tournament.parquet"),
            pd.read_parquet(out / "judge/criteria.parquet"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted run: its store lines, its tables and how many windows it planned."""
    root = tmp_path_factory.mktemp("ref")
    pool, planted, _ = make_pool(N_Q, N_D)
    with ServerThread(SimulatedJudge(planted, malformed=0.05)) as srv:
        summary = run_simulated(pool, srv.url, root / "s", root / "o")
    assert summary.complete and summary.windows_new == summary.windows_total
    lines = (root / "s" / WINDOWS).read_bytes().splitlines(keepends=True)
    assert len(lines) == summary.windows_total
    return root, pool, planted, lines, _tables(root / "o")


def _copy_store(ref: Path, dst: Path, lines: list[bytes]) -> Path:
    dst.mkdir(parents=True)
    (dst / "identity.json").write_bytes((ref / "s" / "identity.json").read_bytes())
    (dst / WINDOWS).write_bytes(b"".join(lines))
    return dst


def _deep(n: int) -> bytes:
    return b"[" * n + b"]" * n + b"\n"


def _edit(line: bytes, **fields) -> bytes:
    rec = json.loads(line)
    rec.update(fields)
    return json.dumps(rec).encode() + b"\n"


# fault name -> (damaged lines, the lines the damage removed from the store's records)
FAULTS = {
    "truncate-mid-line": lambda ls: (ls[:9] + [ls[9][:40]], set(range(9, len(ls)))),
    "corrupt-middle": lambda ls: (ls[:7] + [b'{"id": "x", "stage": ' + b"\n"] + ls[8:], {7}),
    "nul-line": lambda ls: (ls[:5] + [b"\0" * 30 + b"\n"] + ls[5:], set()),
    "list-line": lambda ls: (ls[:5] + [b"[1, 2]\n"] + ls[5:], set()),
    "no-id": lambda ls: (ls[:3] + [b'{"stage": "A"}\n'] + ls[3:], set()),
    "wrong-types": lambda ls: (ls[:3] + [_edit(ls[3], seq="abc")] + ls[4:], {3}),
    "deep-json": lambda ls: (ls[:4] + [_deep(200_000)] + ls[4:], set()),
    "duplicate": lambda ls: (ls + ls[2:6], set()),
    "reorder": lambda ls: (ls[::-1], set()),
    "other-identity": lambda ls: (ls[:2] + [_edit(ls[2], id="0" * 32)] + ls[3:], {2}),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_store_fuzzer_resume_asks_only_what_was_lost(reference, tmp_path, fault, caplog):
    ref, pool, planted, lines, ref_tables = reference
    damaged, lost = FAULTS[fault](list(lines))
    store = _copy_store(ref, tmp_path / "s", damaged)
    judge = SimulatedJudge(planted, malformed=0.05)
    with caplog.at_level(logging.WARNING, logger="rcp_data.judging.store"), \
            ServerThread(judge) as srv:
        summary = run_simulated(pool, srv.url, store, tmp_path / "o")
    assert summary.complete
    # no stored window asked again: the requests the server saw are exactly the calls the
    # uninterrupted run made for the lost windows
    assert summary.windows_new == len(lost)
    assert summary.windows_stored == len(lines) - len(lost)
    assert sum(judge.asked.values()) == summary.calls == sum(
        json.loads(lines[k])["attempts"] for k in lost)
    held = {r["id"] for r in read_records(store)}
    assert {json.loads(line)["id"] for line in lines} <= held  # no planned window missing
    for a, b in zip(_tables(tmp_path / "o"), ref_tables, strict=True):
        pd.testing.assert_frame_equal(a, b)
    bad = [r for r in caplog.records if "not records" in r.getMessage()]
    if fault in ("truncate-mid-line", "duplicate", "reorder", "other-identity"):
        assert not (store / QUARANTINE).exists()
    else:  # set aside, kept, and named with its line
        assert (store / QUARANTINE).read_bytes().count(b"\n") == 1
        assert len(bad) == 1 and "line " in bad[0].getMessage()
    if fault == "duplicate":
        msgs = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
        assert len(msgs) == 1 and f"line {len(lines) + 1}: duplicate" in msgs[0]
    if fault == "other-identity":
        msgs = [r.getMessage() for r in caplog.records if "another identity" in r.getMessage()]
        assert len(msgs) == 1 and "line 3: a record of another identity" in msgs[0]


def test_a_bad_line_never_ends_the_read(tmp_path, reference, caplog):
    ref, *_ , lines, _ = reference
    store = _copy_store(ref, tmp_path / "s", lines[:4] + [b"\0\0\n", b"{bad\n"] + lines[4:])
    with caplog.at_level(logging.WARNING, logger="rcp_data.judging.store"):
        assert len(read_records(store)) == len(lines)
    msg = [r.getMessage() for r in caplog.records]
    assert len(msg) == 1 and "2 line(s)" in msg[0] and "line 5: NUL bytes" in msg[0] \
        and "line 6: not JSON" in msg[0] and str(store / WINDOWS) in msg[0]
    (store / "runs.jsonl").write_bytes(b'{"seconds": 1.5, "calls": 3}\n[1]\n{"seconds": "x"}\n')
    assert [r["calls"] for r in read_runs(store)] == [3]


@pytest.mark.parametrize("kinds", [("500",), ("reset",), ("truncated",)])
def test_transport_failures_are_not_stored_and_the_next_run_asks_them(reference, tmp_path,
                                                                      kinds):
    ref, pool, planted, lines, ref_tables = reference
    plan = FaultPlan(share=0.15, kinds=kinds)
    judge = SimulatedJudge(planted, malformed=0.05, plan=plan)
    with ServerThread(judge) as srv:
        first = run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o")
        assert not first.complete and first.unanswered > 0 and plan.hits > 0
        assert not (tmp_path / "o").exists()  # no tables from an incomplete store
        stored = {r["id"] for r in read_records(tmp_path / "s")}
        assert all(r["category"] != "server-error" for r in read_records(tmp_path / "s"))
        assert len(stored) < len(lines)
        plan.active = False
        before = dict(judge.asked)
        second = run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o")
    assert second.complete and second.windows_stored == len(stored)
    assert second.windows_new == len(lines) - len(stored)
    # the second run's requests are exactly the uninterrupted run's calls for the windows the
    # first run did not store (none stored was asked again)
    missing = [json.loads(line) for line in lines if json.loads(line)["id"] not in stored]
    assert sum(judge.asked.values()) - sum(before.values()) == second.calls == sum(
        r["attempts"] for r in missing)
    for a, b in zip(_tables(tmp_path / "o"), ref_tables, strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_answers_of_any_json_shape_become_invalid_windows(reference, tmp_path, shape):
    ref, pool, planted, lines, _ = reference
    plan = FaultPlan(share=0.2, kinds=(shape,))
    judge = SimulatedJudge(planted, plan=plan)
    with ServerThread(judge) as srv:
        summary = run_simulated(pool, srv.url, tmp_path / "s", tmp_path / "o")
    assert summary.complete and plan.hits > 0
    bad = [r for r in read_records(tmp_path / "s") if r["status"] == "invalid"]
    assert len(bad) == summary.invalid_new > 0
    category, detail = {
        "choices-string": ("unparsable", "the answer has no choice object"),
        "choices-null": ("unparsable", "the answer has no choice object"),
        "message-string": ("unparsable", "the answer's message is not an object"),
        "usage-list": ("unparsable", "no JSON object in the answer"),
        "content-int": ("unparsable", "the message content is a int, not text"),
        # the text parts joined: "{}" is read, an object that answers no passage
        "content-parts": ("wrong-count", "passages asked, 0 answered")}[shape]
    assert {r["category"] for r in bad} == {category}
    assert all(detail in r["detail"] for r in bad)
    if shape == "content-parts":
        assert {r["raw"] for r in bad} == {"{}"}


def test_identity_values_are_finite(tmp_path, reference):
    ref, *_ = reference
    ident = json.loads((ref / "s" / "identity.json").read_text())
    ident.pop("schema")
    ident["judge"]["temperature"] = float("nan")
    with pytest.raises(RcpDataError, match="not a finite number"):
        Store(tmp_path / "new", ident)
    assert not (tmp_path / "new").exists()
    store = _copy_store(ref, tmp_path / "s", [])
    (store / "identity.json").write_text('{"judge": {"temperature": NaN}}')
    ident["judge"]["temperature"] = 1.0
    with pytest.raises(RcpDataError, match=r"identity.json: not a JSON identity"):
        Store(store, ident)
    (store / "identity.json").write_text("[" * 200_000)
    with pytest.raises(RcpDataError, match=r"identity.json: not a JSON identity"):
        Store(store, ident)


def test_judge_run_with_missing_windows_exits_1_and_writes_no_tables(demo_release_v1, tmp_path,
                                                                    capsys):
    from rcp_data.cli.main import main
    from rcp_data.demo.simulated_judge import MODEL

    plan = FaultPlan(share=0.1, kinds=("500",))
    args = ["-q", "judge", "run", "--pool", str(demo_release_v1), "--store",
            str(tmp_path / "s"), "--out", str(tmp_path / "o"), "--model", MODEL,
            "--no-progress", "--context-tokens", "4096", "--limit-queries", "1",
            "--retries", "1"]
    with ServerThread(SimulatedJudge(plan=plan)) as srv:
        capsys.readouterr()
        assert main([*args, "--endpoint", srv.url]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "planned windows" in err[0] and "no tables written" in err[0]
        assert not (tmp_path / "o" / "judge").exists()
        plan.active = False
        assert main([*args, "--endpoint", srv.url]) == 0
    assert (tmp_path / "o" / "judge" / "tournament.parquet").exists()


def test_incomplete_store_is_a_typed_error():
    assert issubclass(IncompleteStore, RcpDataError) and IncompleteStore.exit_code == 1


@pytest.mark.parametrize("text", ["{", "[1]", '{"judge": {"temperature": Infinity}}'])
def test_judge_status_on_a_broken_identity_one_line_exit_2(tmp_path, capsys, text):
    from rcp_data.cli.main import main

    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "identity.json").write_text(text)
    capsys.readouterr()
    assert main(["judge", "status", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "identity.json" in err, err
