"""``verify --git``: the files verified against the git tree of the pinned commit, every object id
recomputed by git from the bytes.

The Hub's listing (``hub-listing``, :mod:`rcp_data.checks.listing`) is the Hub's word for what a
commit holds. With ``--git`` the commit itself is fetched over git's smart HTTP
(:func:`rcp_data.core.git_fetch.fetch_tree`: index-pack recomputes each object's id, ``git fsck
--strict`` checks the graph), so the commit sha alone proves the tree and every blob, and
``git-objects`` requires:

- the objects served hold up (an object whose bytes give another id fails, naming the file
  the Hub's listing gives that id);
- the tree holds exactly the files verified: a file in the tree that the listing leaves out, or
  a listed file the tree lacks, fails; so does a symbolic link or a submodule;
- each regular file downloaded has the tree's blob id (``sha1("blob <size>\\0" + bytes)``), and
  each LFS file the sha256 and size its pointer in the tree names (a file ``--quick`` did not
  download: the listing's LFS sha256, which the manifest check compared with the manifest's).

A revision given as a full commit sha with ``--git`` is thereby anchored by that sha
(:mod:`rcp_data.checks.anchor`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rcp_data.checks.reports import Check
from rcp_data.core.files import FileEntry
from rcp_data.core.git_fetch import FetchedTree, fetch_tree, repo_git_url
from rcp_data.core.hub_client import SHA_RE, HubClient, PinnedRevision, RemoteFile, redact

NAME = "git-objects"
WHAT = ("every object id recomputed by git from the bytes up to the commit; the commit's tree "
        "holds exactly the files verified, with the bytes downloaded")


def is_pinned_commit(pin: PinnedRevision | None) -> bool:
    """Whether the revision was given as the full 40-hex commit sha it resolved to."""
    return (pin is not None and not pin.is_tag and not pin.is_branch
            and SHA_RE.match(pin.requested.lower()) is not None
            and pin.requested.lower() == pin.sha)


def _token(client: HubClient) -> str | None:
    """The token git sends (the client's, else the one ``huggingface_hub`` finds; None: none)."""
    if client.token is False:
        return None
    if isinstance(client.token, str):
        return client.token
    from huggingface_hub import get_token

    return get_token()


def fetch_revision(client: HubClient, pin: PinnedRevision) -> tuple[FetchedTree, str]:
    """The pinned commit fetched over git (``GitUnavailable``, exit 2, when the Hub does not
    serve it), and the repository's URL as messages show it."""
    url = repo_git_url(client.url, pin.repo)
    return fetch_tree(url, pin.sha, token=_token(client)), redact(url)


def _short(oid: str | None) -> str:
    return f"{oid[:12]}…" if oid else "none"


def check_git_objects(tree: FetchedTree, sha: str, listing: Mapping[str, RemoteFile], *,
                      found: Mapping[str, FileEntry], blob_ids: Mapping[str, str],
                      not_read: Iterable[str] = (), where: str = "") -> Check:
    """``git-objects``: the fetched tree of ``sha`` against the files verify checked.

    ``listing``: the Hub's listing of the commit; ``found``: sha256 and size of every file read;
    ``blob_ids``: the git blob id of every regular file read; ``not_read``: LFS files proven by
    their listed oid, not downloaded."""
    where = where or "git smart HTTP"
    if not tree.ok:
        by_blob = {f.blob_id: p for p, f in listing.items()}
        named = [f"object {oid} is {by_blob[oid]} in the Hub's listing"
                 for oid in sorted(tree.object_ids()) if oid in by_blob]
        return Check.failed(NAME, WHAT, f"commit {sha} served with objects git accepts",
                            "git refused the objects served (an id does not match the bytes)",
                            where, [*named, *tree.errors])
    skipped = set(not_read)
    problems: list[str] = []
    if tree.sha != sha:
        problems.append(f"the commit fetched is {tree.sha}, verify resolved {sha}")
    problems += [f"{o}: not a regular file in the git tree" for o in tree.others]
    problems += [f"{p}: in the git tree of {sha[:12]}, not among the files verified (the Hub's "
                 "listing leaves it out)" for p in sorted(set(tree.files) - set(listing))]
    problems += [f"{p}: listed and verified, not in the git tree of {sha[:12]}"
                 for p in sorted(set(listing) - set(tree.files))]
    n_blob = n_lfs = 0
    for p in sorted(set(tree.files) & set(listing)):
        g = tree.files[p]
        if g.lfs_sha256 is not None:
            n_lfs += 1
            got = found.get(p)
            if p in skipped:
                have = (listing[p].lfs_sha256, listing[p].size)
                how = "the listed LFS oid (not downloaded)"
            elif got is None:
                problems.append(f"{p}: in the git tree, not read")
                continue
            else:
                have, how = (got.sha256, got.size), "the bytes downloaded"
            if have != (g.lfs_sha256, g.lfs_size):
                problems.append(f"{p}: {how} give sha256 {_short(have[0])} ({have[1]:,} bytes), "
                                f"the git tree's LFS pointer names {_short(g.lfs_sha256)} "
                                f"({g.lfs_size:,} bytes)")
            continue
        n_blob += 1
        if p in skipped:
            problems.append(f"{p}: proven by a listed LFS oid, but the git tree holds it as a "
                            "regular blob")
            continue
        blob = blob_ids.get(p)
        if blob is None:
            problems.append(f"{p}: in the git tree, not read")
        elif blob != g.blob_id:
            problems.append(f"{p}: the bytes downloaded have git blob id {_short(blob)}, the "
                            f"git tree holds {_short(g.blob_id)}")
    return Check(NAME, not problems, WHAT, expected=f"commit {sha} as git fetched it",
                 found=f"{len(problems)} differ; {len(tree.files)} files in the tree ({n_blob} "
                       f"by git blob id, {n_lfs} by LFS pointer), {tree.objects} objects "
                       "recomputed" if problems else
                       f"{len(tree.files)} files ({n_blob} by git blob id, {n_lfs} by LFS "
                       f"pointer), {tree.objects} objects recomputed",
                 where=where, details=problems)


__all__ = ["NAME", "check_git_objects", "fetch_revision", "is_pinned_commit"]
