"""Pre-publish checks of a release directory, on tiny SYNTHETIC releases of the demo suite.

``make_release_dir`` is also used by the publisher tests (``test_release_publish.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from rcp_data import layout
from rcp_data.errors import RefusedError, UsageError
from rcp_data.gains import ItemParams, gain
from rcp_data.release.check import check_release_dir
from rcp_data.release.history import SCHEMA, History, add_release, release_tag, write_history
from rcp_data.specs import load_spec

JUDGE = {"model": "rcp-data/synthetic-judge-7b", "revision": "test", "short": "synth"}
PARAMS_FILE = "provenance/item_params.synth.json"
CALIBRATION = {"method": "2pl-irt", "item_params": PARAMS_FILE, "link": "weighted_discrimination"}
# release 2 is a recalibration: same thetas, refitted item parameters, so new gains
PARAMS = {
    1: ItemParams((1.4, 1.1, 0.9, 0.8, 0.8), (-1.6, -0.6, 0.2, 1.0, 1.9),
                  {"note": "SYNTHETIC test parameters"}),
    2: ItemParams((1.2, 1.2, 1.0, 0.9, 0.7), (-1.2, -0.4, 0.3, 1.1, 2.2),
                  {"note": "SYNTHETIC test parameters, refit"}),
}


def first_history(repo: str) -> History:
    """Release 1's history as its own commit holds it."""
    entry = {"release": 1, "tag": release_tag(1, JUDGE["model"]), "revision": None,
             "data_revision": None, "judge": {k: JUDGE[k] for k in ("model", "revision")},
             "calibration": CALIBRATION, "status": "current", "superseded_by": None,
             "date": "2026-11-29", "summary": "SYNTHETIC test release 1"}
    return History.from_dict({"schema": SCHEMA, "repo": repo, "releases": [entry]})


def second_history(repo: str, v1_sha: str) -> History:
    return add_release(first_history(repo), judge={k: JUDGE[k] for k in ("model", "revision")},
                       calibration=CALIBRATION, summary="SYNTHETIC test release 2 (refit)",
                       date="2026-11-30", previous_revision=v1_sha)


def _card(spec) -> str:
    configs = []
    for sub in spec.subsets:
        kinds = ["corpus", "queries", "qrels", "top_ranked"] + (["excluded"] if sub.excludes
                                                                   else [])
        for kind in kinds:
            configs.append({"config_name": f"{sub.name}-{kind}", "data_files": [
                {"split": spec.split, "path": layout.subset_file(sub.name, kind)}]})
    for kind, name in layout.PROVENANCE_CONFIG.items():
        configs.append({"config_name": name, "data_files": [
            {"split": s, "path": layout.provenance_file(kind, s)} for s in spec.provenance_splits]})
    front = yaml.safe_dump({"license": "cc0-1.0", "tags": ["demo", "synthetic"],
                            "configs": configs}, sort_keys=False)
    return f"---\n{front}---\n\n# SYNTHETIC test release\n\nNot real data.\n"


def make_release_dir(out: Path, repo: str, *, release: int = 1, history: History | None = None,
                     extra_files: dict[str, str] | None = None) -> Path:
    """A tiny, valid, SYNTHETIC release of the demo suite (2 subsets, 3 queries, 5 docs)."""
    spec = load_spec("demo")
    params = PARAMS[release]
    history = history or first_history(repo)
    rng = np.random.default_rng(7)  # same data in every release: only the gains change
    out.mkdir(parents=True)
    for sub in spec.subsets:
        qids = [f"{sub.name}-q{i}" for i in range(3)]
        dids = [f"{sub.name}-d{i}" for i in range(5)]
        layout.write_parquet(pd.DataFrame({"id": dids, "title": "", "text": [
            f"SYNTHETIC document {d}" for d in dids]}), out / layout.subset_file(sub.name, "corpus"),
            layout.SCHEMAS["corpus"])
        layout.write_parquet(pd.DataFrame({"id": qids, "text": [f"SYNTHETIC query {q}"
                                                                 for q in qids]}),
                             out / layout.subset_file(sub.name, "queries"),
                             layout.SCHEMAS["queries"])
        rows = [(q, d) for q in qids for d in dids]
        theta = np.round(rng.normal(0, 1.5, len(rows)), 6)
        theta[-1] = np.nan  # one document the judge never scored
        g = np.where(np.isnan(theta), 0.0, gain(theta, params))
        qrels = pd.DataFrame({"query-id": [r[0] for r in rows], "corpus-id": [r[1] for r in rows],
                              "score": rng.integers(0, 2, len(rows)), "gain": g, "theta": theta})
        layout.write_parquet(qrels, out / layout.subset_file(sub.name, "qrels"),
                             layout.SCHEMAS["qrels"])
        layout.write_parquet(pd.DataFrame({"query-id": qids, "corpus-ids": [dids] * 3}),
                             out / layout.subset_file(sub.name, "top_ranked"),
                             layout.SCHEMAS["top_ranked"])
        if sub.excludes:
            layout.write_parquet(pd.DataFrame({"query-id": qids[:1],
                                               "excluded-corpus-ids": [[]]}),
                                 out / layout.subset_file(sub.name, "excluded"),
                                 layout.SCHEMAS["excluded"])
        pool = pd.DataFrame({"query-id": qrels["query-id"], "corpus-id": qrels["corpus-id"],
                             "pool_rank": np.tile(np.arange(1, 6), 3), "rrf_score": 0.01,
                             "gt_injected": False, "excluded": False, "judged": True})
        layout.write_parquet(pool, out / layout.provenance_file("pool", sub.name),
                             layout.SCHEMAS["pool"])
        fs = pool[["query-id", "corpus-id"]].assign(retriever="bm25", rank=pool["pool_rank"],
                                                    score=1.0)
        layout.write_parquet(fs, out / layout.provenance_file("first_stage", sub.name),
                             layout.SCHEMAS["first_stage"])
        runs = pool[["query-id", "corpus-id"]].assign(
            model="demo/alpha-reranker", is_judge=False, score=rng.normal(size=len(pool)),
            rank_by_score=pool["pool_rank"], stored_position=pool["pool_rank"] - 1)
        layout.write_parquet(runs, out / layout.provenance_file("runs", sub.name),
                             layout.SCHEMAS["runs"])
        crit = pool[["query-id", "corpus-id"]].assign(call_index=0, finish_reason="stop")
        for c in range(1, 6):
            crit[f"C{c}"] = np.int8(1)
        layout.write_parquet(crit, out / layout.provenance_file("judge_criteria", sub.name),
                             layout.judge_criteria_schema(5))
    params.write(out / PARAMS_FILE)
    write_history(history, out / layout.RELEASES_JSON)
    layout.write_json({"schema": "rcp-data.build-manifest/1", "suite": "demo", "synthetic": True},
                      out / layout.BUILD_MANIFEST)
    (out / layout.CARD_FILE).write_text(_card(spec), encoding="utf-8")
    (out / layout.TASK_FILE).write_text(
        f'"""SYNTHETIC test release: placeholder task file."""\n_REVISION = "{history.latest.tag}"\n',
        encoding="utf-8")
    for rel, text in (extra_files or {}).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text, encoding="utf-8")
    return out


# -- tests -------------------------------------------------------------------------------------
@pytest.fixture
def release_dir(tmp_path: Path) -> Path:
    return make_release_dir(tmp_path / "rel", "rcp-test/check")


def _problems(root: Path) -> list[str]:
    return check_release_dir(root).problems


def test_valid_release_passes(release_dir: Path):
    report = check_release_dir(release_dir)
    assert report.problems == []
    assert report.suite == "demo"
    assert report.qrels_rows == 2 * 15
    assert len(report.files) == 2 * 4 + 1 + 2 * 4 + 5  # subset tables, excluded, provenance, top
    report.raise_if_failed()


def test_missing_config_file_refused(release_dir: Path):
    (release_dir / "beta" / "top_ranked.parquet").unlink()
    problems = _problems(release_dir)
    assert any("beta/top_ranked.parquet: missing file" in p for p in problems)
    assert any("config 'beta-top_ranked'" in p and "matches no file" in p for p in problems)
    with pytest.raises(RefusedError, match="nothing was uploaded"):
        check_release_dir(release_dir).raise_if_failed()


def test_gain_not_the_link_of_theta_refused(release_dir: Path):
    path = release_dir / "alpha" / "qrels.parquet"
    qrels = pq.read_table(path).to_pandas()
    qrels.loc[4, "gain"] += 1e-9  # beyond the 1e-12 tolerance
    layout.write_parquet(qrels, path, layout.SCHEMAS["qrels"])
    problems = _problems(release_dir)
    assert len(problems) == 1
    assert "alpha/qrels.parquet: field 'gain': 1 row(s)" in problems[0]
    assert "row 4 (query 'alpha-q0', doc 'alpha-d4')" in problems[0]


def test_gain_within_tolerance_and_unscored_rows(release_dir: Path):
    path = release_dir / "beta" / "qrels.parquet"
    qrels = pq.read_table(path).to_pandas()
    qrels.loc[0, "gain"] += 2e-13           # within 1e-12: accepted
    qrels.loc[14, "gain"] = np.nan          # theta null: a null gain reads as 0
    layout.write_parquet(qrels, path, layout.SCHEMAS["qrels"])
    assert _problems(release_dir) == []
    qrels.loc[14, "gain"] = 0.25            # theta null but a gain: refused
    layout.write_parquet(qrels, path, layout.SCHEMAS["qrels"])
    assert any("row 14" in p for p in _problems(release_dir))


def test_wrong_item_params_refused(release_dir: Path):
    PARAMS[2].write(release_dir / PARAMS_FILE)  # gains were computed with release 1's params
    problems = _problems(release_dir)
    assert len(problems) == 2  # both subsets
    assert all("field 'gain': 14 row(s)" in p for p in problems)  # every scored row


def test_releases_json_must_be_consistent(release_dir: Path):
    path = release_dir / layout.RELEASES_JSON
    data = json.loads(path.read_text())
    data["releases"][0]["revision"] = "0" * 40   # a commit cannot name its own sha
    path.write_text(json.dumps(data))
    assert any("revision': null" in p for p in _problems(release_dir))
    data["releases"][0]["revision"] = None
    data["schema"] = "rcp-data.releases/2"
    path.write_text(json.dumps(data))
    assert any("unknown schema 'rcp-data.releases/2'" in p for p in _problems(release_dir))


def test_column_and_name_checks(release_dir: Path):
    path = release_dir / "beta" / "top_ranked.parquet"
    table = pq.read_table(path).rename_columns(["query-id", "docs"])
    pq.write_table(table, path)
    (release_dir / "check.py").write_text("# a script named after the repo\n")
    problems = _problems(release_dir)
    assert any("missing column 'corpus-ids'" in p for p in problems)
    assert any("check.py: a Python file named after the repository" in p for p in problems)


def test_not_a_directory(tmp_path: Path):
    with pytest.raises(UsageError):
        check_release_dir(tmp_path / "nope")


def test_check_command_exit_codes(release_dir: Path, tmp_path: Path, capsys):
    from rcp_data.cli import main

    assert main(["release", "check", str(release_dir)]) == 0
    assert "release check passed (22 files, 30 qrels rows, suite demo)" in capsys.readouterr().out
    (release_dir / layout.TASK_FILE).unlink()
    assert main(["release", "check", str(release_dir)]) == 1
    assert "rcp_ndcg_tasks.py: missing file" in capsys.readouterr().err
    assert main(["release", "check", str(tmp_path / "absent")]) == 2
