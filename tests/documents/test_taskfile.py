"""The generated mteb task file: literal blocks, names, get_tasks, ndcg_float_at_k, and stock mteb
running it against a release on the local Hub."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import shutil
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.demo_fixture import copy_demo
from support.mteb_helpers import HashEncoder, load_task_module

from rcp_data.core.specs import load_spec
from rcp_data.documents.taskfile import build_blocks, render_task_file, task_name

SHA1 = "1" * 40
SHA2 = "2" * 40


def _releases(n: int, *, current_sha: str | None = None) -> list[dict]:
    out = []
    for i in range(1, n + 1):
        last = i == n
        out.append({
            "release": i, "tag": f"v{i}-judge", "status": "current" if last else "superseded",
            "revision": current_sha if last else str(i) * 40,
            "superseded_by": None if last else i + 1, "judge": {"model": "org/Judge"},
        })
    return out


def _load(text: str, tmp_path: Path, name: str = "rcp_ndcg_tasks_t"):
    return load_task_module(text, tmp_path, name)


# -- the text other tools read ---------------------------------------------------------------
def test_literal_blocks_parse_as_text(tmp_path):
    spec = load_spec("nanobeir")
    text = render_task_file(spec, _releases(2), repo=spec.repo)
    rev = re.search(r'^_REVISION = "([^"]+)"$', text, re.M)
    assert rev and rev.group(1) == "v2-judge"  # current release has no sha yet: its tag
    blocks = {}
    for key in ("_TASK_METADATA", "_SUBSETS"):
        m = re.search(rf'^{key} = json\.loads\(r"""(.*?)"""\)$', text, re.M | re.S)
        assert m, key
        blocks[key] = json.loads(m.group(1))
    subsets = blocks["_SUBSETS"]
    assert list(subsets) == spec.subset_names
    assert subsets["NanoArguAnaRetrieval"]["task"] == "NanoArguAnaRCPReranking.v2"
    meta = blocks["_TASK_METADATA"]
    # 13 tasks x 2 views x 2 releases, each keyed by its own name
    assert len(meta) == 13 * 2 * 2
    assert all(entry["metadata"]["name"] == name for name, entry in meta.items())
    v1 = meta["NanoArguAnaRCPReranking"]["metadata"]
    assert v1["superseded_by"] == "NanoArguAnaRCPReranking.v2"
    assert v1["dataset"] == {"path": spec.repo, "revision": "1" * 40}
    assert v1["main_score"] == "ndcg_float_at_10"
    assert v1["eval_langs"] == {"NanoArguAnaRetrieval": ["eng-Latn"]}
    assert v1["eval_splits"] == ["train"] and v1["type"] == "Reranking"
    assert v1["adapted_from"] == ["NanoArguAnaRetrieval"]
    assert meta["NanoArguAnaRCPRetrieval.v2"]["metadata"]["superseded_by"] is None
    assert meta["NanoArguAnaRCPRetrieval.v2"]["metadata"]["type"] == "Retrieval"
    # once the sha is known the task file pins it
    text = render_task_file(spec, _releases(2, current_sha=SHA2), repo=spec.repo)
    assert f'_REVISION = "{SHA2}"' in text


def test_every_entry_is_valid_mteb_metadata():
    from mteb.abstasks.task_metadata import TaskMetadata

    for suite in ("demo", "vidore_v3", "trecdl"):
        spec = load_spec(suite)
        meta = build_blocks(spec, _releases(2), repo=spec.repo)["task_metadata"]
        for entry in meta.values():
            TaskMetadata(**entry["metadata"])


def test_vidore_keeps_names_and_has_ocr_tasks():
    spec = load_spec("vidore_v3")
    blocks = build_blocks(spec, _releases(2), repo=spec.repo)
    meta = blocks["task_metadata"]
    assert len(meta) == 8 * 4  # keep-versioning: only the current release, 4 variants
    ocr = meta["Vidore3HrRCPRerankingOCR"]["metadata"]
    assert ocr["modalities"] == ["text"] and ocr["category"] == "t2t"
    img = meta["Vidore3HrRCPReranking"]["metadata"]
    assert img["modalities"] == ["text", "image"] and img["category"] == "t2i"
    assert img["superseded_by"] is None
    assert img["eval_langs"]["hr__french"] == ["fra-Latn"]
    assert len(img["eval_langs"]) == 6
    assert blocks["subsets"]["energy__german"] == {
        "task": "Vidore3EnergyRCPReranking", "family": "Vidore3Energy",
        "ocr": "Vidore3EnergyRCPRerankingOCR", "domain": "energy"}
    assert task_name(spec, "Vidore3Hr", 3) == "Vidore3HrRCPReranking"


def test_refuses_a_task_file_named_after_the_repo():
    from rcp_data.core.errors import UsageError

    spec = load_spec("demo")
    with pytest.raises(UsageError, match="named after the repo"):
        render_task_file(spec, _releases(1), repo="someone/rcp_ndcg_tasks")


# -- get_tasks ---------------------------------------------------------------------------------
def test_get_tasks_names_views_and_revisions(tmp_path):
    spec = load_spec("vidore_v3")
    rcp = _load(render_task_file(spec, _releases(2), repo=spec.repo), tmp_path)
    tasks = rcp.get_tasks()
    assert [t.metadata.name for t in tasks] == [f"{d.task}RCPReranking" for d in spec.domains]
    assert all(t.metadata.dataset["revision"] == "v2-judge" for t in tasks)
    (hr,) = rcp.get_tasks(["hr"], view="retrieval", text_only=True)
    assert hr.metadata.name == "Vidore3HrRCPRetrievalOCR" and len(hr.hf_subsets) == 6
    two = rcp.get_tasks(["energy__french", "energy__german", "Vidore3HrRCPReranking"])
    assert [(t.metadata.name, sorted(t.hf_subsets)) for t in two] == [
        ("Vidore3EnergyRCPReranking", ["energy__french", "energy__german"]),
        ("Vidore3HrRCPReranking", [f"hr__{lang}" for lang in spec.view_languages])]
    (old,) = rcp.get_tasks(["physics"], revision="v1-judge")  # keep: same name, other commit
    assert old.metadata.name == "Vidore3PhysicsRCPReranking"
    # the tag resolves to the sha the release history records for it
    assert old.metadata.dataset["revision"] == "1" * 40
    assert rcp.pinned_revision("v1-judge") == "1" * 40
    # the current release's sha is not known inside its own commit: its tag
    assert rcp.pinned_revision("v2-judge") == rcp.pinned_revision() == "v2-judge"
    assert rcp.pinned_revision("f" * 40) == "f" * 40      # no release names it: as given
    for bad, match in (([], "empty"), (["hr", "hr"], "repeated"), (["nope"], "unknown"),
                       (["hr", "hr__english"], "already"), ("", "empty")):
        with pytest.raises(ValueError, match=match):
            rcp.get_tasks(bad)
    with pytest.raises(ValueError, match="view"):
        rcp.get_tasks(view="dense")


def test_task_file_says_which_revision_it_pins(tmp_path, caplog):
    spec = load_spec("demo")
    text = render_task_file(spec, _releases(2, current_sha=SHA2), repo=spec.repo)
    head = text.split('"""')[1]
    assert f"release 1 (superseded), tag v1-judge: pins commit {'1' * 40}" in head
    assert f"release 2 (current), tag v2-judge: pins commit {SHA2}" in head
    unknown = render_task_file(spec, _releases(2), repo=spec.repo).split('"""')[1]
    assert "release 2 (current), tag v2-judge: pins its tag" in unknown
    rcp = _load(text, tmp_path, "rcp_pins")
    with caplog.at_level("INFO", logger="rcp_ndcg_tasks"):
        (task,) = rcp.get_tasks(["alpha"], revision="v2-judge")
    assert task.metadata.dataset["revision"] == SHA2
    assert f"revision v2-judge pins {SHA2} (release 2, tag v2-judge)" in caplog.text


def test_get_tasks_suffix_versions(tmp_path):
    spec = load_spec("demo")
    rcp = _load(render_task_file(spec, _releases(2), repo=spec.repo), tmp_path)
    assert [t.metadata.name for t in rcp.get_tasks()] == ["DemoAlphaRCPReranking.v2",
                                                         "DemoBetaRCPReranking.v2"]
    v1 = rcp.get_tasks(["alpha"], revision="1" * 40)
    assert v1[0].metadata.name == "DemoAlphaRCPReranking"
    assert v1[0].metadata.superseded_by == "DemoAlphaRCPReranking.v2"
    (short,) = rcp.get_tasks(["alpha"], revision="1" * 8)  # an abbreviated sha of release 1
    assert short.metadata.name == "DemoAlphaRCPReranking"
    assert short.metadata.dataset["revision"] == "1" * 40   # expanded to the recorded sha
    (tagged,) = rcp.get_tasks(["alpha"], revision="v1-judge")
    assert tagged.metadata.dataset["revision"] == "1" * 40
    (named,) = rcp.get_tasks(["DemoBetaRCPRetrieval"])  # a task name is that exact task
    assert named.metadata.dataset["revision"] == "1" * 40
    assert named.metadata.type == "Retrieval"
    with pytest.raises(ValueError, match="page images"):
        rcp.get_tasks(text_only=True)


# -- the metric --------------------------------------------------------------------------------
def _brute_force_ndcg(scores: dict[str, float], gains: dict[str, float], k: int) -> float:
    """Mean nDCG@k over every order of every tie group (the expectation group-mean gives)."""
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    groups = [[d for d in scores if scores[d] == s] for s in sorted(set(scores.values()),
                                                                    reverse=True)]
    values = []
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = [d for group in perms for d in group]
        dcg = sum(gains.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(order[:k]))
        values.append(dcg / idcg if idcg > 0 else 0.0)
    return float(np.mean(values))


def test_ndcg_float_equals_brute_force_over_tie_orders(tmp_path):
    spec = load_spec("demo")
    rcp = _load(render_task_file(spec, _releases(1), repo=spec.repo), tmp_path)
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(2, 8))
        docs = [f"d{i}" for i in range(n)]
        scores = {d: float(rng.integers(0, 3)) for d in docs}  # many ties
        gains = {d: float(rng.random()) * (rng.random() > 0.3) for d in docs}
        gains["unretrieved"] = float(rng.random())  # only in the ideal
        got = rcp._ndcg_float(scores, gains, (1, 3, 5))
        for k in (1, 3, 5):
            assert got[k] == pytest.approx(_brute_force_ndcg(scores, gains, k), abs=1e-12)
    assert rcp._ndcg_float({"a": 1.0}, {"a": 0.0}, (10,)) == {10: 0.0}  # zero ideal -> 0


def _task_with_gains(rcp, qrels: dict):
    import datasets

    (task,) = rcp.get_tasks(["alpha"])
    table = datasets.Dataset.from_dict(qrels)
    task._rcp_config = lambda config, split: table if config.endswith("-qrels") else None
    return task


def test_task_specific_scores_and_refusals(tmp_path):
    spec = load_spec("demo")
    rcp = _load(render_task_file(spec, _releases(1), repo=spec.repo), tmp_path)
    qrels = {"query-id": ["q1", "q1", "q1", "q2"], "corpus-id": ["a", "b", "c", "x"],
             "score": [1, 0, 0, 1], "gain": [0.9, 0.5, None, 0.7]}
    task = _task_with_gains(rcp, qrels)
    results = {"q1": {"a": 0.2, "b": 0.2, "c": 0.9}, "q2": {"y": 1.0}}
    out = task.task_specific_scores({"q1": {}, "q2": {}}, {}, results, "test", "alpha")
    # q1: c (gain 0) first, then a/b tied -> each credited 0.7; q2 finds nothing
    idcg = 0.9 + 0.5 / math.log2(3)
    q1 = (0.7 / math.log2(3) + 0.7 / 2) / idcg
    assert out["ndcg_float_at_10"] == round((q1 + 0.0) / 2, 5)
    assert set(out) == {f"ndcg_float_at_{k}" for k in (1, 3, 5, 10, 20, 100, 1000)}
    with pytest.raises(ValueError, match="NaN"):
        task.task_specific_scores({"q1": {}}, {}, {"q1": {"a": float("nan")}}, "test", "alpha")
    for bad in (-0.1, float("inf")):
        task = _task_with_gains(rcp, {**qrels, "gain": [0.9, bad, None, 0.7]})
        with pytest.raises(ValueError, match="negative or not finite"):
            task.task_specific_scores({"q1": {}}, {}, results, "test", "alpha")


def test_excluded_documents_leave_the_ranking_as_in_the_replay(tmp_path):
    """A run that still scores a query's excluded document (hand-built, not real data): like
    the replay, ndcg_float_at_k drops it from the ranking, not only from the ideal."""
    import datasets

    spec = load_spec("demo")
    rcp = _load(render_task_file(spec, _releases(1), repo=spec.repo), tmp_path)
    qrels = datasets.Dataset.from_dict({"query-id": ["q1", "q1", "q1"],
                                        "corpus-id": ["a", "b", "self"], "score": [1, 0, 0],
                                        "gain": [0.9, 0.5, 0.95]})
    excluded = datasets.Dataset.from_dict({"query-id": ["q1"],
                                           "excluded-corpus-ids": [["self"]]})
    (task,) = rcp.get_tasks(["alpha"])
    task._rcp_config = lambda config, split: {"alpha-qrels": qrels,
                                              "alpha-excluded": excluded}.get(config)
    results = {"q1": {"self": 1.0, "b": 0.5, "a": 0.2}}
    out = task.task_specific_scores({"q1": {}}, {}, results, "test", "alpha")
    idcg = 0.9 + 0.5 / math.log2(3)                  # "self" is not in the ideal
    assert out["ndcg_float_at_1"] == round(0.5 / 0.9, 5)
    assert out["ndcg_float_at_10"] == round((0.5 + 0.9 / math.log2(3)) / idcg, 5)


# -- stock mteb against the local Hub ----------------------------------------------------------
@pytest.fixture(scope="module")
def published_demo(tmp_path_factory, local_hub, demo_data):
    """The demo release published as release 1 on the local Hub: (repo, tag, sha, release dir)."""
    from huggingface_hub import HfApi

    from rcp_data.documents.card import release_history, write_release_files
    from rcp_data.model.layout import RELEASES_JSON
    from rcp_data.release.publish import publish

    hub_repo = f"rcp-test/taskfile-{uuid.uuid4().hex[:8]}"
    root = copy_demo(demo_data, tmp_path_factory.mktemp("taskfile") / "release")
    spec = load_spec("demo")
    history = release_history(root, spec, repo=hub_repo)
    (root / RELEASES_JSON).write_text(history.to_json(), encoding="utf-8")
    write_release_files(root, spec=spec, history=history, repo=hub_repo)
    publish(root, hub_repo, create_repo=True)
    tag = history.current.tag
    tags = {t.name: t.target_commit for t in HfApi().list_repo_refs(hub_repo,
                                                                    repo_type="dataset").tags}
    return hub_repo, tag, tags[tag], root


def _replay_tables(root: Path, scores: dict[str, dict[str, float]], subset: str, work: Path):
    """The project's replay of the encoder's scores: a copy of the release whose runs are them."""
    from rcp_data.model.layout import provenance_file
    from rcp_data.model.schemas import SCHEMAS
    from rcp_data.model.tables import write_parquet
    from rcp_data.scoring import replay

    copy = work / "replayed"
    shutil.copytree(root, copy)
    rows = [(q, d, s) for q, docs in scores.items() for d, s in docs.items()]
    runs = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])
    runs.insert(0, "model", "rcp-test/hash-bow")
    runs.insert(1, "is_judge", False)
    runs["rank_by_score"] = runs.groupby("query-id")["score"].rank(method="first",
                                                                     ascending=False)
    runs["rank_by_score"] = runs["rank_by_score"].astype("int64")
    runs["stored_position"] = runs.groupby("query-id").cumcount().astype("int64")
    write_parquet(runs, copy / provenance_file("runs", subset), SCHEMAS["runs"])
    spec = load_spec("demo")
    only = dataclasses.replace(spec, subsets=(spec.subset(subset),))
    data = replay.load_release(copy, only)
    return {rule: replay.replay_loaded(data, k=10, tie_rule=rule).to_json()["metrics"]
            for rule in ("group-mean", "doc-id")}


@pytest.mark.slow
def test_stock_mteb_runs_the_task_file_at_tag_and_sha(published_demo, tmp_path):
    import mteb
    from huggingface_hub import hf_hub_download

    repo, tag, sha, root = published_demo
    for revision in (tag, sha):
        path = hf_hub_download(repo, "rcp_ndcg_tasks.py", repo_type="dataset", revision=revision)
        rcp = _load(Path(path).read_text(encoding="utf-8"), tmp_path,
                    name=f"rcp_tasks_{revision[:8].replace('-', '_')}")
        (task,) = rcp.get_tasks(["alpha"], revision=revision)
        assert task.metadata.dataset == {"path": repo, "revision": revision}
        preds = tmp_path / f"preds-{revision[:8]}"
        result = mteb.evaluate(HashEncoder(), tasks=[task], cache=None,
                               prediction_folder=preds, show_progress_bar=False)
        (scores,) = result.task_results[0].scores[load_spec("demo").split]
        assert scores["hf_subset"] == "alpha"
        pred = json.loads((preds / f"{task.metadata.name}_predictions.json").read_text())
        run = pred["alpha"][load_spec("demo").split]
        replayed = _replay_tables(root, run, "alpha", tmp_path / revision[:8])
        model = "rcp-test/hash-bow"
        ties = sum(len(docs) - len(set(docs.values())) for docs in run.values())
        assert ties > 50  # the tie rule matters for these scores:
        assert (replayed["group-mean"]["rcp_ndcg"][model]["alpha"]
                != replayed["doc-id"]["rcp_ndcg"][model]["alpha"])
        assert scores["ndcg_float_at_10"] == pytest.approx(
            round(replayed["group-mean"]["rcp_ndcg"][model]["alpha"], 5), abs=1e-9)
        # every alpha query has a positive label, so mteb's mean equals the paper protocol's
        assert scores["ndcg_at_10"] == pytest.approx(
            round(replayed["doc-id"]["qrel_ndcg"][model]["alpha"], 5), abs=1e-9)
        assert scores["main_score"] == scores["ndcg_float_at_10"]


@pytest.mark.slow
def test_open_corpus_view_drops_excluded_documents(published_demo, tmp_path):
    import mteb
    from huggingface_hub import hf_hub_download

    repo, tag, _, root = published_demo
    path = hf_hub_download(repo, "rcp_ndcg_tasks.py", repo_type="dataset", revision=tag)
    rcp = _load(Path(path).read_text(encoding="utf-8"), tmp_path, name="rcp_tasks_open")
    (task,) = rcp.get_tasks(["alpha"], view="retrieval")
    assert task.metadata.name == "DemoAlphaRCPRetrieval"
    preds = tmp_path / "preds"
    mteb.evaluate(HashEncoder(), tasks=[task], cache=None, prediction_folder=preds,
                  show_progress_bar=False)
    run = json.loads((preds / "DemoAlphaRCPRetrieval_predictions.json").read_text())
    run = run["alpha"][load_spec("demo").split]
    excluded = pd.read_parquet(root / "alpha" / "excluded.parquet")
    corpus = pd.read_parquet(root / "alpha" / "corpus.parquet", columns=["id"])
    assert len(excluded) == 3
    for query, docs in zip(excluded["query-id"], excluded["excluded-corpus-ids"], strict=True):
        # the open corpus is searched (every other document comes back), minus the exclusions
        assert set(run[query]) == set(corpus["id"]) - set(docs)
    with pytest.raises(TypeError, match="bi-encoder"):
        task._rcp_open_corpus_model(_CrossEncoder(), "alpha", "test")


class _CrossEncoder:
    mteb_model_meta = None

    def predict(self, inputs1, inputs2, *, task_metadata, hf_split, hf_subset, **kwargs):
        raise AssertionError("never called")


def test_builtin_task_of_same_name_and_revision_is_returned(tmp_path, monkeypatch):
    spec = load_spec("demo")
    rcp = _load(render_task_file(spec, _releases(1, current_sha=SHA1), repo=spec.repo),
                tmp_path, name="rcp_tasks_builtin")

    class Shipped:
        def __init__(self, revision):
            self.metadata = type("M", (), {"dataset": {"path": spec.repo,
                                                      "revision": revision}})()

    shipped = {"DemoAlphaRCPReranking": Shipped(SHA1), "DemoBetaRCPReranking": Shipped("x" * 40)}

    def get_task(name, **kwargs):
        return shipped[name]

    monkeypatch.setattr(rcp.mteb, "get_task", get_task)
    alpha, beta = rcp.get_tasks()
    assert alpha is shipped["DemoAlphaRCPReranking"]  # same name, same revision: mteb's own
    assert beta is not shipped["DemoBetaRCPReranking"]  # pinned elsewhere: this file's task
    assert beta.metadata.dataset["revision"] == SHA1


def test_query_instructions_come_from_the_build_manifest(tmp_path):
    """BRIGHT: the instruction the build recorded per subset (mteb's own prompt) becomes the
    task's prompt in every view; suites without instructions get none."""
    from rcp_data.core.errors import InputError
    from rcp_data.documents.taskfile import release_prompts
    from rcp_data.model.manifest import BuildManifest, CalibrationRecord, JudgeRecord

    spec = load_spec("bright")
    (tmp_path / "provenance").mkdir()
    built = BuildManifest(suite="bright", judge=JudgeRecord("rcp-data/SYNTHETIC-judge"),
                          calibration=CalibrationRecord("provenance/item_params.x.json",
                                                        "weighted_discrimination"),
                          sources={"instructions": {"aops": "SYNTHETIC instruction for aops",
                                                    "pony": "SYNTHETIC pony"}})
    built.write(tmp_path)
    prompts = release_prompts(tmp_path)
    assert prompts == {"aops": "SYNTHETIC instruction for aops", "pony": "SYNTHETIC pony"}
    meta = build_blocks(spec, _releases(1), repo=spec.repo, prompts=prompts)["task_metadata"]
    assert meta["BrightAopsRCPReranking"]["metadata"]["prompt"] == {
        "query": "SYNTHETIC instruction for aops"}
    assert meta["BrightAopsRCPRetrieval"]["metadata"]["prompt"] == {
        "query": "SYNTHETIC instruction for aops"}
    assert meta["BrightBiologyRCPReranking"]["metadata"]["prompt"] is None
    rcp = _load(render_task_file(spec, _releases(1), repo=spec.repo, prompts=prompts),
                tmp_path, name="rcp_tasks_prompts")
    (task,) = rcp.get_tasks(["pony"])
    assert task.metadata.prompt == {"query": "SYNTHETIC pony"}
    assert release_prompts(tmp_path / "nowhere") == {}
    replace(built, sources={"instructions": {"aops": 3}}).write(tmp_path)
    with pytest.raises(InputError, match="sources.instructions"):
        release_prompts(tmp_path)
