"""One redaction of secrets for everything rcp-data prints or writes: the userinfo of a URL
(``http://user:secret@host/`` becomes ``http://***@host/``) and a bearer token, in log records
(:class:`RedactFilter`), tracebacks (:func:`redact`) and stored fields (:func:`strip_userinfo`).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

# scheme://userinfo@ : the userinfo has no "/", "@" or whitespace
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"<>]*@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")


def redact(text: object) -> str:
    """``text`` with every URL's userinfo (``user:secret@``) replaced by ``***@`` and any bearer
    token by ``[redacted]``."""
    text = str(text)
    if "@" in text:
        text = _USERINFO.sub(r"\1***@", text)
    if "earer" in text:
        text = _BEARER.sub(r"\1[redacted]", text)
    return text


def strip_userinfo(url: str) -> str:
    """``url`` as it may be stored: ``http://host:port/path``, without user and password."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class RedactFilter(logging.Filter):
    """A handler's filter: the record's message, formatted, then redacted (its exception text
    too), so that no handler prints a secret whatever logger the record came from."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is the logger's own problem
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
