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

Each step is a stage of :mod:`rcp_data.checks.verify_stages`, a function of the opened release
and of the results of the stages it needs (testable alone); :func:`fetch` is the first (the
revision resolved, listed and downloaded), :func:`verify_fetched` runs the others in order.
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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from rcp_data.checks import verify_stages as stages
from rcp_data.checks.git_objects import fetch_revision
from rcp_data.checks.history_checks import HubView
from rcp_data.checks.manifest import HostedFile
from rcp_data.checks.numbers import (
    check_card_counts,
    check_card_tables,
    check_paper,
    default_reference,
    paper_applies,
    replay_tables,
)
from rcp_data.checks.pin import check_pin, held_release, read_release_history
from rcp_data.checks.receipts import write_receipt
from rcp_data.checks.release_check import check_release_dir
from rcp_data.checks.reports import VERIFY_SCHEMA, Check, VerifyReport
from rcp_data.checks.verify_stages import STAND_IN_MARK, Fetched, Options
from rcp_data.core.background import Background
from rcp_data.core.errors import InputError, NotFoundError, UsageError
from rcp_data.core.files import FileEntry, hash_files, release_paths
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
from rcp_data.model.history import ReleaseRecord
from rcp_data.model.layout import BUILD_MANIFEST, provenance_file
from rcp_data.model.manifest import is_digest, recorded_content
from rcp_data.model.release import Release, release_is_synthetic

log = logging.getLogger(__name__)

SCHEMA = VERIFY_SCHEMA


class _Clock:
    """Each stage's wall and CPU seconds, in the order the report lists them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}   # the same stages' CPU seconds

    @contextmanager
    def stage(self, name: str, cpu: Callable[[], float] = time.process_time) -> Iterator[None]:
        t0, c0 = time.perf_counter(), cpu()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
            self.cpu[name] = self.cpu.get(name, 0.0) + cpu() - c0


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
    """Verify a release directory (a pinned snapshot when ``pin`` is given): the fields of
    :class:`~rcp_data.checks.verify_stages.Fetched` given one by one (see
    :func:`verify_fetched`).

    ``link_checked``: every gain is already known to be the link of its theta (the
    pre-publish release check), so the integrity checks do not compute it again.
    """
    fetched = Fetched(Path(root), pin=pin, hub_tags=hub_tags, listing=listing, hosted=hosted,
                      view=view, not_read=not_read, git_tree=git_tree, hashed=hashed)
    return verify_fetched(fetched, reference=reference, target=target, histories=histories,
                          link_checked=link_checked, options=options, report_root=report_root)


def verify_fetched(fetched: Fetched, *, reference: Path | None = None,
                   target: str | None = None, histories: Path | None = None,
                   link_checked: bool = False, options: Options | None = None,
                   report_root: Path | None = None) -> VerifyReport:
    """Every stage of :mod:`rcp_data.checks.verify_stages` on a fetched revision, in order.

    The stages share their reads (:func:`rcp_data.core.io.shared_reads`): each column of a
    table is read from the file once, and every stage checks what it reads as it would alone.
    """
    root = fetched.root
    if not root.is_dir():
        raise missing_release_dir(root)
    # the largest tables, each read by one stage (the runs by the replay, the first-stage runs
    # by the fusion check), are not held
    once = {(root / provenance_file(kind, "_")).parent for kind in ("runs", "first_stage")}
    with shared_reads(exclude=lambda path: path.parent in once):
        return _verify(fetched, reference=reference or default_reference(), target=target,
                       histories=histories, link_checked=link_checked,
                       options=options or Options(), report_root=report_root)


def _verify(fetched: Fetched, *, reference: Path, target: str | None, histories: Path | None,
            link_checked: bool, options: Options, report_root: Path | None) -> VerifyReport:
    root, pin = fetched.root, fetched.pin
    clock = _Clock()
    with clock.stage("listing" if fetched.listing is not None else "pin"):
        proof = stages.prove_bytes(fetched)
    checks = list(proof.checks)
    with clock.stage("pin"):
        rel = stages.open_verified(fetched)
        if isinstance(rel, Check):    # nothing below can run: the listing's time only
            return report_of(root, report_root, target, pin, None, None, [*checks, rel],
                           {k: v for k, v in clock.seconds.items() if k == "listing"})
        pinned = stages.pin_revision(rel, fetched, histories)
    checks += pinned.checks
    with clock.stage("content"):
        content = stages.check_manifest(rel, fetched, proof)
    checks += content.checks
    with clock.stage("history"):
        checks += stages.check_commits(rel, fetched, pinned)
    with clock.stage("pin"):
        inputs = stages.read_inputs(rel, pinned)
    checks += inputs.checks

    # the integrity checks and the replay read the same release and share nothing they
    # write: the integrity stage runs in a second thread meanwhile (numpy and Arrow release
    # the GIL in their kernels), its checks reported in their place before the replay's
    clock.seconds["integrity"] = clock.cpu["integrity"] = 0.0   # the stages' order
    worker = Background(_data_stages, rel, inputs, link_checked, clock,
                        name="rcp-verify-integrity")
    try:
        with clock.stage("replay", cpu=time.thread_time):
            replay = stages.replay_numbers(rel, pinned, inputs, reference)
    except HubUnavailable:
        worker.wait()
        raise
    checks += worker.result() + replay.checks   # re-raises what the stage raised
    with clock.stage("diagnostics"):
        checks += stages.check_diagnostics_of(rel)
    with clock.stage("regenerate"):
        checks += stages.check_documents(rel, pinned, replay, content)
    if options.sources:
        with clock.stage("sources"):
            checks += stages.compare_sources(rel, options)
    anchored = stages.anchor_release(root, fetched, pinned, proof, options, checks)
    checks.append(anchored.check)
    return replace(report_of(root, report_root, target, pin, rel.spec, pinned.release, checks,
                           clock.seconds), cpu_seconds=clock.cpu, **anchored.fields())


def _data_stages(rel: Release, inputs: stages.Inputs, link_checked: bool,
                 clock: _Clock) -> list[Check]:
    """Integrity, judge provenance and the card's counts (in the integrity thread)."""
    with clock.stage("integrity", cpu=time.thread_time):
        integrity = stages.check_integrity(rel, inputs, link_checked=link_checked)
        return (integrity.checks + stages.check_provenance(rel, inputs, integrity)
                + stages.check_counts_stated(rel, inputs, integrity))


def report_of(root: Path, report_root: Path | None, target: str | None,
              pin: PinnedRevision | None, spec: SuiteSpec | None, release: ReleaseRecord | None,
              checks: list[Check], seconds: dict[str, float]) -> VerifyReport:
    """The report of ``checks`` made on the revision at ``root`` (without the anchor's fields:
    :meth:`~rcp_data.checks.verify_stages.Anchored.fields` adds them)."""
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
    with fetch(client, repo, revision, options) as (fetched, snapshot):
        return verify_release_dir(
            fetched.root, pin=fetched.pin, reference=_path(reference),
            target=f"{repo}@{revision}", hub_tags=fetched.hub_tags,
            histories=_path(histories), hosted=fetched.hosted, view=fetched.view,
            options=options, report_root=snapshot, listing=fetched.listing,
            not_read=fetched.not_read, git_tree=fetched.git_tree)


@contextmanager
def fetch(client: HubClient, repo: str, revision: str, options: Options | None = None
          ) -> Iterator[tuple[Fetched, Path]]:
    """The first stage: ``revision`` resolved to its commit, the Hub's tags, listing and
    history of it read, and its files downloaded by that sha (with ``--quick``, a corpus
    proven by its listed LFS sha256 is not: stand-ins take its place in a temporary folder
    while the context lasts; with ``--git``, the commit is fetched over git too). Yields the
    :class:`Fetched` revision and the snapshot folder the files were downloaded into."""
    options = options or Options()
    pin = client.resolve(repo, revision)
    log.info("%s@%s is commit %s", repo, revision, pin.sha)
    if client.offline:   # the cache holds the files; the Hub's tags, listing and history not
        log.info("offline: the files are checked; the Hub's tags, file listing and commit "
                 "history are not")
        if options.git:
            raise UsageError("--git needs the Hub: it fetches the commit over git "
                             "(HF_HUB_OFFLINE=1 is set)")
        tags, hosted, listing, view, skipped = None, None, None, None, []
    else:
        tags = client.tags(repo)
        listing = client.files(repo, pin.sha)
        hosted = {p: HostedFile(p, f.size, f.lfs_sha256) for p, f in listing.items()}
        view = HubView.from_client(client, repo, pin.sha, tags)
        skipped = _lfs_proven_corpus(client, pin, hosted) \
            if options.quick and not options.sources else []
    git_tree = fetch_revision(client, pin) if options.git else None
    root = client.download(repo, pin.sha, ignore_patterns=skipped or None)
    fetched = Fetched(root, pin=pin, hub_tags=tags, listing=listing, hosted=hosted, view=view,
                      not_read=frozenset(skipped), git_tree=git_tree)
    if not skipped:
        yield fetched, root
        return
    with tempfile.TemporaryDirectory(prefix="rcp-verify-quick-") as tmp:
        yield replace(fetched, root=_with_stand_ins(client, pin, root, skipped, Path(tmp))), root


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


__all__ = ["SCHEMA", "Fetched", "Options", "VerifyReport", "check_card_counts",
           "check_card_tables", "check_paper", "check_pin", "fetch", "held_release",
           "paper_applies", "read_release_history", "replay_tables", "report_of", "verify",
           "verify_fetched", "verify_local_dir", "verify_release_dir"]
