"""Listing a repo's releases: the Hub's refs and the repo's releases.json side by side.

Flags every disagreement: a moved tag (the tag names another commit than releases.json), a
release whose tag is missing, a tag no release names, a revision not on the branch, and an
inconsistent releases.json.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.hub_client import REPO_TYPE, HubClient, HubNotFound
from rcp_data.core.io import loads_json
from rcp_data.model.card_format import escape_cell
from rcp_data.model.history import History, loads_history, same_commit
from rcp_data.model.layout import RELEASES_JSON
from rcp_data.release.publish import check_repo_id

log = logging.getLogger(__name__)


@dataclass
class ReleaseRow:
    """One line of the listing: a release of releases.json, a Hub tag, or both."""

    tag: str
    release: int | None = None
    status: str | None = None
    json_revision: str | None = None     # releases.json's revision (None: the holding commit)
    hub_revision: str | None = None      # the commit the Hub's tag points at
    flags: list[str] = field(default_factory=list)


@dataclass
class Listing:
    repo: str
    branch: str
    head: str | None
    rows: list[ReleaseRow]
    problems: list[str]
    history: History | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and not any(r.flags for r in self.rows)

    def to_dict(self) -> dict:
        return {"repo": self.repo, "branch": self.branch, "head": self.head, "ok": self.ok,
                "problems": self.problems, "releases": [asdict(r) for r in self.rows]}


def _history_at(client: HubClient, repo: str, revision: str
                ) -> tuple[History | None, list[str]]:
    try:
        path = client.download_file(repo, RELEASES_JSON, revision)
    except HubNotFound:
        return None, [f"{RELEASES_JSON} is missing at {revision}"]
    text = Path(path).read_text(encoding="utf-8")
    try:
        return loads_history(text, source=f"{RELEASES_JSON}@{revision[:12]}"), []
    except InputError as exc:
        # still list what can be read, but say why the file is not valid
        try:
            return (History.from_dict(loads_json(text, source=RELEASES_JSON),
                                      source=RELEASES_JSON), [exc.message])
        except InputError:
            return None, [exc.message]


def _blob(client: HubClient, repo: str, revision: str) -> str | None:
    try:
        with client.errors(f"{RELEASES_JSON} of {repo}@{revision}"):
            info = client.api.get_paths_info(repo, [RELEASES_JSON], revision=revision,
                                             repo_type=REPO_TYPE)
    except HubNotFound:
        return None
    return getattr(info[0], "blob_id", None) if info else None


def list_releases(repo: str, *, branch: str = "main", client: HubClient | None = None
                  ) -> Listing:
    """Compare the Hub's tags with ``provenance/releases.json`` on ``branch``."""
    check_repo_id(repo)
    client = client or HubClient.from_env()
    refs = client.refs(repo)
    heads = {b.name: b.target_commit for b in refs.branches}
    tags = {t.name: t.target_commit for t in refs.tags}
    head = heads.get(branch)
    problems: list[str] = []
    if head is None:
        return Listing(repo, branch, None, [ReleaseRow(t, hub_revision=s, flags=[
            "tag no release names (the branch has no releases.json)"]) for t, s in tags.items()],
            [f"branch {branch} does not exist"])
    with client.errors(f"the history of {repo}@{head}"):
        chain = [c.commit_id
                 for c in client.api.list_repo_commits(repo, repo_type=REPO_TYPE, revision=head)]
    history, found = _history_at(client, repo, head)
    problems += found
    if history is not None and history.repo != repo:
        problems.append(f"{RELEASES_JSON} names repo {history.repo}, not {repo}")
    rows: list[ReleaseRow] = []
    named = set()
    head_blob = None
    for r in history.releases if history else ():
        named.add(r.tag)
        row = ReleaseRow(r.tag, r.release, r.status, r.revision, tags.get(r.tag))
        hub = row.hub_revision
        if hub is None:
            row.flags.append("release whose tag is missing on the Hub")
        if r.revision:
            if hub and not same_commit(hub, r.revision):
                row.flags.append(f"moved tag: the Hub's tag points at {hub}, releases.json "
                                 f"names {r.revision}")
            if not any(same_commit(r.revision, c) for c in chain):
                row.flags.append(f"revision {r.revision} is not in the history of {branch}")
        elif hub:
            # null: the commit that holds this releases.json; the tag must hold the same file
            head_blob = head_blob or _blob(client, repo, head)
            if hub not in chain:
                row.flags.append(f"the tag's commit {hub} is not in the history of {branch}")
            elif _blob(client, repo, hub) != head_blob:
                row.flags.append(f"moved tag? releases.json gives this release revision null "
                                 f"(the commit holding it), but the tag's commit {hub} holds "
                                 "another releases.json")
        rows.append(row)
    for tag, sha in sorted(tags.items()):
        if tag not in named:
            rows.append(ReleaseRow(tag, hub_revision=sha, flags=["tag no release names"]))
    listing = Listing(repo, branch, head, rows, problems, history)
    log.info("listed %s: %d release(s), %d tag(s), %s", repo, len(named), len(tags),
             "consistent" if listing.ok else "DISAGREEMENTS")
    return listing


def render_listing(listing: Listing) -> str:
    """A plain-text table of the listing, disagreements marked ``!``."""
    lines = [escape_cell(f"{listing.repo} (branch {listing.branch} at {listing.head or '-'})",
                         markdown=False), ""]
    header = ("release", "tag", "status", "releases.json revision", "Hub tag -> commit")
    table = [header]
    for r in listing.rows:
        table.append(tuple(escape_cell(str(cell), markdown=False) for cell in (
            r.release if r.release is not None else "-",
            r.tag,
            r.status or "-",
            r.json_revision or ("(this commit)" if r.release is not None else "-"),
            r.hub_revision or "(no tag)",
        )))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    flagged = [(r, f) for r in listing.rows for f in r.flags]
    if flagged or listing.problems:
        lines.append("")
        for p in listing.problems:
            lines.append(f"! {escape_cell(p, markdown=False)}")
        for r, f in flagged:
            lines.append(f"! {escape_cell(f'{r.tag}: {f}', markdown=False)}")
    else:
        lines += ["", "tags and releases.json agree"]
    return "\n".join(lines) + "\n"
