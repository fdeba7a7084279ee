"""The stages of verify, each run alone on a local release directory (the SYNTHETIC demo).

Together, in order, they are exactly what ``verify`` reports; each stage's checks are its own
(a tampered file trips the stage that reads it, and the stages that run before it pass).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.demo_fixture import copy_demo
from support.stages import Staged

from rcp_data.checks import verify_stages as stages
from rcp_data.checks.reports import Check
from rcp_data.checks.verify import verify_fetched
from rcp_data.checks.verify_stages import Fetched, Options
from rcp_data.core.specs import load_spec
from rcp_data.model.layout import BUILD_MANIFEST, CARD_FILE, TASK_FILE
from rcp_data.model.release import Release
from rcp_data.release.prepare import prepare_release

REPO = "rcp-test/stages"


@pytest.fixture(scope="module")
def prepared(demo_data, tmp_path_factory) -> Path:
    """The demo release with its release history (a release this project built)."""
    root = copy_demo(demo_data, tmp_path_factory.mktemp("stages") / "release")
    prepare_release(root, load_spec("demo"), REPO, date="2026-11-29")
    return root


@pytest.fixture
def release(prepared, tmp_path) -> Path:
    return Path(shutil.copytree(prepared, tmp_path / "release"))


def _names(checks: list[Check]) -> list[str]:
    return [c.name for c in checks]


def test_the_stages_in_order_are_the_verification(prepared):
    staged = Staged(Fetched(prepared))
    staged.pinned, staged.content, staged.history, staged.inputs  # noqa: B018 -- in order
    staged.integrity, staged.provenance  # noqa: B018
    counts = stages.check_counts_stated(staged.rel, staged.inputs, staged.integrity)
    staged.ran += counts
    staged.replay  # noqa: B018
    staged.ran += stages.check_diagnostics_of(staged.rel)
    staged.documents, staged.anchored  # noqa: B018
    report = verify_fetched(Fetched(prepared))
    assert report.ok and not staged.failed, report.text()
    assert [c.to_dict() for c in staged.ran] == [c.to_dict() for c in report.checks]
    assert report.digest == staged.anchored.digest
    assert _names(counts) == ["card-counts"] and counts[0].ok


def test_each_stage_makes_its_own_checks(prepared):
    fetched = Fetched(prepared)
    proof = stages.prove_bytes(fetched)
    assert _names(proof.checks) == ["checkout", "files-readable"]
    assert all(c.ok for c in proof.checks)
    assert proof.paths and proof.hashed is None        # a local directory: nothing hashed yet
    rel = stages.open_verified(fetched)
    assert isinstance(rel, Release) and rel.spec.name == "demo" and rel.pin is None
    pinned = stages.pin_revision(rel, fetched)
    assert pinned.release is not None and pinned.release.release == 1 and pinned.regenerate
    content = stages.check_manifest(rel, fetched, proof)
    assert _names(content.checks) == ["content-manifest", "content-files", "content-hashes"]
    assert content.manifest is not None and all(c.ok for c in content.checks)
    (history,) = stages.check_commits(rel, fetched, pinned)
    assert history.status == "skipped" and "a local directory" in history.found
    inputs = stages.read_inputs(rel, pinned)
    assert inputs.calibration is not None and inputs.card_text and inputs.configs
    integrity = stages.check_integrity(rel, inputs)
    assert integrity.tables and {"ids-unique", "gains"} <= set(_names(integrity.checks))
    judge = stages.check_provenance(rel, inputs, integrity)
    assert {"judge-verdicts", "judge-counts"} <= set(_names(judge))
    replay = stages.replay_numbers(rel, pinned, inputs, Path("unused: a SYNTHETIC suite"))
    assert replay.replayed is not None and _names(replay.checks)[0] == "replay"
    documents = stages.check_documents(rel, pinned, replay, content)
    assert sorted(_names(documents)) == ["card-regenerated", "task-file-regenerated"]
    assert all(c.ok for c in [*integrity.checks, *judge, *replay.checks, *documents])
    diagnostics = stages.check_diagnostics_of(rel)      # the build wrote them
    assert [(c.name, c.status) for c in diagnostics] == [("diagnostics", "ok"),
                                                         ("pictures", "ok")]
    anchored = stages.anchor_release(prepared, fetched, pinned, proof, Options(), [])
    assert anchored.check.ok and not anchored.needs_anchor and len(anchored.digest) == 64


def test_a_release_naming_no_suite_is_one_failed_check(release):
    (release / BUILD_MANIFEST).unlink()
    (release / CARD_FILE).write_text("A card without front matter.\n", encoding="utf-8")
    opened = stages.open_verified(Fetched(release))
    assert isinstance(opened, Check) and opened.name == "suite" and not opened.ok
    report = verify_fetched(Fetched(release))
    assert report.checks[-1] == opened and report.suite is None and report.exit_code == 1


def test_a_changed_data_file_trips_the_manifest_stage_and_not_the_bytes(release):
    path = "alpha/queries.parquet"
    import pyarrow.parquet as pq

    table = pq.read_table(release / path)
    pq.write_table(table.slice(1), release / path)
    staged = Staged(Fetched(release))
    staged.proof  # noqa: B018
    assert not staged.failed                     # a well-formed file
    staged.content  # noqa: B018
    assert {c.name for c in staged.failed} == {"content-hashes"}
    assert staged.naming(path) == {"content-hashes"}


def test_an_unreadable_manifest_is_one_failed_check_of_its_stage(release):
    (release / BUILD_MANIFEST).write_text("{not json", encoding="utf-8")
    staged = Staged(Fetched(release))
    staged.content  # noqa: B018
    failed = [c.name for c in staged.content.checks if not c.ok]
    assert failed[0] == "build-manifest" and staged.content.manifest is None


def test_unreadable_item_parameters_leave_the_data_stages_without_checks(release):
    params = json.loads((release / BUILD_MANIFEST).read_text(encoding="utf-8"))
    item_params = params["calibration"]["item_params"]
    (release / item_params).write_text("[]", encoding="utf-8")
    staged = Staged(Fetched(release))
    inputs = staged.inputs
    assert inputs.calibration is None
    assert [c.name for c in inputs.checks if not c.ok] == ["calibration"]
    integrity = stages.check_integrity(staged.rel, inputs)
    assert integrity.checks == [] and integrity.tables is None
    assert stages.check_provenance(staged.rel, inputs, integrity) == []
    assert stages.check_counts_stated(staged.rel, inputs, integrity) == []


def test_documents_are_skipped_saying_why_for_a_release_this_project_did_not_build(release):
    (release / "provenance/releases.json").unlink()
    staged = Staged(Fetched(release))
    (documents,) = staged.documents
    assert documents.status == "skipped" and "not a release this project built" in \
        documents.found


def test_the_task_file_edited_trips_the_documents_stage(release):
    text = (release / TASK_FILE).read_text(encoding="utf-8")
    (release / TASK_FILE).write_text(text + "import os\n", encoding="utf-8")
    staged = Staged(Fetched(release))
    staged.documents  # noqa: B018
    assert [c.name for c in staged.failed] == ["task-file-regenerated"]
