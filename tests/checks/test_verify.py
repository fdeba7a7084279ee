"""``rcp-data verify`` against the local Hub with the real huggingface_hub client.

The SYNTHETIC demo suite is built once per module, published as release 1 and as release 2 (a
recalibration: new item parameters, new gains, same data); each kind of damage is then made in
a NEW commit (on a branch of its own) with ``HfApi.create_commit`` and must be caught and named.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi
from support.demo_fixture import copy_demo, refit_release_2
from support.stages import Staged
from support.tamper import tamper_commit

from rcp_data.checks.verify import check_paper, paper_applies, verify
from rcp_data.checks.verify_stages import Fetched
from rcp_data.cli import main
from rcp_data.core.hub_client import HubClient
from rcp_data.core.specs import load_spec
from rcp_data.model.history import History, read_history, write_history
from rcp_data.model.layout import CARD_FILE, RELEASES_JSON, TASK_FILE
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_parquet
from rcp_data.release.publish import publish
from rcp_data.scoring.compare import CellKey, TableSet, load_tables

log = logging.getLogger(__name__)
REPO_TYPE = "dataset"


# -- building and publishing the demo releases ----------------------------------------------------
def _release_files(root: Path, spec, history: History) -> None:
    """Card and task file, written by the card module (a failure there fails the test)."""
    from rcp_data.documents.card import write_release_files

    write_release_files(root, spec=spec, history=history, repo=history.repo)


def _first_history(root: Path, spec, repo: str) -> History:
    from rcp_data.documents.card import release_history

    return release_history(root, spec, repo=repo)


@pytest.fixture(scope="module")
def published(local_hub, tmp_path_factory, demo_data) -> dict:
    """Demo release 1 and 2 on the local Hub: ``{repo, api, tag1, sha1, tag2, sha2, v1, v2}``."""
    base = tmp_path_factory.mktemp("verify-demo")
    repo = f"rcp-test/verify-{uuid.uuid4().hex[:8]}"
    api = HfApi(endpoint=local_hub.url)
    spec = load_spec("demo")
    v1, v2 = base / "v1", base / "v2"
    copy_demo(demo_data, v1, work=base / "inputs")
    history = _first_history(v1, spec, repo)
    write_history(history, v1 / RELEASES_JSON)
    _release_files(v1, spec, history)
    r1 = publish(v1, repo, client=HubClient(local_hub.url), create_repo=True)
    refit_release_2(v1, v2, spec, r1.commit)  # the same answers re-read and refitted
    _release_files(v2, spec, read_history(v2 / RELEASES_JSON))
    r2 = publish(v2, repo, client=HubClient(local_hub.url))
    return {"repo": repo, "api": api, "tag1": r1.tag, "sha1": r1.commit, "tag2": r2.tag,
            "sha2": r2.commit, "v1": v1, "v2": v2, "client_url": local_hub.url}


def _tamper(p: dict, name: str, files: dict[str, bytes]) -> str:
    """A new commit on a branch of its own, on top of release 2, changing ``files``."""
    return tamper_commit(p["api"], p["repo"], p["sha2"], name, files)


def _parquet_bytes(frame: pd.DataFrame, kind: str, tmp: Path) -> bytes:
    path = tmp / f"{kind}.parquet"
    write_parquet(frame, path, SCHEMAS[kind])
    return path.read_bytes()


def _failed(report) -> dict:
    return {c.name: c for c in report.checks if not c.ok}


def _failed_of(staged: Staged) -> dict:
    return {c.name: c for c in staged.failed}


def _staged(p: dict, revision: str, tmp_path: Path) -> Staged:
    """``revision`` fetched as verify fetches it, its stages run as a test asks for them."""
    return Staged.of(HubClient(p["client_url"], cache_dir=tmp_path / "c"), p["repo"], revision)


def _card_stages(root: Path) -> Staged:
    """A local release taken through every stage that reads the card or the task file: the
    inputs, the integrity (the card's configs), the counts the card states, the replay (the
    card's tables) and the documents rendered again (the judge provenance and the Diagnostics
    read neither)."""
    staged = Staged(Fetched(root))
    staged.counts, staged.documents  # noqa: B018
    return staged


def _hub_state(api: HfApi, repo: str) -> tuple:
    refs = api.list_repo_refs(repo, repo_type=REPO_TYPE)
    commits = [c.commit_id for c in api.list_repo_commits(repo, repo_type=REPO_TYPE)]
    return (commits, sorted((b.name, b.target_commit) for b in refs.branches),
            sorted((t.name, t.target_commit) for t in refs.tags))


def _tree(root: Path, skip: Path | None = None, *, server_caches: bool = False) -> dict:
    """``{path: (size, mtime) | None}`` of a folder (``server_caches``: leave out the local
    Hub server's own top-level caches, ``.blob-cache`` and ``.tmp``; repositories stay in)."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        if skip is not None and (p == skip or skip in p.parents):
            continue
        if server_caches and p.relative_to(root).parts[0].startswith("."):
            continue
        st = p.lstat()
        out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns) if p.is_file() else None
    return out


# -- clean releases --------------------------------------------------------------------------------
def test_both_releases_verify_clean_by_tag_and_sha(published, local_hub, tmp_path, monkeypatch):
    p = published
    hf_home = Path(os.environ["HF_HOME"])
    hf_home.mkdir(parents=True, exist_ok=True)
    cache = tmp_path / "cache"
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    hub_before, store_before = _hub_state(p["api"], p["repo"]), _tree(local_hub.root,
                                                                          server_caches=True)
    home_before, tmp_before = _tree(hf_home), _tree(tmp_path, skip=cache)
    # by tag and by sha (release 2 by tag end to end: test_cli_by_tag_json_and_exit_zero;
    # release 1 by sha through the stages that read the revision's name:
    # test_verify_tamper.py::test_untampered_tags_shas_and_head_verify)
    for rev, number, sha in ((p["tag1"], 1, p["sha1"]), (p["sha2"], 2, p["sha2"])):
        report = verify(repo=p["repo"], revision=rev, cache_dir=cache)
        assert report.ok, report.text()
        assert (report.sha, report.release, report.suite) == (sha, number, "demo")
        names = {c.name for c in report.checks}
        assert {"gains", "fusion", "pool-rule", "top-ranked-in-corpus", "configs",
                "card-tables", "replay"} <= names
        assert report.check("card-tables").found.endswith("0 differ")
        assert report.check("paper-tables").status == "skipped"      # synthetic: no paper
        assert (report.check("tag") is not None) == (rev.startswith("v"))
        # downloaded strictly by sha, into the cache only
        assert str(report.root).startswith(str(cache)) and sha in str(report.root)
    # release 2 has other gains than release 1: each verified against its own item parameters
    g1 = pq.read_table(p["v1"] / "alpha/qrels.parquet")["gain"].to_pylist()
    g2 = pq.read_table(p["v2"] / "alpha/qrels.parquet")["gain"].to_pylist()
    assert g1 != g2
    # verification wrote nothing to the Hub and nothing outside its cache
    assert _hub_state(p["api"], p["repo"]) == hub_before
    assert _tree(local_hub.root, server_caches=True) == store_before
    assert _tree(hf_home) == home_before
    assert _tree(tmp_path, skip=cache) == tmp_before


def test_cli_by_tag_json_and_exit_zero(published, tmp_path, capsys):
    p = published
    from rcp_data.core.files import hash_files, release_paths
    from rcp_data.model.manifest import release_digest

    digest1, digest2 = (release_digest(hash_files(p[v], release_paths(p[v])).values())
                        for v in ("v1", "v2"))
    rc = main(["verify", "--repo", p["repo"], "--revision", p["tag2"], "--json",
               "--cache-dir", str(tmp_path / "c")])
    out = json.loads(capsys.readouterr().out)
    # no record lists this repository: every check passes, nothing anchors it (exit 3)
    assert rc == 3 and out["ok"] and out["exit_code"] == 3 and out["anchor"] is None
    assert out["digest"] == digest2 and not out["anchored"]
    rc = main(["verify", "--repo", p["repo"], "--revision", p["tag2"], "--json",
               "--cache-dir", str(tmp_path / "c"), "--digest", digest2])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ok"] and out["exit_code"] == 0
    assert out["anchor"] == "the pinned digest (--digest)"
    assert out["sha"] == p["sha2"] and out["release"] == 2
    assert all(set(c) >= {"name", "what", "expected", "found", "where", "status"}
               for c in out["checks"])
    rc = main(["verify", f"hf://datasets/{p['repo']}@{p['tag1']}", "--cache-dir",
               str(tmp_path / "c"), "--digest", digest1])
    text = capsys.readouterr().out
    assert rc == 0 and "VERIFIED" in text and p["sha1"] in text
    # a branch resolves to its head (release 2's commit) like a sha (the pin)
    staged = _staged(p, "main", tmp_path)
    assert (staged.fetched.pin.sha, staged.pinned.release.release) == (p["sha2"], 2)
    assert not staged.failed and staged.check("revision").status == "ok"


def test_local_directory_verifies(published):
    report = verify(path=published["v1"])
    assert report.ok, report.text()
    assert report.sha is None and report.release == 1


def test_card_count_that_disagrees_with_the_data_is_named(published, tmp_path):
    root = tmp_path / "v1"
    shutil.copytree(published["v1"], root)
    pool_pairs = sum(pq.read_metadata(f).num_rows for f in root.glob("provenance/pool/*.parquet"))
    card = (root / CARD_FILE).read_text(encoding="utf-8")
    stated = re.findall(rf"\b{pool_pairs:,} pool pairs\b", card)
    assert stated, f"the card must state the pool-pair total {pool_pairs:,}"
    (root / CARD_FILE).write_text(card.replace(f"{pool_pairs:,} pool pairs",
                                               f"{pool_pairs + 1:,} pool pairs", 1),
                                  encoding="utf-8")
    failed = _failed_of(_card_stages(root))
    assert set(failed) == {"card-counts", "card-regenerated"}
    (detail,) = failed["card-counts"].details
    assert f"pool_pairs {pool_pairs + 1:,}, the data has {pool_pairs:,}" in detail
    (line,) = failed["card-regenerated"].details
    assert f"{pool_pairs + 1:,} pool pairs" in line and f"{pool_pairs:,} pool pairs" in line


def test_card_without_a_config_is_named(published, tmp_path):
    import yaml

    root = tmp_path / "v1"
    shutil.copytree(published["v1"], root)
    text = (root / CARD_FILE).read_text(encoding="utf-8")
    _, front, body = text.split("---", 2)
    data = yaml.safe_load(front)
    data["configs"] = [c for c in data["configs"] if c["config_name"] != "beta-qrels"]
    (root / CARD_FILE).write_text(f"---\n{yaml.safe_dump(data, sort_keys=False)}---{body}",
                                  encoding="utf-8")
    failed = _failed_of(_card_stages(root))
    assert set(failed) == {"configs-complete", "card-regenerated"}
    assert failed["configs-complete"].details == ["no config 'beta-qrels'"]


def test_task_file_pinning_another_revision_is_named(published, tmp_path):
    root = tmp_path / "v1"
    shutil.copytree(published["v1"], root)
    text = (root / TASK_FILE).read_text(encoding="utf-8")
    assert f'_REVISION = "{published["tag1"]}"' in text
    (root / TASK_FILE).write_text(text.replace(f'_REVISION = "{published["tag1"]}"',
                                               f'_REVISION = "{published["tag2"]}"'),
                                  encoding="utf-8")
    failed = _failed_of(_card_stages(root))
    assert set(failed) == {"task-file", "task-file-regenerated"}
    assert failed["task-file"].expected == published["tag1"]
    assert failed["task-file"].found == f"_REVISION = {published['tag2']!r}"
    (line,) = failed["task-file-regenerated"].details
    assert line.endswith(f'the file has \'_REVISION = "{published["tag2"]}"\'')


# -- tampering -------------------------------------------------------------------------------------
def test_changed_gain_is_named(published, tmp_path):
    p = published
    q = pd.read_parquet(p["v2"] / "beta/qrels.parquet")
    i = q.index[q["theta"].notna()][11]
    q.loc[i, "gain"] = q.loc[i, "gain"] + 1e-6
    sha = _tamper(p, "gain", {"beta/qrels.parquet": _parquet_bytes(q, "qrels", tmp_path)})
    staged = _staged(p, sha, tmp_path)
    staged.integrity  # noqa: B018 -- the gains against the item parameters
    report = staged.report()
    failed = _failed(report)
    assert "gains" in failed and report.exit_code == 1
    detail = failed["gains"].details[0]
    assert "subset beta" in detail
    assert f"query {q.loc[i, 'query-id']}" in detail
    assert f"document {q.loc[i, 'corpus-id']}" in detail
    assert len(failed["gains"].details) == 1
    assert "subset beta" in report.text()
    # the commit carries release 2's releases.json, but the Hub's tag of release 2 is elsewhere
    revision = report.check("revision")
    assert revision.ok and revision.status == "diff" and p["sha2"] in revision.found


def test_deleted_pooled_document_is_named(published, tmp_path):
    p = published
    corpus = pd.read_parquet(p["v2"] / "alpha/corpus.parquet")
    top = pd.read_parquet(p["v2"] / "alpha/top_ranked.parquet")
    victim = top["corpus-ids"].iloc[3][5]
    kept = corpus[corpus["id"] != victim]
    assert len(kept) == len(corpus) - 1
    sha = _tamper(p, "corpus", {"alpha/corpus.parquet": _parquet_bytes(kept, "corpus",
                                                                        tmp_path)})
    staged = _staged(p, sha, tmp_path)
    staged.integrity  # noqa: B018
    failed = _failed_of(staged)
    assert "top-ranked-in-corpus" in failed
    assert any(victim in d for d in failed["top-ranked-in-corpus"].details)
    assert failed["top-ranked-in-corpus"].found == "1 missing"


def test_moved_tag_fails(published, tmp_path, capsys):
    p = published
    api: HfApi = p["api"]
    api.delete_tag(p["repo"], tag=p["tag1"], repo_type=REPO_TYPE)
    api.create_tag(p["repo"], tag=p["tag1"], revision=p["sha2"], repo_type=REPO_TYPE)
    try:
        # the stages that read the Hub's tags: the pin and the history (the files are release
        # 2's, verified end to end in test_both_releases_verify_clean_by_tag_and_sha)
        staged = _staged(p, p["tag1"], tmp_path)
        staged.history  # noqa: B018
        failed = _failed_of(staged)
        assert set(failed) == {"tag", "older-releases"}, staged.failed
        assert failed["older-releases"].details == [
            f"release 1 ({p['tag1']}): the Hub's tag points at {p['sha2']}, releases.json "
            f"names {p['sha1']}"]
        tag = failed["tag"]
        assert p["sha1"] in tag.expected and p["sha2"] in tag.found
        assert "no longer matches releases.json" in tag.details[0]
        rc = main(["verify", "--repo", p["repo"], "--revision", p["tag1"], "--cache-dir",
                   str(tmp_path / "c")])
        assert rc == 1 and "no longer matches releases.json" in capsys.readouterr().out
    finally:
        api.delete_tag(p["repo"], tag=p["tag1"], repo_type=REPO_TYPE)
        api.create_tag(p["repo"], tag=p["tag1"], revision=p["sha1"], repo_type=REPO_TYPE)
    restored = _staged(p, p["tag1"], tmp_path)
    restored.history  # noqa: B018
    assert not restored.failed and restored.pinned.release.release == 1
    # the other way round: tag v2 moved back onto the v1 commit, whose releases.json has no v2
    api.delete_tag(p["repo"], tag=p["tag2"], repo_type=REPO_TYPE)
    api.create_tag(p["repo"], tag=p["tag2"], revision=p["sha1"], repo_type=REPO_TYPE)
    try:
        staged = _staged(p, p["tag2"], tmp_path)
        staged.history  # noqa: B018
        assert set(_failed_of(staged)) == {"tag"}
        assert "names no such release" in staged.check("tag").found
    finally:
        api.delete_tag(p["repo"], tag=p["tag2"], repo_type=REPO_TYPE)
        api.create_tag(p["repo"], tag=p["tag2"], revision=p["sha2"], repo_type=REPO_TYPE)


def test_edited_card_cell_is_named(published, tmp_path, capsys):
    p = published
    text = (p["v2"] / CARD_FILE).read_text(encoding="utf-8")
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines)
                 if re.search(r"qrel-nDCG@10 \(%\), rule \(a\)", line))
    row = next(i for i in range(title + 1, len(lines)) if lines[i].startswith("| Beta-RR"))
    cells = lines[row].split("|")
    old = float(cells[3])          # second column: the "Beta" subset
    cells[3] = f" {old + 0.3:.1f} "
    lines[row] = "|".join(cells)
    sha = _tamper(p, "card", {CARD_FILE: ("\n".join(lines) + "\n").encode("utf-8")})
    rc = main(["verify", "--repo", p["repo"], "--revision", sha, "--json", "--cache-dir",
               str(tmp_path / "c")])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and not out["ok"]
    failed = {c["name"]: c for c in out["checks"] if not c["ok"]}
    # the edited cell, the card that is no longer the rendering, and a releases.json that
    # still calls this later commit release 2's own (revision null)
    assert set(failed) == {"card-tables", "card-regenerated", "releases-json-revision"}
    (line,) = failed["card-regenerated"]["details"]
    assert line.startswith(f"line {row + 1}, column ") and f"{old + 0.3:.1f}" in line
    (detail,) = failed["card-tables"]["details"]
    assert detail.startswith("qrel-nDCG@10 rule (a), view subsets, row Beta-RR, column Beta: "
                             f"card {old + 0.3:.2f}, replay ")
    replayed = float(detail.rsplit("replay ", 1)[1])
    assert abs(replayed - old) <= 0.05 + 1e-6


# -- could not run ---------------------------------------------------------------------------------
def test_unknown_repo_revision_and_missing_path_exit_2(published, tmp_path, capsys):
    p = published
    assert main(["verify", "--repo", "rcp-test/no-such-repo", "--revision", "v1",
                 "--cache-dir", str(tmp_path / "c")]) == 2
    assert main(["verify", "--repo", p["repo"], "--revision", "v9-nothing", "--json",
                 "--cache-dir", str(tmp_path / "c")]) == 2
    err = json.loads(capsys.readouterr().out)
    assert err["exit_code"] == 2 and "v9-nothing" in err["error"]
    assert main(["verify", str(tmp_path / "missing-dir")]) == 2
    assert main(["verify"]) == 2


def test_malformed_files_are_failed_checks_naming_them(published, tmp_path, capsys):
    """A file that does not read is a failed check naming it (exit 1), never exit 2."""
    broken = tmp_path / "broken"
    shutil.copytree(published["v1"], broken)
    (broken / RELEASES_JSON).write_text("{not json", encoding="utf-8")
    assert main(["verify", str(broken), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    failed = {(c["name"], c["where"]) for c in out["checks"] if not c["ok"]}
    assert ("file-readable", RELEASES_JSON) in failed and ("releases-json", RELEASES_JSON) in failed
    unreadable = tmp_path / "unreadable"
    shutil.copytree(published["v1"], unreadable)
    (unreadable / "beta/qrels.parquet").write_bytes(b"PAR1 not parquet")
    assert main(["verify", str(unreadable), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    readable = [c for c in out["checks"] if c["name"] == "file-readable"]
    assert [(c["where"], c["ok"]) for c in readable] == [("beta/qrels.parquet", False)]
    assert readable[0]["found"].startswith("not a readable parquet file")
    hashes = next(c for c in out["checks"] if c["name"] == "content-hashes")
    assert not hashes["ok"] and hashes["details"][0].startswith("beta/qrels.parquet: sha256 ")


# -- published card tables --------------------------------------------------------------------------
def test_published_card_tables_are_read_and_a_changed_cell_named(reference_dir):
    """The published ViDoRe card (plain text, both rules, both views) against itself."""
    from rcp_data.checks.verify import check_card_tables

    spec = load_spec("vidore_v3")
    card = load_tables(reference_dir / "card-rcp-ndcg-vidore-v3.txt", spec)
    expected = {(m, 10, r, v) for m in ("rcp_ndcg", "qrel_ndcg")
                for r in ("doc-id", "group-mean") for v in ("native", "languages")}
    assert card.groups() == expected
    same = TableSet("replay", "replay", spec.name, dict(card.cells), 0.0)
    shown, cells = check_card_tables(card, same, spec, expected)
    assert shown.ok and cells.ok and cells.found == f"{len(card.cells)} matched, 0 differ"
    key = next(k for k in card.cells if k.view == "languages" and k.tie_rule == "doc-id"
               and k.metric == "qrel_ndcg" and k.column == "energy")
    moved = dict(card.cells)
    moved[key] += 0.1
    _, cells = check_card_tables(card, TableSet("replay", "replay", spec.name, moved, 0.0),
                                 spec, expected)
    assert not cells.ok and len(cells.details) == 1
    assert cells.details[0].startswith(
        f"qrel-nDCG@10 rule (a), view languages, row {spec.short_name(key.model)}, column Energy: "
        f"card {card.cells[key]:.2f}, replay {moved[key]:.2f}")


# -- the paper ------------------------------------------------------------------------------------
def _paper_cells(spec, reference: Path) -> TableSet:
    paper = load_tables(reference, spec)
    return TableSet("replay", "replay", spec.name, dict(paper.cells), 0.0)


def test_paper_only_for_the_release_the_paper_used(reference_dir):
    spec = load_spec("vidore_v3")
    project = read_history(Path(__file__).resolve().parents[2] / "release/vidore_v3.json")
    r1, r2 = project.releases
    assert paper_applies(spec, project, r1, None)[0]
    assert paper_applies(spec, project, r2, "f" * 40)[0] is False
    assert paper_applies(spec, project, r2, spec.paper_revision)[0]


def test_paper_differences_fail_or_diff(reference_dir):
    spec = load_spec("vidore_v3")
    reference = reference_dir / "paper_values.json"
    replay = _paper_cells(spec, reference)
    key = next(k for k in replay.cells if k.metric == "rcp_ndcg" and k.column != "mean")
    moved = dict(replay.cells)
    moved[key] = replay.cells[key] + 0.3
    replay = TableSet("replay", "replay", spec.name, moved, 0.0)
    (same,) = check_paper(reference, _paper_cells(spec, reference), {}, spec, True, "paper's")
    assert same.ok and same.status == "ok"
    (fail,) = check_paper(reference, replay, {}, spec, True, "the paper's release")
    assert not fail.ok and fail.status == "failed" and len(fail.details) == 1
    assert spec.short_name(key.model) in fail.details[0]
    (diff,) = check_paper(reference, replay, {}, spec, False, "release 2")
    assert diff.ok and diff.status == "diff" and diff.details == fail.details
    assert isinstance(key, CellKey)


def _bench_generator():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "verify.py"
    spec = importlib.util.spec_from_file_location("bench_verify", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_paper_policy_end_to_end(tmp_path, reference_dir):
    """A SYNTHETIC ViDoRe-layout release: its numbers differ from the paper's. As a release the
    paper did not use, that is a diff (exit 0); named as the paper's release, a failure."""
    root = _bench_generator().generate(tmp_path / "vidore", 2)
    reference = reference_dir / "paper_values.json"
    report = verify(path=root, reference=reference)
    assert report.exit_code == 0, report.text()
    paper = report.check("paper-tables")
    assert paper.status == "diff" and paper.details
    assert report.check("card-tables").ok and report.check("card-tables-shown").ok
    history = json.loads((root / RELEASES_JSON).read_text(encoding="utf-8"))
    history["paper"] = {"release": 1, "note": "SYNTHETIC test: pretend the paper used it"}
    (root / RELEASES_JSON).write_text(json.dumps(history), encoding="utf-8")
    from rcp_data.cli import main  # a changed history is followed by a card regeneration

    assert main(["card", "render", str(root)]) == 0
    report = verify(path=root, reference=reference)
    assert report.exit_code == 1
    assert [c.name for c in report.failed] == ["paper-tables"]
    assert report.check("paper-tables").details == paper.details


def test_trecdl_pair_statistics_fail_or_diff(reference_dir):
    """TREC-DL's paper numbers are pair statistics (pool-order ties); random per-query values
    (SYNTHETIC) cannot reproduce them: a failure for the paper's release, else a diff."""
    spec = load_spec("trecdl")
    rng = np.random.default_rng(3)
    models = list(dict.fromkeys(spec.rerankers.values()))[:14]
    frames = []
    for subset, n_q in ((s.name, s.upstream["queries"]) for s in spec.subsets):
        for m in models:
            frames.append(pd.DataFrame({
                "tie_rule": "pool-order", "subset": subset, "model": m,
                "query-id": [f"{subset}-q{i}" for i in range(n_q)],
                "rcp_ndcg": rng.random(n_q), "qrel_ndcg": rng.random(n_q)}))
    per_query = {10: pd.concat(frames, ignore_index=True)}
    empty = TableSet("replay", "replay", spec.name, {}, 0.0)
    reference = reference_dir / "paper_values.json"
    (fail,) = check_paper(reference, empty, per_query, spec, True, "the paper's release")
    assert fail.name == "paper-pairs" and fail.status == "failed" and fail.details
    assert any(d.startswith("dl19 ") for d in fail.details)
    (diff,) = check_paper(reference, empty, per_query, spec, False, "a later release")
    assert diff.ok and diff.status == "diff" and diff.details == fail.details


def test_card_count_statements_are_read():
    from rcp_data.checks.verify import check_card_counts

    card = ("---\ntags: [x]\n---\n\nholds 2 subsets (97 queries, split `test`). The text is "
            "repaired: 2,010,123 of 8,841,823 passages (22.7%) differ. 38 of 480 pool pairs "
            "are injected.\n")
    data = {"queries": 97, "pool_pairs": 480, "gt_injected": 38, "corpus_documents": 8_841_823,
            "repaired_passages": 2_010_123}
    (same,) = check_card_counts(card, data)
    assert same.ok and same.found == "5 statements, 0 differ"
    (off,) = check_card_counts(card, {**data, "repaired_passages": 2_010_124, "gt_injected": 37})
    assert not off.ok and off.details == [
        "the card says '38 of 480 pool pairs': gt_injected 38, the data has 37",
        "the card says '2,010,123 of 8,841,823 passages (': repaired_passages 2,010,123, the "
        "data has 2,010,124"]
    (none,) = check_card_counts("no numbers here", data)
    assert none.ok and none.status == "absent"


def test_tag_on_a_commit_holding_a_later_release_fails_even_if_its_sha_is_missing(tmp_path):
    """releases.json inside a commit may leave only its latest release null: a tag v1 on a
    commit whose releases.json gives v1 AND v2 revision null is not v1's commit (hand-built
    history, no data)."""
    from rcp_data.checks.verify import check_pin, read_release_history
    from rcp_data.core.hub_client import PinnedRevision

    judge = {"model": "rcp-data/synthetic-judge-7b"}
    cal = {"method": "2pl-irt", "item_params": "provenance/item_params.synth.json",
           "link": "weighted_discrimination"}
    releases = [{"release": 1, "tag": "v1-rcp-data-synthetic-judge-7b", "revision": None,
                 "judge": judge, "calibration": cal, "status": "superseded",
                 "superseded_by": 2},
                {"release": 2, "tag": "v2-rcp-data-synthetic-judge-7b", "revision": None,
                 "judge": judge, "calibration": cal, "status": "current"}]
    path = tmp_path / RELEASES_JSON
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema": "rcp-data.releases/1", "repo": "rcp-test/x",
                                "releases": releases}), encoding="utf-8")
    history, problems = read_release_history(tmp_path)
    assert problems == ["release 1 (v1-rcp-data-synthetic-judge-7b): an older release names "
                        "its sha in 'revision', got null"]
    sha = "a" * 40
    pin = PinnedRevision("rcp-test/x", "v1-rcp-data-synthetic-judge-7b", sha, True, False)
    checks, held = check_pin(pin, history, problems)
    by_name = {c.name: c for c in checks}
    assert not by_name["releases-json"].ok
    assert not by_name["tag"].ok and "revision null" in by_name["tag"].found
    assert held.release == 2
    # the latest release held by its own commit is fine
    pin2 = PinnedRevision("rcp-test/x", "v2-rcp-data-synthetic-judge-7b", sha, True, False)
    checks, held = check_pin(pin2, history, [])
    assert {c.name: c.ok for c in checks} == {"releases-json": True, "tag": True}


def test_card_counts_before_a_markdown_rule_are_read():
    from rcp_data.checks.verify import check_card_counts

    card = ("---\ntags: [x]\n---\n\nholds 2 subsets (97 queries, split `test`).\n\n---\n\n"
            "38 of 480 pool pairs are injected.\n\n---\n\nThe end.\n")
    (res,) = check_card_counts(card, {"queries": 96, "pool_pairs": 480, "gt_injected": 38})
    assert res.found == "3 statements, 1 differ"
    assert res.details == ["the card says '(97 queries, split': queries 97, the data has 96"]
