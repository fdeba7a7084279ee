"""The card and the task file rendered again equal the files byte for byte: one byte changed, a
blank line appended or the final newline changed fails, though the text with whitespace stripped
is the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.demo_fixture import copy_demo

from rcp_data.checks.regenerated import check_regenerated
from rcp_data.core.specs import load_spec
from rcp_data.documents.card import release_history, replay_results, write_release_files
from rcp_data.model.layout import CARD_FILE, TASK_FILE
from rcp_data.model.release import open_release


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, demo_data):
    root = copy_demo(demo_data, tmp_path_factory.mktemp("regen") / "release")
    spec = load_spec("demo")
    write_release_files(root, spec=spec)
    return root, spec, release_history(root, spec), replay_results(root, spec)


def _checks(rendered) -> dict:
    root, spec, history, results = rendered
    return {c.name: c for c in check_regenerated(open_release(root, suite=spec), history,
                                                   results=results)}


def test_the_rendered_files_pass(rendered):
    root = rendered[0]
    checks = _checks(rendered)
    for name, rel in (("card-regenerated", CARD_FILE), ("task-file-regenerated", TASK_FILE)):
        assert checks[name].ok
        assert checks[name].found == f"{(root / rel).stat().st_size:,} bytes equal"


@pytest.mark.parametrize("rel", [CARD_FILE, TASK_FILE])
def test_a_byte_a_blank_line_or_the_final_newline_fails(rendered, rel):
    path: Path = rendered[0] / rel
    data = path.read_bytes()
    text = data.decode("utf-8")
    name = "card-regenerated" if rel == CARD_FILE else "task-file-regenerated"
    middle = len(text) // 2
    flipped = text[:middle] + ("x" if text[middle] != "x" else "y") + text[middle + 1:]
    try:
        for label, new in (("one byte", flipped), ("blank line", text + "\n"),
                           ("no final newline", text[:-1]), ("crlf", text[:-1] + "\r\n")):
            path.write_bytes(new.encode("utf-8"))
            check = _checks(rendered)[name]
            assert not check.ok and check.details, label
            assert check.found.startswith(f"{len(new.encode('utf-8')):,} bytes"), label
            if label != "one byte":  # a comparison with whitespace stripped would pass
                assert new.strip() == text.strip()
    finally:
        path.write_bytes(data)
    assert _checks(rendered)[name].ok
