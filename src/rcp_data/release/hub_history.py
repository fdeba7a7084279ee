"""The Hub's own release history, and the rule a release to publish must keep with it.

Before any upload the publisher reads the branch head's ``provenance/releases.json`` and the
repo's tags (:func:`read_hub_history`); the release's history must extend them
(:func:`check_extends`): the same release numbers, tags and commit shas, in the same order, with
only the new release after them. A release built without the repo's history (release 1 again on
a repo holding releases 1-2) is refused naming the first difference, so no tag is ever made that
would leave ``rcp-data release list`` and ``rcp-data verify`` failing on the repo for good.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.errors import InputError, RefusedError
from rcp_data.core.hub_client import REPO_TYPE, HubClient, HubNotFound
from rcp_data.model.history import History, fill_known_shas, loads_history, same_commit
from rcp_data.model.layout import RELEASES_JSON

_RELEASE_TAG = re.compile(r"^v(\d+)-")


@dataclass(frozen=True)
class HubRelease:
    """One release as the Hub knows it: its number, tag and the commit its tag points at."""

    release: int
    tag: str
    sha: str | None


@dataclass(frozen=True)
class HubHistory:
    """The releases the Hub's head ``releases.json`` lists, with their tags' commits, and the
    release tags on the Hub (``v<N>-...``) that it does not list."""

    repo: str
    branch: str
    head: str
    releases: tuple[HubRelease, ...]
    stray_tags: tuple[HubRelease, ...] = ()

    @property
    def numbers(self) -> str:
        """The releases, as a user reads them: ``1 (v1-x), 2 (v2-x)``."""
        return ", ".join(f"{r.release} ({r.tag})" for r in self.releases) or "none"


def read_hub_history(client: HubClient, repo: str, branch: str, head: str,
                     tags: dict[str, str]) -> HubHistory:
    """The Hub's history of ``repo``: its ``releases.json`` at ``head`` (none: no release yet)
    and its release tags."""
    try:
        path = client.download_file(repo, RELEASES_JSON, head)
    except HubNotFound:
        history = None
    else:
        try:
            history = loads_history(Path(path).read_text(encoding="utf-8"),
                                    source=f"{repo}@{head[:12]}:{RELEASES_JSON}")
        except InputError as exc:
            raise RefusedError(f"the Hub's {RELEASES_JSON} of {repo} at {head[:12]} cannot be "
                               f"read ({exc.message}); nothing was uploaded") from exc
    listed = tuple(HubRelease(r.release, r.tag, tags.get(r.tag) or r.revision)
                   for r in (history.releases if history is not None else ()))
    known = {r.tag for r in listed}
    stray = tuple(HubRelease(int(m.group(1)), tag, sha) for tag, sha in sorted(tags.items())
                  if (m := _RELEASE_TAG.match(tag)) and tag not in known)
    return HubHistory(repo, branch, head, listed, stray)


def history_from_hub(client: HubClient, repo: str, revision: str = "main") -> History:
    """The history a new release of ``repo`` extends: the ``releases.json`` at ``revision``
    (a branch: its head), each release's sha filled in from its tag
    (``rcp-data build --history hf://datasets/OWNER/NAME``)."""
    with client.errors(f"the release history of {repo}@{revision}"):
        refs = client.api.list_repo_refs(repo, repo_type=REPO_TYPE)
        text = Path(client.download_file(repo, RELEASES_JSON, revision)).read_text(
            encoding="utf-8")
    history = loads_history(text, source=f"hf://datasets/{repo}@{revision}:{RELEASES_JSON}")
    return fill_known_shas(history, refs)


def _fix(hub: HubHistory) -> str:
    branch = "" if hub.branch == "main" else f"@{hub.branch}"
    return (f"rebuild it on the Hub's history with `rcp-data build ... --repo {hub.repo} "
            f"--history hf://datasets/{hub.repo}{branch}`")


def check_extends(hub: HubHistory, history: History) -> None:
    """Refuse (:class:`RefusedError`, nothing uploaded) unless ``history`` (the release's,
    its last entry the release to publish) extends the Hub's: every release the Hub lists is
    the entry of the same place with the same number, tag and commit, and every release tag on
    the Hub is one of the history's releases at the same commit."""
    ours = history.releases
    new = ours[-1]
    for i, theirs in enumerate(hub.releases):
        if i >= len(ours):
            raise RefusedError(
                f"{hub.repo} already holds releases {hub.numbers} on {hub.branch}, but this "
                f"release's history ends at release {new.release} ({new.tag}): publishing it "
                f"would contradict the Hub's history; {_fix(hub)}. Nothing was uploaded")
        mine = ours[i]
        if (mine.release, mine.tag) != (theirs.release, theirs.tag):
            raise RefusedError(
                f"release {mine.release} ({mine.tag}) of this release's history is not the "
                f"Hub's release {theirs.release} ({theirs.tag}) of {hub.repo} (the Hub holds "
                f"{hub.numbers}); {_fix(hub)}. Nothing was uploaded")
        if mine is not new and mine.revision and theirs.sha \
                and not same_commit(mine.revision, theirs.sha):
            raise RefusedError(
                f"this release's history says release {mine.release} ({mine.tag}) is "
                f"{mine.revision}, but on {hub.repo} it is {theirs.sha}; {_fix(hub)}. "
                "Nothing was uploaded")
    by_tag = {r.tag: r for r in ours}
    for stray in hub.stray_tags:
        mine = by_tag.get(stray.tag)
        if mine is None or mine.release != stray.release:
            raise RefusedError(
                f"{hub.repo} has tag {stray.tag} (release {stray.release}), which this "
                f"release's history does not list; {_fix(hub)}. Nothing was uploaded")
