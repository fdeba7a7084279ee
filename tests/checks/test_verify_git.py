"""``verify --git``: the pinned commit fetched over git's smart HTTP from the local Hub, every
object id recomputed by git, and the files verified against its tree.

The SYNTHETIC demo is published once as release 1 on the local Hub; the verification runs end
to end once (a pinned sha with ``--git``), the others through the stages ``--git`` works in
(the bytes' proof, the pin, the anchor: :class:`support.stages.Staged`). Tampers: a git object
rewritten in the Hub's store (the Hub still lists and serves the genuine bytes from its cache:
only git sees it), an LFS object replaced, a file in the tree that the Hub's listing leaves out,
a Hub without git routes.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from support.demo_fixture import copy_demo
from support.stages import Staged
from support.tamper import other_bytes_served, tamper_commit

from rcp_data.checks.reports import NOT_ANCHORED, VerifyReport
from rcp_data.checks.verify import verify
from rcp_data.checks.verify_stages import Options
from rcp_data.cli import main
from rcp_data.core.hub_client import HubClient, RemoteFile
from rcp_data.core.specs import load_spec
from rcp_data.model.layout import RELEASES_JSON
from rcp_data.release.prepare import prepare_release
from rcp_data.release.publish import publish

REPO_TYPE = "dataset"


@pytest.fixture(scope="module")
def published(local_hub, tmp_path_factory, demo_data) -> dict:
    base = tmp_path_factory.mktemp("verify-git")
    repo = f"rcp-test/git-{uuid.uuid4().hex[:8]}"
    client = HubClient(local_hub.url, token=local_hub.token, cache_dir=base / "cache")
    v1 = copy_demo(demo_data, base / "v1")
    prepare_release(v1, load_spec("demo"), repo, date="2026-11-29")
    r1 = publish(v1, repo, client=client, create_repo=True)
    return {"repo": repo, "client": client, "sha": r1.commit, "tag": r1.tag, "v1": v1,
            "digest": r1.digest, "hub_root": local_hub.root, "url": local_hub.url}


def _client(p: dict, tmp_path: Path) -> HubClient:
    return HubClient(p["url"], token=False, cache_dir=tmp_path / "cache")


def _staged(p: dict, tmp_path: Path, revision: str, *, histories: Path | None = None,
            git: bool = False) -> VerifyReport:
    """``revision`` fetched as verify fetches it (over git too with ``git``), taken through the
    stages ``--git`` and the anchor are in: the bytes' proof, the pin and the anchor; the
    report of those stages."""
    return Staged.of(_client(p, tmp_path), p["repo"], revision, histories=histories,
                     options=Options(git=git)).report()


def test_a_pinned_sha_with_git_is_verified_and_anchored_by_it(published, tmp_path):
    report = verify(repo=published["repo"], revision=published["sha"],
                    client=_client(published, tmp_path), git=True)
    assert report.exit_code == 0, report.text()
    assert report.anchor == (f"the pinned commit sha {published['sha']}, objects recomputed "
                             "by git (--git)")
    assert report.text().splitlines()[-1].endswith("VERIFIED (SYNTHETIC data)")
    git = report.check("git-objects")
    assert git.ok
    # every file of the commit, counted independently from the Hub's listing
    listing = published["client"].files(published["repo"], published["sha"])
    n_lfs = sum(1 for f in listing.values() if f.lfs_sha256)
    assert git.found.startswith(f"{len(listing)} files ({len(listing) - n_lfs} by git blob id, "
                                f"{n_lfs} by LFS pointer)")
    assert report.digest == published["digest"]
    # by tag, --git proves the bytes but the tag is the repository's word: not anchored (the
    # bytes' stage and the anchor)
    by_tag = _staged(published, tmp_path, published["tag"], git=True)
    assert by_tag.check("git-objects").ok and by_tag.exit_code == 3
    assert NOT_ANCHORED in by_tag.text()


def test_a_pinned_sha_without_git_stays_unanchored(published, tmp_path):
    report = _staged(published, tmp_path, published["sha"])
    assert report.exit_code == 3 and report.check("git-objects") is None


@contextmanager
def _git_object_rewritten(hub_root: Path, repo: str, commit: str, path: str) -> Iterator[str]:
    """The loose git object of ``path`` at ``commit`` rewritten in the Hub's store to other
    bytes of the same size (one byte flipped); the Hub keeps listing and serving the genuine
    bytes from its blob cache. Yields the object id; restores the object afterwards."""
    from rcp_data.hub.gitstore import GitStore

    store = GitStore(hub_root)
    bare = store.repo_path(REPO_TYPE, repo)
    entry = store.entry(bare, commit, path)
    assert entry is not None and entry.lfs is None
    store.blob_file(bare, entry.oid)                       # the genuine bytes stay served
    loose = bare / "objects" / entry.oid[:2] / entry.oid[2:]
    assert loose.is_file(), "the local Hub writes loose objects"
    original = loose.read_bytes()
    data = zlib.decompress(original)
    header, _, content = data.partition(b"\0")
    forged = bytearray(content)
    forged[len(forged) // 2] ^= 0x01
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(header + b"\0" + bytes(forged)))
    try:
        yield entry.oid
    finally:
        loose.write_bytes(original)


def test_a_rewritten_git_object_fails_naming_the_file(published, tmp_path):
    with _git_object_rewritten(published["hub_root"], published["repo"], published["sha"],
                               RELEASES_JSON) as oid:
        report = _staged(published, tmp_path, published["sha"], git=True)
    assert report.exit_code == 1
    assert report.check("hub-listing").ok        # the listing and the downloads look genuine
    git = report.check("git-objects")
    assert not git.ok
    assert git.details[0] == f"object {oid} is {RELEASES_JSON} in the Hub's listing"
    assert any(f"did not receive expected object {oid}" in d for d in git.details)
    assert report.anchor is None


def test_a_replaced_lfs_object_fails_against_the_tree_pointer(published, tmp_path):
    path = "alpha/qrels.parquet"
    with other_bytes_served(published["hub_root"], published["repo"], published["sha"],
                            path) as forged:
        report = _staged(published, tmp_path, published["sha"], git=True)
    assert report.exit_code == 1
    git = report.check("git-objects")
    assert not git.ok and len(git.details) == 1
    sha256 = hashlib.sha256(forged).hexdigest()
    assert git.details[0].startswith(f"{path}: the bytes downloaded give sha256 {sha256[:12]}")
    assert "the git tree's LFS pointer names" in git.details[0]


@dataclass(frozen=True)
class _HidingClient(HubClient):
    """A Hub whose listing leaves one file out (the git tree still holds it)."""

    hidden: str = ""

    def files(self, repo: str, sha: str) -> dict[str, RemoteFile]:
        return {p: f for p, f in super().files(repo, sha).items() if p != self.hidden}


def test_a_file_the_listing_leaves_out_fails(published, tmp_path):
    extra = "scripts/extra.py"
    api = HfApi(endpoint=published["url"], token=published["client"].token)
    sha = tamper_commit(api, published["repo"], published["sha"], "hidden-file",
                        {extra: b"print('SYNTHETIC file outside the manifest')\n"})
    client = _HidingClient(published["url"], token=False, cache_dir=tmp_path / "cache",
                           hidden=extra)
    staged = Staged.of(client, published["repo"], sha, options=Options(git=True))
    staged.content  # noqa: B018
    report = staged.report()
    assert report.check("hub-listing").ok and report.check("content-manifest").ok
    git = report.check("git-objects")
    assert not git.ok
    assert git.details == [f"{extra}: in the git tree of {sha[:12]}, not among the files "
                           "verified (the Hub's listing leaves it out)"]
    assert report.exit_code == 1


def test_git_against_a_hub_without_git_routes_exits_2(published, tmp_path, monkeypatch,
                                                      capsys):
    import rcp_data.hub.server as server

    monkeypatch.setattr(server, "is_git_route", lambda rest: False)
    code = main(["verify", "--repo", published["repo"], "--revision", published["sha"],
                 "--git", "--cache-dir", str(tmp_path / "cache")])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "--git: the Hub does not serve" in lines[0]
    assert "over git's smart HTTP" in lines[0] and "not found" in lines[0]
    assert captured.out == ""


def test_git_needs_a_hub_revision(published, capsys):
    code = main(["verify", str(published["v1"]), "--git"])
    assert code == 2
    assert "--git verifies a revision on the Hub" in capsys.readouterr().err


def test_the_token_goes_to_git_in_the_environment_never_in_a_url(published, monkeypatch):
    """A token (and HF_ENDPOINT's userinfo) reach git as an http.extraHeader through
    GIT_CONFIG_* variables: no command line and no URL git is given carries them."""
    import subprocess

    from rcp_data.core.git_fetch import fetch_tree, repo_git_url

    secret = "hf_SYNTHETIC_secret_token"
    calls: list[tuple[list[str], dict]] = []
    real_run = subprocess.run

    def recording_run(args, *a, **kw):
        calls.append((list(args), dict(kw.get("env") or {})))
        return real_run(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", recording_run)
    endpoint = published["url"].replace("http://", "http://user:pw-in-userinfo@")
    tree = fetch_tree(repo_git_url(endpoint, published["repo"]), published["sha"],
                      token=secret)
    assert tree.ok and tree.sha == published["sha"]
    assert calls and all(secret not in arg and "pw-in-userinfo" not in arg
                         for args, _ in calls for arg in args)
    headers = {v for _, env in calls for k, v in env.items() if k.startswith("GIT_CONFIG_VALUE")}
    assert f"Authorization: Bearer {secret}" in headers


def test_a_hub_that_sends_only_what_its_refs_name_is_fetched_through_them(published,
                                                                         monkeypatch):
    """Protocol v0 against a server that refuses wants of unadvertised objects: the commit is
    fetched with every branch and tag, and proven as before."""
    import rcp_data.core.git_fetch as git_fetch
    import rcp_data.hub.git_http as git_http

    strict = tuple(("uploadpack.allowReachableSHA1InWant", "false") if key.startswith(
        "uploadpack.allowReachable") else (key, value) for key, value in git_http._SERVE_CONFIG)
    monkeypatch.setattr(git_http, "_SERVE_CONFIG", strict)
    monkeypatch.setattr(git_fetch, "PROTOCOL_VERSION", "0")
    url = git_fetch.repo_git_url(published["url"], published["repo"])
    tree = git_fetch.fetch_tree(url, published["sha"])
    assert tree.ok, tree.errors
    listing = published["client"].files(published["repo"], published["sha"])
    assert {p: f.blob_id for p, f in tree.files.items()} == {
        p: f.blob_id for p, f in listing.items()}
    assert not git_fetch.fetch_tree(url, "0" * 40).ok   # no ref reaches it


# -- issue 39 item 6: a record's commit without a digest anchors only with --git ------------------
def _commit_only_record(published: dict, folder: Path) -> Path:
    from rcp_data.model.history import read_history, record_release, write_history

    own = read_history(published["v1"] / RELEASES_JSON)
    history = replace(own, repo=published["repo"], releases=own.releases[:-1])
    folder.mkdir()
    write_history(record_release(history, own.releases[-1], published["sha"], None),
                  folder / "demo.json")
    return folder


def test_a_forged_commit_under_a_digestless_record_is_not_anchored(published, tmp_path):
    records = _commit_only_record(published, tmp_path / "records")
    with _git_object_rewritten(published["hub_root"], published["repo"], published["sha"],
                               RELEASES_JSON):
        plain = _staged(published, tmp_path, published["tag"], histories=records)
        with_git = _staged(published, tmp_path / "g", published["tag"], histories=records,
                           git=True)
    assert plain.exit_code == 3 and plain.anchor is None, plain.text()
    assert plain.check("anchor").found.endswith(
        "but no digest: a commit without a digest anchors only when git recomputes its objects "
        "from the bytes; verify again with --git)")
    assert with_git.exit_code == 1 and with_git.anchor is None
    assert not with_git.check("git-objects").ok


def test_a_digestless_record_anchors_the_genuine_commit_with_git(published, tmp_path):
    records = _commit_only_record(published, tmp_path / "records")
    report = _staged(published, tmp_path, published["tag"], histories=records, git=True)
    assert report.exit_code == 0, report.text()
    assert report.anchor.endswith(f"release 1's commit {published['sha']} (no digest "
                                  "recorded; git recomputed the objects of the bytes, --git)")
