"""Typed errors with messages a user can act on, each carrying the CLI exit code.

Each error also inherits the built-in exception of the same meaning, so that a caller of the
Python API can catch it by meaning without importing the toolkit's names:

=====================  ===========================  =========
error                  also a                       exit code
=====================  ===========================  =========
:class:`InputError`    :class:`ValueError`          2
:class:`SchemaError`   :class:`ValueError`          2
:class:`NotFoundError` :class:`FileNotFoundError`   2
                       (and :class:`ValueError`)
:class:`UsageError`    :class:`ValueError`          2
:class:`RefusedError`  :class:`PermissionError`     1
:class:`VerificationFailed` :class:`AssertionError` 1
:class:`HubUnavailable` :class:`ConnectionError`    2
:class:`HubNotFound`   :class:`FileNotFoundError`   2
                       (and :class:`ConnectionError`)
:class:`BranchMoved`   :class:`PermissionError`     1
:class:`HubConflict`   :class:`PermissionError`     1
:class:`GitUnavailable` :class:`ConnectionError`    2
:class:`EndpointError` :class:`ConnectionError`     2
:class:`OutageError`   :class:`ConnectionError`     1
:class:`MissingExtra`  :class:`ValueError`          2
=====================  ===========================  =========

Every public exception of the package is defined here (the modules that raise them import
them from here).

``except RcpDataError`` catches them all. The CLI's error boundary asks for
:class:`RcpDataError` before it asks for :class:`OSError`, so the exit codes do not depend on
the built-in bases.
"""

from __future__ import annotations

import contextlib


class RcpDataError(Exception):
    """Base class: a problem the user can fix. ``exit_code`` is what the CLI returns."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(RcpDataError, ValueError):
    """Bad input data: names the file, and where possible the row and field.

    Also a :class:`ValueError` (exit code 2)."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        full = f"{': '.join([', '.join(where), message]) if where else message}"
        super().__init__(full)
        self.path = path
        self.row = row
        self.field = field


class SchemaError(InputError):
    """A table lacks a column or has the wrong type (a :class:`ValueError`, exit code 2)."""


class NotFoundError(InputError, FileNotFoundError):
    """A release directory, file, Hub repo or revision that was named does not exist.

    Also a :class:`FileNotFoundError` (so an :class:`OSError`) and, as an :class:`InputError`,
    a :class:`ValueError`; exit code 2. ``errno`` is None: nothing asked the operating system.
    """


class UsageError(RcpDataError, ValueError):
    """The command or function was called wrongly (an unknown option value, an impossible
    combination). Also a :class:`ValueError`; exit code 2."""


class RefusedError(RcpDataError, PermissionError):
    """An operation was refused on purpose (moved branch, tag elsewhere, failed checks).

    Also a :class:`PermissionError` (``errno`` None); exit code 1."""

    exit_code = 1


class VerificationFailed(RcpDataError, AssertionError):
    """A verification or comparison check failed (also an :class:`AssertionError`; exit
    code 1)."""

    exit_code = 1


class HubUnavailable(RcpDataError, ConnectionError):
    """The Hub, a repo or a revision cannot be reached (a :class:`ConnectionError`; exit 2:
    the command could not run)."""


class HubNotFound(HubUnavailable, NotFoundError):
    """The repo, revision or file does not exist on the Hub (exit 2; a
    :class:`NotFoundError`, so a :class:`FileNotFoundError` too)."""


class BranchMoved(RefusedError):
    """412: the branch is no longer at the parent commit a commit was built on (exit 1)."""


class HubConflict(RefusedError):
    """409: the Hub refused a change that conflicts with what it holds (exit 1)."""


class GitUnavailable(RcpDataError, ConnectionError):
    """The endpoint does not serve the repository over git's smart HTTP (a
    :class:`ConnectionError`; exit 2)."""


class EndpointError(RcpDataError, ConnectionError):
    """A judge endpoint cannot serve this run (unreachable, unknown model, bad credentials;
    a :class:`ConnectionError`, exit 2)."""


class OutageError(RcpDataError, ConnectionError):
    """Every judge replica stayed down longer than the bounded wait (a
    :class:`ConnectionError`; exit 1)."""

    exit_code = 1


class IncompleteStore(RcpDataError):
    """A judge store lacks planned windows: no tables are written from it (exit 1; a rerun
    asks only what is missing)."""

    exit_code = 1


class MissingExtra(UsageError):
    """A command needs an optional extra that is not installed (exit 2)."""

    def __init__(self, extra: str, module: str) -> None:
        super().__init__(f"this command needs the {extra!r} extra (module {module!r} is not "
                         f"installed): pip install 'rcp-data[{extra}]'")
        self.extra = extra


class HashingStopped(RuntimeError):
    """:func:`~rcp_data.core.files.hash_files` was told to stop (its caller failed first): a
    signal between threads, not a user's error."""


def shown(value: object) -> str:
    """A value as a message shows it: numpy scalars as plain numbers (``1.5``, never
    ``np.float64(1.5)``), strings quoted."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes):
        with contextlib.suppress(TypeError, ValueError):
            value = item()
    return repr(value)
