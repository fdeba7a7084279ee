"""The ``{subset}-gains`` config (query-id, corpus-id, gain float64) beside ``{subset}-qrels``:
written by build, listed in the manifest and the card's configs, loadable with ``datasets``
from the local Hub, and checked by verify against the qrels it is derived from (recomputed
here with pandas, not with the project's function). The demo data is SYNTHETIC."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.demo_fixture import copy_demo

from rcp_data.core.specs import load_spec
from rcp_data.model.card_format import card_configs
from rcp_data.model.layout import RELEASES_JSON, subset_file
from rcp_data.model.manifest import load_manifest, record_content

REPO = f"rcp-test/gains-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def release(tmp_path_factory, demo_data) -> Path:
    from rcp_data.documents.card import release_history, write_release_files

    root = copy_demo(demo_data, tmp_path_factory.mktemp("gains") / "release")
    spec = load_spec("demo")
    history = release_history(root, spec, repo=REPO)
    (root / RELEASES_JSON).write_text(history.to_json(), encoding="utf-8")
    write_release_files(root, spec=spec, history=history, repo=REPO)
    return root


def _expected(root: Path, subset: str) -> pd.DataFrame:
    qrels = pd.read_parquet(root / subset_file(subset, "qrels"))
    return pd.DataFrame({"query-id": qrels["query-id"], "corpus-id": qrels["corpus-id"],
                         "gain": qrels["gain"].fillna(0.0).astype("float64")})


def test_build_writes_a_gains_table_per_subset_derived_from_qrels(release):
    spec = load_spec("demo")
    listed = {f.path for f in load_manifest(release).files}
    configs = {c["config_name"]: c for c in card_configs((release / "README.md").read_text())}
    for subset in spec.subset_names:
        path = subset_file(subset, "gains")
        table = pq.read_table(release / path)
        assert table.schema.field("gain").type == pa.float64()
        assert table.column_names == ["query-id", "corpus-id", "gain"]
        pd.testing.assert_frame_equal(table.to_pandas(), _expected(release, subset))
        assert path in listed
        assert configs[f"{subset}-gains"]["data_files"] == [{"split": spec.split, "path": path}]
        # the qrels keep their gain and theta columns
        assert {"gain", "theta", "score"} <= set(pq.read_schema(
            release / subset_file(subset, "qrels")).names)


def test_verify_recomputes_the_gains_from_the_qrels(release, tmp_path):
    from rcp_data.checks.verify import verify_local_dir

    report = verify_local_dir(release)
    derived = [c for c in report.checks if c.name == "gains-derived"]
    assert len(derived) == 2 and all(c.ok and c.status != "absent" for c in derived)
    # one gain changed (the manifest re-recorded, so only the derivation can tell)
    bad = copy_demo_release(release, tmp_path / "bad")
    path = bad / subset_file("beta", "gains")
    frame = pd.read_parquet(path)
    row = int(np.flatnonzero(frame["gain"].to_numpy() > 0)[3])
    frame.loc[row, "gain"] = frame.loc[row, "gain"] * 0.5
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    record_content(bad)
    report = verify_local_dir(bad)
    (failed,) = [c for c in report.checks if c.name == "gains-derived" and not c.ok]
    assert failed.where == f"beta/gains.parquet, row {row}, field gain"
    assert report.exit_code == 1


def copy_demo_release(root: Path, out: Path) -> Path:
    import shutil

    shutil.copytree(root, out)
    return out


def test_datasets_loads_the_gains_config_from_the_local_hub(release, local_hub, tmp_path):
    import datasets

    from rcp_data.release.publish import publish

    result = publish(release, REPO, create_repo=True)
    ds = datasets.load_dataset(REPO, name="alpha-gains", split="test", revision=result.commit,
                               cache_dir=str(tmp_path / "cache"))
    assert ds.features["gain"].dtype == "float64"
    assert ds.column_names == ["query-id", "corpus-id", "gain"]
    want = _expected(release, "alpha")
    assert len(ds) == len(want)
    assert ds["gain"] == want["gain"].tolist()
