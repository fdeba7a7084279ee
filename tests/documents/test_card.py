"""The dataset card: front matter, numbers from the data, tables that parse back, regeneration on
the local Hub (byte-identical, shas written in, v1 marked superseded after v2)."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import uuid
from pathlib import Path

import pandas as pd
import pytest
from support.demo_fixture import copy_demo

from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec
from rcp_data.documents.card import render_card
from rcp_data.documents.card_counts import subset_facts
from rcp_data.model.layout import RELEASES_JSON, provenance_file
from rcp_data.model.release import Release
from rcp_data.model.suite import which_suite


@pytest.fixture(scope="module")
def demo_release(tmp_path_factory, demo_data) -> Path:
    return copy_demo(demo_data, tmp_path_factory.mktemp("card") / "release")


@pytest.fixture(scope="module")
def demo_card(demo_release) -> str:
    return render_card(demo_release)


def _front(text: str) -> dict:
    import yaml

    return yaml.safe_load(text.split("---", 2)[1])


# -- rendering from a release directory --------------------------------------------------------
def test_card_is_deterministic_and_validated(demo_release, demo_card, tmp_path):
    from huggingface_hub import DatasetCard

    assert render_card(demo_release) == demo_card  # byte-identical re-render
    card = DatasetCard(demo_card)
    assert card.data.license == "cc0-1.0" and card.data.pretty_name
    front = _front(demo_card)
    assert "judge-rcp-data-synthetic-judge-7b" in front["tags"] and "demo" in front["tags"]
    (tmp_path / "README.md").write_text(demo_card, encoding="utf-8")
    assert which_suite(tmp_path) == "demo"  # read from the card's tags alone
    # the demo is synthetic and says so before anything else
    body = demo_card.split("---", 2)[2]
    assert body.index("SYNTHETIC DATA") < body.index("## ")
    assert not re.search(r"\d{4}-\d{2}-\d{2}T|\d\d:\d\d:\d\d", demo_card)  # no timestamps


def test_configs_cover_every_table(demo_release, demo_card):
    front = _front(demo_card)
    declared = set()
    for config in front["configs"]:
        for entry in config["data_files"]:
            declared |= {p.relative_to(demo_release).as_posix()
                         for p in demo_release.glob(entry["path"])}
            assert any(demo_release.glob(entry["path"])), entry["path"]
    tables = {p.relative_to(demo_release).as_posix() for p in demo_release.rglob("*.parquet")}
    assert declared == tables
    names = [c["config_name"] for c in front["configs"]]
    assert "alpha-excluded" in names and "beta-excluded" not in names
    assert {"provenance-pool", "provenance-runs", "provenance-first-stage",
            "provenance-judge-criteria"} <= set(names)


def test_numbers_come_from_the_data(demo_release, demo_card, tmp_path):
    spec = load_spec("demo")
    rd = Release(demo_release, spec)
    pool = pd.concat([rd.provenance("pool", s) for s in spec.provenance_splits])
    injected = int(pool["gt_injected"].sum())
    assert f"{injected} of {len(pool)} pool pairs" in demo_card
    facts = subset_facts(rd, "beta")
    qrels = rd.table("beta", "qrels")
    in_pool = set(zip(pool["query-id"], pool["corpus-id"], strict=True))
    outside = sum((q, d) not in in_pool and s >= 1
                  for q, d, s in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"],
                                     strict=True))
    assert facts.positives_outside_pool == outside > 0
    assert f"`beta` {outside}" in demo_card
    # change the data: the card follows
    copy = tmp_path / "release"
    shutil.copytree(demo_release, copy)
    pool_a = pd.read_parquet(copy / provenance_file("pool", "alpha"))
    first = pool_a.index[~pool_a["gt_injected"]][0]
    pool_a.loc[first, "gt_injected"] = True
    pool_a.to_parquet(copy / provenance_file("pool", "alpha"), index=False)
    assert f"{injected + 1} of {len(pool)} pool pairs" in render_card(copy)


def test_pair_counts_with_exclusions_equal_a_count_over_id_tuples(demo_release):
    """The subset facts that join (query, document) pairs: excluded documents, and positives
    outside the pool (excluded ones left out), against plain Python sets of id tuples."""
    spec = load_spec("demo")
    rd = Release(demo_release, spec)
    pool = rd.provenance("pool", spec.provenance_split("alpha"))
    in_pool = set(zip(pool["query-id"], pool["corpus-id"], strict=True))
    excluded = {(q, d) for q, ds in zip(rd.table("alpha", "excluded")["query-id"],
                                        rd.table("alpha", "excluded")["excluded-corpus-ids"],
                                        strict=True) for d in ds}
    qrels = rd.table("alpha", "qrels")
    outside = sum((q, d) not in in_pool and (q, d) not in excluded and s >= 1
                  for q, d, s in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"],
                                     strict=True))
    facts = subset_facts(rd, "alpha")
    assert facts.excluded_docs == len(excluded) > 0
    assert facts.positives_outside_pool == outside
    assert facts.queries_with_exclusions == len({q for q, _ in excluded})


def test_the_card_parses_back_as_huggingface_hub_reads_it(demo_card):
    """The render's own check reads the front matter with libyaml; what it reads is what
    huggingface_hub's ``DatasetCard`` (pure-Python YAML) reads, and a card whose YAML does not
    hold its card data is refused."""
    from huggingface_hub import DatasetCard

    from rcp_data.documents.card import check_card, parse_card_data

    parsed = parse_card_data(demo_card)
    assert parsed.to_dict() == DatasetCard(demo_card).data.to_dict()
    assert len(parsed.to_dict()["configs"]) == len(_front(demo_card)["configs"]) > 0
    check_card(demo_card, parsed)
    edited = demo_card.replace("license: ", "license: x", 1)
    with pytest.raises(InputError, match="does not parse back to its card data"):
        check_card(edited, parsed)


def test_pool_order_paper_rule_is_stated_from_the_replay(demo_release):
    """A suite whose paper rule (pool order) has no table in the card: the card gives its
    largest distance to rule (b), computed from the data, and claims no bracketing."""
    from rcp_data.scoring.replay import replay_release

    spec = dataclasses.replace(load_spec("demo"), paper_tie_rule="pool-order")
    text = render_card(demo_release, spec=spec)
    assert "bracket" not in text
    for metric, label in (("rcp_ndcg", "RCP-nDCG@10"), ("qrel_ndcg", "qrel-nDCG@10")):
        c = replay_release(demo_release, spec, tie_rule="pool-order").tables[metric]
        b = replay_release(demo_release, spec, tie_rule="group-mean").tables[metric]
        cells = (c - b).drop(columns="mean").abs().to_numpy()
        assert f"{100 * cells.max():.2f} points on {label}" in text
    assert "rule (c)" not in text                  # still only the shown rules' tables


def test_layout_counts_candidates_of_top_ranked_not_of_the_pool(demo_release, demo_card):
    """top_ranked lists the pool minus each query's exclusions: the layout row gives its own
    list lengths (the demo's alpha subset excludes documents)."""
    import pyarrow.parquet as pq

    spec = load_spec("demo")
    lengths = [len(ids) for s in spec.subset_names
               for ids in pq.read_table(demo_release / s / "top_ranked.parquet")
               .column("corpus-ids").to_pylist()]
    low, high = min(lengths), max(lengths)
    assert low < high                                  # exclusions shorten some lists
    row = next(line for line in demo_card.splitlines()
               if line.startswith("| `{subset}-top_ranked`"))
    assert f"({low}–{high} candidates per query)" in row


def test_native_vs_language_mean_lines_come_from_the_tables():
    """ViDoRe-like tables (hand-made numbers, not real data): the card states the mean and the
    range of (language mean - native) per cell under the suite's rule, as the published card."""
    from rcp_data.documents.card import view_gaps
    from rcp_data.scoring.replay import ReplayResult

    spec = load_spec("vidore_v3")
    domains = [d.name for d in spec.domains]
    base = pd.DataFrame([[0.5 + 0.01 * i for i in range(len(domains))]], columns=domains,
                        index=pd.Index(["m1"], name="model"))
    shift = pd.Series([0.02, -0.08] + [0.0] * (len(domains) - 2), index=domains)
    results = {}
    for view, table in (("native", base), ("languages", base + shift)):
        tables = {}
        for metric in ("rcp_ndcg", "qrel_ndcg"):
            t = table.copy()
            t["mean"] = t.mean(axis=1)
            tables[metric] = t
        results[(view, "group-mean")] = ReplayResult(10, "group-mean", view, spec,
                                                     pd.DataFrame(), tables)
    gaps = view_gaps(spec, results)
    mean = 100 * shift.mean()
    assert [(g.label, g.letter) for g in gaps] == [("RCP-nDCG@10", "b"), ("qrel-nDCG@10", "b")]
    assert gaps[0].mean == pytest.approx(mean) and gaps[0].cells == len(domains)
    assert (gaps[1].low, gaps[1].high) == (pytest.approx(-8.0), pytest.approx(2.0))
    assert view_gaps(load_spec("demo"), {}) == []


def test_real_suite_card_has_no_synthetic_banner(demo_release, tmp_path):
    """Only data says whether a release is synthetic: a non-synthetic suite whose build
    manifest says it was built from generated data still gets the banner."""
    from rcp_data.core.io import read_json, write_json
    from rcp_data.model.layout import BUILD_MANIFEST

    spec = dataclasses.replace(load_spec("demo"), synthetic=False)
    flagged = render_card(demo_release, spec=spec)
    assert "SYNTHETIC DATA" in flagged and "synthetic" in _front(flagged)["tags"]
    copy = tmp_path / "release"
    shutil.copytree(demo_release, copy)
    manifest = read_json(copy / BUILD_MANIFEST)
    manifest["synthetic"] = False
    write_json(manifest, copy / BUILD_MANIFEST)
    text = render_card(copy, spec=spec)
    assert "SYNTHETIC DATA" not in text and "SYNTHETIC DATA" in render_card(demo_release)
    assert "synthetic" not in _front(text)["tags"]


def test_tables_parse_back_to_the_replay(demo_release, demo_card, tmp_path):
    from rcp_data.scoring.compare import load_tables
    from rcp_data.scoring.replay import load_release, replay_loaded

    spec = load_spec("demo")
    path = tmp_path / "README.md"
    path.write_text(demo_card, encoding="utf-8")
    parsed = load_tables(path)
    assert parsed.suite == "demo"
    data = load_release(demo_release, spec)
    expected = {}
    for rule in ("doc-id",):              # the demo's paper rule: the one rule tabulated
        metrics = replay_loaded(data, k=10, tie_rule=rule).to_json()["metrics"]
        for metric, rows in metrics.items():
            if metric not in ("rcp_ndcg", "qrel_ndcg"):    # the card's tables (Count and
                continue                                   # Raw-BT: its Diagnostics)
            for model, cols in rows.items():
                for col, value in cols.items():
                    expected[(metric, rule, model, col)] = round(100 * value, 1)
    got = {(k.metric, k.tie_rule, k.model, k.column): v for k, v in parsed.cells.items()}
    assert all(k.k == 10 and k.view == "subsets" for k in parsed.cells)
    assert got == expected
    assert len(got) == 2 * 4 * 3  # metrics x rerankers x (2 subsets + mean)
    # rows ranked by RCP-nDCG@10 Mean, best first, in both tables
    means = {model: cols["mean"] for model, cols in metrics["rcp_ndcg"].items()}
    ranked = sorted(means, key=lambda m: -means[m])
    spec_short = {spec.hub_id(s): s for s in spec.rerankers}
    for title in ("RCP-nDCG@10 (%), rule (a)", "qrel-nDCG@10 (%), rule (a)"):
        table = demo_card.split(f"**{title}")[1].split("\n\n", 2)[1]
        rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
        assert rows == [spec_short[m] for m in ranked]
    # rule (b) is summarised, not tabulated
    assert "rule (b): group-mean" not in demo_card
    assert "`rcp-data replay --tie-rule group-mean` prints them" in demo_card


def test_cli_render_writes_card_and_task_file(demo_release, tmp_path, capsys):
    from rcp_data.cli import main

    copy = tmp_path / "release"
    shutil.copytree(demo_release, copy)
    assert main(["card", "render", str(copy)]) == 0
    # render wrote the Diagnostics (pictures, numbers) again, equal to the build's, which
    # the card shows
    card = (copy / "README.md").read_text(encoding="utf-8")
    assert card == render_card(copy) == render_card(demo_release)
    assert "## Diagnostics" in card
    assert '_REVISION = "v1-rcp-data-synthetic-judge-7b"' in (copy / "rcp_ndcg_tasks.py"
                                                              ).read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["card", "render", str(copy), "--out", "-"]) == 0
    assert capsys.readouterr().out.startswith("---\n")
    assert main(["card", "render", str(tmp_path / "missing")]) == 2


# -- the local Hub -----------------------------------------------------------------------------
def _tree(api, repo: str, revision: str) -> dict[str, str]:
    return {e.path: e.blob_id for e in api.list_repo_tree(repo, revision=revision,
                                                          repo_type="dataset", recursive=True)
            if hasattr(e, "blob_id")}


def _tags(api, repo: str) -> dict[str, str]:
    return {t.name: t.target_commit for t in api.list_repo_refs(repo, repo_type="dataset").tags}


@pytest.mark.slow
def test_publish_regenerate_and_supersede(demo_release, local_hub, tmp_path):
    import datasets
    from huggingface_hub import HfApi, hf_hub_download

    from rcp_data.documents.card import release_history, write_release_files
    from rcp_data.model.history import add_release, read_history
    from rcp_data.release.publish import publish
    from rcp_data.release.regenerate import REGENERATED_FILES, regenerate

    api = HfApi()
    spec = load_spec("demo")
    repo = f"rcp-test/card-{uuid.uuid4().hex[:8]}"
    root = tmp_path / "v1"
    shutil.copytree(demo_release, root)
    history = release_history(root, spec, repo=repo)
    (root / RELEASES_JSON).write_text(history.to_json(), encoding="utf-8")
    write_release_files(root, spec=spec, history=history, repo=repo)
    publish(root, repo, create_repo=True)
    tag1 = history.current.tag
    sha1 = _tags(api, repo)[tag1]

    # every config the card declares loads, at the tag and at the sha
    front = _front((root / "README.md").read_text(encoding="utf-8"))
    for revision in (tag1, sha1):
        for config in front["configs"]:
            for entry in config["data_files"]:
                ds = datasets.load_dataset(repo, config["config_name"], split=entry["split"],
                                           revision=revision)
                files = sorted(root.glob(entry["path"]))
                assert ds.num_rows == sum(len(pd.read_parquet(f)) for f in files)

    # regeneration writes in the sha, changes only the three files, moves no tag
    result = regenerate(repo, "main")
    assert result.parent == sha1 and result.commit
    before, after = _tree(api, repo, sha1), _tree(api, repo, result.commit)
    assert {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)} \
        == set(REGENERATED_FILES)
    assert _tags(api, repo) == {tag1: sha1}
    card = Path(hf_hub_download(repo, "README.md", repo_type="dataset",
                                revision=result.commit)).read_text(encoding="utf-8")
    assert f"`{sha1}`" in card and "this revision" not in card.split("## Releases")[1][:400]
    task_file = Path(hf_hub_download(repo, "rcp_ndcg_tasks.py", repo_type="dataset",
                                     revision=result.commit)).read_text(encoding="utf-8")
    assert f'_REVISION = "{sha1}"' in task_file
    # unchanged release: regenerating again is byte-identical, so nothing is committed
    again = regenerate(repo, "main")
    assert again.commit is None and again.parent == result.commit

    # release 2 (same data, a new release commit and tag), then regeneration marks v1 superseded
    root2 = tmp_path / "v2"
    shutil.copytree(root, root2)
    head = read_history(Path(hf_hub_download(repo, RELEASES_JSON, repo_type="dataset",
                                             revision=result.commit)))
    cur = head.current
    history2 = add_release(head, judge=cur.judge, calibration=cur.calibration,
                           previous_revision=sha1)
    (root2 / RELEASES_JSON).write_text(history2.to_json(), encoding="utf-8")
    write_release_files(root2, spec=spec, history=history2, repo=repo)
    publish(root2, repo)
    tag2 = history2.current.tag
    sha2 = _tags(api, repo)[tag2]
    third = regenerate(repo, "main")
    assert third.parent == sha2 and third.commit
    card = Path(hf_hub_download(repo, "README.md", repo_type="dataset",
                                revision=third.commit)).read_text(encoding="utf-8")
    rows = [line for line in card.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    status = [[c.strip() for c in row.strip("|").split(" | ")][5] for row in rows]
    assert status == ["superseded", "current"]            # the status column, date and
    assert f"`{sha1}`" in rows[0] and f"`{sha2}`" in rows[1]   # summary after it
    task_file = Path(hf_hub_download(repo, "rcp_ndcg_tasks.py", repo_type="dataset",
                                     revision=third.commit)).read_text(encoding="utf-8")
    meta = json.loads(re.search(r'_TASK_METADATA = json\.loads\(r"""(.*?)"""\)', task_file,
                                re.S).group(1))
    assert meta["DemoAlphaRCPReranking"]["metadata"]["superseded_by"] == \
        "DemoAlphaRCPReranking.v2"
    assert meta["DemoAlphaRCPReranking"]["metadata"]["dataset"]["revision"] == sha1
    assert meta["DemoAlphaRCPReranking.v2"]["metadata"]["dataset"]["revision"] == sha2
    assert _tags(api, repo) == {tag1: sha1, tag2: sha2}


def test_relation_to_the_paper_counts_cells_as_printed():
    """Hand-made tables: the paper's NanoBEIR values (as fractions), one RCP cell moved by 0.1
    point and one by 0.02 (still printing the same): the paragraph counts what prints alike."""
    from rcp_data.core.io import read_json
    from rcp_data.documents.card_facts import paper_relation
    from rcp_data.documents.card_text import card_sentence
    from rcp_data.model.history import history_path, read_history
    from rcp_data.resources import provenance_dir

    spec = load_spec("nanobeir")
    boards = read_json(provenance_dir() / "paper_values.json")["leaderboards"]["nanobeir"]
    tables = {}
    for metric, key in (("rcp_ndcg", "rcp_ndcg10"), ("qrel_ndcg", "qrel_ndcg10")):
        rows = {spec.hub_id(m): {c: v / 100 for c, v in cols.items()}
                for m, cols in boards[key].items()}
        tables[metric] = pd.DataFrame.from_dict(rows, orient="index")
    first = tables["rcp_ndcg"].index[0]
    tables["rcp_ndcg"].loc[first, "NanoFEVERRetrieval"] += 0.001
    tables["rcp_ndcg"].loc[first, "NanoQuoraRetrieval"] += 0.0002
    history = read_history(history_path("nanobeir"))
    relation = paper_relation(spec, tables, history, synthetic=False)
    assert relation.case == "compared" and relation.rerankers == len(tables["rcp_ndcg"].index)
    text = card_sentence("paper_relation", relation)
    assert "qrel-nDCG@10: 182 of 182 cells and 14 of 14 means print as the paper's" in text
    assert "RCP-nDCG@10: 181 of 182 cells and 14 of 14 means print as the paper's" in text
    assert "differ by at most 0.1 (FEVER 1)" in text
    assert "the unrounded replay is at most 0.10 points" in text
    assert "replayed from release 1 (commit `4517f2cb9e342479725bf0931a329998b4d35038`)" in text
    assert "SYNTHETIC" in card_sentence("paper_relation",
                                        paper_relation(spec, tables, history, synthetic=True))
