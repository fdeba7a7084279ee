"""Typed errors with messages a user can act on, each carrying the CLI exit code."""

from __future__ import annotations

import contextlib


class RcpDataError(Exception):
    """Base class: a problem the user can fix. ``exit_code`` is what the CLI returns."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(RcpDataError):
    """Bad input data: names the file, and where possible the row and field."""

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
    """A table lacks a column or has the wrong type."""


class UsageError(RcpDataError):
    """The command was called wrongly."""


class RefusedError(RcpDataError):
    """An operation was refused on purpose (moved branch, tag elsewhere, failed checks)."""

    exit_code = 1


class VerificationFailed(RcpDataError):
    """A verification or comparison check failed."""

    exit_code = 1


def shown(value: object) -> str:
    """A value as a message shows it: numpy scalars as plain numbers (``1.5``, never
    ``np.float64(1.5)``), strings quoted."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, str | bytes):
        with contextlib.suppress(TypeError, ValueError):
            value = item()
    return repr(value)
