"""The stages of ``rcp-data verify``, each testable alone.

A verification fetches a revision (:class:`Fetched`: where its files are and what the Hub
says about it), proves its bytes, opens it once as a :class:`~rcp_data.model.release.Release`
and runs the stages below on it. Each stage is a function of that release and of the results
of the stages it needs, and returns its checks (with what later stages need); a file a stage
cannot read is one failed check of that stage, never a traceback. Only an unreachable Hub
(:class:`~rcp_data.core.hub_client.HubUnavailable`) stops a verification.

======================  ===========================  =========================================
stage                   function                     needs
======================  ===========================  =========================================
fetch and prove bytes   :func:`prove_bytes`          the fetched revision
(open the release)      :func:`open_verified`        the fetched revision
pin                     :func:`pin_revision`         the release, the fetched revision
manifest                :func:`check_manifest`       the release, the bytes' proof
history                 :func:`check_commits`        the release, the pin
(what the data reads)   :func:`read_inputs`          the release, the pin
integrity               :func:`check_integrity`      the release, the inputs
judge provenance        :func:`check_provenance`     the release, the inputs, the integrity
(card counts)           :func:`check_counts_stated`  the release, the inputs, the integrity
replay                  :func:`replay_numbers`       the release, the pin, the inputs
diagnostics             :func:`check_diagnostics_of`  the release
documents               :func:`check_documents`      the release, the pin, the replay, the
                                                     manifest
sources                 :func:`compare_sources`      the release
anchor                  :func:`anchor_release`       the release, the pin, the bytes' proof,
                                                     every check before it
======================  ===========================  =========================================
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from rcp_data.checks.anchor import check_anchor, digest_of_release
from rcp_data.checks.diagnostics_check import check_diagnostics
from rcp_data.checks.git_objects import check_git_objects, is_pinned_commit
from rcp_data.checks.history_checks import HubView, check_history, project_records
from rcp_data.checks.integrity import SubsetTables, run_integrity
from rcp_data.checks.judge_checks import check_judge
from rcp_data.checks.listing import check_checkout, check_listing
from rcp_data.checks.manifest import HostedFile, check_content
from rcp_data.checks.numbers import Replayed, check_card_counts, data_totals, number_checks
from rcp_data.checks.pin import (
    check_pin,
    check_pin_by_project_history,
    check_task_file,
    project_history_release,
    read_release_history,
)
from rcp_data.checks.readable import check_readable
from rcp_data.checks.regenerated import check_regenerated
from rcp_data.checks.reports import Check
from rcp_data.core.errors import InputError, RcpDataError
from rcp_data.core.files import FileEntry, hash_files, release_paths
from rcp_data.core.gains import DEFAULT_LINK, ItemParams
from rcp_data.core.hub_client import HubUnavailable, PinnedRevision, RemoteFile
from rcp_data.model.card_format import card_configs
from rcp_data.model.history import History, ReleaseRecord, same_commit
from rcp_data.model.layout import CARD_FILE, RELEASES_JSON
from rcp_data.model.manifest import BuildManifest
from rcp_data.model.release import Release, open_release

if TYPE_CHECKING:
    from rcp_data.core.git_fetch import FetchedTree

log = logging.getLogger(__name__)

T = TypeVar("T")
#: What a malformed file raises while a check reads it; the stage becomes a failed check.
READ_ERRORS = (RcpDataError, pa.ArrowException, OSError, UnicodeDecodeError, ValueError,
               KeyError, IndexError, TypeError)
#: The marker ``--quick`` leaves in a folder whose corpus files are stand-ins.
STAND_IN_MARK = ".rcp-quick-stand-ins"


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


def guarded(checks: list[Check], name: str, what: str, fn: Callable[..., T], *args,
            **kwargs) -> T | None:
    """Run one step of a stage; a file it cannot read becomes a failed check appended to
    ``checks`` (None is returned). Only an unreachable Hub stops the verification."""
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


# -- fetch and prove bytes --------------------------------------------------------------------
@dataclass(frozen=True)
class Fetched:
    """A revision as verify has it before reading a byte: the folder holding its files and what
    the Hub says about it (all None for a local directory).

    ``pin``: the revision resolved to its commit; ``hub_tags``: the repository's tags;
    ``listing``: the Hub's listing of the commit (blob ids, LFS sha256s); ``hosted``: the same
    as the content checks take it; ``view``: its commits and tags; ``not_read``: files proven
    by their listed LFS sha256, not downloaded; ``git_tree``: the commit as git fetched it, and
    where from (``--git``); ``hashed``: files the caller has just hashed."""

    root: Path
    pin: PinnedRevision | None = None
    hub_tags: dict[str, str] | None = None
    listing: Mapping[str, RemoteFile] | None = None
    hosted: dict[str, HostedFile] | None = None
    view: HubView | None = None
    not_read: frozenset[str] = frozenset()
    git_tree: tuple[FetchedTree, str] | None = None
    hashed: Mapping[str, FileEntry] | None = None


@dataclass(frozen=True)
class BytesProof:
    """The bytes proven: the checks, the revision's files and those hashed on the way."""

    checks: list[Check]
    paths: list[str]
    hashed: Mapping[str, FileEntry] | None = None


def prove_bytes(fetched: Fetched) -> BytesProof:
    """Every downloaded file read once against the Hub's listing (and, with ``--git``, the
    commit's git objects), no ``.gitattributes`` changing the bytes a checkout yields, and
    every file reading as the layout says."""
    root, listing = fetched.root, fetched.listing
    paths = sorted(fetched.hosted) if fetched.hosted is not None else release_paths(root)
    checks: list[Check] = []
    hashed = fetched.hashed
    if listing is not None:
        listed = check_listing(root, listing, not_read=fetched.not_read)
        checks.append(listed.check)
        hashed = {**listed.found, **(hashed or {})}
        checks.append(check_checkout(root, sorted(listing)))
        if fetched.git_tree is not None and fetched.pin is not None:
            tree, where = fetched.git_tree
            checks.append(check_git_objects(tree, fetched.pin.sha, listing, found=listed.found,
                                            blob_ids=listed.blob_ids,
                                            not_read=fetched.not_read, where=where))
    else:
        checks.append(check_checkout(root, paths))
    checks += check_readable(root, paths)[0]
    return BytesProof(checks, paths, hashed)


def open_verified(fetched: Fetched) -> Release | Check:
    """The release, opened once for every stage after the bytes; a release that does not name
    its suite is the failed check that says so."""
    try:
        return open_release(fetched.root, pin=fetched.pin)
    except InputError as exc:
        return Check.failed("suite", "the release names its suite", "a build manifest "
                            "'suite' or a suite tag in the card", exc.message, CARD_FILE)


# -- pin ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pinned:
    """The pin checks and what they found: the history the revision carries (or, for a revision
    predating the release policy, the project's record of it: ``pre_policy``), the release it
    holds and the project's records of the suite."""

    checks: list[Check]
    history: History | None = None
    release: ReleaseRecord | None = None
    pre_policy: bool = False
    records: list[tuple[str, History]] = field(default_factory=list)

    @property
    def regenerate(self) -> bool:
        """Whether the revision holds a release this project built (its card and task file are
        rendered again)."""
        return self.history is not None and not self.pre_policy


def pin_revision(rel: Release, fetched: Fetched, histories: Path | None = None) -> Pinned:
    """The requested revision against the release history it carries (or the project's record
    of it), the history's repository, and the project's records of the suite."""
    checks: list[Check] = []
    history, release, pre_policy = _pin_checks(rel, fetched, histories, checks)
    records = guarded(checks, "record", "the project's record reads", project_records,
                      rel.spec.name, histories) or []
    return Pinned(checks, history, release, pre_policy, records)


def _pin_checks(rel: Release, fetched: Fetched, histories: Path | None, checks: list[Check]
                ) -> tuple[History | None, ReleaseRecord | None, bool]:
    pin, spec = fetched.pin, rel.spec
    history = problems = None
    try:
        history, problems = read_release_history(rel.root)
    except InputError as exc:
        checks.append(Check.failed("releases-json", "the release history at this revision "
                                   "reads", "valid rcp-data.releases/1", exc.message,
                                   RELEASES_JSON))
        return None, None, False
    if history is None:
        recorded, recorded_release = guarded(
            checks, "record", "the project's record of the repository reads",
            project_history_release, spec, pin, histories) or (None, None)
        if recorded is not None and pin is not None:
            where = str((Path(histories) / f"{spec.name}.json") if histories else
                        f"release/{spec.name}.json")
            checks += check_pin_by_project_history(pin, recorded, recorded_release, where)
            return recorded, recorded_release, True
    pin_checks, release = check_pin(pin, history, problems or [], fetched.hub_tags)
    checks += pin_checks
    if history is not None and pin is not None and history.repo != pin.repo:
        checks.append(Check(
            "releases-json-repo", True, "releases.json names the repository it is in",
            expected=pin.repo, found=history.repo, where=RELEASES_JSON, status="diff",
            details=[f"releases.json was written for {history.repo} (a copy or mirror?); its "
                     "shas are checked against this repository's tags"]))
    return history, release, False


# -- manifest -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Content:
    """The content checks and the typed build manifest (None when it is absent or unreadable)."""

    checks: list[Check]
    manifest: BuildManifest | None = None


def check_manifest(rel: Release, fetched: Fetched, proof: BytesProof) -> Content:
    """The revision holds exactly the files its build manifest lists, with their sizes and
    sha256 (a revision carrying releases.json must carry its manifest)."""
    checks: list[Check] = []
    manifest = guarded(checks, "build-manifest", "the build manifest reads", lambda: rel.manifest)
    unreadable = checks[-1].found if checks else None
    content = check_content(rel.root, manifest, unreadable=unreadable, hosted=fetched.hosted,
                            not_read=fetched.not_read, hashed=proof.hashed,
                            required=(rel.root / RELEASES_JSON).exists())
    return Content(checks + content.checks, manifest)


# -- history ------------------------------------------------------------------------------------
def check_commits(rel: Release, fetched: Fetched, pinned: Pinned) -> list[Check]:
    """The Hub's commits and tags behind the revision (skipped, saying why, for a local
    directory, a revision predating the release policy or one without a readable history)."""
    view, history, release = fetched.view, pinned.history, pinned.release
    checks: list[Check] = []
    if view is not None and history is not None and release is not None and \
            not pinned.pre_policy:
        checks += guarded(checks, "history", "the Hub's commits and tags behind this revision",
                          check_history, view, history, release, pinned.records) or []
        return checks
    why = ("a local directory has no commits or tags" if view is None else
           "a revision published before the release policy: its tag is checked against "
           "the project's record" if pinned.pre_policy else "no readable release history here")
    return [Check("history", True, "the Hub's commits and tags behind this revision",
                  found=f"skipped: {why}", status="skipped")]


# -- what the data checks read ----------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    """What the data stages read besides the tables: the item parameters with their link and
    path (None when they do not read), the card's text and its YAML configs."""

    checks: list[Check]
    calibration: tuple[ItemParams, str, str] | None = None
    card_text: str | None = None
    configs: list[dict] | None = None


def read_inputs(rel: Release, pinned: Pinned) -> Inputs:
    """The item parameters of the release the revision holds, the task file's pin, the card and
    its configs."""
    checks: list[Check] = []
    calibration = guarded(checks, "calibration", "the item parameters of the release read",
                          _calibration, rel, pinned.release)
    checks += check_task_file(rel.root, pinned.release)
    card_text = _card_text(rel.root, checks)
    configs = guarded(checks, "configs", "the card's YAML front matter reads", card_configs,
                      card_text) if card_text is not None else None
    return Inputs(checks, calibration, card_text, configs)


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
        path = found[0].relative_to(root).as_posix()
        log.warning("no record names the item parameters; using the only file, %s, with the "
                    "default link", path)
        return ItemParams.read(found[0]), DEFAULT_LINK, path
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


# -- integrity and judge provenance -----------------------------------------------------------
@dataclass(frozen=True)
class Integrity:
    """The integrity checks and the subsets' tables they read (None when they could not run:
    no item parameters, or tables that do not read)."""

    checks: list[Check]
    tables: dict[str, SubsetTables] | None = None


def check_integrity(rel: Release, inputs: Inputs, *, link_checked: bool = False) -> Integrity:
    """The data tables against each other, the item parameters and the card's configs
    (``link_checked``: every gain is already known to be the link of its theta)."""
    checks: list[Check] = []
    if inputs.calibration is None:
        return Integrity(checks)
    params, link, params_path = inputs.calibration
    found = guarded(checks, "integrity", "the data tables read", run_integrity,
                    rel, params, link, inputs.configs, link_checked=link_checked)
    if found is None:
        return Integrity(checks)
    integrity, tables = found
    checks += [replace(c, where=f"{c.where} (item parameters {params_path}, link {link})")
               if c.name == "gains" else c for c in integrity]
    return Integrity(checks, tables)


def check_provenance(rel: Release, inputs: Inputs, integrity: Integrity) -> list[Check]:
    """The judge provenance: verdicts, criteria and thetas against the item parameters (run
    when the integrity stage read the tables)."""
    checks: list[Check] = []
    if inputs.calibration is None or integrity.tables is None:
        return checks
    checks += guarded(checks, "judge", "the judge provenance reads", check_judge,
                      rel, inputs.calibration[0], integrity.tables) or []
    return checks


def check_counts_stated(rel: Release, inputs: Inputs, integrity: Integrity) -> list[Check]:
    """The counts the card states against the data's."""
    checks: list[Check] = []
    if inputs.card_text is None or not integrity.tables:
        return checks
    text, tables = inputs.card_text, integrity.tables
    checks += guarded(checks, "card-counts", "the counts the card states",
                      lambda: check_card_counts(text, data_totals(rel, tables))) or []
    return checks


# -- replay ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Replay:
    """The number checks and the replay (None when the runs could not be replayed)."""

    checks: list[Check]
    replayed: Replayed | None = None


def replay_numbers(rel: Release, pinned: Pinned, inputs: Inputs, reference: Path) -> Replay:
    """The provenance runs replayed against every card table and, for the release the paper
    used, the paper (``reference``: its numbers)."""
    checks: list[Check] = []
    numbers = guarded(checks, "replay", "provenance-runs replayed", number_checks,
                      rel, inputs.card_text, pinned.history, pinned.release, reference,
                      pre_policy=pinned.pre_policy, for_card=pinned.regenerate)
    if numbers is None:
        return Replay(checks)
    number_list, replayed = numbers
    return Replay(checks + number_list, replayed)


# -- diagnostics, documents, sources ----------------------------------------------------------
def check_diagnostics_of(rel: Release) -> list[Check]:
    """The card's Diagnostics computed again from the release."""
    checks: list[Check] = []
    checks += guarded(checks, "diagnostics", "the Diagnostics recomputed", check_diagnostics,
                      rel.root, rel.spec) or []
    return checks


def check_documents(rel: Release, pinned: Pinned, replay: Replay, content: Content
                    ) -> list[Check]:
    """Card and task file rendered again (with the replay's numbers) must equal the revision's,
    byte for byte; skipped, saying why, for a release this project did not build."""
    checks: list[Check] = []
    if not pinned.regenerate:
        return [Check("card-regenerated", True, "card and task file rendered again",
                      found="skipped: not a release this project built (no releases.json); "
                            "the card's tables are compared cell by cell", where=CARD_FILE,
                      status="skipped")]
    if replay.replayed is None:
        return checks
    manifest = content.manifest
    checks += guarded(checks, "card-regenerated", "card and task file rendered again",
                      check_regenerated, rel, pinned.history,
                      results=replay.replayed.card_results(rel.spec),
                      built_with=manifest.tool_version if manifest else None) or []
    return checks


def stand_ins(root: Path) -> bool:
    """Whether the corpus files of ``root`` are ``--quick``'s stand-ins."""
    return (root / STAND_IN_MARK).exists()


def compare_sources(rel: Release, options: Options) -> list[Check]:
    """Queries, qrels and (unless ``--quick`` left it out) the corpus against the upstream."""
    from rcp_data.checks.sources_check import check_sources

    checks: list[Check] = []
    checks += guarded(checks, "sources", "the release against its upstream", check_sources,
                      rel, options.source_options, corpus=not stand_ins(rel.root)) or []
    return checks


# -- anchor ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Anchored:
    """The anchor check and the report's anchor fields."""

    check: Check
    digest: str | None
    digest_of: str
    anchor: str | None
    needs_anchor: bool

    def fields(self) -> dict:
        return {"digest": self.digest, "digest_of": self.digest_of, "anchor": self.anchor,
                "needs_anchor": self.needs_anchor}


def release_commit(pin: PinnedRevision | None, view: HubView | None,
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


def anchor_release(root: Path, fetched: Fetched, pinned: Pinned, proof: BytesProof,
                   options: Options, checks: list[Check]) -> Anchored:
    """The release digest of the verified bytes and what outside the repository vouches for
    it: a pinned ``--digest``, a record, or (``--git`` passed in ``checks``) a pinned commit."""
    pin, view, hosted, not_read = fetched.pin, fetched.view, fetched.hosted, fetched.not_read
    found = dict(proof.hashed or {})
    paths = proof.paths
    missing = [p for p in paths if p not in found and p not in not_read
               and (root / p).is_file()]
    found.update(hash_files(root, missing))
    for p in not_read:   # proven by their listed LFS sha256, equal to the manifest's
        info = (hosted or {}).get(p)
        if info is not None and info.lfs_sha256:
            found[p] = FileEntry(p, info.size, info.lfs_sha256)
    found = {p: e for p, e in found.items() if p in set(paths)}
    commit = release_commit(pin, view, pinned.release, pinned.pre_policy)
    read_at = view.read_file if view is not None else None
    digest, of = digest_of_release(found, sha=pin.sha if pin else None, release_commit=commit,
                                   read_at=read_at)
    git = next((c for c in checks if c.name == "git-objects"), None)
    pinned_commit = pin.sha if git is not None and git.ok and is_pinned_commit(pin) else None
    check, anchor = check_anchor(digest, pinned=options.digest, repo=pin.repo if pin else None,
                                 release=pinned.release, release_commit=commit,
                                 records=pinned.records, needed=pin is not None,
                                 pinned_commit=pinned_commit,
                                 objects_recomputed=git is not None and git.ok)
    return Anchored(check, digest, of, anchor, pin is not None)


__all__ = ["Anchored", "BytesProof", "Content", "Fetched", "Inputs", "Integrity", "Options",
           "Pinned", "Replay", "anchor_release", "check_commits", "check_counts_stated",
           "check_diagnostics_of", "check_documents", "check_integrity", "check_manifest",
           "check_provenance", "compare_sources", "guarded", "open_verified", "pin_revision",
           "prove_bytes", "read_inputs", "release_commit", "replay_numbers", "stand_ins"]
