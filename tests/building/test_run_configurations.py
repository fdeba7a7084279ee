"""Several runs of one model (issue 42 item 3): a run is its model and its configuration.

The SYNTHETIC demo's builder inputs get two more runs of ``demo/alpha-reranker`` (its scores
with seeded noise), one under a query wording and one under an instruction and that wording;
the spec names the first ``Alpha-RR-w2`` and leaves the second unnamed. All three coexist in the
release, each under its own name in the card's tables (the unnamed one under its model and
configuration), with values computed independently, and verify passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.independent_ndcg import card_tables, expected_tables

from rcp_data.building.contract import read_runs_json
from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec, load_spec_file
from rcp_data.model.layout import CARD_FILE

ALPHA = "demo/alpha-reranker"
W2 = f'{ALPHA} [query_wording="w2"]'
BOTH = f'{ALPHA} [instruction="Find the paragraph that answers", query_wording="w2"]'


def _spec(folder: Path) -> Path:
    text = Path(load_spec("demo").path).read_text(encoding="utf-8")
    text = text.replace('"Coarse-RR" = "demo/coarse-reranker"\n',
                        '"Coarse-RR" = "demo/coarse-reranker"\n'
                        f'"Alpha-RR-w2" = {json.dumps(W2)}\n', 1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "demo.toml").write_text(text, encoding="utf-8")
    return folder / "demo.toml"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from rcp_data.demo.suite import write_inputs
    from rcp_data.release.cut import build_release_dir
    from rcp_data.sources.synthetic import SEED, make_sources

    folder = tmp_path_factory.mktemp("run-configurations")
    inputs = folder / "inputs"
    demo = load_spec("demo")
    source, latents = make_sources(demo, SEED)
    write_inputs(demo, source, latents, inputs, seed=SEED)
    runs_json = inputs / "runs" / "runs.json"
    entries = json.loads(runs_json.read_text(encoding="utf-8"))
    alpha = next(e for e in entries if e["model"] == ALPHA)
    frame = pd.read_parquet(inputs / "runs" / alpha["file"])
    rng = np.random.default_rng(42)
    for i, configuration in enumerate([{"query_wording": "w2"},
                                       {"query_wording": "w2",
                                        "instruction": "Find the paragraph that answers"}]):
        name = f"alpha-config-{i}.parquet"
        noisy = frame.assign(score=np.round(frame["score"] + rng.normal(0, 0.6, len(frame)), 6))
        noisy.to_parquet(inputs / "runs" / name, index=False)
        entries.append({"file": name, "model": ALPHA, "configuration": configuration})
    runs_json.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    spec = load_spec_file(_spec(folder / "spec"))
    build_release_dir(spec, inputs, folder / "release", source=source, repo="rcp-test/configs",
                      date="2026-12-01", prepare=True, parameters={"synthetic": True})
    return folder / "release"


def test_the_runs_of_one_model_coexist_under_their_own_names(built):
    runs = pd.concat(pd.read_parquet(p) for p in sorted((built / "provenance/runs").glob("*")))
    assert {ALPHA, W2, BOTH} <= set(runs["model"])
    spec = load_spec_file(built / "provenance" / "suite_spec.toml")
    assert spec.short_name(W2) == "Alpha-RR-w2" and spec.short_name(BOTH) == BOTH
    text = (built / CARD_FILE).read_text(encoding="utf-8")
    tables = card_tables(text)
    title = "RCP-nDCG@10 (%), rule (a): document-id tie-break"
    assert {"Alpha-RR", "Alpha-RR-w2", BOTH} <= set(tables[title])
    # the card names each run with its model and configuration
    assert f"Alpha-RR-w2 = `{W2}`" in text and f"{BOTH} = `{BOTH}`" in text
    for metric, prefix in (("rcp", "RCP"), ("qrel", "qrel")):
        got = tables[f"{prefix}-nDCG@10 (%), rule (a): document-id tie-break"]
        want = expected_tables(built, spec, 10)[metric]
        assert set(got) == set(want)
        for model, cols in want.items():
            for col, value in cols.items():
                assert abs(got[model][col] - value) <= 0.05 + 1e-9, (metric, model, col)
    # the three runs score differently: the noise reached the tables
    assert len({tuple(tables[title][m].values()) for m in ("Alpha-RR", "Alpha-RR-w2", BOTH)}) \
        == 3


def test_the_leaderboard_picture_shows_each_run(built):
    record = json.loads((built / "provenance/diagnostics.json").read_text(encoding="utf-8"))
    systems = record["pictures"]["leaderboards"]["data"]["systems"]
    assert {ALPHA, W2, BOTH} <= set(systems)


def test_verify_passes(built):
    from rcp_data.checks.verify import verify

    report = verify(path=built)
    assert report.ok, [(c.name, c.found, c.details[:3]) for c in report.failed]


@pytest.mark.parametrize(("extra", "field", "says"), [
    ({"configuration": {"query_wording": "w2"}}, "configuration",
     "with this configuration is listed twice"),
    ({}, "model", 'give each run of one model its "configuration"'),
    ({"configuration": {"query wording": "w2"}}, "configuration.query wording",
     "setting name 'query wording'"),
    ({"configuration": {"wording": ["a"]}}, "configuration.wording",
     "must be text, a number or true/false"),
    ({"configuration": "w2"}, "configuration", "JSON object of named settings"),
])
def test_runs_json_refusals_name_the_row_and_the_field(tmp_path, extra, field, says):
    first = {"file": "a.parquet", "model": ALPHA}
    if "configuration" in extra and extra["configuration"] == {"query_wording": "w2"}:
        first = {**first, "configuration": {"query_wording": "w2"}}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([first, {"file": "b.parquet", "model": ALPHA, **extra}]),
                    encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_runs_json(path)
    assert err.value.field == field and says in err.value.message
    assert "row 2" in str(err.value) and str(path) in str(err.value)


def test_configurations_are_named_whatever_their_order():
    path_entries = [{"file": "a.parquet", "model": ALPHA,
                     "configuration": {"query_wording": "w2", "instruction": "x"}}]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.json"
        path.write_text(json.dumps(path_entries), encoding="utf-8")
        (run,) = read_runs_json(path)
    assert run.run_id == f'{ALPHA} [instruction="x", query_wording="w2"]'
    assert run.configuration == (("instruction", '"x"'), ("query_wording", '"w2"'))
