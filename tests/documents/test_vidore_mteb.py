"""Stock mteb runs a published ViDoRe v3 release's task file against the local Hub (SYNTHETIC
pages, shared session fixture ``vidore_published``): the OCR text-only reranking task with a
no-download text encoder, and the page-image reranking task with a no-download image-text
encoder, on one domain (its six language subsets).

mteb's ``ndcg_float_at_10`` of each language subset must equal the project's group-mean replay of
mteb's own predictions, and the card's languages view (the mean over the six subsets, the mteb
task score) must equal mteb's per-subset scores averaged.
"""

from __future__ import annotations

import pandas as pd
import pytest
from support.mteb_helpers import (
    HashEncoder,
    PixelHashEncoder,
    hub_task_module,
    replay_per_query,
    run_mteb,
)

from rcp_data.core.specs import load_spec
from rcp_data.scoring.replay import summarize

DOMAIN = "hr"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(vidore_published, tmp_path_factory):
    """The task file at the release tag, imported from the local Hub."""
    pub = vidore_published
    folder = tmp_path_factory.mktemp("vidore-taskfile")
    return hub_task_module(pub.repo, pub.result.tag, folder, "rcp_tasks_vidore")


def _check_against_replay(pub, task, scores, preds):
    spec = load_spec("vidore_v3")
    subsets = [f"{DOMAIN}__{lang}" for lang in spec.view_languages]
    assert sorted(scores) == sorted(subsets) == sorted(preds)
    per_query = replay_per_query(pub.root, spec, preds)
    gm = per_query[per_query["tie_rule"] == "group-mean"]
    by_subset = gm.groupby("subset")["rcp_ndcg"].mean()
    ties = sum(len(d) - len(set(d.values())) for run in preds.values() for d in run.values())
    assert ties > 0  # the coarse scores tie, so the tie rule matters:
    doc_id = per_query[per_query["tie_rule"] == "doc-id"].groupby("subset")["rcp_ndcg"].mean()
    assert (doc_id - by_subset).abs().max() > 1e-4
    for s in subsets:
        # every candidate of every query was scored
        cands = pd.read_parquet(pub.root / s / "top_ranked.parquet")
        assert {q: set(ids) for q, ids in zip(cands["query-id"], cands["corpus-ids"],
                                               strict=True)} == {
            q: set(d) for q, d in preds[s].items()}
        assert scores[s]["ndcg_float_at_10"] == pytest.approx(round(by_subset[s], 5), abs=1e-9)
        assert scores[s]["main_score"] == scores[s]["ndcg_float_at_10"]
    # the languages view of the card (one column per domain) is mteb's per-subset mean
    table = summarize(gm, spec, view="languages", tie_rule="group-mean")["rcp_ndcg"]
    view_mean = float(table.loc["mteb-run", DOMAIN])
    mteb_mean = sum(scores[s]["ndcg_float_at_10"] for s in subsets) / len(subsets)
    assert view_mean == pytest.approx(mteb_mean, abs=5e-6)  # mteb rounds each subset to 1e-5
    assert view_mean == pytest.approx(by_subset.mean(), abs=1e-12)


def test_ocr_text_task_with_a_text_encoder(vidore_published, tasks, tmp_path):
    (task,) = tasks.get_tasks([DOMAIN], text_only=True)
    assert task.metadata.name == "Vidore3HrRCPRerankingOCR"
    assert task.metadata.modalities == ["text"]
    assert task.metadata.dataset["revision"] == vidore_published.result.tag
    scores, preds = run_mteb(HashEncoder(), task, tmp_path / "preds")
    _check_against_replay(vidore_published, task, scores, preds)


def test_page_image_task_with_an_image_text_encoder(vidore_published, tasks, tmp_path):
    (task,) = tasks.get_tasks([DOMAIN])
    assert task.metadata.name == "Vidore3HrRCPReranking"
    assert task.metadata.modalities == ["text", "image"] and task.metadata.category == "t2i"
    model = PixelHashEncoder()
    scores, preds = run_mteb(model, task, tmp_path / "preds")
    # documents reached the encoder as page images (text only for the queries)
    n_queries = sum(len(run) for run in preds.values())
    assert model.seen["image"] > 0
    assert model.seen["text"] == n_queries
    _check_against_replay(vidore_published, task, scores, preds)
