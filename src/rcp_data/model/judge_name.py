"""The judge's name for people: what a release's tag (``v<N>-<name>``), card and releases.json
call the judge.

A served model id is that name only when it is a Hub-style id (``owner/name``); a server that
names its model by a file path (llama.cpp serves ``/…/model.q4_1.gguf``) or by a bare alias
needs ``--judge-name``, since a tag is never moved and would carry the path for good. The id as
served stays in the provenance (the judging store's identity, ``judge.json``'s
``served_model``).
"""

from __future__ import annotations

import re

from rcp_data.core.errors import UsageError

_HUB_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
                     r"/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$")
WEIGHT_SUFFIXES = (".gguf", ".bin", ".safetensors", ".pt", ".pth", ".ckpt", ".onnx", ".ggml")
MAX_NAME = 64


def served_id_problem(model: str) -> str | None:
    """Why the served model id ``model`` cannot name the judge (None: it can, a Hub id)."""
    low = model.strip().lower()
    if low.startswith(("/", ".", "~")) or "\\" in low or low.count("/") > 1:
        return "looks like a file path"
    if low.endswith(WEIGHT_SUFFIXES):
        return "names a weights file"
    if not _HUB_ID.match(model) or "--" in model or ".." in model or len(model) > 96:
        return "is not a Hub model id (OWNER/NAME)"
    return None


def check_judge_name(name: str) -> str:
    """``name`` if it is a valid tag fragment (``v<N>-<name>`` a Hub and git tag): lowercase
    letters, digits, '.', '_' and '-', starting and ending with a letter or digit, no '..',
    at most 64 characters; else :class:`UsageError` (exit 2)."""
    if not (_NAME.match(name) and ".." not in name and not name.endswith(".lock")
            and len(name) <= MAX_NAME):
        raise UsageError(
            f"--judge-name {name!r} cannot be part of a release tag v<N>-<name>: use lowercase "
            "letters, digits, '.', '_' and '-', starting and ending with a letter or digit, "
            f"no '..', at most {MAX_NAME} characters (e.g. smollm2-135m-q4)")
    return name


def judge_name(model: str, given: str | None) -> str:
    """The judge's name: ``given`` (validated), else the served id when it is a Hub id; a
    path-like or bare id without ``given`` is refused (:class:`UsageError`, exit 2)."""
    if given is not None:
        return check_judge_name(given)
    problem = served_id_problem(model)
    if problem:
        raise UsageError(
            f"the served model id {model!r} {problem}; it would become the release's "
            "permanent tag. Pass --judge-name NAME (e.g. --judge-name smollm2-135m-q4): the "
            "tag becomes v<N>-NAME, and the served id stays in the provenance")
    return model
