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
