"""Outputs never destroy user data (issue 14, item 2).

Every command that writes a folder refuses an ``--out`` that holds the user's files, that is,
contains or sits inside its inputs, or that holds an earlier output without ``--force``; the
refusal is one line with exit 2 and nothing is touched. Temporaries are deleted on error and,
after a kill, by the next run (their writer's pid is dead).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rcp_data.cli import main
from rcp_data.core.io import clean_stale_temporaries
from rcp_data.core.outputs import output_dir
from rcp_data.model.layout import RELEASE

DATE = "2026-11-30"


def _tree(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too), with file digests."""
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest()
                                       if p.is_file() else "dir")
            for p in sorted(root.rglob("*"))}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def work(demo_data, tmp_path) -> Path:
    """``work/inputs``: a private copy of the demo's builder inputs."""
    shutil.copytree(demo_data / "inputs", tmp_path / "inputs")
    return tmp_path


def _build(work: Path, out: Path, *extra: str) -> int:
    return main(["-q", "build", "demo", "--inputs", str(work / "inputs"), "--out", str(out),
                 "--date", DATE, *extra])


def _refused(capsys, code: int, message: str) -> None:
    err = capsys.readouterr().err
    assert (code, err) == (2, f"rcp-data build: error: {message}\n")


@pytest.mark.parametrize("where", ["is", "inside", "contains"])
def test_out_apart_from_inputs(work, capsys, where):
    inputs = work / "inputs"
    out = {"is": inputs, "inside": inputs / "release", "contains": work}[where]
    how = {"is": "is", "inside": "sits inside", "contains": "contains"}[where]
    before = _tree(work)
    capsys.readouterr()
    code = _build(work, out, "--force")
    _refused(capsys, code, f"--out {out} {how} the input --inputs {inputs}; write the output "
                           "somewhere apart from the inputs (nothing was written)")
    assert _tree(work) == before


def test_out_with_user_files_is_refused_even_with_force(work, capsys):
    out = work / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("the user's own file")
    before = _tree(work)
    capsys.readouterr()
    code = _build(work, out, "--force")
    _refused(capsys, code, f"--out {out} is a folder with files that rcp-data did not write (no "
                           "provenance/build_manifest.json of a release folder); choose a new "
                           "or empty folder (nothing was written)")
    assert _tree(work) == before


def test_out_that_is_a_file_is_refused(work, capsys):
    out = work / "release"
    out.write_text("a file")
    capsys.readouterr()
    code = _build(work, out)
    _refused(capsys, code, f"--out {out} exists and is not a folder; nothing was written")
    assert out.read_text() == "a file"


def test_empty_out_is_used_and_an_earlier_release_needs_force(work, capsys):
    out = work / "release"
    out.mkdir()
    assert _build(work, out) == 0
    first = _tree(out)
    assert "README.md" in first
    capsys.readouterr()
    code = _build(work, out)
    _refused(capsys, code, f"--out {out} holds a release folder written earlier; pass --force "
                           "to replace it (nothing was written)")
    assert _tree(out) == first
    assert _build(work, out, "--force") == 0
    assert _tree(out) == first                              # the same inputs, the same release
    assert sorted(p.name for p in work.iterdir()) == ["inputs", "release"]


def test_a_failed_build_leaves_the_earlier_release_and_no_temporary(work, capsys):
    out = work / "release"
    assert _build(work, out) == 0
    first = _tree(out)
    (work / "inputs/judge/judge.json").write_text('{"model": "m", "short": "a/b"}')
    assert _build(work, out, "--force") == 2
    assert _tree(out) == first
    assert sorted(p.name for p in work.iterdir()) == ["inputs", "release"]


def test_temporaries_of_a_killed_run_are_removed_by_the_next(work):
    out = work / "release"
    dead, alive = _dead_pid(), os.getppid()
    stale_dir = work / f".release.tmp-{dead}-0badc0de"
    (stale_dir / "alpha").mkdir(parents=True)
    stale_file = work / f".release.tmp-{dead}-0badf00d.parquet"
    stale_file.write_bytes(b"half a file")
    live = work / f".release.tmp-{alive}-0000cafe"   # another writer, still running
    live.mkdir()
    other = work / f".other.tmp-{dead}-0badc0de"      # not a temporary of this output
    other.mkdir()
    assert _build(work, out) == 0
    assert sorted(p.name for p in work.iterdir()) == sorted(
        [live.name, other.name, "inputs", "release"])


def test_an_output_parked_by_a_run_killed_mid_swap_is_put_back(work):
    out = work / "release"
    assert _build(work, out) == 0
    first = _tree(out)
    parked = work / f".release.old-{_dead_pid()}-0badc0de"
    os.replace(out, parked)                 # killed between parking the old and moving the new
    assert clean_stale_temporaries(out) == []
    assert _tree(out) == first and not parked.exists()


def test_read_only_out_is_one_line(work, capsys, monkeypatch):
    """A folder the OS refuses to write to: one line, exit 2. (As root, permissions do not
    apply, so the refusal is simulated at the temporary folder's creation.)"""
    parent = work / "locked"
    parent.mkdir()
    out = parent / "release"
    if os.geteuid() == 0:
        real_mkdir = Path.mkdir

        def refuse(self, *args, **kwargs):
            if self.name.startswith(".release.tmp-"):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
            return real_mkdir(self, *args, **kwargs)
        monkeypatch.setattr(Path, "mkdir", refuse)
    else:
        parent.chmod(0o555)
    try:
        capsys.readouterr()
        code = _build(work, out)
    finally:
        parent.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"rcp-data build: error: cannot write {out}: ")
    assert err.endswith("; nothing was written\n")
    assert list(parent.iterdir()) == []


def test_output_dir_deletes_its_temporary_on_error(tmp_path):
    out = tmp_path / "release"
    with pytest.raises(RuntimeError), output_dir(out, RELEASE) as tmp:
        (tmp / "half.parquet").write_bytes(b"PAR1")
        raise RuntimeError("the build died")
    assert list(tmp_path.iterdir()) == []


# -- the other commands that write ------------------------------------------------------------------
def test_calibrate_refuses_out_holding_its_inputs_before_fitting(work, capsys):
    criteria = work / "inputs/judge/criteria.parquet"
    before = _tree(work)
    capsys.readouterr()
    code = main(["calibrate", "--criteria", str(criteria), "--thetas",
                 str(work / "inputs/judge/thetas.parquet"), "--out", str(work / "inputs/judge")])
    err = capsys.readouterr().err
    assert (code, err) == (2, f"rcp-data calibrate: error: --out {work / 'inputs/judge'} "
                              f"contains the input --criteria {criteria}; write the output "
                              "somewhere apart from the inputs (nothing was written)\n")
    assert _tree(work) == before


def test_recalibrate_refuses_out_equal_to_the_release(demo_release_v1, work, capsys):
    release = shutil.copytree(demo_release_v1, work / "release")
    before = _tree(work)
    capsys.readouterr()
    code = main(["recalibrate", str(release), "--fit", str(work / "inputs/judge"), "--out",
                 str(release), "--force"])
    err = capsys.readouterr().err
    assert (code, err) == (2, f"rcp-data recalibrate: error: --out {release} is the input "
                              f"RELEASE_DIR {release}; write the output somewhere apart from "
                              "the inputs (nothing was written)\n")
    assert _tree(work) == before


def test_text_repair_output_rules(tmp_path, capsys):
    src = tmp_path / "in.tsv"
    src.write_text("1\tok\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    existing = tmp_path / "out.tsv"
    existing.write_text("the user's file\n")
    cases = [
        (folder, f"--output {folder} is a folder; name the file to write (nothing was written)"),
        (src, f"--output {src} is the input --input {src}; write the output somewhere apart "
              "from the inputs (nothing was written)"),
        (existing, f"--output {existing} exists; pass --force to replace it (nothing was "
                   "written)"),
    ]
    before = _tree(tmp_path)
    for out, message in cases:
        capsys.readouterr()
        code = main(["text", "repair", "--input", str(src), "--output", str(out)])
        assert (code, capsys.readouterr().err) == (2, f"rcp-data text: error: {message}\n")
    assert _tree(tmp_path) == before
    assert main(["text", "repair", "--input", str(src), "--output", str(existing),
                 "--force"]) == 0
    assert existing.read_text() == "1\tok\n"


def test_card_render_rules(demo_release_v1, tmp_path, capsys):
    release = shutil.copytree(demo_release_v1, tmp_path / "release")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("the user's readme")
    card = tmp_path / "card.md"
    card.write_text("an older card")
    inside = release / "alpha" / "qrels.parquet"
    cases = [
        (["card", "render", str(mine), "--suite", "demo"],
         f"{mine} is not a release directory (it has neither provenance/releases.json nor "
         "provenance/build_manifest.json); nothing was written"),
        (["card", "render", str(release), "--out", str(card)],
         f"--out {card} exists; pass --force to replace it (nothing was written)"),
        (["card", "render", str(release), "--out", str(inside), "--force"],
         f"--out {inside} sits inside the input RELEASE_DIR {release}; write the output "
         "somewhere apart from the inputs (nothing was written)"),
    ]
    before = _tree(tmp_path)
    for argv, message in cases:
        capsys.readouterr()
        assert (main(argv), capsys.readouterr().err) == (2, f"rcp-data card: error: {message}\n")
    assert _tree(tmp_path) == before
    assert main(["card", "render", str(release), "--out", str(card), "--force"]) == 0
    assert card.read_text(encoding="utf-8").startswith("---\n")


def test_demo_refuses_a_folder_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "demo-out"
    out.mkdir()
    (out / "thesis.tex").write_text("the user's thesis")
    before = _tree(tmp_path)
    capsys.readouterr()
    code = main(["demo", "--out", str(out), "--force"])
    err = capsys.readouterr().err
    assert (code, err) == (2, f"rcp-data demo: error: --out {out.resolve()} is a folder with "
                              "files that rcp-data did not write (no demo.json of a demo "
                              "folder); choose a new or empty folder (nothing was written)\n")
    assert _tree(tmp_path) == before


def test_a_calibration_folder_is_recognised_by_its_manifest(tmp_path):
    from rcp_data.core.outputs import CALIBRATION, check_output_dir

    out = tmp_path / "fit"
    out.mkdir()
    (out / "diagnostics.json").write_text(json.dumps({"schema": CALIBRATION.schema}))
    assert check_output_dir(out, CALIBRATION, force=True) == out
    (out / "diagnostics.json").write_text(json.dumps({"schema": "something else"}))
    with pytest.raises(Exception, match="did not write"):
        check_output_dir(out, CALIBRATION, force=True)


def test_calibrate_force_keeps_a_users_file_in_an_earlier_calibration(work, capsys):
    """``calibrate --force`` replaces a calibration folder only while it holds nothing but what
    a calibration writes: a thesis.tex put into an earlier one is never deleted."""
    from rcp_data.core.outputs import CALIBRATION, check_output_dir

    out = work / "fit"
    out.mkdir()
    (out / "diagnostics.json").write_text(json.dumps({"schema": CALIBRATION.schema}))
    (out / "thetas.parquet").write_bytes(b"PAR1")
    assert check_output_dir(out, CALIBRATION, force=True) == out    # only its own files
    (out / "thesis.tex").write_text("the user's thesis")
    before = _tree(work)
    capsys.readouterr()
    code = main(["calibrate", "--criteria", str(work / "inputs/judge/criteria.parquet"),
                 "--thetas", str(work / "inputs/judge/thetas.parquet"), "--out", str(out),
                 "--force"])
    err = capsys.readouterr().err
    assert (code, err) == (2, f"rcp-data calibrate: error: --out {out} holds a calibration "
                              "folder written earlier, but also files rcp-data did not write "
                              "(thesis.tex); --force replaces only what rcp-data wrote: move "
                              "them out or choose another folder (nothing was written)\n")
    assert _tree(work) == before


def test_card_render_keeps_hand_edits_unless_forced(demo_release_v1, tmp_path, capsys):
    """``card render RELEASE_DIR`` replaces README.md and the task file while they are what
    rcp-data wrote (recorded when written); a hand-edited README is refused without --force."""
    release = shutil.copytree(demo_release_v1, tmp_path / "release")
    readme = release / "README.md"
    assert main(["-q", "card", "render", str(release)]) == 0        # its own card: rewritten
    edited = readme.read_text(encoding="utf-8") + "\nMy own notes, by hand.\n"
    readme.write_text(edited, encoding="utf-8")
    before = _tree(tmp_path)
    capsys.readouterr()
    code = main(["card", "render", str(release)])
    assert (code, capsys.readouterr().err) == (
        2, f"rcp-data card: error: {readme} is not the card or task file rcp-data wrote there "
           "(it was edited by hand, or written by something else); pass --force to replace it "
           "(nothing was written)\n")
    assert _tree(tmp_path) == before
    assert main(["-q", "card", "render", str(release), "--force"]) == 0
    assert "My own notes" not in readme.read_text(encoding="utf-8")
    # a card rcp-data wrote is re-rendered after its inputs change (no --force needed)
    assert main(["-q", "card", "render", str(release), "--repo", "someone/elsewhere"]) == 0
    assert "someone/elsewhere" in readme.read_text(encoding="utf-8")


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))   # as write() says it: no file


def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    from rcp_data.core.io import write_json
    from rcp_data.model.tables import write_parquet

    monkeypatch.setattr(Path, "write_bytes", _disk_full)
    with pytest.raises(OSError) as err:
        write_json({"a": 1}, tmp_path / "out.json")
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(tmp_path / "out.json")
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(pq, "write_table", _disk_full)
    with pytest.raises(OSError) as err:
        write_parquet(pa.table({"x": [1]}), tmp_path / "t.parquet")
    assert err.value.filename == str(tmp_path / "t.parquet")
    assert list(tmp_path.iterdir()) == []          # no temporary left either


def test_a_full_disk_is_one_line_naming_the_file(demo_release_v1, tmp_path, capsys,
                                                 monkeypatch):
    card = tmp_path / "card.md"
    monkeypatch.setattr(Path, "write_bytes", _disk_full)
    capsys.readouterr()
    assert main(["card", "render", str(demo_release_v1), "--out", str(card)]) == 2
    assert capsys.readouterr().err == (
        f"rcp-data card: error: cannot write {card}: No space left on device ({card}); "
        "nothing was written\n")
    assert not card.exists()
