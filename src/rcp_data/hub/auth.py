"""Who may write to the local Hub: the real Hub's auth path, with one accepted token.

Reads stay open (every repository is a public dataset). Every mutating request (create or
delete a repo, preupload, commit, create or delete a tag or branch, an LFS ``upload`` batch)
needs ``Authorization: Bearer <token>``; without it the answer is 401 with the real Hub's body
(``{"error": "Invalid username or password."}``; a wrong token: ``"Invalid credentials in
Authorization header"``), and a read-only server answers every write 403.

LFS objects are PUT (and multipart uploads completed) on URLs the batch answer hands out, as
the real Hub hands out pre-signed storage URLs: ``huggingface_hub`` sends no token there. So
those URLs carry ``expires`` and ``sig`` (an HMAC of the repository, the object, its size and
the expiry, with a key made at start-up); a PUT without a valid signature is 403.

The token is read from a file (``token_file``) or generated into ``<root>/.hub-token`` (mode
0600); it is never logged, and ``LocalHub.token`` gives it to in-process callers.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

from rcp_data.hub.errors import HubError

TOKEN_FILE = ".hub-token"
SIGNED_URL_SECONDS = 3600
MISSING_TOKEN = "Invalid username or password."
BAD_TOKEN = "Invalid credentials in Authorization header"
READ_ONLY = "This local Hub is read-only: writes are refused"


def read_token_file(path: Path) -> str:
    """The token in ``path`` (its first line, stripped); ValueError when empty."""
    token = Path(path).read_text(encoding="utf-8").strip().splitlines()
    if not token or not token[0].strip():
        raise ValueError(f"the token file {path} is empty")
    return token[0].strip()


def generate_token_file(root: Path) -> tuple[str, Path]:
    """A new token written to ``root/.hub-token`` (mode 0600, replacing an earlier one)."""
    path = Path(root) / TOKEN_FILE
    token = f"hf_local_{secrets.token_urlsafe(24)}"
    tmp = path.with_name(f"{TOKEN_FILE}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)   # a link planted there is never written through
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return token, path


def check_write(headers, token: str | None, read_only: bool) -> None:
    """Refuse a write: 403 on a read-only server, 401 without the accepted bearer token
    (``token`` None: writes are open)."""
    if read_only:
        raise HubError(403, READ_ONLY)
    if token is None:
        return
    value = headers.get("Authorization") or ""
    scheme, _, given = value.strip().partition(" ")
    if not value:
        raise HubError(401, MISSING_TOKEN)
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                             token.encode()):
        raise HubError(401, BAD_TOKEN)


class UrlSigner:
    """Signs and checks the LFS upload URLs handed out by an authorized batch request."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def _mac(self, scope: str, oid: str, size: int, expires: int) -> str:
        msg = f"{scope}\n{oid}\n{size}\n{expires}".encode()
        return hmac.new(self._key, msg, hashlib.sha256).hexdigest()

    def query(self, scope: str, oid: str, size: int) -> str:
        """``size=..&expires=..&sig=..`` for an upload of ``oid`` into ``scope`` (the repo)."""
        expires = int(time.time()) + SIGNED_URL_SECONDS
        return f"size={size}&expires={expires}&sig={self._mac(scope, oid, size, expires)}"

    def check(self, scope: str, oid: str, size: int, query: dict[str, list[str]]) -> None:
        """403 unless ``query`` carries a valid, unexpired signature for this upload."""
        expires = query.get("expires", [""])[-1]
        sig = query.get("sig", [""])[-1]
        if not expires.isdigit() or len(expires) > 12 or int(expires) < time.time():
            raise HubError(403, "LFS upload URL missing, expired or not signed: ask the batch "
                           "API for a new one")
        if not hmac.compare_digest(sig.encode(), self._mac(scope, oid, size, int(expires)).encode()):
            raise HubError(403, "LFS upload URL signature does not match")


__all__ = ["TOKEN_FILE", "UrlSigner", "check_write", "generate_token_file", "read_token_file"]
