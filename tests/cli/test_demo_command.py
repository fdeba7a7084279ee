"""The README's main command: build -> publish -> list -> verify the SYNTHETIC demo suite."""

from __future__ import annotations

import json

from rcp_data.cli import main


def test_demo_command_builds_publishes_and_verifies(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0  # results on stdout; status on a terminal
    captured = capsys.readouterr()
    text = captured.out
    assert "published release" not in captured.out + captured.err   # a status line
    assert "v1-rcp-data-synthetic-judge-7b  superseded" in text
    assert "v2-rcp-data-synthetic-judge-7b  current" in text
    assert "tags and releases.json agree" in text
    assert text.count("VERIFIED") == 2
    # both releases recorded (sha and digest) in the demo's own record, which anchors them
    record = json.loads((out / "records/demo.json").read_text())
    digests = [r["digest"] for r in record["releases"]]
    assert len(digests) == 2 and all(len(d) == 64 for d in digests)
    for number, digest in enumerate(digests, 1):
        assert f"  digest   {digest}" in text
        assert f"release {number}'s digest and commit" in text
    assert "not anchored" not in text
    assert "demo finished: both releases verified" in text
    # the full reports are files of the output; stdout has each in brief
    for tag in ("v1-rcp-data-synthetic-judge-7b", "v2-rcp-data-synthetic-judge-7b"):
        full = (out / f"verify-{tag}.txt").read_text()
        assert full.startswith(f"rcp-data verify rcp-data/rcp-ndcg-demo@{tag}\n")
        assert full.rstrip().splitlines()[-1] in text        # the same verdict line
        assert "[     ok] content-hashes" in full and "content-hashes" not in text
    # release 2 is a recalibration: same qrels rows, new gains; history says so
    h2 = json.loads((out / "release-v2/provenance/releases.json").read_text())
    assert [r["status"] for r in h2["releases"]] == ["superseded", "current"]
    card = (out / "release-v1/README.md").read_text()
    assert "SYNTHETIC" in card
    # the demo writes its published shas back: release 2's history names both tags' commits,
    # the refs the demo records having left on its Hub (read from git, not from the demo)
    import subprocess

    git_dir = out / "hub/datasets/rcp-data/rcp-ndcg-demo.git"
    tags = dict(line.split()[::-1] for line in subprocess.run(
        ["git", "--git-dir", str(git_dir), "for-each-ref", "--format=%(*objectname) %(refname)",
         "refs/tags"], capture_output=True, text=True, check=True).stdout.splitlines())
    assert [r["revision"] for r in h2["releases"]] == [
        tags[f"refs/tags/{r['tag']}"] for r in h2["releases"]]
    made = json.loads((out / "demo.json").read_text())["hub_refs"]
    assert {k: v for k, v in made["datasets/rcp-data/rcp-ndcg-demo"].items()
            if k.startswith("refs/tags/")} == tags
    # so release 3 is made from the demo's output without --previous-revision, dated
    assert main(["recalibrate", str(out / "release-v2"), "--rule", "hard-fallback", "--out",
                 str(tmp_path / "v3"), "--json"]) == 0
    h3 = json.loads((tmp_path / "v3/provenance/releases.json").read_text())
    assert h3["releases"][1]["revision"] == tags[f"refs/tags/{h2['releases'][1]['tag']}"]
    assert h3["releases"][2]["date"] and h3["releases"][2]["status"] == "current"
    # and the release table of its history has the date (RELEASES.md's date cell)
    from rcp_data.documents.releases_md import render_suite
    from rcp_data.model.history import read_history

    table = render_suite("demo", read_history(tmp_path / "v3/provenance/releases.json"))
    row = next(line for line in table.splitlines() if line.startswith("| 3 "))
    assert h3["releases"][2]["date"] in row


def _fake_demo(out, refs: dict | None):
    """A demo folder (its demo.json) whose Hub holds one repository with one commit."""
    from rcp_data.hub.gitstore import GitStore

    store = GitStore(out / "hub")
    store.create_repo("dataset", "someone/else")
    manifest = {"schema": "rcp-data.demo/1", "synthetic": True}
    if refs is not None:
        manifest["hub_refs"] = refs(store) if callable(refs) else refs
    (out / "demo.json").write_text(json.dumps(manifest))
    return store


def _hub_listing(out) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in (out / "hub").rglob("*")
                  if ".tmp" not in p.parts and p.name != ".lock")


def test_demo_never_replaces_a_hub_a_server_is_serving(tmp_path, capsys):
    from rcp_data.hub.server import LocalHub

    out = tmp_path / "demo"
    _fake_demo(out, lambda store: store.all_refs())
    with LocalHub(out / "hub"):
        before = _hub_listing(out)
        assert main(["demo", "--out", str(out), "--force"]) == 2
        assert _hub_listing(out) == before
    err = capsys.readouterr().err
    assert "a local Hub is serving" in err and "nothing was written" in err


def test_demo_never_replaces_a_hub_holding_commits_it_did_not_make(tmp_path, capsys):
    out = tmp_path / "demo"
    _fake_demo(out, {})           # the demo made no ref; someone made someone/else
    before = _hub_listing(out)
    assert main(["demo", "--out", str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert "holds commits the demo did not make" in err
    assert "datasets/someone/else refs/heads/main" in err
    assert _hub_listing(out) == before


def test_a_hub_holding_only_the_demos_refs_may_be_replaced(tmp_path):
    from rcp_data.demo.pipeline import check_hub_replaceable

    out = tmp_path / "demo"
    _fake_demo(out, lambda store: store.all_refs())
    check_hub_replaceable(out)                 # no error: every ref is the demo's
