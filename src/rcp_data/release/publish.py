"""The publisher: one checked release directory -> one Hub commit -> one new tag.

Order of work (``docs/concepts/release-layout.md``, Releases; ``hub-api.md``):

1. Hash every file (one read, which also keeps the bytes of each small file and the git blob
   id of every file: :class:`~rcp_data.core.files.Snapshot`), then check the release directory (``checks/release_check.py``) and verify
   it as ``rcp-data verify`` does (:func:`check_before_publishing`; a receipt of the same bytes
   stands for the checks it records as passed); refuse before any upload if either fails.
2. Read the branch head and the tags, and the head's ``releases.json``: the release's history
   must extend the Hub's (same numbers, tags, shas; :mod:`rcp_data.release.hub_history`), else
   nothing is uploaded. Build an explicit operation list against that head:
   an add for every release file, a delete for every file on the branch the release lacks.
3. ONE ``create_commit`` with ``parent_commit`` = that head, always: the ``--parent-commit``
   given, else the head read in step 2 (optimistic concurrency: a branch that moved meanwhile
   answers 412, exit 1, and nothing is committed). A branch without a head is refused, so no
   commit is ever made without a parent to check.
   What is uploaded is the verified bytes: a small file's bytes as the hashing read them (an
   edit on disk afterwards cannot reach the Hub), a larger one from its path with the sha256
   the verification proved, which the Hub checks against what it receives (LFS).
   After the commit, the Hub's listing of it (git blob ids of regular files, LFS sha256 and
   size) must be exactly the verified files, else nothing is tagged (exit 1, naming the file).
4. ``create_tag("v<N>-<judge slug>", revision=<that commit>)`` without ``exist_ok``; a 409 is
   accepted only if the tag already points at this very commit. A run killed between commit
   and tag is finished by the next run: a branch head that is this publisher's own commit of
   exactly this release (its message names the release and a publish run) is tagged.

The release's content digest (:func:`rcp_data.model.manifest.release_digest`) is computed from
the verified bytes (the files uploaded), returned (:attr:`PublishResult.digest`, printed by the
CLI) and recorded beside the commit sha (``record_to``): the anchor ``rcp-data verify`` checks
a revision against, which the Hub cannot forge.

It never force-pushes, squashes, deletes or moves a tag. Re-running a published release changes
nothing and succeeds. The Hub is the :class:`HubClient` passed in (default: built from the
environment); the token is never printed or written. Hub errors are translated once, by the
client (:func:`rcp_data.core.hub_client.hub_errors`).
"""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.checks.reports import CheckReport
from rcp_data.core.errors import InputError, NotFoundError, RcpDataError, RefusedError, UsageError
from rcp_data.core.files import (
    FileEntry,
    Snapshot,
    digest_file,
    hashing_in_background,
    release_paths,
    sha256_file,
)
from rcp_data.core.hub_client import (
    REPO_TYPE,
    HubClient,
    HubConflict,
    HubNotFound,
    RemoteFile,
    redact,
)
from rcp_data.model.history import (
    SCHEMA,
    History,
    ReleaseRecord,
    history_path,
    read_history,
    record_release,
    same_commit,
    write_history,
)
from rcp_data.model.layout import RELEASES_JSON
from rcp_data.model.manifest import release_digest
from rcp_data.release.hub_history import check_extends, read_hub_history

if TYPE_CHECKING:  # huggingface_hub is imported when a commit is built
    from huggingface_hub import CommitOperationAdd, HfApi

log = logging.getLogger(__name__)

KEEP_ON_BRANCH = frozenset({".gitattributes"})  # Hub housekeeping a release never deletes
_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_repo_id(repo: str) -> str:
    if not isinstance(repo, str) or not _REPO_RE.match(repo):
        raise UsageError(f"--repo must be OWNER/NAME, got {repo!r}")
    return repo


# -- file identities ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LocalFile:
    """A release file; its digests are computed only when a remote file of the same path and
    size has to be compared (a first publish reads no file twice). ``verified_sha256``: the
    sha256 the pre-publish verification just proved (the manifest's), so nothing hashes the
    file again: the Hub checks it against the uploaded bytes."""

    root: Path
    path: str
    size: int
    verified_sha256: str | None = None
    verified_git_oid: str | None = None
    data: bytes | None = field(default=None, repr=False, compare=False)  # the verified bytes

    @cached_property
    def git_oid(self) -> str:
        """The git blob sha1 (what the Hub reports for a regular file)."""
        if self.verified_git_oid is not None:
            return self.verified_git_oid
        git = hashlib.sha1(f"blob {self.size}\0".encode())  # noqa: S324 - git's object id
        digest_file(self.root / self.path, git)
        return git.hexdigest()

    @cached_property
    def sha256(self) -> str:
        """The sha256 (what the Hub reports for an LFS/Xet file)."""
        return self.verified_sha256 or sha256_file(self.root / self.path)


def local_file(root: Path, rel: str, verified: Mapping[str, FileEntry] | None = None,
               snapshot: Snapshot | None = None) -> LocalFile:
    """The release file ``rel``; its sha256 is taken from ``verified`` when the entry there has
    the file's size. With the ``snapshot`` the verification's read left, the file is what that
    read saw (size, sha256, git blob id, and the bytes of a small file), whatever is on disk
    now."""
    entry = (verified or {}).get(rel)
    if entry is not None and snapshot is not None and rel in snapshot.git_oids:
        return LocalFile(Path(root), rel, entry.size, entry.sha256, snapshot.git_oids[rel],
                         snapshot.held.get(rel))
    size = (Path(root) / rel).stat().st_size
    return LocalFile(Path(root), rel, size,
                     entry.sha256 if entry is not None and entry.size == size else None)


def same_file(local: LocalFile, remote: RemoteFile | None) -> bool:
    """Whether the remote file is this one: the size first, then the digest the Hub reports."""
    if remote is None or remote.size != local.size:
        return False
    return local.sha256 == remote.lfs_sha256 if remote.lfs_sha256 else \
        local.git_oid == remote.blob_id


def diff_tree(files: list[LocalFile], tree: Mapping[str, RemoteFile]
              ) -> tuple[list[str], list[str]]:
    """``(changed or new paths, paths to delete)`` of a release against a remote tree."""
    names = {f.path for f in files}
    changed = [f.path for f in files if not same_file(f, tree.get(f.path))]
    deleted = sorted(p for p in tree if p not in names and p not in KEEP_ON_BRANCH)
    return changed, deleted


# -- plan and result ---------------------------------------------------------------------------
@dataclass
class PublishPlan:
    """Everything the publisher decided before touching the Hub."""

    root: Path
    repo: str
    branch: str
    release: ReleaseRecord
    history: History
    suite: str | None
    parent: str | None
    files: list[LocalFile]
    changed: list[str]
    deleted: list[str]
    already_tagged: str | None = None   # the commit the tag names, when already published
    resume: str | None = None           # this release's own untagged commit (a killed run)
    endpoint: str = ""
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def tag(self) -> str:
        return self.release.tag

    @property
    def noop(self) -> bool:
        return not self.changed and not self.deleted

    def operations(self) -> list:
        """An add for every changed or new file (the others are the parent's, unchanged: the
        commit is made on top of that very parent), a delete for every file the release
        lacks."""
        from huggingface_hub import CommitOperationDelete

        changed = set(self.changed)
        ops: list = [_addition(self.root, f) for f in self.files if f.path in changed]
        ops += [CommitOperationDelete(path_in_repo=p) for p in self.deleted]
        return ops


def _addition(root: Path, f: LocalFile) -> CommitOperationAdd:
    """The add operation of one file. A verified sha256 is handed to huggingface_hub (its
    ``UploadInfo.sha256`` is settable for a hash known beforehand), which would otherwise read
    the whole file once more to hash it; the Hub hashes the bytes it receives and refuses an
    upload whose sha256 is not the one announced, so a file changed since the verification
    cannot be published under the old hash."""
    from huggingface_hub import CommitOperationAdd

    if f.data is not None:  # the very bytes verified, not the file as it is now
        return CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=f.data)
    op = CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=str(root / f.path))
    if f.verified_sha256 is not None:
        op.upload_info.sha256 = bytes.fromhex(f.verified_sha256)
    return op


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: its status, the commit and tag, and where it was recorded."""

    status: str            # "published" | "already-published"
    repo: str
    tag: str
    commit: str
    parent: str | None
    changed: int = 0
    deleted: int = 0
    recorded: Path | None = None
    messages: tuple[str, ...] = ()
    record_error: str | None = None   # published, but the record asked for could not be made
    digest: str | None = None         # the release's content digest (of the verified bytes)


# -- planning ----------------------------------------------------------------------------------
def _ensure_repo(client: HubClient, repo: str, create: bool) -> None:
    try:
        with client.errors(repo):
            client.api.repo_info(repo, repo_type=REPO_TYPE)
    except HubNotFound as exc:
        if not create:
            raise NotFoundError(f"dataset repo {repo} not found at {client.shown_url}; "
                             "pass --create-repo to create it") from exc
        with client.errors(f"creating dataset repo {repo}"):
            client.api.create_repo(repo, repo_type=REPO_TYPE, exist_ok=True)
        log.info("created dataset repo %s", repo)


def _check_older_releases(history: History, tags: dict[str, str], chain: list[str],
                          branch: str) -> None:
    for r in history.releases[:-1]:
        hub = tags.get(r.tag)
        if hub and not same_commit(hub, r.revision):
            raise RefusedError(
                f"provenance/releases.json says release {r.release} ({r.tag}) is {r.revision}, "
                f"but the Hub's tag points at {hub}; rebuild the release with --history naming "
                f"{hub} for it (or --previous-revision {hub}) before publishing")
        if chain and not any(same_commit(r.revision, c) for c in chain):
            raise RefusedError(
                f"provenance/releases.json names {r.revision} for release {r.release}, which "
                f"is not in the history of branch {branch}")
        if not hub:
            log.warning("release %d's tag %s is not on the Hub", r.release, r.tag)
    data = history.releases[-1].data_revision
    if data and chain and not any(same_commit(data, c) for c in chain):
        raise RefusedError(
            f"provenance/releases.json says the data of release {history.releases[-1].release} "
            f"last changed in {data}, which is not in the history of branch {branch}")


def plan_publish(report: CheckReport, repo: str, *, branch: str = "main",
                 parent_commit: str | None = None, client: HubClient | None = None,
                 create_repo: bool = False,
                 verified: Mapping[str, FileEntry] | None = None,
                 snapshot: Snapshot | None = None) -> PublishPlan:
    """Decide what to commit; raises :class:`RefusedError` for anything it must not publish.

    ``verified``: the files whose size and sha256 the pre-publish verification proved;
    ``snapshot``: what the read that hashed them kept (the bytes uploaded, the blob ids)."""
    report.raise_if_failed(publishing=True)
    check_repo_id(repo)
    history = report.history
    assert history is not None and history.latest is not None
    release = history.latest
    if history.repo != repo:
        # bad input (exit 2): the release names its repository; --repo names another
        raise UsageError(f"--repo {repo} is not the repository this release was built for: "
                         f"its provenance/releases.json is for {history.repo} (pass --repo "
                         f"{history.repo}, or rebuild the release for {repo}); nothing was "
                         "uploaded")
    client = client or HubClient.from_env()
    _ensure_repo(client, repo, create_repo)
    with client.errors(f"planning the publish of {repo}"):
        return _plan(report, repo, branch, parent_commit, client, release, history,
                     verified or {}, snapshot)


def _plan(report: CheckReport, repo: str, branch: str, parent_commit: str | None,
          client: HubClient, release: ReleaseRecord, history: History,
          verified: Mapping[str, FileEntry], snapshot: Snapshot | None = None) -> PublishPlan:
    api = client.api
    refs = api.list_repo_refs(repo, repo_type=REPO_TYPE)
    heads = {b.name: b.target_commit for b in refs.branches}
    tags = {t.name: t.target_commit for t in refs.tags}
    head = heads.get(branch)
    if head is None:
        raise UsageError(f"dataset repo {repo} has no branch {branch!r} (or it has no commit); "
                         "the publisher commits only on top of a known head. Nothing was "
                         "committed or tagged")
    if parent_commit and not same_commit(parent_commit, head):
        raise RefusedError(f"branch {branch} is at {head}, not at the expected parent "
                           f"{parent_commit}: it moved; nothing was committed or tagged")
    chain = ([c.commit_id for c in api.list_repo_commits(repo, repo_type=REPO_TYPE,
                                                          revision=head)] if head else [])
    _check_older_releases(history, tags, chain, branch)
    files = [local_file(report.root, rel, verified, snapshot) for rel in report.files]
    plan = PublishPlan(root=report.root, repo=repo, branch=branch, release=release,
                       history=history, suite=report.suite, parent=head, files=files,
                       changed=[], deleted=[], endpoint=api.endpoint)
    plan.changed, plan.deleted = diff_tree(files, client.files(repo, head))
    target = tags.get(release.tag)
    changed, deleted = ([], []) if target is None else \
        (plan.changed, plan.deleted) if target == head else \
        diff_tree(files, client.files(repo, target))
    if target is not None and not changed and not deleted:
        plan.already_tagged = target  # published identically before: nothing to do
        return plan
    # a release whose history does not extend the Hub's is never uploaded (nor tagged)
    check_extends(read_hub_history(client, repo, branch, head, tags), history)
    if target is not None:
        raise RefusedError(
            f"tag {release.tag} already exists on commit {target}, which holds different "
            f"files ({len(changed)} differ, {len(deleted)} extra); tags are never moved. "
            "Nothing was committed or tagged")
    if plan.noop and _own_commit_of(api, plan, head):
        plan.already_tagged = None
        plan.resume = head
        return plan
    if plan.noop:
        raise RefusedError(
            f"nothing to commit: branch {branch} at {head} already holds exactly these files, "
            f"but tag {release.tag} does not exist. The publisher never tags a commit it did "
            "not make; check that commit and tag it by hand if it really is this release")
    return plan


# -- executing ---------------------------------------------------------------------------------
def execute_plan(plan: PublishPlan, client: HubClient | None = None) -> PublishResult:
    """Make the one commit and the tag of a plan (see the module docstring)."""
    client = client or HubClient.from_env(endpoint=plan.endpoint or None)
    rel = plan.release
    if plan.already_tagged:
        msg = (f"{plan.repo}: release {rel.release} is already published identically as "
               f"{plan.tag} at {plan.already_tagged}; nothing changed")
        return PublishResult("already-published", plan.repo, plan.tag, plan.already_tagged,
                             plan.parent, messages=(msg,))
    if plan.resume:
        _tag(client, plan, plan.resume)
        msg = (f"{plan.repo}: tagged release {rel.release} as {plan.tag} at {plan.resume} "
               "(the commit of an earlier, interrupted publish of this release)")
        return PublishResult("published", plan.repo, plan.tag, plan.resume, plan.parent,
                             messages=(msg,))
    log.info("publishing %s release %d to %s (%s): %d file(s) changed, %d deleted, parent %s",
             plan.repo, rel.release, redact(plan.endpoint), plan.branch, len(plan.changed),
             len(plan.deleted), plan.parent)
    description = (f"{rel.summary}\n\nOne commit holds the whole release; its "
                   "provenance/releases.json gives this release \"revision\": null, meaning "
                   f"this commit.\n\npublish run: {plan.run_id}").strip()
    commit = client.commit(plan.repo, plan.operations(), branch=plan.branch, parent=plan.parent,
                           message=commit_title(rel),
                           description=description)
    with client.errors(f"checking commit {commit} of {plan.repo}"):
        _check_own_commit(client.api, plan, commit)
    check_published_tree(client, plan, commit)
    _tag(client, plan, commit)
    msg = f"{plan.repo}: published release {rel.release} as {plan.tag} at {commit}"
    return PublishResult("published", plan.repo, plan.tag, commit, plan.parent,
                         changed=len(plan.changed), deleted=len(plan.deleted), messages=(msg,))


def commit_title(release: ReleaseRecord) -> str:
    """The title of the commit that publishes ``release``."""
    return f"Release {release.release} ({release.tag})"


def _own_commit_of(api: HfApi, plan: PublishPlan, head: str) -> bool:
    """Whether ``head`` (whose files equal the release's) is this publisher's own commit of
    this release: its title names the release and its message a publish run."""
    entry = api.list_repo_commits(plan.repo, repo_type=REPO_TYPE, revision=head)[0]
    text = f"{entry.title}\n{entry.message or ''}"
    return entry.title == commit_title(plan.release) and "publish run: " in text


def _check_own_commit(api: HfApi, plan: PublishPlan, commit: str) -> None:
    """Refuse unless ``commit`` is the commit this run made, on top of the head the plan read.

    When every file is unchanged against the branch head, the client makes no commit and
    returns that head; if the branch moved to another publisher's identical tree meanwhile,
    that head is a new commit on the same parent. Only this run's id in the commit message
    tells the two apart.
    """
    if commit == plan.parent:
        raise RefusedError(
            f"the commit was a no-op (the Hub returned the old head {commit}); the old "
            "commit is not tagged")
    log_entries = api.list_repo_commits(plan.repo, repo_type=REPO_TYPE, revision=commit)
    chain = [c.commit_id for c in log_entries]
    expected = [commit, plan.parent] if plan.parent else [commit]
    ours = plan.run_id in f"{log_entries[0].title}\n{log_entries[0].message}"
    if not ours or chain[: len(expected)] != expected or (not plan.parent and len(chain) != 1):
        raise RefusedError(
            f"branch {plan.branch} moved since {plan.parent} was read: the Hub returned {commit}, "
            "which is not a commit made on top of it (another publisher committed the same "
            "files?). Nothing was tagged")


def check_published_tree(client: HubClient, plan: PublishPlan, commit: str) -> None:
    """Refuse (nothing tagged) unless the Hub's listing of ``commit`` is exactly the verified
    release: every file with the verified size and git blob id (a regular file) or sha256 (an
    LFS file), and no other file but the Hub's housekeeping."""
    listing = client.files(plan.repo, commit)
    names = {f.path for f in plan.files}
    wrong = [f.path for f in plan.files if not same_file(f, listing.get(f.path))]
    extra = sorted(p for p in listing if p not in names and p not in KEEP_ON_BRANCH)
    if wrong or extra:
        what = [f"{p} is not the verified file" if p in listing else f"{p} is missing"
                for p in wrong] + [f"{p} is not part of the release" for p in extra]
        raise RefusedError(
            f"the Hub's tree of commit {commit} of {plan.repo} is not the release that was "
            f"verified: {'; '.join(what[:5])}{' ...' if len(what) > 5 else ''}. Nothing was "
            f"tagged; commit {commit} stays on branch {plan.branch} untagged")


def _tag(client: HubClient, plan: PublishPlan, commit: str) -> None:
    try:
        with client.errors(f"tagging commit {commit} of {plan.repo} as {plan.tag}"):
            client.api.create_tag(
                plan.repo, tag=plan.tag, revision=commit, repo_type=REPO_TYPE,
                tag_message=f"Release {plan.release.release}: {plan.release.judge_model}")
    except HubConflict as exc:
        target = client.tags(plan.repo).get(plan.tag)
        if target != commit:
            raise RefusedError(
                f"tag {plan.tag} appeared on {target} while publishing; it is never moved. "
                f"Commit {commit} stays on branch {plan.branch} untagged") from exc
        log.info("tag %s already points at %s", plan.tag, commit)
    except RcpDataError as exc:
        raise RefusedError(f"commit {commit} was made but tagging it failed: {exc.message}; "
                           f"tag it with {plan.tag}") from exc


# -- the whole job -----------------------------------------------------------------------------
def record_target(record_to: str | Path, suite: str | None) -> Path:
    """The history file a publish records into: ``record_to`` itself when it names a ``.json``
    file, else ``record_to/<suite>.json``."""
    path = Path(record_to)
    if path.suffix == ".json":
        return path
    if not suite:
        raise UsageError(f"cannot tell the suite of the release, so --record-to {path} names no "
                         "file; pass the history file itself (--record-to FILE.json)")
    return path / f"{suite}.json"


def record(result: PublishResult, plan: PublishPlan, path: Path) -> Path:
    """Add the published release (with its now known sha and its digest) to the history file
    ``path``.

    A file that does not exist yet starts from the packaged history of the same repo, else
    from the release's own ``provenance/releases.json`` (its older releases with their shas);
    so does an existing file that lists no release yet. The file is replaced atomically.
    """
    if path.exists():
        history = read_history(path)
    else:
        packaged = history_path(path.stem)
        history = read_history(packaged) if packaged.exists() else None
        if history is None or history.repo != plan.repo:
            history = History(schema=SCHEMA, repo=plan.repo, releases=())
        path.parent.mkdir(parents=True, exist_ok=True)
    if history.repo != plan.repo:
        raise InputError(f"the history tracks {history.repo}, not {plan.repo}", path=str(path))
    if not history.releases:  # a repo the project does not track: the release's own record
        history = replace(plan.history, releases=plan.history.releases[:-1])
    write_history(record_release(history, plan.release, result.commit, result.digest), path)
    log.info("recorded release %d (%s) in %s", plan.release.release, result.commit, path)
    return path


def _same_files(root: Path, hashed: Mapping[str, FileEntry], listed: list[str]) -> None:
    """Refuse unless the files hashed are the files listed after them (none came or went)."""
    if sorted(hashed) != sorted(listed):
        added = sorted(set(listed) - set(hashed))
        gone = sorted(set(hashed) - set(listed))
        raise RefusedError(f"the files of {root} changed while they were checked (added: "
                           f"{', '.join(added) or 'none'}; removed: {', '.join(gone) or 'none'})"
                           "; nothing was uploaded. Publish it again once it is complete")


def check_before_publishing(root: Path, files: Mapping[str, FileEntry], *,
                            reverify: bool = False) -> CheckReport:
    """Prove the release directory may be published: the release check
    (:func:`~rcp_data.checks.release_check.check_release_dir`) and every check of
    ``rcp-data verify`` pass on it; refuse (nothing uploaded) if either fails. ``files``: every
    file of ``root`` with its size and sha256, hashed just now by the caller. Returns the
    release check's report (the files of ``root`` and its release history).

    A receipt of exactly these bytes under this rcp-data (:mod:`rcp_data.checks.receipts`)
    stands for the checks it records as passed, unless ``reverify``; a verification that runs
    and passes here leaves a receipt.
    """
    from rcp_data.checks.receipts import find_receipt

    receipt = None if reverify else find_receipt(files)
    if receipt is not None and receipt.publishable:
        log.info("verified %s before publishing: its %d files hashed again are the ones that "
                 "passed the release check and all %d checks of rcp-data verify at %s under "
                 "this rcp-data (receipt %s); --reverify runs them again", root, len(files),
                 receipt.checks, receipt.verified_at, receipt.key[:12])
        report = CheckReport(root=root, suite=receipt.suite, files=release_paths(root),
                             history=read_history(root / RELEASES_JSON, for_commit=True))
        _same_files(root, files, report.files)
        return report
    from rcp_data.checks.release_check import check_release_dir

    report = check_release_dir(root)
    report.raise_if_failed(publishing=True)
    _same_files(root, files, report.files)
    if receipt is not None:  # recorded as not publishable, yet the release check passes now
        log.info("verified %s before publishing: the release check passed and its %d files "
                 "passed all %d checks of rcp-data verify at %s (receipt %s)", root,
                 len(files), receipt.checks, receipt.verified_at, receipt.key[:12])
        return report
    from rcp_data.checks.verify import verify_local_dir  # the table, card and replay checks

    # the release check proved just now that every gain is the link of its theta
    verified = verify_local_dir(root, link_checked=True, files=files, publishable=True)
    if not verified.ok:
        failed = "; ".join(f"{c.name}: {c.what} (found {c.found}; {c.where})"
                           for c in verified.failed[:5])
        raise RefusedError(f"the release in {root} fails verification "
                           f"({len(verified.failed)} check(s)): {failed}. Nothing was uploaded")
    log.info("verified %s before publishing: %d checks, none failed", root,
             len(verified.checks))
    return report


def publish(root: str | Path, repo: str, *, branch: str = "main",
            parent_commit: str | None = None, client: HubClient | None = None,
            create_repo: bool = False, record_to: str | Path | None = None,
            reverify: bool = False) -> PublishResult:
    """Check, commit and tag one release directory (see the module docstring).

    ``record_to``: a folder of ``<suite>.json`` histories, or one history file, to record the
    published release in; None records nowhere. ``reverify``: run every check even when a
    receipt covers these bytes. Nothing else on disk is written but the receipt of a passed
    verification.
    """
    check_repo_id(repo)
    root = Path(root)
    if not root.is_dir():
        raise NotFoundError(f"release directory not found: {root}")
    # every file is hashed while huggingface_hub loads: this module imports neither it nor a
    # data library before the hashing starts
    snapshot = Snapshot()  # the bytes uploaded are those this one read hashes
    with hashing_in_background(root, snapshot) as hashed:
        client = client or HubClient.from_env()
        client.api  # noqa: B018 - huggingface_hub is imported while the files are hashed
        verified = hashed.result()
    report = check_before_publishing(root, verified, reverify=reverify)
    if record_to is not None:   # the record is never written into the release it records
        from rcp_data.core.outputs import check_apart

        check_apart(record_target(record_to, report.suite), {"RELEASE_DIR": root},
                    flag="--record-to")
    plan = plan_publish(report, repo, branch=branch, parent_commit=parent_commit, client=client,
                        create_repo=create_repo, verified=verified, snapshot=snapshot)
    result = replace(execute_plan(plan, client), digest=release_digest(verified.values()))
    if record_to is not None and result.status == "published":
        path = record_target(record_to, report.suite)
        try:
            result = replace(result, recorded=record(result, plan, path))
        except InputError as exc:  # the release is out; say what to fix in the history
            msg = f"published, but could not record the release in {path}: {exc.message}"
            result = replace(result, record_error=msg)
    return result
