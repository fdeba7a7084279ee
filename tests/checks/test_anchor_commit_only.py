"""Issue 39 item 6: a record that names a commit but no digest anchors that commit only when git
recomputed the objects from the bytes (``--git``). Without it, the Hub being checked (or a proxy
named by ``HF_ENDPOINT``) could serve a forged commit under the recorded sha and list it as it
likes, so verify says "not anchored" (exit 3) and names the way out. The records are the
packaged ``release/*.json`` (none of them holds a digest: the bytes published then could not be
fetched and hashed here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rcp_data.checks.anchor import check_anchor
from rcp_data.checks.reports import NOT_ANCHORED
from rcp_data.model.history import read_history

RECORDS = sorted((Path(__file__).resolve().parents[2] / "release").glob("*.json"))
DIGEST = "0" * 64   # what the bytes would give: no record holds a digest to compare it with


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_packaged_records_hold_no_digest(path):
    assert [r.digest for r in read_history(path).releases] == [None] * len(
        read_history(path).releases)


def _anchor(path: Path, *, recomputed: bool):
    history = read_history(path)
    release = history.releases[0]
    return release, check_anchor(DIGEST, pinned=None, repo=history.repo, release=release,
                                 release_commit=release.revision,
                                 records=[(str(path), history)], needed=True,
                                 objects_recomputed=recomputed)


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_a_commit_without_a_digest_does_not_anchor_without_git(path):
    release, (check, anchor) = _anchor(path, recomputed=False)
    assert anchor is None and check.status == "absent"
    assert check.found == (
        f"none: {NOT_ANCHORED} ({path} records release 1's commit {release.revision} but no "
        "digest: a commit without a digest anchors only when git recomputes its objects from "
        "the bytes; verify again with --git)")


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_a_commit_without_a_digest_anchors_when_git_recomputed_the_objects(path):
    release, (check, anchor) = _anchor(path, recomputed=True)
    assert check.ok and check.status != "absent"
    assert anchor == (f"{path}: release 1's commit {release.revision} (no digest recorded; git "
                      "recomputed the objects of the bytes, --git)")


def test_a_forged_commit_under_the_recorded_sha_is_not_anchored_by_the_listing():
    # what a forging Hub controls: the bytes, and so the digest they give, and the listing of
    # the recorded commit; neither makes a digest-less record anchor without --git
    path = RECORDS[0]
    history = read_history(path)
    release = history.releases[0]
    for forged in ("f" * 64, DIGEST):
        check, anchor = check_anchor(forged, pinned=None, repo=history.repo, release=release,
                                     release_commit=release.revision,
                                     records=[(str(path), history)], needed=True)
        assert anchor is None and check.status == "absent"
