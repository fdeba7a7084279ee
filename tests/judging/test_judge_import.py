"""``rcp-data judge import``: a judgement store in the authors' toolkit's layout (written here
from a SIMULATED run's store, field by field as that toolkit's record schemas describe them)
becomes the same builder tables ``judge run`` writes."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from rcp_data.cli.main import main
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge
from rcp_data.judging.store import read_identity, read_records

THEIRS = {"length": "truncated", "unparsable": "invalid_json", "wrong-count": "incomplete",
          "refusal": "refused", "out-of-range": "schema", "server-error": "refused"}
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def judged(demo_data, tmp_path_factory):
    """A SIMULATED run of three demo queries: its store and its exported tables."""
    root = tmp_path_factory.mktemp("judged")
    with ServerThread(SimulatedJudge(malformed=0.1)) as srv:
        assert main(["-q", "judge", "run", "--pool", str(demo_data / "release"), "--store",
                     str(root / "store"), "--out", str(root / "ours"), "--endpoint", srv.url,
                     "--model", MODEL, "--limit-queries", "3", "--no-progress",
                     "--context-tokens", "4096", "--attempts", "1"]) == 0
    return root


def _judgement(r: dict, family_key: str, k: int) -> dict:
    stage = "tournament" if r["stage"] == "A" else "rubric"
    values = r["values"] or [None] * len(r["docs"])
    places = []
    for pos, (doc, v) in enumerate(zip(r["docs"], values, strict=True), start=1):
        p = {"position": pos, "doc_id": doc, "chunk_id": None}
        if stage == "tournament":
            p["score"] = v
        else:
            p["criteria"] = None if v is None else {f"C{i + 1}": int(x) for i, x in enumerate(v)}
        places.append(p)
    ranking = None
    if stage == "tournament" and all(v is not None for v in values):
        ranking = [int(i) + 1 for i in np.argsort(-np.asarray(values, float), kind="stable")]
    ok = r["status"] == "ok"
    return {"schema": "rcp-ndcg.judgement.v1", "record_id": r["id"], "dataset": r["split"],
            "query_id": r["query_id"], "stage": stage, "family_key": family_key,
            "window_seq": r["seq"], "phase": r["phase"] if stage == "tournament" else None,
            "placements": places, "ranking": ranking, "response": r["raw"],
            "finish_reason": r["finish_reason"], "valid": ok,
            "invalid_reason": None if ok else (r["detail"] or r["category"]),
            "invalid_category": None if ok else THEIRS[r["category"]],
            "input_tokens": r["usage"]["prompt_tokens"],
            "output_tokens": r["usage"]["completion_tokens"],
            "recorded_at": (T0 + timedelta(seconds=k)).isoformat()}


def write_authors_store(store, out) -> dict[str, int]:
    """Our store's windows in the authors' layout, lines shuffled, with an older invalid copy
    of some valid windows and a torn last line; returns what was planted."""
    ident = read_identity(store)
    records = read_records(store)
    out.mkdir()
    rng = random.Random(7)
    stages, planted = {}, {"duplicates": 0}
    for ours, name, prompt in (("A", "tournament", "prompt_a_sha256"),
                               ("B", "rubric", "prompt_b_sha256")):
        fam = {"stage": name, "judge_model": ident["judge"]["model"], "judge_revision": None,
               "prompt_hash": ident["prompts"][prompt],
               "criteria": ident["prompts"]["criteria"] if name == "rubric" else [],
               "parse_version": 1, "decoding": "json_schema"}
        key = f"{name[:4]}family0000"[:16]
        stages[name] = {"identity": {"stage": name, "schedule": {"seed": 42}}, "family": fam,
                        "family_key": key, "created_at": T0.isoformat(),
                        "package_version": "0.0"}
        lines = [_judgement(r, key, k) for k, r in enumerate(records) if r["stage"] == ours]
        for j in [j for j in lines if j["valid"]][:5]:  # an earlier failed ask of the window
            lines.append(dict(j, valid=False, invalid_reason="no JSON", placements=[
                dict(p, score=None, criteria=None) for p in j["placements"]],
                invalid_category="no_json", ranking=None, recorded_at=T0.isoformat()))
            planted["duplicates"] += 1
        rng.shuffle(lines)
        text = "".join(json.dumps(j) + "\n" for j in lines)
        (out / f"{name}.jsonl").write_text(text + '{"schema": "rcp-ndcg.judgement.v1", "rec')
    (out / "identity.json").write_text(json.dumps({"schema": "rcp-ndcg.judgement-store.v1",
                                                   "stages": stages}))
    return planted


def _sorted(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


def test_import_gives_the_tables_judge_run_wrote(judged, tmp_path, capsys):
    planted = write_authors_store(judged / "store", tmp_path / "theirs")
    assert planted["duplicates"] == 10
    assert main(["judge", "import", str(tmp_path / "theirs"), "--out",
                 str(tmp_path / "imp")]) == 0
    assert capsys.readouterr().out == ""        # quiet off a terminal: the tables are the result
    for name, keys in (("tournament", ["query-id", "call_index", "position"]),
                       ("criteria", ["query-id", "call_index", "corpus-id"])):
        ours = pd.read_parquet(judged / f"ours/judge/{name}.parquet")
        mine = pd.read_parquet(tmp_path / f"imp/judge/{name}.parquet")
        assert list(mine.columns) == list(ours.columns)
        pd.testing.assert_frame_equal(_sorted(mine, keys), _sorted(ours, keys))
    rec = json.loads((tmp_path / "imp/judge/judging.json").read_text())
    want = json.loads((judged / "ours/judge/judging.json").read_text())
    for stage in ("A", "B"):
        for k in ("windows", "queries", "placements_per_document", "input_tokens",
                  "output_tokens", "invalid_windows"):
            assert rec["usage"][stage][k] == want["usage"][stage][k], (stage, k)
    assert want["usage"]["A"]["invalid_windows"] > 0  # the 10% malformed answers
    p = rec["identity"]["prompts"]
    assert p["prompt_a_sha256"] == want["identity"]["prompts"]["prompt_a_sha256"]
    assert p["rubric_sha256"] is None and rec["imported"] is True
    assert json.loads((tmp_path / "imp/judge/judge.json").read_text())["model"] == MODEL
    # calibrate takes the imported tables unchanged
    assert main(["-q", "calibrate", "--criteria", str(tmp_path / "imp/judge/criteria.parquet"),
                 "--tournament", str(tmp_path / "imp/judge/tournament.parquet"), "--out",
                 str(tmp_path / "cal"), "--no-progress"]) == 0


@pytest.mark.parametrize("case", ["no-store", "schema", "bad-line", "prompt-hash"])
def test_import_bad_input_one_line_exit_2_nothing_written(judged, tmp_path, capsys, case):
    theirs = tmp_path / "theirs"
    write_authors_store(judged / "store", theirs)
    if case == "no-store":
        (theirs / "identity.json").unlink()
        want = "identity.json"
    elif case == "schema":
        ident = json.loads((theirs / "identity.json").read_text())
        (theirs / "identity.json").write_text(json.dumps(dict(ident, schema="other/1")))
        want = "field 'schema'"
    elif case == "bad-line":
        path = theirs / "rubric.jsonl"
        lines = path.read_text().split("\n")
        lines[3] = "{not json"
        path.write_text("\n".join(lines))
        want = "rubric.jsonl, row 4"
    else:
        ident = json.loads((theirs / "identity.json").read_text())
        digest = ident["stages"]["tournament"]["family"]["prompt_hash"]
        (theirs / "prompts").mkdir()
        (theirs / "prompts" / f"{digest}.txt").write_text("another prompt")
        want = "does not hash"
    capsys.readouterr()
    assert main(["judge", "import", str(theirs), "--out", str(tmp_path / "imp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and want in err, err
    assert not (tmp_path / "imp").exists()


def _edit_line(path, row: int, edit) -> None:
    lines = path.read_text().split("\n")
    j = json.loads(lines[row - 1])
    edit(j)
    lines[row - 1] = json.dumps(j)
    path.write_text("\n".join(lines))


def _first_scored(j: dict, value) -> None:
    j["placements"][0]["score"] = value


HOSTILE = {  # case -> (edit of tournament.jsonl row 2 / rubric row 2 / a file, the line wanted)
    "score-string": ("tournament", lambda j: _first_scored(j, "7"),
                     "tournament.jsonl, row 2, field 'placements[0].score'"),
    "score-list": ("tournament", lambda j: _first_scored(j, [1]),
                   "tournament.jsonl, row 2, field 'placements[0].score'"),
    "seq-string": ("tournament", lambda j: j.update(window_seq="abc"),
                   "tournament.jsonl, row 2, field 'window_seq'"),
    "seq-huge": ("tournament", lambda j: j.update(window_seq=10 ** 30),
                 "tournament.jsonl, row 2, field 'window_seq'"),
    "ranking-null": ("tournament", lambda j: j.update(ranking=[None, 1]),
                     "tournament.jsonl, row 2, field 'ranking'"),
    "criteria-list": ("rubric", lambda j: j["placements"][0].update(criteria=[1, 0, 1]),
                      "rubric.jsonl, row 2, field 'placements[0].criteria'"),
}


@pytest.mark.parametrize("case", [*sorted(HOSTILE), "deep-json", "identity-deep",
                                  "identity-criteria"])
def test_hostile_import_one_line_naming_file_row_field_exit_2(judged, tmp_path, capsys, case):
    theirs = tmp_path / "theirs"
    write_authors_store(judged / "store", theirs)
    if case in HOSTILE:
        stage, edit, want = HOSTILE[case]
        _edit_line(theirs / f"{stage}.jsonl", 2, edit)
    elif case == "deep-json":
        lines = (theirs / "rubric.jsonl").read_text().split("\n")
        lines[2] = "[" * 200_000 + "]" * 200_000
        (theirs / "rubric.jsonl").write_text("\n".join(lines))
        want = "rubric.jsonl, row 3"
    elif case == "identity-deep":
        (theirs / "identity.json").write_text("{\"a\": " * 200_000)
        want = "identity.json"
    else:
        ident = json.loads((theirs / "identity.json").read_text())
        ident["stages"]["rubric"]["family"]["criteria"] = "C1"
        (theirs / "identity.json").write_text(json.dumps(ident))
        want = "identity.json, field 'stages.rubric.family.criteria'"
    capsys.readouterr()
    assert main(["judge", "import", str(theirs), "--out", str(tmp_path / "imp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and want in err, err
    assert not (tmp_path / "imp").exists()


def test_import_replaces_a_symlink_at_out_judge(judged, tmp_path):
    theirs, outside = tmp_path / "theirs", tmp_path / "outside"
    write_authors_store(judged / "store", theirs)
    outside.mkdir()
    (tmp_path / "imp").mkdir()
    (tmp_path / "imp/judge").symlink_to(outside, target_is_directory=True)
    assert main(["-q", "judge", "import", str(theirs), "--out", str(tmp_path / "imp")]) == 0
    assert not (tmp_path / "imp/judge").is_symlink()
    assert (tmp_path / "imp/judge/criteria.parquet").is_file()
    assert list(outside.iterdir()) == []
