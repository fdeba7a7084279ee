"""``build`` and ``card render`` write the release's pictures and Diagnostics numbers as listed
files, and ``verify`` recomputes every number and plotted array (SYNTHETIC demo release)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.demo_fixture import copy_demo

from rcp_data.checks.diagnostics_check import check_diagnostics, differences
from rcp_data.checks.verify import verify_local_dir
from rcp_data.core.specs import load_spec
from rcp_data.documents.diagnostics_files import DIAGNOSTICS_FILE
from rcp_data.documents.pictures import PICTURE_FILES, SIZE, png_size


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, demo_data) -> Path:
    from rcp_data.cli import main
    from rcp_data.release.prepare import prepare_release

    root = copy_demo(demo_data, tmp_path_factory.mktemp("diag") / "release")
    prepare_release(root, load_spec("demo"), "rcp-data/rcp-ndcg-demo", date="2026-11-29")
    assert main(["card", "render", str(root), "-q"]) == 0
    return root


def test_render_writes_listed_pictures_and_numbers(rendered: Path):
    manifest = json.loads((rendered / "provenance/build_manifest.json").read_text())
    listed = {f["path"] for f in manifest["files"]}
    for rel in [DIAGNOSTICS_FILE, *PICTURE_FILES.values()]:
        assert rel in listed
        assert (rendered / rel).is_file()
    for rel in PICTURE_FILES.values():
        assert png_size(rendered / rel) == SIZE
    record = json.loads((rendered / DIAGNOSTICS_FILE).read_text())
    assert set(record["pictures"]) == set(PICTURE_FILES)
    assert set(record["numbers"]["label"]) == {"rcp", "raw_bt", "count"}
    assert not list(rendered.glob(".rcp-pictures-*"))           # the temp folder is gone


def test_the_card_shows_the_diagnostics_section(rendered: Path):
    from rcp_data.documents.card_text import card_sentence
    from rcp_data.documents.diagnostics_files import card_section

    card = (rendered / "README.md").read_text(encoding="utf-8")
    section = card_sentence("diagnostics", card_section(rendered, load_spec("demo")))
    assert section.startswith("## Diagnostics") and section in card
    assert card.index("## Diagnostics") < card.index("## Checks")
    assert "| Alpha-RR |" in section                     # the card's short names


def test_verify_recomputes_the_diagnostics(rendered: Path):
    report = verify_local_dir(rendered)
    by_name = {c.name: c for c in report.checks}
    assert by_name["diagnostics"].status == "ok", by_name["diagnostics"]
    assert by_name["pictures"].status == "ok"
    assert not report.failed, [c.to_dict() for c in report.failed]


def test_a_changed_number_or_picture_fails(rendered: Path, tmp_path: Path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(rendered, copy)
    path = copy / DIAGNOSTICS_FILE
    record = json.loads(path.read_text())
    record["numbers"]["label"]["rcp"]["auc"] += 0.01
    record["pictures"]["gain_curve"]["data"]["gain"][3] += 1e-6
    path.write_text(json.dumps(record))
    (copy / PICTURE_FILES["reliability"]).write_bytes(b"not a png")
    checks = {c.name: c for c in check_diagnostics(copy, load_spec("demo"))}
    assert checks["diagnostics"].status == "failed"
    assert any(d.startswith("numbers.label.rcp.auc") for d in checks["diagnostics"].details)
    assert any(d.startswith("pictures.gain_curve.data.gain[3]")
               for d in checks["diagnostics"].details)
    assert checks["pictures"].status == "failed" and "reliability" in checks["pictures"].details[0]


def test_differences_walks_json():
    assert differences({"a": [1.0, 2.0]}, {"a": [1.0, 2.0 + 1e-12]}) == []
    assert differences({"a": [1.0]}, {"a": [1.0, 2.0]}) == ["a: 1 values, expected 2"]
    assert differences({"a": None}, {"a": 0.5}) == ["a: stored None, recomputed 0.5"]


def test_the_build_writes_listed_and_verified_diagnostics(demo_data: Path):
    """``build`` (here the demo's) writes the pictures and numbers, listed in the manifest,
    equal to what ``verify`` recomputes, each picture marked SYNTHETIC."""
    from PIL import Image

    from rcp_data.documents.pictures import SYNTHETIC_MARK

    root = demo_data / "release"
    listed = {f["path"] for f in json.loads(
        (root / "provenance/build_manifest.json").read_text())["files"]}
    assert {DIAGNOSTICS_FILE, *PICTURE_FILES.values()} <= listed
    assert [c.status for c in check_diagnostics(root, load_spec("demo"))] == ["ok", "ok"]
    for rel in PICTURE_FILES.values():
        with Image.open(root / rel) as png:
            assert png.size == SIZE
            assert png.text.get("Description") == SYNTHETIC_MARK
    record = json.loads((root / DIAGNOSTICS_FILE).read_text())
    systems = record["pictures"]["leaderboards"]["data"]["systems"]
    assert systems == ["demo/alpha-reranker", "demo/beta-reranker", "demo/gamma-reranker",
                       "demo/coarse-reranker"]
    # the leaderboard picture names them as the card's tables do (the spec's short names)
    from rcp_data.documents.diagnostics_files import system_names
    from rcp_data.scoring.release_diagnostics import release_diagnostics

    names = system_names(release_diagnostics(root, "demo"), load_spec("demo"))
    assert [names[s] for s in systems] == ["Alpha-RR", "Beta-RR", "Gamma-RR", "Coarse-RR"]



def test_a_release_without_diagnostics_is_absent_not_failed(demo_data: Path, tmp_path: Path):
    import shutil

    root = copy_demo(demo_data, tmp_path / "release")
    (root / DIAGNOSTICS_FILE).unlink()
    shutil.rmtree(root / "provenance/pictures")
    checks = check_diagnostics(root, load_spec("demo"))
    assert [c.status for c in checks] == ["absent"]
