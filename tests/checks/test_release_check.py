"""Pre-publish checks of a release directory, on tiny SYNTHETIC releases of the demo suite.

``make_release_dir`` is also used by the publisher tests (``test_release_publish.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from support.release_dirs import (
    PARAMS,
    PARAMS_FILE,
    make_release_dir,
)

from rcp_data.checks.release_check import check_release_dir
from rcp_data.core.errors import RefusedError
from rcp_data.model import layout
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_parquet


@pytest.fixture
def release_dir(tmp_path: Path) -> Path:
    return make_release_dir(tmp_path / "rel", "rcp-test/check")


def _problems(root: Path) -> list[str]:
    return check_release_dir(root).problems


def test_valid_release_passes(release_dir: Path):
    report = check_release_dir(release_dir)
    assert report.problems == []
    assert report.suite == "demo"
    rows = sum(pq.read_metadata(release_dir / s / "qrels.parquet").num_rows
               for s in ("alpha", "beta"))
    assert report.qrels_rows == rows > 0
    # subset tables (corpus, queries, qrels, gains, top_ranked) x 2, alpha's excluded, 6
    # provenance tables x 2 (no Stage A tables: see make_release_dir), item params,
    # releases.json, build manifest, card, task file, and the Diagnostics every build writes
    # (provenance/diagnostics.json and its 4 pictures)
    assert len(report.files) == 2 * 5 + 1 + 2 * 4 + 5 + 1 + 4
    report.raise_if_failed()


def test_missing_config_file_refused(release_dir: Path):
    (release_dir / "beta" / "top_ranked.parquet").unlink()
    problems = _problems(release_dir)
    assert any("beta/top_ranked.parquet: missing file" in p for p in problems)
    assert any("config 'beta-top_ranked'" in p and "matches no file" in p for p in problems)
    with pytest.raises(RefusedError, match="problem") as err:   # check never uploads
        check_release_dir(release_dir).raise_if_failed()
    assert "uploaded" not in str(err.value)
    with pytest.raises(RefusedError, match="nothing was uploaded"):  # a publish's refusal
        check_release_dir(release_dir).raise_if_failed(publishing=True)


def test_gain_not_the_link_of_theta_refused(release_dir: Path):
    path = release_dir / "alpha" / "qrels.parquet"
    qrels = pq.read_table(path).to_pandas()
    row = int(qrels.index[qrels["theta"].notna()][4])
    qrels.loc[row, "gain"] += 1e-9  # beyond the 1e-12 tolerance
    write_parquet(qrels, path, SCHEMAS["qrels"])
    problems = _problems(release_dir)
    assert len(problems) == 1
    assert "alpha/qrels.parquet: field 'gain': 1 row(s)" in problems[0]
    q, d = qrels.loc[row, "query-id"], qrels.loc[row, "corpus-id"]
    assert f"row {row} (query '{q}', doc '{d}')" in problems[0]


def test_gain_within_tolerance_and_unscored_rows(release_dir: Path):
    path = release_dir / "beta" / "qrels.parquet"
    qrels = pq.read_table(path).to_pandas()
    unscored = int(qrels.index[qrels["theta"].isna()][0])
    qrels.loc[0, "gain"] += 2e-13           # within 1e-12: accepted
    qrels.loc[unscored, "gain"] = np.nan    # theta null: a null gain reads as 0
    write_parquet(qrels, path, SCHEMAS["qrels"])
    assert _problems(release_dir) == []
    qrels.loc[unscored, "gain"] = 0.25      # theta null but a gain: refused
    write_parquet(qrels, path, SCHEMAS["qrels"])
    assert any(f"row {unscored}" in p for p in _problems(release_dir))


def test_wrong_item_params_refused(release_dir: Path):
    PARAMS[2].write(release_dir / PARAMS_FILE)  # gains were computed with release 1's params
    problems = _problems(release_dir)
    assert len(problems) == 2  # both subsets
    for sub, p in zip(("alpha", "beta"), problems, strict=True):
        scored = pq.read_table(release_dir / sub / "qrels.parquet").to_pandas()["theta"].notna()
        assert f"field 'gain': {int(scored.sum())} row(s)" in p  # every scored row


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
    from rcp_data.core.errors import NotFoundError

    with pytest.raises(NotFoundError) as exc:
        check_release_dir(tmp_path / "nope")
    assert isinstance(exc.value, FileNotFoundError) and exc.value.exit_code == 2


def test_check_command_exit_codes(release_dir: Path, tmp_path: Path, capsys):
    from rcp_data.cli import main

    assert main(["release", "check", str(release_dir)]) == 0
    rows = sum(pq.read_metadata(release_dir / s / "qrels.parquet").num_rows
               for s in ("alpha", "beta"))
    assert (f"release check passed (29 files, {rows} qrels rows, suite demo)"
            in capsys.readouterr().out)
    (release_dir / layout.TASK_FILE).unlink()
    assert main(["release", "check", str(release_dir)]) == 1
    assert "rcp_ndcg_tasks.py: missing file" in capsys.readouterr().err
    assert main(["release", "check", str(tmp_path / "absent")]) == 2
