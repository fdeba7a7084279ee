"""NanoBEIR and BRIGHT end to end: build every subset, prepare (releases.json, task file, card),
publish to the local Hub, then the release must replay to the same numbers through
``rcp-data replay``, through its generated task file in stock mteb (group-mean) and through
``verify`` at the tag.

Data: NanoBEIR from SYNTHETIC nano-beir cache files (tests/fixtures_nanobeir.py); BRIGHT from
the REAL upstream examples in ../shared/data/bright with SYNTHETIC corpora (every gold and
excluded id, plus filler). Judge inputs, first stages and reranker runs are SYNTHETIC
(``rcp_data.demo.synthetic_judge``); nothing is shaped to match a published number.

Stock mteb scores a stored reranker run through a cross-encoder that hands back the run's own
scores (looked up by the ids mteb passes), so mteb evaluates exactly what the replay replays.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.bright_fixtures import synthetic_corpus
from support.mteb_helpers import StoredRunReranker, hub_task_module, run_mteb

from rcp_data.core.specs import SuiteSpec, load_spec
from rcp_data.model.release import Release
from rcp_data.sources import irds_cache

DATE = "2026-11-30"
# the subsets stock mteb runs (minimum that proves the point): each with exclusions
MTEB_SUBSET = {"nanobeir": "NanoArguAnaRetrieval", "bright": "leetcode"}


pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("irds_home")]


@dataclass
class Published:
    """One suite's release, built from every subset and published to the local Hub."""

    spec: SuiteSpec
    repo: str
    tag: str
    sha: str
    root: Path          # the local release directory that was published


def _build_and_publish(spec: SuiteSpec, source, work: Path, local_hub) -> Published:
    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.core.hub_client import HubClient
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.release.prepare import prepare_release
    from rcp_data.release.publish import publish

    assert list(source.subsets) == spec.subset_names  # every subset: no partial release
    inputs = write_synthetic_inputs(spec, source, work / "inputs")
    build_release(spec, source, read_inputs(inputs), work / "release")
    repo = f"rcp-test/e2e-{spec.name}"
    prepare_release(work / "release", spec, repo, date=DATE)
    result = publish(work / "release", repo, client=HubClient(local_hub.url),
                     create_repo=True)
    assert result.status == "published"
    return Published(spec, repo, result.tag, result.commit, work / "release")


@pytest.fixture(scope="module")
def nanobeir(irds_home, local_hub, tmp_path_factory) -> Published:
    from support.nanobeir_fixtures import make_all, stage

    from rcp_data.sources.nanobeir import read_suite

    stage(make_all())
    spec = load_spec("nanobeir")
    source = read_suite(spec, {"allow_download": "0"})
    return _build_and_publish(spec, source, tmp_path_factory.mktemp("e2e-nanobeir"), local_hub)


@pytest.fixture(scope="module")
def bright(irds_home, bright_data, local_hub, tmp_path_factory) -> Published:
    from rcp_data.sources.bright import read_suite, task_name

    spec = load_spec("bright")
    for sub in spec.subsets:
        task = task_name(sub)
        examples = bright_data / f"examples.bright-{task}.jsonl.gz"
        irds_cache.stage_bright(task, examples=examples, docs=synthetic_corpus(examples, task))
    source = read_suite(spec, {"allow_download": "0"})
    assert sum(len(s.queries) for s in source.subsets.values()) == spec.upstream["queries"]
    return _build_and_publish(spec, source, tmp_path_factory.mktemp("e2e-bright"), local_hub)


@pytest.fixture(scope="module", params=["nanobeir", "bright"])
def published(request) -> Published:
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def verified(published, tmp_path_factory):
    from rcp_data.checks.verify import verify

    cache = tmp_path_factory.mktemp(f"verify-{published.spec.name}")
    return verify(repo=published.repo, revision=published.tag, cache_dir=cache)


# -- the tests ---------------------------------------------------------------------------------
def test_verify_is_all_ok_at_the_tag(published, verified):
    assert verified.sha == published.sha
    assert verified.suite == published.spec.name and verified.release == 1
    assert verified.ok, verified.text()
    for name in ("tag", "task-file", "configs", "configs-complete", "counts", "card-counts",
                 "replay", "card-tables-shown", "card-tables"):
        check = verified.check(name)
        assert check is not None and check.status == "ok", name
    assert "0 differ" in verified.check("card-tables").found
    per_subset = {c.where.split(";")[-1].strip().split(" ")[0] for c in verified.checks
                  if c.name == "gains"}
    assert per_subset == set(published.spec.subset_names)
    # not the release the paper used: differences to the paper are a diff, not a failure
    assert verified.check("paper-tables").status == "diff"


def test_release_module_gave_card_and_task_file(published, verified, tmp_path):
    spec = published.spec
    snapshot = verified.root
    card = (snapshot / "README.md").read_text(encoding="utf-8")
    for s in spec.subset_names:
        for kind in ("corpus", "queries", "qrels", "top_ranked"):
            assert f"config_name: {s}-{kind}" in card, (s, kind)
    history = json.loads((snapshot / "provenance" / "releases.json").read_text())
    assert [(r["tag"], r["revision"], r["status"]) for r in history["releases"]] == [
        (published.tag, None, "current")]
    rcp = hub_task_module(published.repo, published.sha, tmp_path, f"rcp_{spec.name}_all")
    tasks = rcp.get_tasks()
    assert len(tasks) == len(spec.subset_names)
    assert [t.metadata.name for t in tasks] == [f"{s.task}RCPReranking" for s in spec.subsets]
    assert all(t.metadata.dataset == {"path": published.repo, "revision": published.tag}
               for t in tasks)


def _cli_replay(path: Path, tie_rule: str) -> dict:
    from rcp_data import cli

    out = io.StringIO()
    with redirect_stdout(out):
        rc = cli.main(["replay", str(path), "--tie-rule", tie_rule, "--json"])
    assert rc == 0
    return json.loads(out.getvalue())["metrics"]


def test_replay_and_stock_mteb_give_the_same_numbers(published, verified, tmp_path):
    """``rcp-data replay`` of the pinned snapshot == stock mteb's ndcg_float_at_10 (group-mean)
    and ndcg_at_10 (doc-id, trec_eval's order) on the same stored run, to mteb's rounding."""
    spec, subset = published.spec, MTEB_SUBSET[published.spec.name]
    snapshot = verified.root
    group_mean = _cli_replay(snapshot, "group-mean")
    doc_id = _cli_replay(snapshot, "doc-id")
    runs = Release(snapshot, spec).provenance("runs", spec.provenance_split(subset))
    from rcp_data.demo.synthetic_judge import reranker_names

    rerankers = [m for m in reranker_names(4) if m in set(runs["model"])]
    coarse = rerankers[-1]  # the synthetic inputs' last reranker scores coarsely: ties
    frame = runs[runs["model"] == coarse]
    ties = int((frame.groupby("query-id")["score"].agg(lambda s: len(s) - s.nunique())).sum())
    assert ties > 100
    assert (group_mean["rcp_ndcg"][coarse][subset] != doc_id["rcp_ndcg"][coarse][subset])

    # excluded documents were judged (pooled), so an ideal that kept them would differ
    rel = Release(snapshot, spec)
    excluded = rel.table(subset, "excluded")
    pairs = {(q, d) for q, ids in zip(excluded["query-id"], excluded["excluded-corpus-ids"],
                                      strict=True) for d in ids}
    qrels = rel.table(subset, "qrels")
    judged_excluded = qrels[[(q, d) in pairs for q, d in zip(qrels["query-id"],
                                                             qrels["corpus-id"], strict=True)]]
    assert (judged_excluded["gain"] > 0).any()

    rcp = hub_task_module(published.repo, published.tag, tmp_path, f"rcp_{spec.name}_one")
    (task,) = rcp.get_tasks([subset])
    assert task.hf_subsets == [subset]
    assert task.metadata.main_score == "ndcg_float_at_10"
    if spec.name == "bright":  # the task's instruction is mteb's own BRIGHT prompt
        import mteb

        upstream = mteb.get_task("BrightLeetcodeRetrieval").metadata.prompt
        assert task.metadata.prompt == {"query": upstream["query"]}
    model = StoredRunReranker.from_runs(runs, coarse)
    scores, preds = run_mteb(model, task, tmp_path / "preds", batch_size=4096)
    got = scores[subset]
    # mteb scored exactly the candidates of every query (exclusions removed), with the run
    top = rel.table(subset, "top_ranked")
    assert {q: set(ids) for q, ids in zip(top["query-id"], top["corpus-ids"], strict=True)} == {
        q: set(d) for q, d in preds[subset].items()}
    assert model.pairs == sum(len(ids) for ids in top["corpus-ids"])
    assert all(preds[subset][q][d] == pytest.approx(s) for q, d, s in zip(
        frame["query-id"], frame["corpus-id"], frame["score"], strict=True)
        if d in preds[subset].get(q, {}))
    assert got["ndcg_float_at_10"] == pytest.approx(
        round(group_mean["rcp_ndcg"][coarse][subset], 5), abs=1e-9)
    assert got["main_score"] == got["ndcg_float_at_10"]
    # every query of these subsets has a positive qrel: mteb's mean is the paper protocol's
    assert got["ndcg_at_10"] == pytest.approx(round(doc_id["qrel_ndcg"][coarse][subset], 5),
                                              abs=1e-9)
