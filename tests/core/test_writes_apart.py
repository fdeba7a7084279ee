"""Writes stay inside ``--out`` (issue 39, item 3), for every command that writes files.

- An output that is, sits inside or contains one of the command's inputs is refused before
  anything is computed: one line naming both paths, exit 2, nothing written (one rule,
  :func:`rcp_data.core.outputs.check_apart`).
- A symbolic link planted at a path a command writes is replaced, never written through: what
  it points at is untouched after the run.

Every input lies alone in a folder of its own (``h_*``), so that "contains" names that input.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.byob_fixtures import write_grammar_benchmark

from rcp_data.cli import main
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\nq2 0 d3 2\n"
RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d3 1 2.0 r\nq2 Q0 d1 2 1.0 r\n"


def _tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` (links as links), with file digests."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = f"link -> {p.readlink()}"
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


@pytest.fixture(scope="module")
def ws(demo_data, tmp_path_factory) -> Path:
    """Inputs of every writing command, each alone in its own folder."""
    from support.release_dirs import make_release_dir

    root = tmp_path_factory.mktemp("apart")
    make_release_dir(root / "h_prepared/release", "someone/demo")   # releases.json, card
    shutil.copytree(demo_data / "inputs", root / "h_inputs/inputs")
    shutil.copytree(demo_data / "release", root / "h_release/release")
    write_grammar_benchmark(root / "h_data/data")
    assert main(["-q", "suite", "init", "g", "--from", str(root / "h_data/data"), "--out",
                 str(root / "h_spec/g.toml"), "--grade-positive", "3", "--pool-size", "20",
                 "--no-input", "--license", "cc0-1.0"]) == 0
    (root / "h_store/store").mkdir(parents=True)
    (root / "h_theirs/theirs").mkdir(parents=True)
    (root / "h_tsv").mkdir()
    (root / "h_tsv/in.tsv").write_text("1\tok\n")
    from rcp_data.model.history import histories_dir

    shutil.copytree(histories_dir(), root / "h_hist/histories")
    for name, text in (("qrels", QRELS), ("labels", QRELS), ("run", RUN)):
        (root / f"h_{name}").mkdir()
        (root / f"h_{name}/{name}.txt").write_text(text)
    return root


@dataclass(frozen=True)
class Writer:
    """A command that writes: its argv for an output ``out``, the input it must stay apart
    from (inside ``ws``), and how the command names both."""

    argv: Callable[[Path, Path], list[str]]
    input: str
    label: str
    flag: str = "--out"


JUDGE = ["--endpoint", "http://127.0.0.1:9/v1", "--model", MODEL, "--no-progress"]
WRITERS = {
    "build": Writer(lambda w, o: ["build", "demo", "--inputs", str(w / "h_inputs/inputs"),
                                  "--out", str(o), "--force"], "h_inputs/inputs", "--inputs"),
    "build --until pools": Writer(
        lambda w, o: ["build", "demo", "--inputs", str(w / "h_inputs/inputs"), "--until",
                      "pools", "--out", str(o)], "h_inputs/inputs", "--inputs"),
    "calibrate": Writer(
        lambda w, o: ["calibrate", "--criteria", str(w / "h_inputs/inputs/judge/criteria.parquet"),
                      "--thetas", str(w / "h_inputs/inputs/judge/thetas.parquet"), "--out",
                      str(o), "--force"], "h_inputs/inputs/judge/criteria.parquet", "--criteria"),
    "recalibrate": Writer(
        lambda w, o: ["recalibrate", str(w / "h_release/release"), "--fit",
                      str(w / "h_inputs/inputs/judge"), "--out", str(o), "--force"],
        "h_release/release", "RELEASE_DIR"),
    "card render --out": Writer(
        lambda w, o: ["card", "render", str(w / "h_release/release"), "--out", str(o),
                      "--force"], "h_release/release", "RELEASE_DIR"),
    "judge run": Writer(
        lambda w, o: ["judge", "run", "--pool", str(w / "h_release/release"), "--store",
                      str(w / "h_store/store"), "--out", str(o), *JUDGE],
        "h_release/release", "--pool"),
    "judge run --store": Writer(
        lambda w, o: ["judge", "run", "--pool", str(w / "h_release/release"), "--store",
                      str(o), "--out", str(w / "elsewhere"), *JUDGE],
        "h_release/release", "--pool", "--store"),
    "judge reparse": Writer(
        lambda w, o: ["judge", "reparse", "--store", str(w / "h_store/store"), "--out", str(o)],
        "h_store/store", "--store"),
    "judge import": Writer(
        lambda w, o: ["judge", "import", str(w / "h_theirs/theirs"), "--out", str(o)],
        "h_theirs/theirs", "store"),
    "suite init": Writer(
        lambda w, o: ["suite", "init", "g", "--from", str(w / "h_data/data"), "--out", str(o),
                      "--force", "--grade-positive", "3", "--no-input"], "h_data/data", "--from"),
    "suite first-stage": Writer(
        lambda w, o: ["suite", "first-stage", "--spec", str(w / "h_spec/g.toml"), "--out",
                      str(o)], "h_spec/g.toml", "--spec"),
    "suite first-stage (data)": Writer(
        lambda w, o: ["suite", "first-stage", "--spec", str(w / "h_spec/g.toml"), "--out",
                      str(o)], "h_data/data", "[source] path"),
    "text repair": Writer(
        lambda w, o: ["text", "repair", "--input", str(w / "h_tsv/in.tsv"), "--output", str(o),
                      "--force"], "h_tsv/in.tsv", "--input", "--output"),
    "release render-md": Writer(
        lambda w, o: ["release", "render-md", "--histories", str(w / "h_hist/histories"),
                      "--out", str(o)], "h_hist/histories", "--histories"),
    "agree --pictures": Writer(
        lambda w, o: ["agree", "--qrels", str(w / "h_qrels/qrels.txt"), "--labels",
                      f"b={w / 'h_labels/labels.txt'}", str(w / "h_run/run.txt"),
                      "--pictures", str(o)], "h_qrels/qrels.txt", "--qrels", "--pictures"),
    "agree --pictures (labels)": Writer(
        lambda w, o: ["agree", "--qrels", str(w / "h_qrels/qrels.txt"), "--labels",
                      f"b={w / 'h_labels/labels.txt'}", str(w / "h_run/run.txt"),
                      "--pictures", str(o)], "h_labels/labels.txt", "--labels b", "--pictures"),
    "agree --pictures (run)": Writer(
        lambda w, o: ["agree", "--qrels", str(w / "h_qrels/qrels.txt"), "--labels",
                      f"b={w / 'h_labels/labels.txt'}", str(w / "h_run/run.txt"),
                      "--pictures", str(o)], "h_run/run.txt", "RUN 1", "--pictures"),
}
HOW = {"is": "is", "inside": "sits inside", "contains": "contains"}


@pytest.mark.parametrize("where", sorted(HOW))
@pytest.mark.parametrize("name", sorted(WRITERS))
def test_an_output_apart_from_every_input(ws, capsys, name, where):
    writer = WRITERS[name]
    given = ws / writer.input
    out = {"is": given, "inside": given / "new", "contains": given.parent}[where]
    before = _tree(ws)
    capsys.readouterr()
    code = main(writer.argv(ws, out))
    err = capsys.readouterr().err
    command = name.split()[0]
    assert (code, err) == (2, f"rcp-data {command}: error: {writer.flag} {out} {HOW[where]} "
                              f"the input {writer.label} {given}; write the output somewhere "
                              "apart from the inputs (nothing was written)\n")
    assert _tree(ws) == before


def test_publish_never_records_into_the_release(ws, capsys):
    """Refused after the release check, before anything is uploaded (the Hub is not there)."""
    release = ws / "h_prepared/release"
    before = _tree(ws)
    for record_to, written in ((release / "history.json", release / "history.json"),
                               (release, release / "demo.json")):
        capsys.readouterr()
        code = main(["release", "publish", str(release), "--repo", "someone/demo",
                     "--record-to", str(record_to)])
        assert (code, capsys.readouterr().err) == (
            2, f"rcp-data release: error: --record-to {written} sits inside the input "
               f"RELEASE_DIR {release}; write the output somewhere apart from the inputs "
               "(nothing was written)\n")
    assert _tree(ws) == before


def test_a_link_to_an_input_counts_where_it_points_and_where_it_is(tmp_path):
    from rcp_data.core.errors import UsageError
    from rcp_data.core.outputs import check_apart

    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data", target_is_directory=True)
    for out, inputs in ((tmp_path / "link", {"--from": tmp_path / "data"}),
                        (tmp_path / "data", {"--from": tmp_path / "link"}),
                        (tmp_path / "link/x", {"--from": tmp_path / "data"}),
                        (tmp_path / "link", {"--from": tmp_path / "link"})):
        with pytest.raises(UsageError, match="the input --from"):
            check_apart(out, inputs)
    assert check_apart(tmp_path / "other", {"--from": tmp_path / "link"}) == tmp_path / "other"


# -- a symbolic link at a written path ----------------------------------------------------------
@pytest.fixture(scope="module")
def judged(ws):
    """A SIMULATED judge store of one demo query (the input of ``judge reparse``)."""
    with ServerThread(SimulatedJudge()) as srv:
        assert main(["-q", "judge", "run", "--pool", str(ws / "h_release/release"), "--store",
                     str(ws / "judged/store"), "--out", str(ws / "judged/out"), "--endpoint",
                     srv.url, "--model", MODEL, "--limit-queries", "1", "--no-progress",
                     "--context-tokens", "4096"]) == 0
    return ws / "judged/store"


@pytest.fixture(scope="module")
def server():
    with ServerThread(SimulatedJudge()) as srv:
        yield srv


def _outside(tmp: Path) -> Path:
    """What a planted link points at: a folder holding a file, and a file."""
    outside = tmp / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "folder/keep.txt").write_text("not rcp-data's")
    (outside / "file.txt").write_text("not rcp-data's either")
    return outside


def _plant(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=target.is_dir())


# name -> (argv for tmp, [(link inside tmp, "folder" | "file")], the written path that must be
# a real file or folder after the run)
LINKED = {
    "build": (lambda w, t: ["build", "demo", "--inputs", str(w / "h_inputs/inputs"), "--out",
                            str(t / "o"), "--no-prepare"],
              [("o", "folder")], "o/provenance/build_manifest.json"),
    "build --until pools": (
        lambda w, t: ["build", "demo", "--inputs", str(w / "h_inputs/inputs"), "--until", "pools",
                      "--out", str(t / "o")], [("o", "folder")], "o/provenance/pools_only.json"),
    "calibrate": (
        lambda w, t: ["calibrate", "--criteria", str(w / "h_inputs/inputs/judge/criteria.parquet"),
                      "--thetas", str(w / "h_inputs/inputs/judge/thetas.parquet"), "--out",
                      str(t / "o")], [("o", "folder")], "o/diagnostics.json"),
    "recalibrate": (
        lambda w, t: ["recalibrate", str(w / "h_prepared/release"), "--fit",
                      str(w / "h_inputs/inputs/judge"), "--out", str(t / "o"),
                      "--previous-revision", "a" * 40, "--date", "2026-11-30"],
        [("o", "folder")], "o/README.md"),
    "card render --out": (
        lambda w, t: ["card", "render", str(w / "h_release/release"), "--out", str(t / "c.md"),
                      "--force"], [("c.md", "file")], "c.md"),
    "card render (in place)": (
        lambda w, t: ["card", "render", str(t / "release"), "--force"],
        [("release/README.md", "file"), ("release/provenance/pictures", "folder")],
        "release/provenance/pictures"),
    "judge run": (
        lambda w, t: ["judge", "run", "--pool", str(w / "h_release/release"), "--store",
                      str(t / "s"), "--out", str(t / "o"), "--model", MODEL, "--no-progress",
                      "--limit-queries", "1", "--context-tokens", "4096"],
        [("o/judge", "folder"), ("s/windows.jsonl", "windows.jsonl"),
         ("s/runs.jsonl", "runs.jsonl")], "o/judge/tournament.parquet"),
    "judge reparse": (
        lambda w, t: ["judge", "reparse", "--store", str(w / "judged/store"), "--out",
                      str(t / "o")], [("o", "folder")], "o/windows.jsonl"),
    "suite init": (
        lambda w, t: ["suite", "init", "g", "--from", str(w / "h_data/data"), "--out",
                      str(t / "g.toml"), "--force", "--grade-positive", "3", "--no-input"],
        [("g.toml", "file")], "g.toml"),
    "suite first-stage": (
        lambda w, t: ["suite", "first-stage", "--spec", str(w / "h_spec/g.toml"), "--out",
                      str(t / "o")], [("o/first_stage", "folder"), ("o/pools.parquet", "file")],
        "o/pools.parquet"),
    "text repair": (
        lambda w, t: ["text", "repair", "--input", str(w / "h_tsv/in.tsv"), "--output",
                      str(t / "out.tsv"), "--force"], [("out.tsv", "file")], "out.tsv"),
    "release render-md": (
        lambda w, t: ["release", "render-md", "--histories", str(w / "h_hist/histories"),
                      "--out", str(t / "RELEASES.md")], [("RELEASES.md", "file")],
        "RELEASES.md"),
    "agree --pictures": (
        lambda w, t: ["agree", "--qrels", str(w / "h_qrels/qrels.txt"), "--labels",
                      f"b={w / 'h_labels/labels.txt'}", str(w / "h_run/run.txt"), "--draws",
                      "20", "--pictures", str(t / "pics")], [("pics", "folder")],
        "pics/ceilings.png"),
}


@pytest.mark.parametrize("name", sorted(LINKED))
def test_a_link_at_a_written_path_is_replaced_never_written_through(ws, judged, server,
                                                                    tmp_path, name):
    argv, links, written = LINKED[name]
    if name == "card render (in place)":
        shutil.copytree(ws / "h_release/release", tmp_path / "release")
        shutil.rmtree(tmp_path / "release/provenance/pictures", ignore_errors=True)
        (tmp_path / "release/README.md").unlink(missing_ok=True)
    outside = _outside(tmp_path)
    if name == "judge run":   # a store judged before, its files moved outside, linked back
        shutil.copytree(judged, tmp_path / "s")
        for rel in ("windows.jsonl", "runs.jsonl"):
            shutil.move(tmp_path / "s" / rel, outside / rel)
    for rel, kind in links:
        target = {"folder": "folder", "file": "file.txt"}.get(kind, kind)
        _plant(tmp_path / rel, outside / target)
    before = _tree(outside)
    extra = ["--endpoint", server.url] if name == "judge run" else []
    assert main(["-q", *argv(ws, tmp_path), *extra]) == 0
    assert _tree(outside) == before
    for rel, _ in links:
        assert not (tmp_path / rel).is_symlink(), rel
    assert (tmp_path / written).exists() and not (tmp_path / written).is_symlink()


def test_atomic_writes_replace_a_link(tmp_path):
    """The atomic writers themselves: a file, a folder and a parquet table written where a
    link is replace the link; a file written in place (a store's) gets the link's bytes."""
    import pyarrow as pa

    from rcp_data.core.io import atomic_dir, atomic_write_text
    from rcp_data.core.outputs import own_file, own_path
    from rcp_data.model.tables import write_parquet

    outside = _outside(tmp_path)
    before = _tree(outside)
    for rel, target in (("a.txt", "file.txt"), ("b.parquet", "file.txt"), ("dir", "folder"),
                        ("own.txt", "file.txt"), ("deep/x", "folder")):
        _plant(tmp_path / "w" / rel, outside / target)
    atomic_write_text(tmp_path / "w/a.txt", "mine")
    write_parquet(pa.table({"x": [1]}), tmp_path / "w/b.parquet")
    with atomic_dir(tmp_path / "w/dir") as tmp:
        (tmp / "mine.txt").write_text("mine")
    own_file(tmp_path / "w/own.txt")
    with open(tmp_path / "w/own.txt", "a") as f:
        f.write(" and more")
    atomic_write_text(own_path(tmp_path / "w", "deep/x/y.txt"), "mine")
    assert _tree(outside) == before
    assert (tmp_path / "w/own.txt").read_text() == "not rcp-data's either and more"
    assert sorted(p.name for p in (tmp_path / "w/dir").iterdir()) == ["mine.txt"]
    assert not any(p.is_symlink() for p in (tmp_path / "w").rglob("*"))
