"""``--format table|tsv|csv|json`` on every command that prints a table (cli/formats.py).

Each delimited output is parsed back with pandas and checked against the command's own JSON
document (the values) and against the files it reads (the rows). The demo data is SYNTHETIC.
"""

from __future__ import annotations

import io
import json
import uuid
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from support.demo_fixture import copy_demo

from rcp_data.cli import main
from rcp_data.core.specs import load_spec
from rcp_data.model.history import read_history
from rcp_data.model.release import Release

MODEL = "demo/beta-reranker"


REPO = f"rcp-test/formats-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def release(tmp_path_factory, demo_data) -> Path:
    from rcp_data.documents.card import release_history, write_release_files
    from rcp_data.model.layout import RELEASES_JSON

    root = copy_demo(demo_data, tmp_path_factory.mktemp("formats") / "release")
    spec = load_spec("demo")
    history = release_history(root, spec, repo=REPO)
    first = replace(history.releases[0], date="2026-11-29", summary="SYNTHETIC, a | b")
    history = replace(history, releases=[first])
    (root / RELEASES_JSON).write_text(history.to_json(), encoding="utf-8")
    write_release_files(root, spec=spec, history=history, repo=REPO)
    return root


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(list(argv))
    return rc, out.getvalue()


def _parse(text: str, fmt: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), sep="\t" if fmt == "tsv" else ",",
                       keep_default_na=False, na_values=[""])


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_replay_tsv_and_csv_hold_the_json_values(release, fmt):
    rc, text = _run("replay", str(release), "--format", fmt)
    assert rc == 0
    got = _parse(text, fmt)
    want = json.loads(_run("replay", str(release), "--json")[1])["metrics"]
    assert list(got.columns) == ["metric", "model", "alpha", "beta", "mean"]
    assert len(got) == sum(len(rows) for rows in want.values())       # one row per metric, model
    for row in got.itertuples(index=False):
        for col in ("alpha", "beta", "mean"):
            assert getattr(row, col) == want[row.metric][row.model][col]   # unrounded, exact


def test_score_csv_has_one_row_per_metric_and_run(release, tmp_path):
    spec = load_spec("demo")
    runs = pd.concat([Release(release, spec).provenance("runs", s)
                      for s in spec.provenance_splits])
    run = runs[runs["model"] == MODEL][["query-id", "corpus-id", "score"]]
    run.to_parquet(tmp_path / "mine.parquet", index=False)
    rc, text = _run("score", "--dataset", str(release), str(tmp_path / "mine.parquet"),
                    "--format", "csv")
    assert rc == 0
    got = _parse(text, "csv")
    want = json.loads(_run("score", "--dataset", str(release), str(tmp_path / "mine.parquet"),
                           "--json")[1])
    assert want["revision"] is None and want["dataset"] == str(release)   # a local folder
    assert list(got["metric"]) == list(want["metrics"]) and set(got["run"]) == {"mine"}
    assert list(want["metrics"])[:2] == ["rcp_ndcg", "qrel_ndcg"]
    for row in got.itertuples(index=False):
        assert row.mean == want["metrics"][row.metric]["mine"]["mean"]


def test_json_and_another_format_disagree(release, capsys):
    assert main(["replay", str(release), "--json", "--format", "tsv"]) == 2
    assert "--json and --format tsv disagree" in capsys.readouterr().err


def test_release_table_formats_carry_date_and_summary(release):
    path = release / "provenance/releases.json"
    history = read_history(path)
    rc, text = _run("release", "table", str(path), "--format", "tsv")
    assert rc == 0
    got = _parse(text, "tsv")
    raw = json.loads(path.read_text())["releases"]
    assert list(got["release"]) == [r["release"] for r in raw]
    assert list(got["tag"]) == [r["tag"] for r in raw]
    assert list(got["date"]) == [r["date"] for r in raw]
    assert list(got["summary"]) == [r["summary"] for r in raw]
    rows = json.loads(_run("release", "table", str(path), "--format", "json")[1])
    assert [r["tag"] for r in rows] == [r.tag for r in history.releases]
    # the card's Markdown table has them too, as RELEASES.md prints them
    from rcp_data.documents.releases_md import render_suite

    markdown = _run("release", "table", str(path))[1]
    header, _, first = markdown.splitlines()[:3]
    assert header.endswith("| date | summary |")
    assert first.endswith(f"| 2026-11-29 | {raw[0]['summary'].replace('|', chr(92) + '|')} |")
    md_row = next(line for line in render_suite("demo", history).splitlines()
                  if line.startswith("| 1 |"))
    assert md_row.endswith(first[first.index("| 2026-11-29"):])


def test_compare_csv_rows_are_the_json_cells(release, tmp_path):
    replayed = tmp_path / "replay.json"
    replayed.write_text(_run("replay", str(release), "--json")[1])
    rc, text = _run("compare", str(replayed), "--against", str(release / "README.md"),
                    "--format", "csv")
    assert rc == 0
    got = _parse(text, "csv")
    want = json.loads(_run("compare", str(replayed), "--against", str(release / "README.md"),
                           "--json")[1])
    assert len(got) == want["cells"] == len(want["rows"]) > 0
    assert list(got["status"]) == [r["status"] for r in want["rows"]]


def test_release_list_tsv(release, local_hub):
    from rcp_data.release.publish import publish

    result = publish(release, REPO, create_repo=True)
    rc, text = _run("release", "list", "--repo", REPO, "--format", "tsv")
    assert rc == 0
    (row,) = _parse(text, "tsv").to_dict("records")
    assert row["tag"] == result.tag and row["hub_revision"] == result.commit
