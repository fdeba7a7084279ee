"""The README's main command: build -> publish -> list -> verify the SYNTHETIC demo suite."""

from __future__ import annotations

import json

from rcp_data.cli import main


def test_demo_command_builds_publishes_and_verifies(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0  # status lines on stdout (-q hides them)
    text = capsys.readouterr().out
    assert "published release 1 as v1-rcp-data-synthetic-judge-7b" in text
    assert "published release 2 as v2-rcp-data-synthetic-judge-7b" in text
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
    # release 2 is a recalibration: same qrels rows, new gains; history says so
    h2 = json.loads((out / "release-v2/provenance/releases.json").read_text())
    assert [r["status"] for r in h2["releases"]] == ["superseded", "current"]
    card = (out / "release-v1/README.md").read_text()
    assert "SYNTHETIC" in card
