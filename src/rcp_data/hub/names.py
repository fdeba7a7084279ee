"""Names the local Hub accepts: repository ids, paths inside a repository, branch and tag names.

Ref names follow ``git check-ref-format`` (checked on the full ``refs/heads/<name>`` or
``refs/tags/<name>``), and more strictly: a short name may not start with ``refs/``, be ``HEAD``
or look like a full commit sha, so that no branch or tag can shadow another revision.
"""

from __future__ import annotations

import re

from rcp_data.hub.errors import HubError, shorten

MAX_PATH_BYTES = 4096
MAX_COMPONENT_BYTES = 255
MAX_REF_BYTES = 255

_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_-])?$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def validate_repo_name(part: str, what: str) -> None:
    """A namespace or repository name: letters, digits, ``-``, ``_``, ``.``; 400 otherwise."""
    if not _NAME_RE.match(part) or part.endswith(".git") or ".." in part:
        raise HubError(
            400, f"Invalid {what} {shorten(part)!r}: use letters, digits, '-', '_' and '.'"
        )


def _is_git_dir(component: str) -> bool:
    """``.git`` as git itself refuses it in a tree: any case, trailing dots or spaces, 8.3 alias."""
    lowered = component.lower()
    return lowered.rstrip(". ") == ".git" or lowered == "git~1"


def validate_path(path: object) -> str:
    """A file or folder path in a repository: relative, ``/``-separated, no empty, ``.``, ``..``
    or ``.git`` component, no control character, at most 4096 bytes. Returns it; 400 otherwise."""
    if not isinstance(path, str) or not path:
        raise HubError(400, "Missing or invalid path in repository")
    parts = path.split("/")
    bad = (
        path.startswith("/")
        or _CONTROL.search(path) is not None
        or len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES
        or any(p in ("", ".", "..") for p in parts)
        or any(len(p.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES for p in parts)
    )
    if bad:
        raise HubError(400, f"Invalid path in repository: {shorten(path)!r}")
    if any(_is_git_dir(p) for p in parts):
        raise HubError(400, f"Invalid path in repository (a '.git' component): {shorten(path)!r}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise HubError(400, "Invalid path in repository: not valid UTF-8") from None
    return path


def check_ref_format(ref: str) -> bool:
    """Whether the full ref name ``ref`` passes ``git check-ref-format`` (its ten rules)."""
    if not ref or ref == "@" or "/" not in ref:
        return False
    if ref.startswith("/") or ref.endswith("/") or ref.endswith("."):
        return False
    if ".." in ref or "@{" in ref or _REF_FORBIDDEN.search(ref):
        return False
    for component in ref.split("/"):
        if not component or component.startswith(".") or component.endswith(".lock"):
            return False
    return True


def validate_ref_name(name: object, kind: str) -> str:
    """A branch (``kind`` "heads") or tag ("tags") short name; returns it, 400 otherwise."""
    what = "branch" if kind == "heads" else "tag"
    if not isinstance(name, str) or not name:
        raise HubError(400, f"Missing {what} name")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise HubError(400, f"Invalid {what} name: not valid UTF-8") from None
    if name.startswith("refs/") or name == "HEAD" or SHA_RE.match(name):
        raise HubError(
            400,
            f"Invalid {what} name {shorten(name)!r}: it would shadow another revision "
            "(names may not start with 'refs/', be 'HEAD' or look like a commit sha)",
        )
    if size > MAX_REF_BYTES or not check_ref_format(f"refs/{kind}/{name}"):
        raise HubError(
            400, f"Invalid {what} name {shorten(name)!r} (see git check-ref-format)"
        )
    return name
