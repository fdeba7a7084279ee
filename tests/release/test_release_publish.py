"""The publisher and the listing against the local Hub, with the real huggingface_hub and datasets
clients. Release directories are tiny SYNTHETIC demo-suite releases (``test_release_check``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi
from support.release_dirs import first_history, make_release_dir, second_history

from rcp_data.checks.release_check import check_release_dir
from rcp_data.cli import main
from rcp_data.core.errors import RefusedError
from rcp_data.core.files import Snapshot, hash_files, release_paths
from rcp_data.core.hub_client import HubClient
from rcp_data.model import layout
from rcp_data.model.history import SCHEMA, fill_known_shas, read_history, release_tag
from rcp_data.model.manifest import release_digest
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_parquet
from rcp_data.release.publish import PublishResult, execute_plan, plan_publish, publish
from rcp_data.release.refs import list_releases, render_listing

TAG1 = release_tag(1, "rcp-data/synthetic-judge-7b")
TAG2 = release_tag(2, "rcp-data/synthetic-judge-7b")


@pytest.fixture
def client(local_hub) -> HubClient:
    return HubClient(local_hub.url)


@pytest.fixture
def api(client) -> HfApi:
    return client.api


def _state(api: HfApi, repo: str) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(commit ids on main, branches, tags)."""
    refs = api.list_repo_refs(repo, repo_type="dataset")
    commits = [c.commit_id for c in api.list_repo_commits(repo, repo_type="dataset")]
    return (commits, {b.name: b.target_commit for b in refs.branches},
            {t.name: t.target_commit for t in refs.tags})


def _tags(api: HfApi, repo: str) -> dict[str, str]:
    return _state(api, repo)[2]


def _publish_cli(root: Path, repo: str, *extra: str) -> int:
    return main(["release", "publish", str(root), "--repo", repo, *extra])


def _gains(root: Path, subset: str = "alpha") -> list[float]:
    return pq.read_table(root / subset / "qrels.parquet")["gain"].to_pylist()


def _published_v1_v2(tmp_path: Path, api: HfApi, repo: str) -> tuple[Path, Path, str, str]:
    v1 = make_release_dir(tmp_path / "v1", repo, extra_files={"notes/v1-only.txt": "SYNTHETIC"})
    assert _publish_cli(v1, repo, "--create-repo") == 0
    sha1 = _tags(api, repo)[TAG1]
    # the next release learns release 1's sha from the Hub's refs
    history = fill_known_shas(first_history(repo), api.list_repo_refs(repo, repo_type="dataset"))
    assert history.releases[0].revision == sha1
    v2 = make_release_dir(tmp_path / "v2", repo, release=2,
                          history=second_history(repo, history.releases[0].revision))
    assert _publish_cli(v2, repo) == 0
    return v1, v2, sha1, _tags(api, repo)[TAG2]


def test_two_releases_stay_loadable(tmp_path, api, client, hub_repo):
    v1, v2, sha1, sha2 = _published_v1_v2(tmp_path, api, hub_repo)
    commits, branches, tags = _state(api, hub_repo)
    assert tags == {TAG1: sha1, TAG2: sha2}
    assert branches["main"] == sha2
    assert commits[:2] == [sha2, sha1] and len(commits) == 3   # + the repo's initial commit
    assert not np.allclose(_gains(v1), _gains(v2))              # a recalibration: new gains
    for revision, root in ((TAG1, v1), (sha1, v1), (TAG2, v2), (sha2, v2)):
        ds = datasets.load_dataset(hub_repo, "alpha-qrels", split="test", revision=revision)
        assert ds["gain"] == _gains(root), revision
    # release 2's commit: release 1 has its sha, release 2 is "the commit holding this file"
    path = api.hf_hub_download(hub_repo, layout.RELEASES_JSON, repo_type="dataset",
                               revision=sha2)
    held = read_history(path, for_commit=True)
    assert [r.revision for r in held.releases] == [sha1, None]
    assert [r.status for r in held.releases] == ["superseded", "current"]
    # the stale file of release 1 went away in release 2's tree, and stays in release 1's
    files1 = set(api.list_repo_files(hub_repo, repo_type="dataset", revision=sha1))
    files2 = set(api.list_repo_files(hub_repo, repo_type="dataset", revision=sha2))
    assert "notes/v1-only.txt" in files1 and "notes/v1-only.txt" not in files2
    assert files2 - {".gitattributes"} == set(check_release_dir(v2).files)
    listing = list_releases(hub_repo, client=client)
    assert listing.ok, render_listing(listing)
    assert [(r.release, r.tag, r.status, r.json_revision, r.hub_revision)
            for r in listing.rows] == [(1, TAG1, "superseded", sha1, sha1),
                                       (2, TAG2, "current", None, sha2)]


def test_publish_computes_the_gain_link_once(tmp_path, client, hub_repo, monkeypatch):
    """The release check compares every gain with the link of its theta; the verification run
    before the upload does not compute it again."""
    import rcp_data.checks.integrity as integrity
    import rcp_data.checks.release_check as release_check

    calls = {"release_check": 0, "integrity": 0}

    def counting(module, name):
        real = module.gain_mismatches

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, "gain_mismatches", wrapper)

    counting(release_check, "release_check")
    counting(integrity, "integrity")
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert publish(v1, hub_repo, client=client, create_repo=True).status == "published"
    assert calls == {"release_check": 2, "integrity": 0}     # two subsets, checked once


def test_publish_hashes_each_file_once(tmp_path, client, hub_repo, monkeypatch):
    """The verification before the upload hashes every file; the upload reuses those sha256s
    (huggingface_hub reads no file to hash it) and the Hub stores objects under them."""
    import huggingface_hub.lfs as hf_lfs

    opened: list[str] = []
    real = hf_lfs.sha_fileobj

    def counting(fileobj, *args, **kwargs):
        opened.append(getattr(fileobj, "name", "?"))
        return real(fileobj, *args, **kwargs)

    monkeypatch.setattr(hf_lfs, "sha_fileobj", counting)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert publish(v1, hub_repo, client=client, create_repo=True).status == "published"
    assert opened == []
    manifest = json.loads((v1 / layout.BUILD_MANIFEST).read_text())
    parquet = {e["path"]: e["sha256"] for e in manifest["files"] if e["path"].endswith(".parquet")}
    assert parquet
    hosted = {f.path: f for f in client.api.list_repo_tree(hub_repo, repo_type="dataset",
                                                          recursive=True, revision=TAG1)
              if getattr(f, "lfs", None)}
    assert {p: hosted[p].lfs.sha256 for p in parquet} == parquet


def test_a_file_changed_after_verification_is_refused_by_the_hub(tmp_path, api, hub_repo,
                                                                 monkeypatch, capsys):
    """The sha256s handed to the upload are the verified ones: a file rewritten between the
    verification and the upload does not match its announced sha256, the Hub refuses the
    upload, and nothing is committed or tagged."""
    import rcp_data.release.publish as publish_module

    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    target = v1 / layout.subset_file("alpha", "qrels")
    real = publish_module.plan_publish
    # no bytes held in memory: every file is uploaded from its path, as a large one is
    monkeypatch.setattr(publish_module, "Snapshot", lambda: Snapshot(max_file=0))

    def tamper_after_planning(*args, **kwargs):
        plan = real(*args, **kwargs)
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF              # same size, other bytes
        target.write_bytes(bytes(data))
        return plan

    monkeypatch.setattr(publish_module, "plan_publish", tamper_after_planning)
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo, "--create-repo") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "Error while uploading 'alpha/qrels.parquet'" in err and "sha256" in err, err
    commits, _, tags = _state(api, hub_repo)
    assert len(commits) == 1 and tags == {}       # the repo's first commit only


def _edit_readme_after(publish_module, monkeypatch, readme: Path, step: str) -> None:
    """Append a line to the README once ``step`` of the publish module has run (after the
    verification, before the upload)."""
    real = getattr(publish_module, step)

    def then_edit(*args, **kwargs):
        out = real(*args, **kwargs)
        readme.write_text(readme.read_text() + "\nEdited after the verification.\n")
        return out

    monkeypatch.setattr(publish_module, step, then_edit)


def test_a_readme_edited_after_verification_is_not_what_is_uploaded(tmp_path, api, hub_repo,
                                                                   monkeypatch):
    """The README's bytes are those the verification's read held: an edit on disk between the
    verification and the upload never reaches the Hub, and the tag names the verified bytes."""
    import rcp_data.release.publish as publish_module

    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    verified = (v1 / "README.md").read_bytes()
    _edit_readme_after(publish_module, monkeypatch, v1 / "README.md", "check_before_publishing")
    assert _publish_cli(v1, hub_repo, "--create-repo") == 0
    assert (v1 / "README.md").read_bytes() != verified          # the edit happened
    sha = _tags(api, hub_repo)[TAG1]
    got = api.hf_hub_download(hub_repo, "README.md", repo_type="dataset", revision=sha)
    assert Path(got).read_bytes() == verified


def test_a_readme_edited_before_upload_leaves_no_tag(tmp_path, api, hub_repo, monkeypatch,
                                                    capsys):
    """Uploaded from its path (no bytes held), a README (a regular file: the Hub checks no
    sha256 of it) edited after the verification and before the upload reaches the Hub; the
    Hub's tree then differs from the verified files, and nothing is tagged (exit 1, naming the
    file)."""
    import rcp_data.release.publish as publish_module

    monkeypatch.setattr(publish_module, "Snapshot", lambda: Snapshot(max_file=0))
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    _edit_readme_after(publish_module, monkeypatch, v1 / "README.md", "_addition")
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo, "--create-repo") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "README.md is not the verified file" in err and "Nothing was tagged" in err, err
    commits, _, tags = _state(api, hub_repo)
    assert tags == {} and len(commits) == 2       # the commit stays, untagged


def test_other_bytes_reaching_the_hub_leave_no_tag(tmp_path, api, hub_repo, monkeypatch,
                                                  capsys):
    """Whatever happens on the way (the upload step hooked to send other README bytes than
    the verified ones held), the tree check after the commit refuses to tag it."""
    from huggingface_hub import CommitOperationAdd

    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    real = HubClient.commit

    def swap_readme(self, repo, operations, **kwargs):
        ops = [CommitOperationAdd("README.md", op.path_or_fileobj + b"\n")
               if getattr(op, "path_in_repo", "") == "README.md" else op for op in operations]
        return real(self, repo, ops, **kwargs)

    monkeypatch.setattr(HubClient, "commit", swap_readme)
    assert _publish_cli(v1, hub_repo, "--create-repo") == 1
    err = capsys.readouterr().err
    assert "README.md is not the verified file" in err, err
    assert _tags(api, hub_repo) == {}


def test_a_second_release_uploads_only_the_files_that_changed(tmp_path, api, hub_repo,
                                                              monkeypatch):
    import hashlib

    sent: list[list[str]] = []
    original = HfApi.create_commit

    def spy(self, repo_id, operations, *args, **kwargs):
        sent.append(sorted(getattr(op, "path_in_repo", "") for op in operations))
        return original(self, repo_id, operations, *args, **kwargs)

    monkeypatch.setattr(HfApi, "create_commit", spy)
    v1, v2, _sha1, _sha2 = _published_v1_v2(tmp_path, api, hub_repo)

    def digests(root: Path) -> dict[str, str]:
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in root.rglob("*") if p.is_file()}

    d1, d2 = digests(v1), digests(v2)
    changed = sorted(p for p in d2 if d1.get(p) != d2[p])
    assert sent[0] == sorted(d1)                       # the first release: every file
    assert "alpha/corpus.parquet" not in changed       # a recalibration keeps the corpus
    assert sent[1] == sorted([*changed, "notes/v1-only.txt"])  # + the deletion


def test_rerun_changes_nothing(tmp_path, api, hub_repo, capsys):
    v1, _, _, _ = _published_v1_v2(tmp_path, api, hub_repo)
    before = _state(api, hub_repo)
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 0     # release 1 again, after release 2
    assert "already published identically" in capsys.readouterr().out
    assert _state(api, hub_repo) == before


def test_rerun_right_after_publish(tmp_path, api, client, hub_repo):
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert _publish_cli(v1, hub_repo, "--create-repo") == 0
    before = _state(api, hub_repo)
    result = publish(v1, hub_repo, client=client)
    assert result.status == "already-published" and result.commit == before[2][TAG1]
    assert _state(api, hub_repo) == before


def test_race_on_one_head_has_one_winner(tmp_path, api, hub_repo):
    api.create_repo(hub_repo, repo_type="dataset")
    head = _state(api, hub_repo)[1]["main"]
    a = make_release_dir(tmp_path / "a", hub_repo)
    b = make_release_dir(tmp_path / "b", hub_repo, extra_files={"notes/b.txt": "SYNTHETIC b"})
    outcomes: dict[str, object] = {}

    def run(name: str, root: Path) -> None:
        try:
            outcomes[name] = publish(root, hub_repo, parent_commit=head,
                                     client=HubClient(api.endpoint))
        except RefusedError as exc:
            outcomes[name] = exc

    threads = [threading.Thread(target=run, args=(n, r)) for n, r in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [n for n, o in outcomes.items() if not isinstance(o, RefusedError)]
    lost = [n for n, o in outcomes.items() if isinstance(o, RefusedError)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert "moved" in outcomes[lost[0]].message
    commits, branches, tags = _state(api, hub_repo)
    assert commits == [outcomes[won[0]].commit, head]           # the loser made no commit
    assert tags == {TAG1: outcomes[won[0]].commit}               # ... and no tag
    files = set(api.list_repo_files(hub_repo, repo_type="dataset"))
    assert ("notes/b.txt" in files) == (won == ["b"])


def test_second_publisher_on_stale_head_exits_1(tmp_path, api, client, hub_repo, capsys):
    api.create_repo(hub_repo, repo_type="dataset")
    head = _state(api, hub_repo)[1]["main"]
    a = make_release_dir(tmp_path / "a", hub_repo)
    b = make_release_dir(tmp_path / "b", hub_repo, extra_files={"notes/b.txt": "SYNTHETIC b"})
    # both publishers plan against the same head; A commits first
    plan_a = plan_publish(check_release_dir(a), hub_repo, client=client)
    plan_b = plan_publish(check_release_dir(b), hub_repo, client=client)
    assert plan_a.parent == plan_b.parent == head
    won = execute_plan(plan_a, client)
    after_a = _state(api, hub_repo)
    with pytest.raises(RefusedError, match=r"moved since .* \(412\)\. Nothing was committed"):
        execute_plan(plan_b, client)
    assert _state(api, hub_repo) == after_a
    assert after_a[0] == [won.commit, head]
    # the same through the CLI: --parent-commit names the head B was built against
    capsys.readouterr()
    assert _publish_cli(b, hub_repo, "--parent-commit", head) == 1
    assert "moved" in capsys.readouterr().err
    assert _state(api, hub_repo) == after_a


def test_identical_race_loser_does_not_tag_the_winners_commit(tmp_path, api, client, hub_repo):
    api.create_repo(hub_repo, repo_type="dataset")
    a = make_release_dir(tmp_path / "a", hub_repo)
    plan_1 = plan_publish(check_release_dir(a), hub_repo, client=client)
    plan_2 = plan_publish(check_release_dir(a), hub_repo, client=client)
    execute_plan(plan_1, client)
    after = _state(api, hub_repo)
    # the client drops every unchanged file and returns the new head without committing
    with pytest.raises(RefusedError, match="moved"):
        execute_plan(plan_2, client)
    assert _state(api, hub_repo) == after


def test_tag_on_another_commit_is_refused(tmp_path, api, hub_repo, capsys):
    api.create_repo(hub_repo, repo_type="dataset")
    head = _state(api, hub_repo)[1]["main"]
    api.create_tag(hub_repo, tag=TAG1, revision=head, repo_type="dataset")
    before = _state(api, hub_repo)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 1
    err = capsys.readouterr().err
    assert f"tag {TAG1} already exists on commit {head}" in err and "never moved" in err
    assert _state(api, hub_repo) == before


def test_rerun_finishes_a_publish_killed_between_commit_and_tag(tmp_path, api, hub_repo, capsys):
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert _publish_cli(v1, hub_repo, "--create-repo") == 0
    # a publisher that died between its commit and its tag
    api.delete_tag(hub_repo, tag=TAG1, repo_type="dataset")
    commits, branches, tags = _state(api, hub_repo)
    assert tags == {}
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 0
    digest = release_digest(hash_files(v1, release_paths(v1)).values())
    assert capsys.readouterr().out == (
        f"{hub_repo}: tagged release 1 as {TAG1} at {commits[0]} (the commit of an earlier, "
        "interrupted publish of this release)\n"
        f"release digest {digest} (commit {commits[0]}; pin it with rcp-data verify --digest)\n")
    assert _state(api, hub_repo) == (commits, branches, {TAG1: commits[0]})  # no new commit


def test_identical_files_committed_by_someone_else_are_never_tagged(tmp_path, api, hub_repo,
                                                                     capsys):
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    api.create_repo(hub_repo, repo_type="dataset")
    api.upload_folder(repo_id=hub_repo, folder_path=str(v1), repo_type="dataset",
                      commit_message="someone's own upload of the same files")
    before = _state(api, hub_repo)
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 1
    assert "nothing to commit" in capsys.readouterr().err
    assert _state(api, hub_repo) == before and before[2] == {}


def test_branch_moved_between_plan_and_commit_is_refused(tmp_path, api, client, hub_repo,
                                                         capsys, monkeypatch):
    """Without --parent-commit the publisher still commits on the head its plan read: another
    writer moving the branch in between gets a 412 refusal (exit 1), never an overwrite."""
    import rcp_data.release.publish as publish_module

    api.create_repo(hub_repo, repo_type="dataset")
    head = _state(api, hub_repo)[1]["main"]
    real = publish_module.execute_plan

    def other_writer_first(plan, client=None):
        assert plan.parent == head                   # the plan was made against the head
        api.upload_file(path_or_fileobj=b"SYNTHETIC: another writer's file",
                        path_in_repo="notes/theirs.txt", repo_id=hub_repo,
                        repo_type="dataset", commit_message="another writer")
        return real(plan, client)

    monkeypatch.setattr(publish_module, "execute_plan", other_writer_first)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 1
    err = capsys.readouterr().err
    assert err == (f"rcp-data release: error: commit on branch main of {hub_repo} with parent "
                   f"{head}: the branch moved since its head was read, or the given parent is "
                   "not its head; the Hub refused the commit (412). Nothing was committed or "
                   "tagged\n")
    commits, branches, tags = _state(api, hub_repo)
    assert len(commits) == 2 and commits[1] == head and tags == {}
    files = set(api.list_repo_files(hub_repo, repo_type="dataset"))
    assert "notes/theirs.txt" in files and "README.md" not in files   # theirs kept, none of ours


def test_publish_never_commits_without_a_parent(tmp_path, api, hub_repo, capsys):
    api.create_repo(hub_repo, repo_type="dataset")
    before = _state(api, hub_repo)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo, "--branch", "nowhere") == 2
    assert capsys.readouterr().err == (
        f"rcp-data release: error: dataset repo {hub_repo} has no branch 'nowhere' (or it has no "
        "commit); the publisher commits only on top of a known head. Nothing was committed or "
        "tagged\n")
    assert _state(api, hub_repo) == before


@pytest.mark.parametrize("damage", ["missing-config-file", "gain-not-link-of-theta"])
def test_bad_release_refused_before_upload(tmp_path, api, hub_repo, capsys, damage):
    api.create_repo(hub_repo, repo_type="dataset")
    before = _state(api, hub_repo)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    if damage == "missing-config-file":
        (v1 / "alpha" / "queries.parquet").unlink()
    else:
        path = v1 / "beta" / "qrels.parquet"
        qrels = pq.read_table(path).to_pandas()
        qrels.loc[2, "gain"] = qrels.loc[2, "gain"] * 0.5
        write_parquet(qrels, path, SCHEMAS["qrels"])
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 1
    err = capsys.readouterr().err
    assert "nothing was uploaded" in err
    assert ("alpha/queries.parquet: missing file" in err if damage == "missing-config-file"
            else "beta/qrels.parquet: field 'gain'" in err and "row 2 " in err)
    assert _state(api, hub_repo) == before


@pytest.mark.parametrize("damage", ["card-cell", "excluded-in-top-ranked"])
def test_release_failing_verification_is_refused(tmp_path, api, hub_repo, capsys, damage):
    """The layout checks pass, but `rcp-data verify` of the directory does not."""
    api.create_repo(hub_repo, repo_type="dataset")
    before = _state(api, hub_repo)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    if damage == "card-cell":
        card = (v1 / layout.CARD_FILE).read_text(encoding="utf-8")
        row = next(line for line in card.splitlines() if line.startswith("| Alpha-RR |"))
        cells = row.split("|")
        cells[2] = f" {float(cells[2]) - 5:.1f} "
        (v1 / layout.CARD_FILE).write_text(card.replace(row, "|".join(cells), 1),
                                           encoding="utf-8")
    else:
        path = v1 / "alpha" / "top_ranked.parquet"
        top = pq.read_table(path).to_pandas()
        top.at[0, "corpus-ids"] = ["alpha-q000", *list(top.at[0, "corpus-ids"])]
        write_parquet(top, path, SCHEMAS["top_ranked"])
    assert check_release_dir(v1).problems == []        # the layout checks alone pass
    capsys.readouterr()
    assert _publish_cli(v1, hub_repo) == 1
    err = capsys.readouterr().err
    assert "fails verification" in err and "Nothing was uploaded" in err
    assert ("card-tables" in err if damage == "card-cell"
            else "no-excluded-in-top-ranked" in err)
    assert _state(api, hub_repo) == before


def test_usage_errors_exit_2(tmp_path, hub_repo):
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert _publish_cli(v1, "not-a-repo-id") == 2
    assert _publish_cli(tmp_path / "missing", hub_repo) == 2
    assert _publish_cli(v1, hub_repo) == 2           # repo absent and no --create-repo


def test_repo_mismatch_refused(tmp_path, api, hub_repo):
    v1 = make_release_dir(tmp_path / "v1", "rcp-test/some-other-repo")
    api.create_repo(hub_repo, repo_type="dataset")
    before = _state(api, hub_repo)
    assert _publish_cli(v1, hub_repo) == 2           # bad input: --repo names another repo
    assert _state(api, hub_repo) == before


def publish_series(builders: list, repo: str, *, client) -> list[PublishResult]:
    """Publish releases one after another: each builder is called with the commit sha of the
    release published before it (None for the first) and returns the release directory."""
    results: list[PublishResult] = []
    previous: str | None = None
    for build in builders:
        result = publish(build(previous), repo, client=client, create_repo=not results)
        results.append(result)
        previous = result.commit
    return results


def test_listing_flags_disagreements(tmp_path, api, client, hub_repo, capsys):
    results = publish_series([
        lambda prev: make_release_dir(tmp_path / "v1", hub_repo),
        lambda prev: make_release_dir(tmp_path / "v2", hub_repo, release=2,
                                      history=second_history(hub_repo, prev)),
    ], hub_repo, client=client)
    sha1, sha2 = (r.commit for r in results)
    assert [r.status for r in results] == ["published", "published"]
    assert _tags(api, hub_repo) == {TAG1: sha1, TAG2: sha2}
    assert list_releases(hub_repo, client=client).ok
    # somebody outside the toolkit moves tag v1, deletes tag v2 and adds an unnamed tag
    api.delete_tag(hub_repo, tag=TAG1, repo_type="dataset")
    api.create_tag(hub_repo, tag=TAG1, revision=sha2, repo_type="dataset")
    api.delete_tag(hub_repo, tag=TAG2, repo_type="dataset")
    api.create_tag(hub_repo, tag="experimental", revision=sha1, repo_type="dataset")
    listing = list_releases(hub_repo, client=client)
    flags = {r.tag: r.flags for r in listing.rows}
    assert not listing.ok
    assert flags[TAG1] == [f"moved tag: the Hub's tag points at {sha2}, releases.json names "
                           f"{sha1}"]
    assert flags[TAG2] == ["release whose tag is missing on the Hub"]
    assert flags["experimental"] == ["tag no release names"]
    capsys.readouterr()
    assert main(["release", "list", "--repo", hub_repo, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and len(data["releases"]) == 3


def test_listing_null_revision_against_a_moved_tag(tmp_path, api, client, hub_repo):
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert _publish_cli(v1, hub_repo, "--create-repo") == 0
    sha1 = _tags(api, hub_repo)[TAG1]
    initial = _state(api, hub_repo)[0][-1]
    assert main(["release", "list", "--repo", hub_repo]) == 0
    api.delete_tag(hub_repo, tag=TAG1, repo_type="dataset")
    api.create_tag(hub_repo, tag=TAG1, revision=initial, repo_type="dataset")
    listing = list_releases(hub_repo, client=client)
    (row,) = listing.rows
    assert row.json_revision is None and row.hub_revision == initial != sha1
    assert len(row.flags) == 1 and row.flags[0].startswith("moved tag?")


def test_token_never_leaks(tmp_path, hub_repo, monkeypatch, capsys, caplog):
    from rcp_data.hub.server import LocalHub

    token = "hf_" + secrets.token_hex(16)
    with LocalHub(tmp_path / "hub", token=token) as local_hub:  # a Hub that accepts only it
        monkeypatch.setenv("HF_TOKEN", token)
        monkeypatch.setenv("HF_ENDPOINT", local_hub.url)
        _token_never_leaks(tmp_path / "work", HfApi(endpoint=local_hub.url), hub_repo,
                           local_hub, token, capsys, caplog)


def _token_never_leaks(tmp_path, api, hub_repo, local_hub, token, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    recorded = tmp_path / "history.json"   # a project history for this repo, still empty
    recorded.write_text(json.dumps({"schema": SCHEMA, "repo": hub_repo, "releases": []}))
    assert main(["-v", "release", "publish", str(v1), "--repo", hub_repo, "--create-repo",
                 "--record-to", str(recorded)]) == 0
    assert main(["-v", "release", "list", "--repo", hub_repo]) == 0
    assert main(["-v", "release", "publish", str(v1), "--repo", hub_repo]) == 0
    out = capsys.readouterr()
    sha1 = _tags(api, hub_repo)[TAG1]
    assert f"published release 1 as {TAG1} at {sha1}" in out.out
    (entry,) = read_history(recorded).releases
    assert (entry.tag, entry.revision, entry.data_revision) == (TAG1, sha1, sha1)
    assert token not in out.out + out.err
    assert token not in caplog.text
    for folder in (tmp_path, Path(local_hub.root), Path(os.environ["HF_HOME"])):
        for p in folder.rglob("*"):
            if p.is_file():
                assert token.encode() not in p.read_bytes(), p


def test_releases_json_naming_another_link_is_refused_by_verify_and_publish(
        tmp_path, api, client, hub_repo):
    """The gains are the weighted link of theta; a releases.json that says `unweighted` for them
    is refused by `release check`, `verify` (exit 1) and `publish` (nothing reaches the Hub)."""
    from rcp_data.checks.verify import verify

    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    path = v1 / layout.RELEASES_JSON
    data = json.loads(path.read_text())
    assert data["releases"][-1]["calibration"]["link"] == "weighted_discrimination"
    data["releases"][-1]["calibration"]["link"] = "unweighted"
    path.write_text(json.dumps(data, indent=2) + "\n")
    assert not check_release_dir(v1).ok
    report = verify(path=v1)
    assert not report.ok and report.exit_code == 1
    assert any(c.name == "gains" for c in report.failed)
    api.create_repo(hub_repo, repo_type="dataset", exist_ok=True)
    before = _state(api, hub_repo)
    with pytest.raises(RefusedError):
        publish(v1, hub_repo, client=client)
    assert _state(api, hub_repo) == before
    assert _publish_cli(v1, hub_repo) == 1
    assert _state(api, hub_repo) == before


def test_a_listing_row_cannot_be_forged_by_a_hub_name():
    """A tag, revision or flag the Hub returns with a newline, '|' or ESC is one escaped cell
    of ``release list``'s table: no row added, no terminal control sent."""
    from rcp_data.release.refs import Listing, ReleaseRow, render_listing

    row = ReleaseRow("v1\nv9  9  published", release=1, status="published",
                     hub_revision="abc\x1b[2J|def", flags=["tag no release names\r\nok"])
    text = render_listing(Listing("o/r", "main", "f" * 40, [row], ["moved\x1b[0m"]))
    assert text.splitlines() == [
        f"o/r (branch main at {'f' * 40})", "",
        "release  tag                   status     releases.json revision  Hub tag -> commit",
        "1        v1\\nv9  9  published  published  (this commit)           abc\\x1b[2J|def",
        "", "! moved\\x1b[0m", "! v1\\nv9  9  published: tag no release names\\r\\nok"]
