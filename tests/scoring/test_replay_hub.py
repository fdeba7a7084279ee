"""``rcp-data replay hf://datasets/OWNER/NAME@REV`` reads a pinned revision from the Hub."""

from __future__ import annotations

import json

import pytest
from support.demo_fixture import copy_demo

from rcp_data.cli import main
from rcp_data.core.specs import load_spec
from rcp_data.release.prepare import prepare_release


@pytest.fixture(scope="module")
def published(local_hub, tmp_path_factory, demo_data):
    from rcp_data.core.hub_client import HubClient
    from rcp_data.release.publish import publish

    root = copy_demo(demo_data, tmp_path_factory.mktemp("replay-hub") / "release")
    repo = "rcp-test/replay-hub-demo"
    prepare_release(root, load_spec("demo"), repo, date="2026-11-29")
    result = publish(root, repo, client=HubClient(local_hub.url), create_repo=True)
    return root, repo, result


@pytest.mark.parametrize("by", ["tag", "sha"])
def test_replay_of_a_pinned_hub_revision_equals_the_local_replay(published, by, capsys):
    root, repo, result = published
    rev = result.tag if by == "tag" else result.commit
    assert main(["replay", str(root), "--json", "--tie-rule", "group-mean"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["replay", f"hf://datasets/{repo}@{rev}", "--json", "--tie-rule",
                 "group-mean"]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert remote == local and remote["tie_rule"] == "group-mean"


def test_unknown_revision_exits_2(published, capsys):
    _, repo, _ = published
    assert main(["replay", f"hf://datasets/{repo}@v9-nothing"]) == 2
    assert "not found" in capsys.readouterr().err
