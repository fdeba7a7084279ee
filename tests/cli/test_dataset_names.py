"""One way to name a dataset revision (a local path or ``hf://datasets/OWNER/NAME@REV``, with
``--repo/--revision`` as aliases) and ``-`` as stdout for every output flag that names a file."""

from __future__ import annotations

import io
import os
import uuid
from contextlib import redirect_stdout

import pytest
from support.byob_fixtures import write_grammar_benchmark
from support.demo_fixture import copy_demo

from rcp_data.cli import main
from rcp_data.core.specs import load_spec


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(list(argv))
    return rc, out.getvalue()


@pytest.mark.parametrize(("argv", "rev"), [
    (["score", "--dataset", "rcp-data/rcp-ndcg-demo", "run.trec"], "main"),
    (["replay", "rcp-data/rcp-ndcg-demo@v1"], "v1"),
    (["verify", "rcp-data/rcp-ndcg-demo@v1"], "v1"),
    (["recalibrate", "rcp-data/rcp-ndcg-demo", "--out", "v3"], "main"),
])
def test_a_repo_id_where_a_path_goes_gets_the_hf_spelling(argv, rev, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "release directory not found" in err
    assert f"hf://datasets/rcp-data/rcp-ndcg-demo@{rev}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["demo", "--out", "-"],
    ["calibrate", "--criteria", "c.parquet", "--rubric-only", "--out", "-"],
    ["build", "demo", "--out", "-"],
    ["recalibrate", "some/dir", "--out", "-"],
    ["judge", "run", "--out", "-"],
    ["suite", "first-stage", "spec.toml", "--out", "-"],
])
def test_a_folder_output_refuses_stdout(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "'-' is stdout, and this command writes a folder" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_suite_init_out_dash_prints_the_spec(tmp_path, monkeypatch):
    data = write_grammar_benchmark(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    rc, text = _run("suite", "init", "grammars", "--from", str(data), "--out", "-",
                    "--grade-positive", "3", "--no-input")
    assert rc == 0
    assert sorted(os.listdir(tmp_path)) == ["data"]               # no file written
    # the same spec a file would hold, read back by the spec reader
    assert main(["suite", "init", "grammars", "--from", str(data), "--out", "grammars.toml",
                 "--grade-positive", "3", "--no-input", "-q"]) == 0
    assert (tmp_path / "grammars.toml").read_text(encoding="utf-8") == text


def test_card_regenerate_takes_the_hf_name_and_its_aliases(tmp_path, local_hub, demo_data,
                                                           capsys):
    from rcp_data.documents.card import release_history, write_release_files
    from rcp_data.model.layout import RELEASES_JSON
    from rcp_data.release.publish import publish

    repo = f"rcp-test/names-{uuid.uuid4().hex[:8]}"
    root = copy_demo(demo_data, tmp_path / "release")
    spec = load_spec("demo")
    history = release_history(root, spec, repo=repo)
    (root / RELEASES_JSON).write_text(history.to_json(), encoding="utf-8")
    write_release_files(root, spec=spec, history=history, repo=repo)
    publish(root, repo, create_repo=True)
    capsys.readouterr()
    assert main(["card", "regenerate", f"hf://datasets/{repo}@main"]) == 0
    assert "committed" in capsys.readouterr().out       # the release's own sha written in
    assert main(["card", "regenerate", "--repo", repo, "--revision", "main"]) == 0
    assert "already up to date" in capsys.readouterr().out
    assert main(["card", "regenerate", f"hf://datasets/{repo}@main", "--repo", repo]) == 2
    assert "name the dataset once" in capsys.readouterr().err


def test_record_to_refuses_stdout(tmp_path, capsys, monkeypatch):
    """A record is a history file updated in place: ``--record-to -`` is refused, not written
    as a file named ``-``."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["release", "publish", "v1", "--repo", "o/n", "--record-to", "-"])
    assert exc.value.code == 2
    assert "'-' is stdout, and a record is a history file" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []
