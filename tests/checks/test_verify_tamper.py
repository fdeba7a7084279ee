"""One-change tampers, one commit each on the local Hub: ``verify`` fails and names the change.

The SYNTHETIC demo is published as release 1 and release 2 (with ``--record-to``) and its card
regenerated (a third commit writing in the shas). Every tamper is ONE commit on a branch of its
own on top of that head, made with the real ``huggingface_hub`` client. The tampers are written
generically: the files come from the release's own content list (build manifest) and its card's
configs, the edits from the column types, so they hold for any suite's release.

A tamper is fetched as verify fetches it and taken through the stage it must trip (and the
stages that stage needs: :class:`support.stages.Staged`), not through a whole verification; the
untampered revisions, ``--quick``, the anchors and a few failures are verified end to end.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import yaml
from huggingface_hub import HfApi
from support.demo_fixture import copy_demo, refit_release_2
from support.stages import Staged
from support.tamper import (
    edit_json,
    edit_one_cell,
    other_bytes_served,
    parquet_bytes,
    read_table_bytes,
    tamper_commit,
)

from rcp_data.checks.reports import NOT_ANCHORED
from rcp_data.checks.verify import fetch, verify
from rcp_data.checks.verify_stages import Options
from rcp_data.core.errors import NotFoundError
from rcp_data.core.files import hash_files, release_paths
from rcp_data.core.hub_client import HubClient
from rcp_data.core.specs import load_spec
from rcp_data.model.card_format import card_configs, config_data_files
from rcp_data.model.history import read_history
from rcp_data.model.layout import BUILD_MANIFEST, CARD_FILE, RELEASES_JSON, TASK_FILE
from rcp_data.model.manifest import record_content, release_digest
from rcp_data.release.prepare import prepare_release
from rcp_data.release.publish import publish
from rcp_data.release.regenerate import regenerate

REPO_TYPE = "dataset"
# what a changed data file must fail: its bytes, the data since the release, the later commits
DATA_CHECKS = {"content-hashes", "data-since-release", "later-commits"}


@pytest.fixture(scope="module")
def hub(local_hub, tmp_path_factory, demo_data) -> dict:
    base = tmp_path_factory.mktemp("tamper")
    repo = f"rcp-test/tamper-{uuid.uuid4().hex[:8]}"
    client = HubClient(local_hub.url, token=local_hub.token, cache_dir=base / "cache")
    records = base / "records"
    spec = load_spec("demo")
    v1, v2 = copy_demo(demo_data, base / "v1"), base / "v2"
    prepare_release(v1, spec, repo, date="2026-11-29")
    r1 = publish(v1, repo, client=client, create_repo=True, record_to=records)
    refit_release_2(v1, v2, spec, r1.commit)  # the same answers re-read and refitted
    r2 = publish(v2, repo, client=client, record_to=records)
    head = regenerate(repo, "main", client=client).commit
    assert head is not None
    files = json.loads((v2 / BUILD_MANIFEST).read_text(encoding="utf-8"))["files"]
    return {"repo": repo, "client": client, "api": HfApi(endpoint=local_hub.url),
            "records": records, "tag1": r1.tag, "sha1": r1.commit, "tag2": r2.tag,
            "sha2": r2.commit, "head": head, "files": [f["path"] for f in files],
            "work": base, "hub_root": local_hub.root, "digest1": r1.digest,
            "digest2": r2.digest, "v2": v2}


def _read(p: dict, path: str, revision: str | None = None) -> bytes:
    return p["client"].download_file(p["repo"], path, revision or p["head"]).read_bytes()


def _tamper(p: dict, name: str, add: dict[str, bytes] | None = None,
            delete: tuple[str, ...] = ()) -> str:
    """ONE commit on a new branch on top of the head, adding/replacing and deleting files."""
    return tamper_commit(p["api"], p["repo"], p["head"], name, add, delete)


def _verify(p: dict, revision: str, **kwargs):
    return verify(repo=p["repo"], revision=revision, client=p["client"],
                  histories=p["records"], **kwargs)


def _staged(p: dict, revision: str, histories: Path | None = None) -> Staged:
    """``revision`` fetched as verify fetches it, its stages run as a test asks for them."""
    return Staged.of(p["client"], p["repo"], revision, histories=histories or p["records"])


def _data_checks(p: dict, revision: str) -> Staged:
    """The stages a changed data file must trip: its bytes (manifest) and the data since the
    release and the later commits (history)."""
    staged = _staged(p, revision)
    staged.content  # noqa: B018
    staged.history  # noqa: B018
    return staged


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _front_and_body(text: str) -> tuple[str, str]:
    _, front, body = text.split("---", 2)
    return front, body


# -- the untampered release ----------------------------------------------------------------------
PINNED = ("content-manifest", "content-files", "content-hashes", "release-commit",
          "release-tag", "data-since-release", "later-commits", "older-releases",
          "history-entries", "record")


def test_untampered_tags_shas_and_head_verify(hub):
    """End to end by tag and at the head (each anchored by the record's digest and commit);
    by sha and branch name (the same commits, so the same files: only the pin, the content
    list and the history can differ) through the stages that read the revision's name."""
    reports = {}
    for rev, number, digest in ((hub["tag1"], 1, hub["digest1"]),
                                (hub["tag2"], 2, hub["digest2"]),
                                (hub["head"], 2, hub["digest2"])):
        report = reports[rev] = _verify(hub, rev)
        assert report.exit_code == 0, report.text()
        assert report.release == number
        by = {c.name: c for c in report.checks}
        for name in (*PINNED, "card-regenerated", "task-file-regenerated", "judge-verdicts",
                     "judge-counts", "ids-unique"):
            assert by[name].status == "ok", (rev, name, by[name])
        assert by["content-hashes"].found.startswith(f"0 differ; {len(hub['files'])} hashed")
        assert by["record"].found == "2 recorded shas, 0 disagree"
        assert report.digest == digest and report.anchor.endswith("'s digest and commit"), \
            report.anchor
        assert f"  digest   {digest}" in report.text() and "VERIFIED" in report.text()
    # the head (a card regeneration) holds release 2 with its own commit's card, so the digest
    # is of release 2 as its commit holds it
    assert hub["sha2"] in reports[hub["head"]].digest_of
    for rev, number in ((hub["sha1"], 1), (hub["sha2"], 2), ("main", 2)):
        staged = _data_checks(hub, rev)
        assert staged.pinned.release.release == number and not staged.failed, staged.failed
        for name in PINNED:
            assert staged.check(name).status == "ok", (rev, name, staged.check(name))
        assert staged.check("content-hashes").found.startswith(
            f"0 differ; {len(hub['files'])} hashed")
        assert staged.check("record").found == "2 recorded shas, 0 disagree"
    later = reports[hub["head"]].check("later-commits")
    assert later.found == "1 later commits, 0 change other files"


# -- every file of the content list, generically ---------------------------------------------
def test_every_listed_file_changed_in_one_cell_is_named(hub):
    assert len(hub["files"]) >= 17           # 2 subsets x 4-5 tables, 4 provenance x 2, params
    for path in hub["files"]:
        data = _read(hub, path)
        if path.endswith(".parquet"):
            changed, where = edit_one_cell(read_table_bytes(data))
            new = parquet_bytes(changed)
        elif path.endswith(".png"):  # a Diagnostics picture: one byte of its pixel data
            middle = len(data) // 2
            new, where = data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1:], "a byte"
        else:
            new, where = edit_json(data), "a key added"
        sha = _tamper(hub, Path(path).stem, {path: new})
        staged = _data_checks(hub, sha)
        assert staged.naming(path) >= DATA_CHECKS, (path, where, staged.failed)


def test_every_config_table_of_the_card_is_in_the_content_list(hub):
    """The tampers above cover every table the card's configs declare (subset tables and
    provenance tables alike)."""
    card = _read(hub, CARD_FILE).decode("utf-8")
    declared = {path for cfg in card_configs(card) for _, path in config_data_files(cfg)}
    kinds = {Path(p).stem if not p.startswith("provenance/") else p.split("/")[1]
             for p in declared}
    assert {"queries", "qrels", "top_ranked", "excluded", "pool", "first_stage", "runs",
            "judge_criteria"} <= kinds
    assert declared <= set(hub["files"]) | {p for p in declared if "*" in p}


def test_the_manifest_itself_edited_is_named(hub):
    manifest = json.loads(_read(hub, BUILD_MANIFEST))
    # one listed file's recorded sha256 changed: the list no longer has its digest
    entry = manifest["files"][0]
    entry["sha256"] = ("0" if entry["sha256"][0] != "0" else "1") + entry["sha256"][1:]
    sha = _tamper(hub, "manifest-sha", {BUILD_MANIFEST: (json.dumps(manifest, indent=2)
                                                         + "\n").encode()})
    staged = _data_checks(hub, sha)
    failed = {c.name: c for c in staged.failed}
    assert {"content-manifest", "content-hashes", "data-since-release"} <= set(failed)
    assert "the list was edited" in failed["content-manifest"].details[0]
    assert failed["content-hashes"].details[0].startswith(f"{entry['path']}: sha256 ")
    assert staged.naming(BUILD_MANIFEST) >= {"data-since-release", "later-commits"}
    # a recorded count changed
    manifest = json.loads(_read(hub, BUILD_MANIFEST))
    subset = next(iter(manifest["counts"]))
    manifest["counts"][subset]["verdict_rows"] += 1
    sha = _tamper(hub, "manifest-count", {BUILD_MANIFEST: (json.dumps(manifest, indent=2)
                                                           + "\n").encode()})
    staged = _staged(hub, sha)
    staged.provenance  # noqa: B018 -- the judge stage compares the counts the build recorded
    counts = staged.check("judge-counts")
    assert not counts.ok and counts.details == [
        f"subset {subset}: verdict_rows recorded {manifest['counts'][subset]['verdict_rows']}, "
        f"the data has {manifest['counts'][subset]['verdict_rows'] - 1}"]


# -- added and removed files -----------------------------------------------------------------
def test_added_file_is_named(hub):
    sha = _tamper(hub, "loader", {"loader.py": b"import os\nos.system('echo hi')\n"})
    staged = _data_checks(hub, sha)
    assert staged.check("content-files").details == [
        "loader.py: in the revision, not in the manifest"]
    assert {"content-files", "data-since-release", "later-commits"} <= staged.naming(
        "loader.py")


def test_removed_file_is_named(hub):
    victim = hub["files"][-1]
    sha = _tamper(hub, "removed", delete=(victim,))
    staged = _data_checks(hub, sha)
    assert staged.check("content-files").details == [
        f"{victim}: in the manifest, not in the revision"]
    assert {"content-files", "data-since-release", "later-commits"} <= staged.naming(victim)


# -- the card and the task file --------------------------------------------------------------
def test_card_yaml_prose_and_table_edits_are_named(hub):
    card = _read(hub, CARD_FILE).decode("utf-8")
    front, _body = _front_and_body(card)
    assert yaml.safe_load(front)["pretty_name"]
    lines = card.splitlines()

    def edited(i: int, line: str) -> str:
        return "\n".join(lines[:i] + [line] + lines[i + 1:]) + "\n"

    name_line = next(i for i, line in enumerate(lines) if line.startswith("pretty_name:"))
    prose = next(i for i, line in enumerate(lines) if i > front.count("\n") + 2 and line
                 and line[0].isalpha())
    row = next(i for i, line in enumerate(lines) if line.startswith("| ")
               and _number(line.split("|")[2]) is not None)
    cells = lines[row].split("|")
    cells[2] = f" {_number(cells[2]) + 0.5:.1f} "
    for name, text, expected in (
            ("yaml", edited(name_line, lines[name_line] + " (edited)"), "(edited)"),
            ("prose", edited(prose, lines[prose] + " Edited."), "Edited."),
            ("table", edited(row, "|".join(cells)), cells[2].strip())):
        sha = _tamper(hub, f"card-{name}", {CARD_FILE: text.encode()})
        staged = _data_checks(hub, sha)
        staged.documents  # noqa: B018 -- the card rendered again (after the replay)
        regen = staged.check("card-regenerated")
        assert not regen.ok and any(expected in d for d in regen.details), (name, regen)
        if name == "table":
            assert not staged.check("card-tables").ok
        # a card-only commit keeps the data: the content checks pass
        assert staged.check("content-hashes").ok and staged.check("later-commits").ok


def test_code_appended_to_the_task_file_is_named(hub):
    text = _read(hub, TASK_FILE).decode("utf-8")
    sha = _tamper(hub, "taskfile", {TASK_FILE: (text + "import os\nos.system('echo hi')\n")
                                    .encode()})
    staged = _staged(hub, sha)
    staged.documents  # noqa: B018
    regen = staged.check("task-file-regenerated")
    n = len(text.splitlines())
    assert not regen.ok and regen.details == [
        f"line {n + 1}: not produced by the template: 'import os'",
        f"line {n + 2}: not produced by the template: \"os.system('echo hi')\""]


# -- releases.json ---------------------------------------------------------------------------
def test_releases_json_current_and_older_entries_are_named(hub):
    history = json.loads(_read(hub, RELEASES_JSON))
    for label, index, key, value in (("current", -1, "summary", "edited summary"),
                                     ("older", 0, "date", "2020-01-01")):
        edited = json.loads(json.dumps(history))
        edited["releases"][index][key] = value
        sha = _tamper(hub, f"releases-{label}", {RELEASES_JSON: (json.dumps(edited, indent=2)
                                                                 + "\n").encode()})
        staged = _staged(hub, sha)
        staged.history  # noqa: B018
        entries = staged.check("history-entries")
        number = edited["releases"][index]["release"]
        assert not entries.ok and any(d.startswith(f"release {number} ") and key in d
                                      for d in entries.details), (label, entries)


def test_older_release_sha_zeroed_is_named(hub):
    history = json.loads(_read(hub, RELEASES_JSON))
    history["releases"][0]["revision"] = "0" * 40
    sha = _tamper(hub, "zeroed", {RELEASES_JSON: (json.dumps(history, indent=2) + "\n")
                                  .encode()})
    staged = _staged(hub, sha)
    staged.history  # noqa: B018
    older = staged.check("older-releases")
    assert not older.ok and older.details == [f"release 1 ({hub['tag1']}): {'0' * 40} is not a commit of this "
                             "revision's history"]
    record = staged.check("record")
    assert not record.ok and any("0" * 40 in d for d in record.details)


# -- tags --------------------------------------------------------------------------------------
def _query_edit(hub) -> tuple[str, bytes, str]:
    """The first listed queries table with one query's text changed, and that query's id."""
    path = next(p for p in hub["files"] if p.endswith("/queries.parquet"))
    table = read_table_bytes(_read(hub, path))
    texts = table.column("text").to_pylist()
    texts[0] += " (edited)"
    table = table.set_column(table.schema.get_field_index("text"), "text",
                             pa.array(texts, pa.string()))
    return path, parquet_bytes(table), table.column("id")[0].as_py()


def test_tag_deleted_and_recreated_on_a_later_commit_editing_a_query(hub):
    path, data, _qid = _query_edit(hub)
    sha = _tamper(hub, "tag-moved", {path: data})
    api: HfApi = hub["api"]
    api.delete_tag(hub["repo"], tag=hub["tag2"], repo_type=REPO_TYPE)
    api.create_tag(hub["repo"], tag=hub["tag2"], revision=sha, repo_type=REPO_TYPE)
    try:
        staged = _data_checks(hub, hub["tag2"])
        assert staged.fetched.pin.sha == sha
        failed = {c.name: c for c in staged.failed}
        assert {"tag", "release-tag", "record"} <= set(failed)
        assert failed["release-tag"].expected == hub["sha2"]
        assert failed["release-tag"].found == f"tag {hub['tag2']} -> {sha}"
        assert staged.naming(path) >= DATA_CHECKS
        assert any(hub["sha2"] in d for d in failed["record"].details)
    finally:
        api.delete_tag(hub["repo"], tag=hub["tag2"], repo_type=REPO_TYPE)
        api.create_tag(hub["repo"], tag=hub["tag2"], revision=hub["sha2"], repo_type=REPO_TYPE)
    assert not _data_checks(hub, hub["tag2"]).failed


# -- the original failures --------------------------------------------------------------
def test_changed_query_text_is_named_also_against_the_upstream(hub):
    path, data, qid = _query_edit(hub)
    sha = _tamper(hub, "query-text", {path: data})
    staged = _data_checks(hub, sha)
    staged.sources  # noqa: B018
    assert staged.naming(path) >= DATA_CHECKS
    subset = path.split("/")[0]
    assert staged.check("sources-queries").details == [
        f"subset {subset}: query {qid}: text differs from the upstream"]
    assert staged.check("sources-corpus").ok and staged.check("sources-qrels").ok


def test_changed_corpus_text_and_duplicate_corpus_id_are_named(hub):
    path = next(p for p in hub["files"] if p.endswith("corpus.parquet") or "/corpus-" in p)
    table = read_table_bytes(_read(hub, path))
    texts = table.column("text").to_pylist()
    texts[5] += " (edited)"
    edited = table.set_column(table.schema.get_field_index("text"), "text",
                              pa.array(texts, pa.string()))
    sha = _tamper(hub, "corpus-text", {path: parquet_bytes(edited)})
    staged = _data_checks(hub, sha)
    staged.sources  # noqa: B018
    assert staged.naming(path) >= DATA_CHECKS
    doc = table.column("id")[5].as_py()
    assert staged.check("sources-corpus").details == [
        f"document {doc}: text differs from the upstream"]
    duplicated = pa.concat_tables([table, table.slice(table.num_rows - 1)])
    sha = _tamper(hub, "corpus-dup", {path: parquet_bytes(duplicated)})
    staged = _data_checks(hub, sha)
    staged.integrity  # noqa: B018
    ids = staged.check("ids-unique")
    last = table.column("id")[table.num_rows - 1].as_py()
    assert not ids.ok and ids.details == [f"{path}: id {last!r} 2 times"]
    assert staged.naming(path) >= DATA_CHECKS


def test_removed_qrel_row_outside_the_pool_is_named(hub):
    path = next(p for p in hub["files"] if p.endswith("/qrels.parquet"))
    table = read_table_bytes(_read(hub, path))
    outside = pc.is_null(table.column("theta"))
    assert pc.any(outside).as_py(), "the demo has qrels rows outside the pool"
    row = pc.indices_nonzero(outside)[0].as_py()
    kept = pa.concat_tables([table.slice(0, row), table.slice(row + 1)])
    sha = _tamper(hub, "qrel-removed", {path: parquet_bytes(kept)})
    staged = _data_checks(hub, sha)
    staged.sources  # noqa: B018
    assert staged.naming(path) >= DATA_CHECKS
    q, d = table.column("query-id")[row].as_py(), table.column("corpus-id")[row].as_py()
    qrels = staged.check("sources-qrels")
    assert any(f"query {q}, document {d}: upstream grade" in x for x in qrels.details)


def test_run_score_moved_without_changing_a_ranking_is_named(hub):
    path = next(p for p in hub["files"] if p.startswith("provenance/runs/"))
    table = read_table_bytes(_read(hub, path))
    scores = table.column("score").to_numpy().copy()
    i = int(np.argmax(scores))                          # the top score: moving it up keeps ranks
    scores[i] = np.nextafter(scores[i], np.inf)
    moved = table.set_column(table.schema.get_field_index("score"), "score", pa.array(scores))
    sha = _tamper(hub, "run-score", {path: parquet_bytes(moved)})
    staged = _data_checks(hub, sha)
    staged.replay  # noqa: B018
    assert staged.naming(path) >= DATA_CHECKS
    assert staged.check("card-tables").ok              # the numbers alone cannot see it


def test_flipped_judge_verdict_is_named(hub):
    path = next(p for p in hub["files"] if p.startswith("provenance/judge_criteria/"))
    table = read_table_bytes(_read(hub, path))
    c1 = table.column("C1").to_pylist()
    c1[0] = 1 - c1[0]
    flipped = table.set_column(table.schema.get_field_index("C1"), table.schema.field("C1"),
                               pa.array(c1, table.schema.field("C1").type))
    sha = _tamper(hub, "verdict", {path: parquet_bytes(flipped)})
    assert _data_checks(hub, sha).naming(path) >= DATA_CHECKS


# -- malformed files: failed checks, not crashes ---------------------------------------------------
def test_emptied_qrels_and_non_utf8_card_are_failed_checks(hub):
    path = next(p for p in hub["files"] if p.endswith("/qrels.parquet"))
    table = read_table_bytes(_read(hub, path))
    for name, data, found in (("qrels-no-rows", parquet_bytes(table.slice(0, 0)),
                               "an empty table (0 rows)"),
                              ("qrels-no-bytes", b"", "not a readable parquet file")):
        sha = _tamper(hub, name, {path: data})
        staged = _staged(hub, sha)
        staged.proof  # noqa: B018
        bad = [c for c in staged.failed if c.name == "file-readable"]
        assert [c.where for c in bad] == [path] and bad[0].found.startswith(found), name
    # huggingface_hub refuses to upload a README that is not UTF-8: pushed with git instead
    from rcp_data.hub.gitstore import GitStore, Operation

    store = GitStore(hub["hub_root"])
    bare = store.repo_path("dataset", hub["repo"])
    branch = f"tamper-latin1-{uuid.uuid4().hex[:6]}"
    store.create_branch(bare, branch, hub["head"])
    card = _read(hub, CARD_FILE) + "\nCaf\xe9\n".encode("latin-1")
    sha, made = store.commit(bare, branch, [Operation("file", CARD_FILE, card)],
                             summary="SYNTHETIC tampering: a card that is not UTF-8",
                             parent_commit=hub["head"])
    assert made
    staged = _staged(hub, sha)
    staged.inputs  # noqa: B018 -- the bytes proven, then the card read for the data stages
    failed = {(c.name, c.where) for c in staged.failed}
    assert {("file-readable", CARD_FILE), ("card", CARD_FILE)} <= failed


# -- --quick ------------------------------------------------------------------------------------
def test_quick_uses_the_lfs_sha256_and_downloads_no_corpus_file(hub, tmp_path, monkeypatch):
    """The corpus files as LFS files in the Hub's listing (their real sha256), as the real Hub
    and the local Hub store parquet; the test's listing can then be made to lie about one."""
    from rcp_data.core.files import sha256_file
    from rcp_data.core.hub_client import RemoteFile

    client = HubClient(hub["client"].endpoint, token=False, cache_dir=tmp_path / "cache")
    real = HubClient.files
    corpus = [p for p in hub["files"] if "corpus" in p]
    sums = {p: sha256_file(hub["client"].download_file(hub["repo"], p, hub["sha2"]))
            for p in corpus}

    def with_lfs(self, repo, sha):
        return {p: RemoteFile(f.path, f.size, f.blob_id, sums.get(p) if sha == hub["sha2"]
                              and p in sums else f.lfs_sha256)
                for p, f in real(self, repo, sha).items()}

    monkeypatch.setattr(HubClient, "files", with_lfs)
    report = verify(repo=hub["repo"], revision=hub["tag2"], client=client, quick=True)
    assert report.ok, report.text()
    hashes = report.check("content-hashes")
    assert hashes.found.endswith(f"{len(corpus)} by the Hub's LFS sha256")
    downloaded = {p.relative_to(report.root).as_posix() for p in report.root.rglob("*")
                  if p.is_file()}
    assert not downloaded & set(corpus) and downloaded >= set(hub["files"]) - set(corpus)
    assert report.check("top-ranked-in-corpus").ok and report.check("card-regenerated").ok
    # a listed LFS sha256 that is not the manifest's proves nothing: the file is downloaded,
    # and its bytes (the manifest's) are not the oid the Hub lists
    # (the bytes' and the manifest's stages, inside the quick fetch)
    sums[corpus[0]] = "f" * 64
    with fetch(client, hub["repo"], hub["tag2"], Options(quick=True)) as (fetched, _):
        staged = Staged(fetched, options=Options(quick=True))
        staged.content  # noqa: B018
        report = staged.report()
    assert report.exit_code == 1
    (detail,) = report.check("hub-listing").details
    assert detail.startswith(f"{corpus[0]}: sha256 ") and "the Hub lists LFS oid ffffffffffff…" \
        in detail
    assert report.check("content-hashes").ok
    assert report.check("hub-listing").found.endswith(f"{len(corpus) - 1} proven by their "
                                                      "listed LFS oid, not read")


# -- the record the tags are checked against ------------------------------------------------------
def test_record_that_disagrees_with_the_hub_fails(hub, tmp_path):
    record = read_history(hub["records"] / "demo.json")
    data = record.to_dict()
    data["releases"][0]["revision"] = hub["sha2"]
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "demo.json").write_text(json.dumps(data), encoding="utf-8")
    staged = _staged(hub, hub["tag2"], histories=folder)
    staged.history  # noqa: B018
    assert not staged.check("record").ok
    assert staged.check("record").details == [
        f"{folder / 'demo.json'}: release 1 ({hub['tag1']}) recorded at {hub['sha2']}, the "
        f"Hub's tag points at {hub['sha1']}",
        f"{folder / 'demo.json'}: release 1 ({hub['tag1']}) recorded at {hub['sha2']}, this "
        f"revision's history gives {hub['sha1']}"]


def test_a_second_tag_for_a_release_is_named(hub):
    api: HfApi = hub["api"]
    extra = "v1-another-judge"
    api.create_tag(hub["repo"], tag=extra, revision=hub["sha2"], repo_type=REPO_TYPE)
    try:
        staged = _staged(hub, hub["tag2"])
        staged.history  # noqa: B018
        assert not staged.check("hub-tags").ok
        assert staged.check("hub-tags").details == [
            f"tag {extra} (-> {hub['sha2'][:12]}) names release 1, which releases.json calls "
            f"{hub['tag1']}"]
    finally:
        api.delete_tag(hub["repo"], tag=extra, repo_type=REPO_TYPE)


def test_a_record_without_the_release_is_a_diff_not_a_pass_in_silence(hub, tmp_path):
    record = read_history(hub["records"] / "demo.json").to_dict()
    record["releases"] = record["releases"][:1]
    record["releases"][0]["status"], record["releases"][0]["superseded_by"] = "current", None
    folder = tmp_path / "records"
    folder.mkdir()
    (folder / "demo.json").write_text(json.dumps(record), encoding="utf-8")
    staged = _staged(hub, hub["tag2"], histories=folder)
    staged.history  # noqa: B018
    check = staged.check("record")
    assert check.ok and check.status == "diff"
    assert check.details[0].startswith("the record has no sha for release 2")


# -- issue 28: the anchor, the Hub's own listing, failing closed ----------------------------------
def test_the_published_digest_is_the_digest_of_the_verified_bytes_and_anchors_each_revision(hub):
    # the digest publish printed is recomputed here, independently, from the local release
    v2 = hub["v2"]
    lines = [f"{e.sha256} {e.size} {e.path}\n" for e in
             sorted(hash_files(v2, release_paths(v2)).values(), key=lambda e: e.path)]
    import hashlib
    assert hub["digest2"] == hashlib.sha256(
        ("rcp-data.release-digest/1\n" + "".join(lines)).encode()).hexdigest()
    assert release_digest(hash_files(v2, release_paths(v2)).values()) == hub["digest2"]
    record = read_history(hub["records"] / "demo.json")
    assert [r.digest for r in record.releases] == [hub["digest1"], hub["digest2"]]
    # each revision anchored by the record (end to end in
    # test_untampered_tags_shas_and_head_verify) and by its digest pinned: the anchor stage
    for rev, digest in ((hub["tag1"], hub["digest1"]), (hub["tag2"], hub["digest2"]),
                        (hub["head"], hub["digest2"])):
        pinned = Staged.of(hub["client"], hub["repo"], rev, options=Options(digest=digest))
        assert pinned.anchored.digest == digest
        assert pinned.report().exit_code == 0
        assert pinned.anchored.anchor == "the pinned digest (--digest)"
    # no anchor: every check passes (the verification end to end in
    # test_a_consistent_forgery_with_the_tag_moved_exits_3_unanchored_and_1_anchored and
    # tests/checks/test_verify.py::test_cli_by_tag_json_and_exit_zero), but it is not VERIFIED,
    # and it exits 3
    bare = Staged.of(hub["client"], hub["repo"], hub["tag2"]).report()
    assert bare.ok and bare.exit_code == 3 and bare.anchor is None
    assert bare.check("anchor").status == "absent"
    assert bare.text().endswith(f"{NOT_ANCHORED} (SYNTHETIC data)")
    assert "VERIFIED" not in bare.text()
    # a pinned digest that is not the release's fails (1)
    wrong = Staged.of(hub["client"], hub["repo"], hub["tag2"],
                      options=Options(digest=hub["digest1"])).report()
    assert wrong.exit_code == 1 and not wrong.check("anchor").ok


def _forged_release_2(hub) -> str:
    """A consistent forgery of release 2: release 2's files with one query's text edited and
    the content list recorded again, as ONE commit on a branch off release 1's commit."""
    import shutil

    forged = hub["work"] / f"forged-{uuid.uuid4().hex[:6]}"
    shutil.copytree(hub["v2"], forged)
    path = next(p for p in hub["files"] if p.endswith("/queries.parquet"))
    table = read_table_bytes((forged / path).read_bytes())
    texts = table.column("text").to_pylist()
    texts[0] += " (forged)"
    table = table.set_column(table.schema.get_field_index("text"), "text",
                             pa.array(texts, pa.string()))
    (forged / path).write_bytes(parquet_bytes(table))
    record_content(forged)
    add = {p: (forged / p).read_bytes() for p in release_paths(forged)}
    at_v1 = set(hub["client"].files(hub["repo"], hub["sha1"]))
    return tamper_commit(hub["api"], hub["repo"], hub["sha1"], "forged-v2", add,
                         tuple(sorted(p for p in at_v1 - set(add) if p != ".gitattributes")))


def test_a_consistent_forgery_with_the_tag_moved_exits_3_unanchored_and_1_anchored(hub):
    forged = _forged_release_2(hub)
    api: HfApi = hub["api"]
    api.delete_tag(hub["repo"], tag=hub["tag2"], repo_type=REPO_TYPE)
    api.create_tag(hub["repo"], tag=hub["tag2"], revision=forged, repo_type=REPO_TYPE)
    try:
        bare = verify(repo=hub["repo"], revision=hub["tag2"], client=hub["client"])
        assert bare.sha == forged
        assert bare.ok, bare.text()                     # consistent with itself ...
        assert bare.exit_code == 3 and NOT_ANCHORED in bare.text()   # ... but never 0
        assert bare.digest != hub["digest2"]
        recorded = _staged(hub, hub["tag2"])            # the record names release 2's sha
        recorded.history  # noqa: B018 -- the history stage checks the tags against the record
        assert not recorded.check("record").ok
        assert recorded.report().exit_code == 1
        pinned = Staged.of(hub["client"], hub["repo"], hub["tag2"],
                           options=Options(digest=hub["digest2"])).report()
        assert pinned.exit_code == 1
        assert pinned.check("anchor").found == f"digest {bare.digest}"
    finally:
        api.delete_tag(hub["repo"], tag=hub["tag2"], repo_type=REPO_TYPE)
        api.create_tag(hub["repo"], tag=hub["tag2"], revision=hub["sha2"], repo_type=REPO_TYPE)


@pytest.mark.parametrize("path", [CARD_FILE, "provenance/releases.json", "alpha/qrels.parquet"])
def test_other_bytes_under_the_same_commit_fail_naming_the_file(hub, tmp_path, path):
    """The Hub's store rewritten in place: same commit, same listing, other bytes served (the
    bytes' stage and the anchor)."""
    client = HubClient(hub["client"].endpoint, token=False, cache_dir=tmp_path / "cache")
    with other_bytes_served(hub["hub_root"], hub["repo"], hub["sha2"], path):
        staged = Staged.of(client, hub["repo"], hub["sha2"], histories=hub["records"])
        report = staged.report()
    assert report.exit_code == 1
    listing = report.check("hub-listing")
    assert not listing.ok and len(listing.details) == 1
    assert listing.details[0].startswith(f"{path}: ")
    lfs = path.endswith(".parquet")
    assert ("the Hub lists LFS oid" if lfs else "git blob id") in listing.details[0]
    assert not report.check("anchor").ok           # the recorded digest is not these bytes


def test_quick_hashes_every_file_it_downloads(hub, tmp_path):
    """--quick leaves out only a corpus proven by its listed oid; a file it reads whose bytes
    are not that oid fails (the bytes' stage, inside the quick fetch)."""
    client = HubClient(hub["client"].endpoint, token=False, cache_dir=tmp_path / "cache")
    path = next(p for p in hub["files"] if p.endswith("/top_ranked.parquet"))
    with other_bytes_served(hub["hub_root"], hub["repo"], hub["sha2"], path), \
            fetch(client, hub["repo"], hub["sha2"], Options(quick=True)) as (fetched, _):
        report = Staged(fetched, histories=hub["records"], options=Options(quick=True)).report()
    assert report.exit_code == 1
    listing = report.check("hub-listing")
    assert [d.split(":")[0] for d in listing.details] == [path]
    assert "proven by their listed LFS oid, not read" in listing.found


def test_a_release_with_releases_json_and_no_manifest_fails(hub):
    sha = _tamper(hub, "no-manifest", delete=(BUILD_MANIFEST,))
    staged = _staged(hub, sha)
    staged.documents  # noqa: B018 -- after the manifest stage (documents needs its result)
    content = staged.check("content-manifest")
    assert not content.ok and content.found.startswith("missing")
    # the card and the task file are still rendered again and compared
    assert staged.check("card-regenerated").status != "skipped"
    text = _read(hub, TASK_FILE).decode("utf-8")
    sha = tamper_commit(hub["api"], hub["repo"], hub["head"], "no-manifest-taskfile",
                        {TASK_FILE: (text + "import os\nos.system('echo hi')\n").encode()},
                        (BUILD_MANIFEST,))
    staged = _staged(hub, sha)
    staged.documents  # noqa: B018
    regen = staged.check("task-file-regenerated")
    assert not regen.ok and any("os.system" in d for d in regen.details)


@pytest.mark.parametrize("name", [CARD_FILE, TASK_FILE])
def test_blank_lines_or_the_final_newline_changed_fail(hub, name):
    text = _read(hub, name).decode("utf-8")
    assert text.endswith("\n") and not text.endswith("\n\n")
    check = "card-regenerated" if name == CARD_FILE else "task-file-regenerated"
    for label, new in (("blank-lines", text + "\n\n"), ("no-final-newline", text[:-1]),
                       ("crlf-final", text[:-1] + "\r\n")):
        sha = _tamper(hub, f"{Path(name).stem}-{label}", {name: new.encode()})
        staged = _staged(hub, sha)
        staged.documents  # noqa: B018
        regen = staged.check(check)
        assert not regen.ok and regen.details, (name, label)
        # the comparison a stripped-whitespace check makes would pass: it is byte for byte
        assert new.strip() == text.strip()


def test_a_gitattributes_that_changes_checkout_bytes_fails(hub):
    for label, line in (("eol", "*.md eol=crlf"),
                        ("encoding", "*.py working-tree-encoding=UTF-16"),
                        ("filter", "*.parquet filter=rot13")):
        sha = _tamper(hub, f"gitattributes-{label}",
                      {".gitattributes": (f"{line}\n").encode()})
        staged = _staged(hub, sha)
        staged.proof  # noqa: B018
        checkout = staged.check("checkout")
        assert not checkout.ok, label
        assert checkout.details == [f".gitattributes, line 1: {line.split()[1]} changes the "
                                    f"bytes a checkout yields ({line!r})"], label
    # the Hub's own LFS routing is fine
    sha = _tamper(hub, "gitattributes-lfs",
                  {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"})
    staged = _staged(hub, sha)
    staged.proof  # noqa: B018
    assert staged.check("checkout").ok


def test_histories_naming_a_missing_folder_exits_2(hub, tmp_path, capsys):
    from rcp_data.cli import main

    with pytest.raises(NotFoundError, match="--histories folder not found"):
        verify(repo=hub["repo"], revision=hub["tag2"], client=hub["client"],
               histories=tmp_path / "nowhere")
    assert main(["verify", "--repo", hub["repo"], "--revision", hub["tag2"], "--histories",
                 str(tmp_path / "nowhere")]) == 2
    assert "--histories folder not found" in capsys.readouterr().err
