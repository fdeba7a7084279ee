"""Writes stay inside ``--out``: an output that is, contains or sits inside an input is refused
(one line, exit 2, nothing written), and a symbolic link at a written folder is replaced, never
written through."""

from __future__ import annotations

import shutil

import pytest
from support.byob_fixtures import write_grammar_benchmark
from support.demo_fixture import copy_demo

from rcp_data.cli.main import main
from rcp_data.core.errors import UsageError
from rcp_data.core.outputs import check_apart, own_folder
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge


@pytest.fixture(scope="module")
def server():
    with ServerThread(SimulatedJudge()) as srv:
        yield srv


def _judge(release, out, store, server):
    return main(["-q", "judge", "run", "--pool", str(release), "--store", str(store),
                 "--out", str(out), "--endpoint", server.url, "--model", MODEL,
                 "--limit-queries", "1", "--no-progress", "--context-tokens", "4096"])


def test_check_apart_and_own_folder(tmp_path):
    (tmp_path / "in").mkdir()
    for out, how in ((tmp_path / "in", "is"), (tmp_path / "in/x", "sits inside"),
                     (tmp_path, "contains")):
        with pytest.raises(UsageError, match=f"--out {out} {how} the input --from"):
            check_apart(out, {"--from": tmp_path / "in"})
    assert check_apart(tmp_path / "elsewhere", {"--from": tmp_path / "in"}) == \
        tmp_path / "elsewhere"
    (tmp_path / "o").mkdir()
    (tmp_path / "o/judge").symlink_to(tmp_path / "in", target_is_directory=True)
    assert own_folder(tmp_path / "o/judge").is_dir()
    assert not (tmp_path / "o/judge").is_symlink()


def test_judge_run_replaces_a_symlink_at_out_judge(demo_release_v1, server, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "o").mkdir()
    (tmp_path / "o/judge").symlink_to(outside, target_is_directory=True)
    assert _judge(demo_release_v1, tmp_path / "o", tmp_path / "s", server) == 0
    assert not (tmp_path / "o/judge").is_symlink()
    assert (tmp_path / "o/judge/tournament.parquet").is_file()
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("case", ["out-is-pool", "out-in-pool", "out-has-store"])
def test_judge_run_out_apart_from_pool_and_store(demo_data, server, tmp_path, capsys, case):
    release = copy_demo(demo_data, tmp_path / "release")
    before = sorted(p.relative_to(release) for p in release.rglob("*"))
    out = {"out-is-pool": release, "out-in-pool": release / "sub",
           "out-has-store": tmp_path}[case]
    capsys.readouterr()
    assert _judge(release, out, tmp_path / "s", server) == 2
    err = capsys.readouterr().err.strip()
    want = "the input --store" if case == "out-has-store" else "the input --pool"
    assert len(err.splitlines()) == 1 and want in err, err
    assert sorted(p.relative_to(release) for p in release.rglob("*")) == before
    assert not (tmp_path / "s").exists()


def test_judge_import_out_apart_from_its_store(tmp_path, capsys):
    (tmp_path / "theirs").mkdir()
    capsys.readouterr()
    assert main(["judge", "import", str(tmp_path / "theirs"), "--out",
                 str(tmp_path / "theirs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is the input store" in err, err
    assert list((tmp_path / "theirs").iterdir()) == []


def test_suite_init_never_writes_over_its_input(tmp_path, capsys):
    data = write_grammar_benchmark(tmp_path / "data")
    corpus = next(p for p in sorted(data.rglob("*")) if p.is_file())
    kept = corpus.read_bytes()
    capsys.readouterr()
    code = main(["suite", "init", "grammars", "--from", str(data), "--out", str(corpus),
                 "--force", "--grade-positive", "3", "--no-input", "--license", "cc0-1.0"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sits inside the input --from" in err, err
    assert corpus.read_bytes() == kept
    shutil.rmtree(data)
