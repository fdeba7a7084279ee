"""``release publish`` refuses a release whose history contradicts the Hub's own (issue 38):
release 1 built again without ``--history`` onto a repo that holds releases 1 and 2 exits 1
before any upload, the repo stays as it was, and ``release list`` and ``verify`` still pass.
Against the local Hub, with SYNTHETIC demo-suite releases (``support.release_dirs``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import HfApi
from support.release_dirs import (
    CALIBRATION,
    JUDGE,
    first_history,
    make_release_dir,
    second_history,
)

from rcp_data.cli import main
from rcp_data.core.errors import RefusedError
from rcp_data.core.files import hash_files, release_paths
from rcp_data.core.hub_client import HubClient
from rcp_data.model.history import add_release, fill_known_shas, release_tag
from rcp_data.model.manifest import release_digest
from rcp_data.release.hub_history import HubHistory, HubRelease, check_extends, history_from_hub

TAG1, TAG2, TAG3 = (release_tag(n, JUDGE["model"]) for n in (1, 2, 3))


def _state(api: HfApi, repo: str) -> tuple[list[str], dict[str, str]]:
    refs = api.list_repo_refs(repo, repo_type="dataset")
    return ([c.commit_id for c in api.list_repo_commits(repo, repo_type="dataset")],
            {t.name: t.target_commit for t in refs.tags})


def _publish(root: Path, repo: str, *extra: str) -> int:
    return main(["release", "publish", str(root), "--repo", repo, *extra])


@pytest.fixture
def api(local_hub) -> HfApi:
    return HfApi(endpoint=local_hub.url)


def _two_releases(tmp_path: Path, api: HfApi, repo: str):
    v1 = make_release_dir(tmp_path / "v1", repo, extra_files={"notes/v1-only.txt": "SYNTHETIC"})
    assert _publish(v1, repo, "--create-repo") == 0
    known = fill_known_shas(first_history(repo), api.list_repo_refs(repo, repo_type="dataset"))
    v2 = make_release_dir(tmp_path / "v2", repo, release=2,
                          history=second_history(repo, known.releases[0].revision))
    assert _publish(v2, repo) == 0
    return v2, known


def test_release_1_again_is_refused_before_uploading(tmp_path, api, hub_repo, capsys):
    v2, _ = _two_releases(tmp_path, api, hub_repo)
    before = _state(api, hub_repo)
    assert set(before[1]) == {TAG1, TAG2}
    again = make_release_dir(tmp_path / "again", hub_repo)  # built without --history
    capsys.readouterr()
    assert _publish(again, hub_repo) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert (f"{hub_repo} already holds releases 1 ({TAG1}), 2 ({TAG2}) on main, but this "
            f"release's history ends at release 1 ({TAG1})") in err[0]
    assert f"`rcp-data build ... --repo {hub_repo} --history hf://datasets/{hub_repo}`" \
        in err[0]
    assert "Nothing was uploaded" in err[0]
    assert _state(api, hub_repo) == before
    # the repo is as sound as before: its listing and the verification of its current release
    assert main(["release", "list", "--repo", hub_repo]) == 0
    digest2 = release_digest(hash_files(v2, release_paths(v2)).values())
    assert main(["verify", "--repo", hub_repo, "--revision", TAG2, "--cache-dir",
                 str(tmp_path / "c"), "--digest", digest2]) == 0


def test_the_next_release_publishes(tmp_path, api, local_hub, hub_repo, capsys):
    """The history ``build --history hf://datasets/OWNER/NAME`` starts from is the Hub's, each
    release with the sha of its tag; the release built on it publishes."""
    _, known = _two_releases(tmp_path, api, hub_repo)
    tags = _state(api, hub_repo)[1]
    hub = history_from_hub(HubClient(local_hub.url), hub_repo)
    assert [(r.release, r.tag, r.revision) for r in hub.releases] == [
        (1, TAG1, tags[TAG1]), (2, TAG2, tags[TAG2])]
    history = add_release(hub, judge={k: JUDGE[k] for k in ("model", "revision")},
                          calibration=CALIBRATION, summary="SYNTHETIC test release 3",
                          date="2026-12-01")
    v3 = make_release_dir(tmp_path / "v3", hub_repo, release=3, history=history)
    capsys.readouterr()
    assert _publish(v3, hub_repo) == 0
    assert f"published release 3 as {TAG3}" in capsys.readouterr().out
    assert set(_state(api, hub_repo)[1]) == {TAG1, TAG2, TAG3}
    assert main(["release", "list", "--repo", hub_repo]) == 0


def _hub(*releases: tuple[int, str, str | None], stray=()) -> HubHistory:
    return HubHistory("o/n", "main", "f" * 40, tuple(HubRelease(*r) for r in releases),
                      tuple(HubRelease(*r) for r in stray))


def test_each_conflict_is_named():
    sha1, sha2 = "1" * 40, "2" * 40
    ours = second_history("o/n", sha1)
    check_extends(_hub(), ours)                          # a repo without releases
    check_extends(_hub((1, TAG1, sha1)), ours)           # the next release
    check_extends(_hub((1, TAG1, sha1), (2, TAG2, None)), ours)  # the same release again
    with pytest.raises(RefusedError, match=f"says release 1 \\({TAG1}\\) is {sha1}, but on "
                                           f"o/n it is {sha2}"):
        check_extends(_hub((1, TAG1, sha2)), ours)
    with pytest.raises(RefusedError, match="release 1 \\(v1-other\\)"):
        check_extends(_hub((1, "v1-other", sha1)), ours)
    with pytest.raises(RefusedError, match="has tag v7-x \\(release 7\\), which this"):
        check_extends(_hub((1, TAG1, sha1), stray=[(7, "v7-x", sha2)]), ours)
