"""Short shas (7+ hex, as git and the task file print them) resolve wherever a revision is read:
``HubClient.resolve``, hence ``verify --revision`` and ``hf://datasets/OWNER/NAME@SHA``; an
ambiguous prefix is refused naming its candidates (issue 30, item 7)."""

from __future__ import annotations

import pytest
from support.release_dirs import make_release_dir

from rcp_data.cli import main
from rcp_data.core.errors import NotFoundError, UsageError
from rcp_data.core.hub_client import CommitEntry, HubClient


@pytest.fixture
def published(tmp_path, local_hub, hub_repo) -> tuple[HubClient, str, str]:
    client = HubClient(local_hub.url)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["-q", "release", "publish", str(v1), "--repo", hub_repo, "--create-repo"]) == 0
    head = {b.name: b.target_commit for b in client.refs(hub_repo).branches}["main"]
    return client, hub_repo, head


def test_a_short_sha_resolves_to_its_commit(published):
    client, repo, head = published
    pin = client.resolve(repo, head[:7])
    assert (pin.sha, pin.requested, pin.is_tag, pin.is_branch) == (head, head[:7], False, False)
    assert client.resolve(repo, head[:12]).sha == head
    first = client.commits(repo, head)[-1].sha   # the repo's first commit, not a ref's target
    assert first != head and client.resolve(repo, first[:8]).sha == first
    root, pin = client.local_release(f"hf://datasets/{repo}@{head[:7]}",
                                     allow_patterns=["provenance/releases.json"])
    assert pin.sha == head and (root / "provenance" / "releases.json").is_file()


def test_an_unknown_short_sha_is_not_found(published):
    client, repo, head = published
    other = "0000000" if not head.startswith("0000000") else "1111111"
    with pytest.raises(NotFoundError, match=f"no commit of {repo} .* starts with '{other}'"):
        client.resolve(repo, other)


def test_an_ambiguous_short_sha_names_the_candidates(published, monkeypatch):
    client, repo, head = published
    twins = ["abcdef1" + "0" * 33, "abcdef1" + "1" * 33]
    monkeypatch.setattr(HubClient, "commits",  # two commits that share their first 7 hex
                        lambda self, repo, sha: [CommitEntry(c, "t") for c in twins])
    with pytest.raises(UsageError, match="ambiguous") as err:
        client.resolve(repo, "abcdef1")
    assert all(t in str(err.value) for t in twins)
    assert client.resolve(repo, twins[1][:8]).sha == twins[1]
