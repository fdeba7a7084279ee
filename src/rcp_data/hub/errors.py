"""Errors of the local Hub: each carries the HTTP status (and ``X-Error-Code``) it answers with.

Messages reach clients, so they name the request's own inputs (a path in the repository, a
revision) but never a path on the server's disk, a git command's stderr or a traceback.
"""

from __future__ import annotations


class HubError(Exception):
    """An error the HTTP layer turns into a status code and, where set, an ``X-Error-Code``."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = dict(headers or {})


class ClientGone(Exception):
    """The client closed the connection or stopped sending: nothing can be answered."""


def repo_not_found(repo_id: str) -> HubError:
    return HubError(404, f"Repository {repo_id} not found", "RepoNotFound")


def revision_not_found(revision: str) -> HubError:
    return HubError(404, f"Invalid rev id: {shorten(revision)}", "RevisionNotFound")


def entry_not_found(path: str) -> HubError:
    return HubError(404, f"Entry not found: {shorten(path)}", "EntryNotFound")


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, for echoing a client's input in a message."""
    return text if len(text) <= limit else f"{text[:limit]}..."
