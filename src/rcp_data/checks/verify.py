"""``rcp-data verify``: prove a pinned release is intact, byte for byte, and reproduces what was
published.

Steps (issues 4 and 13; docs/concepts/release-layout.md, *Releases* and *Which numbers a
revision must reproduce*):

1. **Pin.** A tag or branch is resolved to its commit sha and everything is downloaded strictly
   by that sha into the client's cache (``--cache-dir``); the requested tag must agree with
   ``provenance/releases.json`` at that revision (:mod:`rcp_data.checks.pin`).
2. **Files.** Every downloaded file is read once and must be the file the Hub lists for the
   commit (git blob id, or LFS sha256 and size; :mod:`rcp_data.checks.listing`), and no
   ``.gitattributes`` may change the bytes a checkout yields; every file reads as the layout
   says (:mod:`rcp_data.checks.readable`); the revision holds exactly the files the build
   manifest lists, with their sizes and sha256 (:mod:`rcp_data.checks.manifest`; ``quick``: a
   corpus proven by its listed LFS sha256 is not downloaded; every file that is downloaded is
   hashed). A revision carrying releases.json must carry its manifest.
3. **History.** The Hub's commits and tags behind the revision (:mod:`rcp_data.checks.history_checks`).
4. **Integrity** (:mod:`rcp_data.checks.integrity`) and **judge provenance**
   (:mod:`rcp_data.checks.judge_checks`), with the item parameters and link of the release
   the commit holds and the configs of the card's YAML.
5. **Numbers** (:mod:`rcp_data.checks.numbers`): the replay against every card table and, for the
   release the paper used, the paper.
6. **Generated files** (:mod:`rcp_data.checks.regenerated`): card and task file rendered again
   must equal the revision's, byte for byte (every revision carrying releases.json, with or
   without its manifest).
7. **Sources** (``sources``; :mod:`rcp_data.checks.sources_check`): queries, qrels and corpus
   against the upstream, where it is readable.
8. **Anchor** (:mod:`rcp_data.checks.anchor`): the release's content digest against a pinned
   ``--digest`` or a record (``release/<suite>.json``, ``--histories``); with ``--git``
   (:mod:`rcp_data.checks.git_objects`) the commit is fetched over git, every object id
   recomputed, and the files verified must be its tree, so a revision given as a full commit
   sha is anchored by that sha.

Every problem of a file is a failed check naming it, never a traceback. Exit codes: 0 every
check holds and something outside the repository vouches for the revision (a local directory
needs nothing), 1 a check failed, 2 the verification could not run (the Hub unreachable, the
repo or revision missing, the local path or the ``--histories`` folder missing), 3 every check
holds but nothing anchors the revision ("consistent, not anchored"). Nothing is written to the Hub, and nothing outside
the download cache (``quick`` builds its corpus stand-ins in a temporary folder it removes) but,
for a local directory that passes, the receipt of its bytes in rcp-data's own cache
(:mod:`rcp_data.checks.receipts`; ``release publish`` of the same bytes does not repeat the
checks).
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from rcp_data.checks.anchor import check_anchor, digest_of_release
from rcp_data.checks.diagnostics_check import check_diagnostics
from rcp_data.checks.git_objects import check_git_objects, fetch_revision, is_pinned_commit
from rcp_data.checks.history_checks import HubView, check_history, project_records
from rcp_data.checks.integrity import run_integrity
from rcp_data.checks.judge_checks import check_judge
from rcp_data.checks.listing import check_checkout, check_listing
from rcp_data.checks.manifest import HostedFile, check_content
from rcp_data.checks.numbers import (
    Replayed,
    check_card_counts,
    check_card_tables,
    check_paper,
    data_totals,
    default_reference,
    number_checks,
    paper_applies,
    replay_tables,
)
from rcp_data.checks.pin import (
    check_pin,
    check_pin_by_project_history,
    check_task_file,
    held_release,
    project_history_release,
    read_release_history,
)
from rcp_data.checks.readable import check_readable
from rcp_data.checks.receipts import write_receipt
from rcp_data.checks.regenerated import check_regenerated
from rcp_data.checks.release_check import check_release_dir
from rcp_data.checks.reports import VERIFY_SCHEMA, Check, VerifyReport
from rcp_data.core.background import Background
from rcp_data.core.errors import InputError, NotFoundError, RcpDataError, UsageError
from rcp_data.core.files import FileEntry, hash_files, release_paths
from rcp_data.core.gains import DEFAULT_LINK, ItemParams
from rcp_data.core.git_fetch import FetchedTree
from rcp_data.core.hub_client import (
    HubClient,
    HubUnavailable,
    PinnedRevision,
    RemoteFile,
    missing_release_dir,
    parse_hf_path,
)
from rcp_data.core.io import read_json, shared_reads
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.card_format import card_configs
from rcp_data.model.history import History, ReleaseRecord, same_commit
from rcp_data.model.layout import BUILD_MANIFEST, CARD_FILE, RELEASES_JSON, provenance_file
from rcp_data.model.manifest import is_digest, recorded_content
from rcp_data.model.release import Release, release_is_synthetic
from rcp_data.model.suite import release_spec

log = logging.getLogger(__name__)

SCHEMA = VERIFY_SCHEMA
T = TypeVar("T")
#: What a malformed file raises while a check reads it; the stage becomes a failed check.
READ_ERRORS = (RcpDataError, pa.ArrowException, OSError, UnicodeDecodeError, ValueError,
               KeyError, IndexError, TypeError)


@dataclass(frozen=True)
class Options:
    """How far a verification goes: ``quick`` (a corpus proven by its listed LFS sha256 is not
    downloaded), ``sources`` (compare with the upstream), ``source_options`` (its reader's),
    ``digest`` (the release digest pinned, as ``--digest``), ``git`` (the commit fetched over
    git's smart HTTP, every object id recomputed: :mod:`rcp_data.checks.git_objects`)."""

    quick: bool = False
    sources: bool = False
    source_options: dict | None = None
    digest: str | None = None
    git: bool = False


def _stage(checks: list[Check], name: str, what: str, fn: Callable[..., T], *args,
           **kwargs) -> T | None:
    """Run one stage; a file it cannot read becomes a failed check (None is returned). Only an
    unreachable Hub stops the verification."""
    try:
        return fn(*args, **kwargs)
    except HubUnavailable:
        raise
    except READ_ERRORS as exc:
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        checks.append(Check.failed(name, what, "readable, well-formed files",
                                   f"could not run: {message}",
                                   str(getattr(exc, "path", None) or "")))
        log.info("verify stage %s could not run: %s", name, message)
        return None


def _calibration(rel: Release, release: ReleaseRecord | None) -> tuple[ItemParams, str, str]:
    root = rel.root
    if release is not None and release.item_params:
        return ItemParams.read(root / release.item_params), release.link, release.item_params
    cal = rel.manifest.calibration if rel.manifest is not None else None
    if cal is None:
        found = sorted(root.glob("provenance/item_params.*.json"))
        if len(found) != 1:
            raise InputError("no item parameters: neither releases.json nor the build manifest "
                             f"names them, and provenance/ holds {len(found)} item_params files",
                             path=str(root / RELEASES_JSON))
        rel = found[0].relative_to(root).as_posix()
        log.warning("no record names the item parameters; using the only file, %s, with the "
                    "default link", rel)
        return ItemParams.read(found[0]), DEFAULT_LINK, rel
    return ItemParams.read(root / cal.item_params), cal.link, cal.item_params


def _card_text(root: Path, checks: list[Check]) -> str | None:
    """The card's text; a missing or non-UTF-8 card is a failed check (None)."""
    card = root / CARD_FILE
    if not card.is_file():
        checks.append(Check.failed("card", "the dataset card is present", CARD_FILE, "missing",
                                   CARD_FILE))
        return None
    try:
        return card.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        checks.append(Check.failed("card", "the dataset card is UTF-8 text", "UTF-8",
                                   f"not UTF-8 ({exc.reason} at byte {exc.start})", CARD_FILE))
        return None


def _pin_checks(root: Path, spec: SuiteSpec, pin: PinnedRevision | None, histories: Path | None,
                hub_tags: dict[str, str] | None, checks: list[Check]
                ) -> tuple[History | None, ReleaseRecord | None, bool]:
    """The pin checks; returns the history, the release the revision holds and whether the
    revision predates the release policy (no releases.json: the project's record is used)."""
    history = problems = None
    try:
        history, problems = read_release_history(root)
    except InputError as exc:
        checks.append(Check.failed("releases-json", "the release history at this revision "
                                   "reads", "valid rcp-data.releases/1", exc.message,
                                   RELEASES_JSON))
        return None, None, False
    if history is None:
        recorded, recorded_release = _stage(
            checks, "record", "the project's record of the repository reads",
            project_history_release, spec, pin, histories) or (None, None)
        if recorded is not None and pin is not None:
            where = str((Path(histories) / f"{spec.name}.json") if histories else
                        f"release/{spec.name}.json")
            checks += check_pin_by_project_history(pin, recorded, recorded_release, where)
            return recorded, recorded_release, True
    pin_checks, release = check_pin(pin, history, problems or [], hub_tags)
    checks += pin_checks
    if history is not None and pin is not None and history.repo != pin.repo:
        checks.append(Check(
            "releases-json-repo", True, "releases.json names the repository it is in",
            expected=pin.repo, found=history.repo, where=RELEASES_JSON, status="diff",
            details=[f"releases.json was written for {history.repo} (a copy or mirror?); its "
                     "shas are checked against this repository's tags"]))
    return history, release, False


def verify_release_dir(root: Path, *, pin: PinnedRevision | None = None,
                       reference: Path | None = None, target: str | None = None,
                       hub_tags: dict[str, str] | None = None,
                       histories: Path | None = None, link_checked: bool = False,
                       hosted: dict[str, HostedFile] | None = None,
                       view: HubView | None = None, options: Options | None = None,
                       report_root: Path | None = None,
                       hashed: Mapping[str, FileEntry] | None = None,
                       listing: Mapping[str, RemoteFile] | None = None,
                       not_read: frozenset[str] = frozenset(),
                       git_tree: tuple[FetchedTree, str] | None = None) -> VerifyReport:
    """Verify a release directory (a pinned snapshot when ``pin`` is given).

    ``listing``: the Hub's listing of the commit (blob ids, LFS sha256s): every downloaded file
    is read once against it (``not_read``: files proven by their listed LFS sha256, not
    downloaded); ``hosted``: the same listing as the content checks take it;
    ``view``: its commits and tags (None for a local directory: no history checks);
    ``link_checked``: every gain is already known to be the link of its theta (the
    pre-publish release check), so the integrity checks do not compute it again.
    ``hashed``: files of ``root`` the caller has just hashed, not read again for their sha256.
    ``git_tree``: the pinned commit as git fetched it, and where from (``--git``).

    The stages share their reads (:func:`rcp_data.core.io.shared_reads`): each column of a
    table is read from the file once, and every stage checks what it reads as it would alone.
    """
    root = Path(root)
    if not root.is_dir():
        raise missing_release_dir(root)
    # the largest tables, each read by one stage (the runs by the replay, the first-stage runs
    # by the fusion check), are not held
    once = {(root / provenance_file(kind, "_")).parent for kind in ("runs", "first_stage")}
    with shared_reads(exclude=lambda path: path.parent in once):
        return _verify_dir(root, pin=pin, reference=reference, target=target,
                           hub_tags=hub_tags, histories=histories, link_checked=link_checked,
                           hosted=hosted, view=view, options=options, report_root=report_root,
                           hashed=hashed, listing=listing, not_read=not_read,
                           git_tree=git_tree)


def _integrity_stage(checks: list[Check], rel: Release, root: Path,
                     calibration: tuple[ItemParams, str, str] | None, configs, card_text:
                     str | None, link_checked: bool, seconds: dict[str, float],
                     cpu: dict[str, float]) -> None:
    """The integrity, judge and card-count checks, appended to ``checks``; the stage's wall
    and CPU seconds (of the thread running it) into ``seconds`` and ``cpu``."""
    t0, c0 = time.perf_counter(), time.thread_time()
    tables: dict = {}
    if calibration is not None:
        params, link, params_path = calibration
        found = _stage(checks, "integrity", "the data tables read", run_integrity,
                       rel, params, link, configs, link_checked=link_checked)
        if found is not None:
            integrity, tables = found
            checks += [replace(c, where=f"{c.where} (item parameters {params_path}, link "
                                        f"{link})") if c.name == "gains" else c
                       for c in integrity]
            checks += _stage(checks, "judge", "the judge provenance reads", check_judge,
                             rel, params, tables) or []
    if card_text is not None and tables:
        checks += _stage(checks, "card-counts", "the counts the card states",
                         lambda: check_card_counts(card_text, data_totals(root, tables))) or []
    seconds["integrity"] = time.perf_counter() - t0
    cpu["integrity"] = time.thread_time() - c0


def _verify_dir(root: Path, *, pin: PinnedRevision | None, reference: Path | None,
                target: str | None, hub_tags: dict[str, str] | None, histories: Path | None,
                link_checked: bool, hosted: dict[str, HostedFile] | None,
                view: HubView | None, options: Options | None, report_root: Path | None,
                hashed: Mapping[str, FileEntry] | None,
                listing: Mapping[str, RemoteFile] | None,
                not_read: frozenset[str],
                git_tree: tuple[FetchedTree, str] | None) -> VerifyReport:
    options = options or Options()
    checks: list[Check] = []
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}   # the same stages' CPU seconds (this process)
    t0, c0 = time.perf_counter(), time.process_time()
    paths = sorted(hosted) if hosted is not None else release_paths(root)
    if listing is not None:
        listed = check_listing(root, listing, not_read=not_read)
        checks.append(listed.check)
        hashed = {**listed.found, **(hashed or {})}
        checks.append(check_checkout(root, sorted(listing)))
        if git_tree is not None and pin is not None:
            checks.append(check_git_objects(git_tree[0], pin.sha, listing, found=listed.found,
                                            blob_ids=listed.blob_ids, not_read=not_read,
                                            where=git_tree[1]))
        seconds["listing"] = time.perf_counter() - t0
        cpu["listing"] = time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
    else:
        checks.append(check_checkout(root, paths))
    readable, _bad = check_readable(root, paths)
    checks += readable
    try:
        spec = release_spec(root, repo=pin.repo if pin else None)
    except InputError as exc:
        checks.append(Check.failed("suite", "the release names its suite", "a build manifest "
                                   "'suite' or a suite tag in the card", exc.message, CARD_FILE))
        return _report(root, report_root, target, pin, None, None, checks, seconds)
    rel = Release(root, spec, pin=pin)   # the release, opened once for every stage below
    history, release, pre_policy = _pin_checks(root, spec, pin, histories, hub_tags, checks)
    records = _stage(checks, "record", "the project's record reads", project_records,
                     spec.name, histories) or []
    seconds["pin"] = time.perf_counter() - t0
    cpu["pin"] = time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    n_checks = len(checks)
    manifest = _stage(checks, "build-manifest", "the build manifest reads",
                      lambda: rel.manifest)
    unreadable = checks[-1].found if len(checks) > n_checks else None
    content = check_content(root, manifest, unreadable=unreadable, hosted=hosted,
                            not_read=not_read, hashed=hashed,
                            required=(root / RELEASES_JSON).exists())
    checks += content.checks
    seconds["content"] = time.perf_counter() - t0
    cpu["content"] = time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    if view is not None and history is not None and release is not None and not pre_policy:
        checks += _stage(checks, "history", "the Hub's commits and tags behind this revision",
                         check_history, view, history, release, records) or []
    else:
        why = ("a local directory has no commits or tags" if view is None else
               "a revision published before the release policy: its tag is checked against "
               "the project's record" if pre_policy else "no readable release history here")
        checks.append(Check("history", True, "the Hub's commits and tags behind this revision",
                            found=f"skipped: {why}", status="skipped"))
    seconds["history"] = time.perf_counter() - t0
    cpu["history"] = time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    calibration = _stage(checks, "calibration", "the item parameters of the release read",
                         _calibration, rel, release)
    checks += check_task_file(root, release)
    card_text = _card_text(root, checks)
    configs = _stage(checks, "configs", "the card's YAML front matter reads", card_configs,
                     card_text) if card_text is not None else None
    seconds["pin"] += time.perf_counter() - t0
    cpu["pin"] += time.process_time() - c0

    # the integrity checks and the replay read the same release and share nothing they
    # write: the integrity stage runs in a second thread meanwhile (numpy and Arrow release
    # the GIL in their kernels), its checks reported in their place before the replay's
    integrity_checks: list[Check] = []
    seconds["integrity"] = cpu["integrity"] = 0.0       # the stages' order in the report
    worker = Background(_integrity_stage, integrity_checks, rel, root, calibration, configs,
                        card_text, link_checked, seconds, cpu, name="rcp-verify-integrity")

    t0, c0 = time.perf_counter(), time.thread_time()
    replay_checks: list[Check] = []
    regenerate = history is not None and not pre_policy   # a release this project built
    try:
        numbers = _stage(replay_checks, "replay", "provenance-runs replayed", number_checks,
                         root, spec, card_text, history, release, pin.sha if pin else None,
                         reference or default_reference(), pre_policy=pre_policy,
                         for_card=regenerate)
    except HubUnavailable:
        worker.wait()
        raise
    replayed: Replayed | None = None
    if numbers is not None:
        number_list, replayed = numbers
        replay_checks += number_list
    seconds["replay"] = time.perf_counter() - t0
    cpu["replay"] = time.thread_time() - c0
    worker.result()   # re-raises what the stage raised (an unreachable Hub)
    checks += integrity_checks + replay_checks

    t0, c0 = time.perf_counter(), time.process_time()
    checks += _stage(checks, "diagnostics", "the Diagnostics recomputed", check_diagnostics,
                     root, spec) or []
    seconds["diagnostics"] = time.perf_counter() - t0
    cpu["diagnostics"] = time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    if regenerate and replayed is not None:
        checks += _stage(checks, "card-regenerated", "card and task file rendered again",
                         check_regenerated, root, spec, history,
                         results=replayed.card_results(spec),
                         built_with=manifest.tool_version if manifest else None) or []
    elif not regenerate:
        checks.append(Check("card-regenerated", True, "card and task file rendered again",
                            found="skipped: not a release this project built (no "
                                  "releases.json); the card's tables are compared cell by "
                                  "cell", where=CARD_FILE, status="skipped"))
    seconds["regenerate"] = time.perf_counter() - t0
    cpu["regenerate"] = time.process_time() - c0

    if options.sources:
        from rcp_data.checks.sources_check import check_sources

        t0, c0 = time.perf_counter(), time.process_time()
        checks += _stage(checks, "sources", "the release against its upstream", check_sources,
                         rel, options.source_options,
                         corpus=not _stand_ins(root)) or []
        seconds["sources"] = time.perf_counter() - t0
        cpu["sources"] = time.process_time() - c0
    anchored = _anchor(root, pin, view, release, pre_policy, records, hashed, hosted,
                       not_read, options, checks)
    return replace(_report(root, report_root, target, pin, spec, release, checks, seconds),
                   cpu_seconds=cpu, **anchored)


def _release_commit(pin: PinnedRevision | None, view: HubView | None,
                    release: ReleaseRecord | None, pre_policy: bool) -> str | None:
    """The commit of the release the revision holds (its own commit, or the earlier one a
    regeneration was made on), where it can be told."""
    if pin is None or release is None:
        return None
    if view is not None and not pre_policy:
        return view.introduced(release.release)
    if pre_policy:
        known = release.revision or release.data_revision
        return pin.sha if known is not None and same_commit(known, pin.sha) else None
    if release.revision is None or same_commit(release.revision, pin.sha):
        return pin.sha
    return release.revision


def _anchor(root: Path, pin: PinnedRevision | None, view: HubView | None,
            release: ReleaseRecord | None, pre_policy: bool,
            records: list[tuple[str, History]], hashed: Mapping[str, FileEntry] | None,
            hosted: Mapping[str, HostedFile] | None, not_read: frozenset[str],
            options: Options, checks: list[Check]) -> dict:
    """The release digest and the anchor check (appended); the report's anchor fields."""
    found = dict(hashed or {})
    paths = sorted(hosted) if hosted is not None else release_paths(root)
    missing = [p for p in paths if p not in found and p not in not_read
               and (root / p).is_file()]
    found.update(hash_files(root, missing))
    for p in not_read:   # proven by their listed LFS sha256, equal to the manifest's
        info = (hosted or {}).get(p)
        if info is not None and info.lfs_sha256:
            found[p] = FileEntry(p, info.size, info.lfs_sha256)
    found = {p: e for p, e in found.items() if p in set(paths)}
    commit = _release_commit(pin, view, release, pre_policy)
    read_at = view.read_file if view is not None else None
    digest, of = digest_of_release(found, sha=pin.sha if pin else None, release_commit=commit,
                                   read_at=read_at)
    git = next((c for c in checks if c.name == "git-objects"), None)
    pinned_commit = pin.sha if git is not None and git.ok and is_pinned_commit(pin) else None
    check, anchor = check_anchor(digest, pinned=options.digest, repo=pin.repo if pin else None,
                                 release=release, release_commit=commit, records=records,
                                 needed=pin is not None, pinned_commit=pinned_commit)
    checks.append(check)
    return {"digest": digest, "digest_of": of, "anchor": anchor,
            "needs_anchor": pin is not None}


def _stand_ins(root: Path) -> bool:
    return (root / STAND_IN_MARK).exists()


def _report(root: Path, report_root: Path | None, target: str | None,
            pin: PinnedRevision | None, spec: SuiteSpec | None, release: ReleaseRecord | None,
            checks: list[Check], seconds: dict[str, float]) -> VerifyReport:
    report = VerifyReport(
        target=target or str(root), root=report_root or root, repo=pin.repo if pin else None,
        requested=pin.requested if pin else None, sha=pin.sha if pin else None,
        suite=spec.name if spec else None,
        release=release.release if release is not None else None,
        tag=release.tag if release is not None else None, checks=checks, seconds=seconds,
        synthetic=release_is_synthetic(root, synthetic_suite=spec.synthetic if spec else False)
        or (release is not None and release.synthetic))
    log.info("verified %s: %d checks, %d failed", report.target, len(report.checks),
             len(report.failed))
    return report


# -- quick: corpora proven by their LFS sha256 are not downloaded ---------------------------------
STAND_IN_MARK = ".rcp-quick-stand-ins"


def _lfs_proven_corpus(client: HubClient, pin: PinnedRevision,
                       hosted: dict[str, HostedFile]) -> list[str]:
    """Corpus files stored through LFS whose listed sha256 and size are the manifest's."""
    path = client.download_file(pin.repo, BUILD_MANIFEST, pin.sha)
    try:
        recorded = recorded_content(read_json(path))
    except (InputError, AttributeError):
        return []
    if recorded is None:
        return []
    listed = {e.path: e for e in recorded[0]}
    return sorted(p for p, f in hosted.items()
                  if p.startswith("corpus/") or p.endswith("/corpus.parquet")
                  if f.lfs_sha256 and p in listed
                  and (listed[p].sha256, listed[p].size) == (f.lfs_sha256, f.size))


def _with_stand_ins(client: HubClient, pin: PinnedRevision, snapshot: Path, skipped: list[str],
                    overlay: Path) -> Path:
    """A folder holding the snapshot's files (links) and, for each skipped corpus file, a
    stand-in with its real schema, row count and ``id`` column (read remotely: the parquet
    footer and the id column only) and every other column null."""
    import os

    import pyarrow.parquet as pq
    from huggingface_hub import HfFileSystem

    for rel in release_paths(snapshot):
        target = overlay / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink((snapshot / rel).resolve(), target)
    fs = HfFileSystem(endpoint=client.url, token=client.token)
    for rel in skipped:
        with client.errors(f"{rel} of {pin.repo}@{pin.sha}"), \
                fs.open(f"datasets/{pin.repo}@{pin.sha}/{rel}", "rb") as fh:
            pf = pq.ParquetFile(fh)
            schema = pf.schema_arrow
            ids = pf.read(columns=["id"]).column("id")
        columns = [ids if f.name == "id" else pa.nulls(len(ids), f.type) for f in schema]
        target = overlay / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_arrays(columns, schema=schema), target)
    (overlay / STAND_IN_MARK).write_text("\n".join(skipped) + "\n", encoding="utf-8")
    log.info("quick: %d corpus files proven by their LFS sha256, not downloaded", len(skipped))
    return overlay


def verify(*, repo: str | None = None, revision: str | None = None, path: str | Path | None = None,
           reference: str | Path | None = None, cache_dir: str | Path | None = None,
           histories: str | Path | None = None, client: HubClient | None = None,
           quick: bool = False, sources: bool = False, source_options: dict | None = None,
           digest: str | None = None, git: bool = False) -> VerifyReport:
    """Verify ``repo`` at ``revision`` (tag, branch or sha) on the Hub, or a ``path``
    (a local release directory or ``hf://datasets/OWNER/NAME@REV``).

    ``client``: the Hub (default: built from the environment); ``cache_dir``, when given,
    replaces its download cache. ``histories``: a folder of ``<suite>.json`` records (as
    ``publish --record-to`` writes) the tags are checked against, besides the packaged ones.
    ``quick``, ``sources``, ``source_options``, ``digest``, ``git``: see :class:`Options`
    (``git`` needs a Hub revision and a Hub that serves git: else exit 2). A
    ``histories`` folder that does not exist is a :class:`NotFoundError` (exit 2): a record
    asked for is never silently left out."""
    if digest is not None and not is_digest(digest.strip().lower()):
        raise UsageError(f"--digest must be a release digest (64 hex digits), got {digest!r}")
    if histories is not None and not Path(histories).is_dir():
        raise NotFoundError(f"--histories folder not found: {histories}")
    options = Options(quick=quick, sources=sources, source_options=source_options,
                      digest=digest, git=git)
    if path is not None and (repo or revision):
        raise UsageError("give either --repo with --revision, or a PATH, not both")
    if path is not None:
        parsed = parse_hf_path(str(path))
        if parsed is None:
            if git:
                raise UsageError("--git verifies a revision on the Hub, not a local directory")
            return verify_local_dir(Path(path), reference=_path(reference), target=str(path),
                                    histories=_path(histories), options=options)
        repo, revision = parsed
    if not repo or not revision:
        raise UsageError("give --repo OWNER/NAME with --revision REV (tag or sha), or a PATH")
    client = client or HubClient.from_env()
    if cache_dir is not None:
        client = replace(client, cache_dir=Path(cache_dir))
    pin = client.resolve(repo, revision)
    log.info("%s@%s is commit %s", repo, revision, pin.sha)
    if client.offline:   # the cache holds the files; the Hub's tags, listing and history not
        log.info("offline: the files are checked; the Hub's tags, file listing and commit "
                 "history are not")
        if git:
            raise UsageError("--git needs the Hub: it fetches the commit over git "
                             "(HF_HUB_OFFLINE=1 is set)")
        tags, hosted, listing, view, skipped = None, None, None, None, []
    else:
        tags = client.tags(repo)
        listing = client.files(repo, pin.sha)
        hosted = {p: HostedFile(p, f.size, f.lfs_sha256) for p, f in listing.items()}
        view = HubView.from_client(client, repo, pin.sha, tags)
        skipped = _lfs_proven_corpus(client, pin, hosted) if quick and not sources else []
    git_tree = fetch_revision(client, pin) if git else None
    root = client.download(repo, pin.sha, ignore_patterns=skipped or None)
    kwargs = dict(pin=pin, reference=_path(reference), target=f"{repo}@{revision}",
                  hub_tags=tags, histories=_path(histories), hosted=hosted, view=view,
                  options=options, report_root=root, listing=listing,
                  not_read=frozenset(skipped), git_tree=git_tree)
    if not skipped:
        return verify_release_dir(root, **kwargs)
    with tempfile.TemporaryDirectory(prefix="rcp-verify-quick-") as tmp:
        return verify_release_dir(_with_stand_ins(client, pin, root, skipped, Path(tmp)),
                                  **kwargs)


def verify_local_dir(root: Path, *, reference: Path | None = None, histories: Path | None = None,
                     options: Options | None = None, link_checked: bool = False,
                     target: str | None = None,
                     files: Mapping[str, FileEntry] | None = None,
                     publishable: bool | None = None) -> VerifyReport:
    """Verify a local release directory; when every check passes with the default references,
    record a receipt of its files (:mod:`rcp_data.checks.receipts`) that also says whether the
    publisher's release check passes on them (``publishable``, when the caller just ran it;
    else it is run here). ``files``: every file of the directory, hashed just now by the
    caller."""
    if files is None:
        files = hash_files(root, release_paths(root))
    report = verify_release_dir(root, reference=reference, target=target or str(root),
                                histories=histories, options=options,
                                link_checked=link_checked, hashed=files)
    if report.ok and reference is None and histories is None:
        if publishable is None:
            publishable = check_release_dir(root).ok
        write_receipt(files, checks=len(report.checks), suite=report.suite, tag=report.tag,
                      publishable=publishable)
    return report


def _path(p: str | Path | None) -> Path | None:
    return Path(p) if p is not None else None


__all__ = ["SCHEMA", "Options", "VerifyReport", "check_card_counts",
           "check_card_tables", "check_paper", "check_pin", "held_release",
           "paper_applies", "read_release_history", "replay_tables", "verify",
           "verify_local_dir", "verify_release_dir"]
