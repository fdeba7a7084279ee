"""The content manifest: written by every writer of a release, proven by verify (local folders).

The Hub-side tampers are in ``test_verify_tamper.py``; here the manifest's own rules, its
writers (build, recalibration) and the pre-publish verification of a release folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.demo_fixture import copy_demo

from rcp_data.checks.regenerated import line_differences
from rcp_data.checks.verify import verify
from rcp_data.core.errors import InputError, RefusedError
from rcp_data.core.files import HashingStopped, hash_files, sha256_file
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec
from rcp_data.model.layout import BUILD_MANIFEST, CARD_FILE, RELEASES_JSON, TASK_FILE
from rcp_data.model.manifest import content_digest, recorded_content, release_content
from rcp_data.release.prepare import prepare_release
from rcp_data.release.recalibrate import recalibrate_release

REPO = "rcp-test/content"


def _manifest(root: Path) -> dict:
    return json.loads((root / BUILD_MANIFEST).read_text(encoding="utf-8"))


@pytest.fixture
def release(demo_data, tmp_path) -> Path:
    root = copy_demo(demo_data, tmp_path / "release")
    prepare_release(root, load_spec("demo"), REPO, date="2026-11-29")
    return root


def test_the_build_lists_every_file_but_the_regenerated_ones(demo_data):
    root = demo_data / "release"
    manifest = _manifest(root)
    files = {f["path"]: f for f in manifest["files"]}
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert set(files) == on_disk - {BUILD_MANIFEST, CARD_FILE, TASK_FILE, RELEASES_JSON}
    for path, entry in files.items():
        data = (root / path).read_bytes()
        assert entry == {"path": path, "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()}
    lines = "".join(f"{f['sha256']} {f['size']} {f['path']}\n"
                    for f in sorted(manifest["files"], key=lambda f: f["path"]))
    assert manifest["files_digest"] == hashlib.sha256(lines.encode()).hexdigest()


def test_a_recalibration_records_its_new_files(release, tmp_path):
    spec = load_spec("demo")
    params = ItemParams.read(release / "provenance/item_params.synth.json")
    refit = ItemParams(gamma=tuple(g * 1.1 for g in params.gamma), beta=params.beta)
    v2 = tmp_path / "v2"
    recalibrate_release(release, v2, spec, refit, previous_revision="a" * 40,
                        date="2026-11-30")
    before = {f["path"]: f["sha256"] for f in _manifest(release)["files"]}
    after = {f["path"]: f["sha256"] for f in _manifest(v2)["files"]}
    assert set(before) == set(after)
    changed = sorted(p for p in after if before[p] != after[p]
                     and not p.startswith(("provenance/diagnostics.json", "provenance/pictures/")))
    # the Diagnostics of the new labels are written anew
    assert "provenance/diagnostics.json" in after
    assert before["provenance/diagnostics.json"] != after["provenance/diagnostics.json"]
    # new gains: the qrels and the gains tables derived from them
    assert changed == ["alpha/gains.parquet", "alpha/qrels.parquet", "beta/gains.parquet",
                       "beta/qrels.parquet", "provenance/item_params.synth.json"]
    assert after == {e.path: e.sha256 for e in release_content(v2)}
    report = verify(path=v2)
    assert report.check("content-hashes").ok and report.check("card-regenerated").ok


def test_recorded_content_refuses_a_malformed_list():
    entry = {"path": "a/queries.parquet", "size": 3, "sha256": "0" * 64}
    digest = "0" * 64
    assert recorded_content({}) is None
    for files, message in (
            ([{**entry, "sha256": "xyz"}], "bad sha256"),
            ([{**entry, "size": -1}], "bad size"),
            ([{**entry, "path": "../x"}], "bad path"),
            ([entry, entry], "listed twice"),
            ([{**entry, "path": CARD_FILE}], "may not be listed")):
        with pytest.raises(InputError, match=message):
            recorded_content({"files": files, "files_digest": digest})
    with pytest.raises(InputError, match="files_digest"):
        recorded_content({"files": [entry]})


def test_a_file_changed_after_the_build_fails_and_publish_refuses_it(release, local_hub):
    from rcp_data.core.hub_client import HubClient
    from rcp_data.release.publish import publish

    path = release / "beta/queries.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path)            # one query dropped after the build
    report = verify(path=release)
    assert report.exit_code == 1
    hashes = report.check("content-hashes")
    assert hashes.details == [
        f"beta/queries.parquet: sha256 {sha256_file(path)[:12]}… ({path.stat().st_size:,} "
        f"bytes), the manifest records "
        f"{next(f for f in _manifest(release)['files'] if f['path'] == 'beta/queries.parquet')['sha256'][:12]}… "
        f"({next(f for f in _manifest(release)['files'] if f['path'] == 'beta/queries.parquet')['size']:,} bytes)"]
    assert not report.check("ids-unique").ok        # top_ranked still names the query
    with pytest.raises(RefusedError, match="content-hashes"):
        publish(release, "rcp-test/content-refused", client=HubClient(local_hub.url),
                create_repo=True)


def test_an_extra_or_missing_local_file_is_named(release):
    (release / "loader.py").write_text("print('hi')\n", encoding="utf-8")
    (release / "alpha/excluded.parquet").unlink()
    report = verify(path=release)
    assert report.check("content-files").details == [
        "loader.py: in the revision, not in the manifest",
        "alpha/excluded.parquet: in the manifest, not in the revision"]


def test_a_digest_that_is_not_the_lists_fails(release):
    manifest = _manifest(release)
    manifest["files_digest"] = content_digest([])
    (release / BUILD_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    check = verify(path=release).check("content-manifest")
    assert not check.ok and check.expected == f"files_digest {content_digest([])}"


def test_a_build_manifest_without_a_list_fails_and_none_at_all_is_absent(release, tmp_path):
    manifest = _manifest(release)
    del manifest["files"], manifest["files_digest"]
    (release / BUILD_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    check = verify(path=release).check("content-manifest")
    assert not check.ok and check.found == "no 'files' list"
    (release / BUILD_MANIFEST).unlink()
    # a release carrying releases.json is one this project built: its manifest is required,
    # and its card and task file are still rendered again and compared
    report = verify(path=release)
    missing = report.check("content-manifest")
    assert not missing.ok and missing.found.startswith("missing")
    assert report.check("card-regenerated").status != "skipped"
    (release / RELEASES_JSON).unlink()
    report = verify(path=release)
    assert report.check("content-manifest").status == "absent"
    assert report.check("card-regenerated").status == "skipped"


def test_line_differences_name_the_lines():
    expected = "a\nb\nc\n"
    assert line_differences(expected, "a\nB\nc\n") == [
        "line 2, column 1: the template renders 'b', the file has 'B'"]
    assert line_differences(expected, "a\nb\nc\nx = 1\n") == [
        "line 4: not produced by the template: 'x = 1'"]
    assert line_differences(expected, "a\nc\n") == [
        "after line 1: the template renders 'b', missing here"]
    assert line_differences(expected, "a\r\nb\r\nc\r\n") == [
        "the lines are equal but the bytes differ (line endings or final newline)"]


def test_sources_unreadable_are_skipped_with_the_reason(release, monkeypatch):
    import rcp_data.sources.registry as registry

    def unreadable(spec, options=None):
        raise InputError("no ir_datasets cache here", path="/nowhere")

    monkeypatch.setattr(registry, "read_suite", unreadable)
    report = verify(path=release, sources=True)
    check = report.check("sources")
    assert check.status == "skipped" and "no ir_datasets cache here" in check.found
    assert report.ok


def test_sources_of_an_untouched_release_agree(release):
    report = verify(path=release, sources=True)
    assert report.ok, report.text()
    assert [report.check(n).found for n in ("sources-queries", "sources-qrels",
                                            "sources-excluded")] == \
        ["2 subsets, 0 differences"] * 3
    assert report.check("sources-corpus").found == "484 documents, 0 problems"


def test_the_demo_release_refits_and_a_release_without_answers_reports_it_absent(release):
    """The demo ships its Stage A answers: the refit reproduces theta_bt and theta; without the
    tournament and theta_bt tables the refit is reported absent, not passed in silence."""
    report = verify(path=release)
    assert report.ok, report.text()
    assert report.check("refit-theta-bt").status == "ok"
    assert report.check("refit-thetas").status == "ok"
    for table in ("judge_tournament", "judge_bt"):
        shutil.rmtree(release / "provenance" / table)
    check = verify(path=release).check("refit")
    assert check is not None and check.status == "absent"


def test_a_copy_keeps_its_hashes(release, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(release, copy)
    assert verify(path=copy).ok


def _malformed(path: Path) -> list[tuple[str, bytes]]:
    """Ways to break one file: (what, bytes)."""
    import io

    import pyarrow as pa

    if path.suffix == ".parquet":
        table = pq.read_table(path)
        out = []
        for what, broken in (("no rows", table.slice(0, 0)),
                             ("its first column dropped", table.drop_columns(
                                 [table.column_names[0]])),
                             ("its first column as int", table.set_column(
                                 0, pa.field(table.column_names[0], pa.int64()),
                                 pa.array(range(table.num_rows), pa.int64())))):
            buf = io.BytesIO()
            pq.write_table(broken, buf)
            out.append((what, buf.getvalue()))
        return [*out, ("zero bytes", b""), ("not parquet", b"PAR1 garbage")]
    if path.suffix == ".json":
        return [("not JSON", b"{not json"), ("a JSON list", b"[]"), ("latin-1", b"\xe9")]
    return [("latin-1", path.read_bytes() + b"\n\xe9\xff\n"), ("empty", b"")]


def test_every_malformed_file_is_a_failed_check_naming_it(release, tmp_path):
    """Item 6: each file of the release broken in several ways, one at a time: verify
    returns (never raises), exits 1, and a failed check names the file."""
    paths = sorted(p.relative_to(release).as_posix() for p in release.rglob("*")
                   if p.is_file())
    tried = 0
    for rel in paths:
        for what, data in _malformed(release / rel):
            root = tmp_path / f"case{tried}"
            shutil.copytree(release, root)
            (root / rel).write_bytes(data)
            report = verify(path=root)
            tried += 1
            assert report.exit_code == 1, (rel, what)
            named = [c for c in report.failed if rel in c.where or rel in c.found
                     or any(rel in d for d in c.details)]
            assert named, (rel, what, report.text())
            shutil.rmtree(root)
    assert tried > 4 * len(paths)        # every file, several ways each


def test_a_fabricated_qrels_row_is_named_against_the_upstream(release):
    import pyarrow as pa

    path = release / "beta/qrels.parquet"
    table = pq.read_table(path)
    pool = pq.read_table(release / "provenance/pool/beta.parquet")
    q = table.column("query-id")[0].as_py()
    pooled = set(pool.filter(pa.compute.equal(pool["query-id"], q))["corpus-id"].to_pylist())
    known = set(table.filter(pa.compute.equal(table["query-id"], q))["corpus-id"].to_pylist())
    corpus = pq.read_table(release / "beta/corpus.parquet", columns=["id"])["id"].to_pylist()
    doc = next(d for d in corpus if d not in pooled and d not in known)
    row = pa.table({"query-id": [q], "corpus-id": [doc], "score": [0], "gain": [0.0],
                    "theta": pa.array([None], pa.float64())}, schema=table.schema)
    pq.write_table(pa.concat_tables([table, row]), path)
    report = verify(path=release, sources=True)
    assert report.check("sources-qrels").details == [
        f"subset beta: query {q}, document {doc}: a qrels row neither upstream nor in the pool"]
    assert not report.check("content-hashes").ok


def test_a_card_rendered_by_another_version_says_so(release):
    manifest = _manifest(release)
    manifest["tools"]["rcp-data"] = "0.0.1"
    (release / BUILD_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    card = (release / CARD_FILE).read_text(encoding="utf-8")
    (release / CARD_FILE).write_text(card.replace("SYNTHETIC", "Synthetic", 1), encoding="utf-8")
    from rcp_data import __version__

    details = verify(path=release).check("card-regenerated").details
    assert details[-1] == (f"the build recorded rcp-data 0.0.1, this is {__version__}: a "
                           "template changed since renders other bytes (regenerate the card)")
    assert details[0].startswith("line ") and "Synthetic" in details[0]


def test_hash_files_equal_hashlib_and_stop_when_told(tmp_path):
    """Each entry is the file's size and sha256 as hashlib computes them; a set ``stop`` starts
    no file (the publisher's background hashing after its release check failed)."""
    import threading

    # random bytes, sizes around the 4 MiB piece, a large file before smaller ones: a piece
    # left over from another file (the buffer is reused) would change a hash
    for i, size in enumerate(((9 << 20) + 3, 1, 4 << 20, (4 << 20) + 1, 0, 65_537, 3 << 20)):
        (tmp_path / f"f{i}.bin").write_bytes(os.urandom(size))
    paths = sorted(p.name for p in tmp_path.iterdir())
    got = hash_files(tmp_path, paths)
    assert list(got) == paths
    for rel, e in got.items():
        data = (tmp_path / rel).read_bytes()
        assert (e.path, e.size, e.sha256) == (rel, len(data), hashlib.sha256(data).hexdigest())
    stop = threading.Event()
    stop.set()
    with pytest.raises(HashingStopped):
        hash_files(tmp_path, paths, stop=stop)
