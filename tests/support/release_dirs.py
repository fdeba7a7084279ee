"""Small SYNTHETIC release directories built from the session's demo data, with the
histories of release 1 and 2: what the release-check, publish, receipt and CLI tests start from."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec
from rcp_data.model import layout
from rcp_data.model.history import SCHEMA, History, add_release, release_tag
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_gains, write_parquet
from support.demo_fixture import session_demo_data
from support.reference_links import weighted_discrimination

JUDGE = {"model": "rcp-data/synthetic-judge-7b", "revision": "test", "short": "synth"}
PARAMS_FILE = "provenance/item_params.synth.json"
CALIBRATION = {"method": "2pl-irt", "item_params": PARAMS_FILE, "link": "weighted_discrimination"}
# release 2 is a recalibration: same thetas, refitted item parameters, so new gains
PARAMS = {
    1: ItemParams((1.4, 1.1, 0.9, 0.8, 0.8), (-1.6, -0.6, 0.2, 1.0, 1.9),
                  {"note": "SYNTHETIC test parameters"}),
    2: ItemParams((1.2, 1.2, 1.0, 0.9, 0.7), (-1.2, -0.4, 0.3, 1.1, 2.2),
                  {"note": "SYNTHETIC test parameters, refit"}),
    3: ItemParams((1.3, 1.0, 1.0, 0.85, 0.75), (-1.4, -0.5, 0.25, 1.05, 2.0),
                  {"note": "SYNTHETIC test parameters, refit again"}),
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


def _demo_data() -> Path:
    """The SYNTHETIC demo release's data, built once per session (deterministic)."""
    return session_demo_data() / "release"


def make_release_dir(out: Path, repo: str, *, release: int = 1, history: History | None = None,
                     extra_files: dict[str, str] | None = None) -> Path:
    """A valid SYNTHETIC release of the demo suite: the demo data with release ``release``'s
    item parameters (same thetas in every release: only the gains change), its releases.json,
    card and task file."""
    from rcp_data.model.manifest import record_content
    from rcp_data.release.cut import write_release_diagnostics
    from rcp_data.release.prepare import render_release_files

    spec = load_spec("demo")
    shutil.copytree(_demo_data(), out)
    # hand-set item parameters are no fit of the judge's answers: these releases ship no
    # Stage A answers, so verify reports the refit absent rather than comparing with a fit
    for table in ("judge_tournament", "judge_bt"):
        shutil.rmtree(out / "provenance" / table, ignore_errors=True)
    params = PARAMS[release]
    for sub in spec.subsets:
        path = out / layout.subset_file(sub.name, "qrels")
        qrels = pd.read_parquet(path)
        judged = qrels["theta"].notna().to_numpy()
        qrels["gain"] = np.where(judged, weighted_discrimination(qrels["theta"].fillna(0.0).to_numpy(), params), 0.0)
        write_parquet(qrels, path, SCHEMAS["qrels"])
        write_gains(qrels, out, sub.name)            # the gains config follows its qrels
    params.write(out / PARAMS_FILE)
    # the Diagnostics follow the changed gains and the removed Stage A tables, as a build's do
    write_release_diagnostics(out, spec)
    render_release_files(out, spec, history or first_history(repo))
    for rel, text in (extra_files or {}).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text, encoding="utf-8")
    record_content(out)  # a writer of releases lists what it wrote
    return out


# -- tests -------------------------------------------------------------------------------------
