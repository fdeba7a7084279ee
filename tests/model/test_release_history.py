"""Release histories: schema, changes, the seeded suite histories, and what is rendered from them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rcp_data.cli import main
from rcp_data.core.errors import InputError, VerificationFailed
from rcp_data.documents.releases_md import (
    release_table_rows,
    render_release_table,
    render_release_table_text,
    render_releases_md,
    write_releases_md,
)
from rcp_data.model.history import (
    SCHEMA,
    History,
    add_release,
    fill_known_shas,
    histories_dir,
    judge_slug,
    load_project_histories,
    loads_history,
    read_history,
    record_release,
    release_tag,
    validate_history,
    write_history,
)

QWEN35 = "nvidia/Qwen3.5-397B-A17B-NVFP4"
CAL = {"method": "2pl-irt", "item_params": "provenance/item_params.qwen35.json",
       "link": "weighted_discrimination"}
CHECKOUT = Path(__file__).resolve().parents[2]
SHA_A = "a" * 40
SHA_B = "b" * 40


def _one(repo: str = "owner/repo") -> History:
    return loads_history({"schema": SCHEMA, "repo": repo, "releases": [{
        "release": 1, "tag": release_tag(1, QWEN35), "revision": None, "data_revision": None,
        "judge": {"model": QWEN35, "revision": "0368c1b"}, "calibration": CAL,
        "status": "current", "superseded_by": None, "date": "2026-01-02", "summary": "first",
    }]}, for_commit=True)


def test_judge_slug_and_tag():
    assert judge_slug(QWEN35) == "nvidia-qwen3.5-397b-a17b-nvfp4"
    assert release_tag(2, QWEN35) == "v2-nvidia-qwen3.5-397b-a17b-nvfp4"
    assert judge_slug("Qwen/Qwen3.6-27B-FP8") == "qwen-qwen3.6-27b-fp8"


def test_unknown_schema_refused(tmp_path: Path):
    data = _one().to_dict()
    data["schema"] = "rcp-data.releases/2"
    path = tmp_path / "releases.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"releases.json.*unknown schema 'rcp-data.releases/2'"):
        read_history(path)
    del data["schema"]
    with pytest.raises(InputError, match="not a release history: its schema is None") as err:
        loads_history(data)
    assert "upgrade" not in str(err.value)   # no newer rcp-data reads a file of no schema


def test_render_md_skips_files_of_another_schema(tmp_path: Path, capsys, caplog):
    """issue 30: the demo's demo.json beside the histories is no reason to say "upgrade"."""
    from rcp_data.cli import main

    folder = tmp_path / "demo-out"
    folder.mkdir()
    (folder / "demo.json").write_text(json.dumps({"schema": "rcp-data.demo/1"}))
    (folder / "demo-suite.json").write_text(_one().to_json())
    assert main(["release", "render-md", "--histories", str(folder)]) == 0
    captured = capsys.readouterr()
    assert _one().releases[0].tag in captured.out
    assert "skipped" in caplog.text and "demo.json: not a release history" in caplog.text
    assert "upgrade" not in caplog.text + captured.err


def test_round_trip_keeps_extra_keys(tmp_path: Path):
    data = _one().to_dict()
    data["paper"] = {"release": 1, "revision": SHA_A}
    data["releases"][0]["note"] = "kept"
    path = tmp_path / "h.json"
    write_history(History.from_dict(data), path)
    again = read_history(path)
    assert again.to_dict() == data
    assert again.paper == {"release": 1, "revision": SHA_A}
    assert again.releases[0].note == "kept"


def test_validation_names_the_problems():
    h = _one().to_dict()
    h["releases"][0]["tag"] = "v1-other"
    h["releases"][0]["status"] = "superseded"
    h["releases"][0]["calibration"] = {"method": "2pl-irt", "item_params": "x.json",
                                       "link": "cubic"}
    problems = validate_history(History.from_dict(h))
    assert any("tag 'v1-other' should be 'v1-nvidia-qwen3.5-397b-a17b-nvfp4'" in p
               for p in problems)
    assert any("superseded_by" in p for p in problems)
    assert any("unknown link 'cubic'" in p for p in problems)
    assert any("exactly the latest release (1) must be 'current'" in p for p in problems)


def test_add_release_supersedes_the_previous():
    with pytest.raises(InputError, match=r"release 1 .* has no commit sha in the history yet; pass --previous-revision"):
        add_release(_one(), judge={"model": QWEN35}, calibration=CAL)
    two = add_release(_one(), judge={"model": QWEN35}, calibration=CAL, summary="refit",
                      previous_revision=SHA_A)
    r1, r2 = two.releases
    assert (r1.status, r1.superseded_by, r1.revision, r1.data_revision) == (
        "superseded", 2, SHA_A, SHA_A)
    assert (r2.release, r2.tag, r2.revision, r2.status) == (
        2, "v2-nvidia-qwen3.5-397b-a17b-nvfp4", None, "current")
    assert validate_history(two, for_commit=True) == []
    # an older release needs its full sha inside a release commit
    short = add_release(_one(), judge={"model": QWEN35}, calibration=CAL,
                        previous_revision="aaaaaaa")
    assert any("full 40-hex sha" in p for p in validate_history(short, for_commit=True))


def test_fill_known_shas_and_record_release():
    two = add_release(_one(), judge={"model": QWEN35}, calibration=CAL, previous_revision=SHA_A)
    filled = fill_known_shas(two, {"v2-nvidia-qwen3.5-397b-a17b-nvfp4": SHA_B,
                                   "v1-nvidia-qwen3.5-397b-a17b-nvfp4": "c" * 40})
    assert [r.revision for r in filled.releases] == [SHA_A, SHA_B]   # known shas never change
    assert filled.releases[1].data_revision == SHA_B
    project = _one()
    project = record_release(fill_known_shas(project, {}), _one().releases[0], SHA_A)
    project = record_release(project, two.releases[1], SHA_B)
    assert [(r.release, r.revision, r.status, r.superseded_by) for r in project.releases] == [
        (1, SHA_A, "superseded", 2), (2, SHA_B, "current", None)]
    with pytest.raises(InputError, match="not a full commit sha"):
        record_release(project, two.releases[1], "abc")


def test_seeded_histories_match_the_published_cards():
    histories = load_project_histories()
    assert set(histories) == {"bright", "nanobeir", "trecdl", "vidore_v3"}
    nano = histories["nanobeir"].releases
    assert [(r.tag, r.revision, r.status) for r in nano] == [
        ("v1-nvidia-qwen3.5-397b-a17b-nvfp4", "c0c43c5790a808cb0e8ee833bc7487dc93e88cd5",
         "current")]
    vidore = histories["vidore_v3"].releases
    assert [(r.tag, r.revision, r.status) for r in vidore] == [
        ("v1-nvidia-qwen3.5-397b-a17b-nvfp4", "b22323345cb5639944600d490969bcce9fba7943",
         "superseded"),
        ("v2-nvidia-qwen3.5-397b-a17b-nvfp4", None, "current")]
    assert "unknown" in vidore[1].note          # honest about the missing sha
    from rcp_data.core.specs import load_spec

    for suite, history in histories.items():
        spec = load_spec(suite)
        assert history.repo == spec.repo
        assert history.paper["revision"] == spec.paper_revision


def _card_table(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().endswith(heading))
    rows = [line for line in lines[start + 1:start + 8] if "|" in line or "\t" in line]
    return rows


def _without_dated(row: str, sep: str) -> str:
    """A release-table row without its last two cells (date, summary)."""
    if sep == "|":
        cells = row.split(" | ") if not row.startswith("|---") else row.split("|")
        if row.startswith("|---"):
            return "|".join(cells[:-3]) + "|"
        return " | ".join(cells[:-2]) + " |"
    return "\t".join(row.split("\t")[:-2])


def test_card_tables_render_as_published(reference_dir: Path):
    nano_card = (reference_dir / "card-rcp-ndcg-nanobeir.md").read_text(encoding="utf-8")
    history = load_project_histories()["nanobeir"]
    # the published cards' columns, then the date and summary RELEASES.md also prints
    rendered = render_release_table(history).splitlines()
    assert [_without_dated(r, "|") for r in rendered] == _card_table(
        nano_card, "Releases and judge provenance")
    assert rendered[0].endswith("| date | summary |")
    assert all(row.endswith(f"| {r.date or ''} | {r.summary} |")
               for r, row in zip(history.releases, rendered[2:], strict=True))
    # the ViDoRe card is release 2's own: its releases.json holds release 2 as "this revision"
    vidore_card = (reference_dir / "card-rcp-ndcg-vidore-v3.txt").read_text(encoding="utf-8")
    history = load_project_histories()["vidore_v3"]
    assert [_without_dated(r, "\t") for r in render_release_table_text(history).splitlines()
            ] == _card_table(vidore_card, "Releases and judge provenance")
    rows = release_table_rows(history)
    assert [r["revision_text"] for r in rows] == ["b22323345cb5639944600d490969bcce9fba7943",
                                                  "this revision"]
    assert rows[0]["calibration"] == "2PL IRT, provenance/item_params.qwen35.json"


def test_releases_md_is_generated_from_the_histories(tmp_path: Path, capsys):
    text = render_releases_md(load_project_histories())
    for suite_repo in ("rcp-ndcg-nanobeir", "rcp-ndcg-vidore-v3", "rcp-ndcg-bright",
                       "rcp-ndcg-trecdl"):
        assert suite_repo in text
    # every seeded sha appears; the unknown one is shown as unknown
    for history in load_project_histories().values():
        for r in history.releases:
            assert (r.revision or "*unknown*") in text
    assert len(re.findall(r"^## ", text, flags=re.M)) == 4
    # the committed RELEASES.md is exactly what the histories render
    assert main(["release", "render-md", "--check", "--out", str(CHECKOUT / "RELEASES.md")]) == 0
    stale = tmp_path / "RELEASES.md"
    stale.write_text("# edited by hand\n")
    with pytest.raises(VerificationFailed):
        write_releases_md(stale, check=True)
    assert main(["release", "render-md", "--out", str(stale), "--histories",
                 str(histories_dir())]) == 0
    assert stale.read_text() == text


def test_record_release_stores_the_digest_beside_the_sha_and_refuses_a_malformed_one():
    import hashlib

    from rcp_data.core.files import FileEntry
    from rcp_data.model.manifest import release_digest

    entries = [FileEntry("b.parquet", 3, "1" * 64), FileEntry("README.md", 5, "2" * 64),
               FileEntry(".gitattributes", 9, "3" * 64)]   # the Hub's housekeeping: left out
    digest = release_digest(entries)
    assert digest == hashlib.sha256(
        b"rcp-data.release-digest/1\n" + f"{'2' * 64} 5 README.md\n{'1' * 64} 3 b.parquet\n"
        .encode()).hexdigest()
    recorded = record_release(_one(), _one().releases[0], SHA_A, digest)
    assert recorded.releases[0].digest == digest and recorded.releases[0].revision == SHA_A
    assert record_release(_one(), _one().releases[0], SHA_A).releases[0].digest is None
    with pytest.raises(InputError, match="'digest' must be a release digest"):
        record_release(_one(), _one().releases[0], SHA_A, "abc")
    with pytest.raises(InputError, match="given twice"):
        release_digest([*entries, entries[0]])
