"""Query instructions from the upstream mteb tasks, recorded at build time.

A subset whose spec names its upstream mteb dataset (``mteb = "mteb/<Task>"``) takes that task's
``prompt["query"]`` from the installed mteb. The build records them in its manifest
(``sources.instructions``), the task file carries them as each task's prompt, so mteb applies
them, and the card says so. Without mteb installed nothing is recorded (a warning says so).
"""

from __future__ import annotations

import importlib.util
import logging

from rcp_data.core.specs import SuiteSpec

log = logging.getLogger(__name__)


def mteb_instructions(spec: SuiteSpec, names: list[str]) -> dict[str, str] | None:
    """``{subset: prompt["query"]}`` of the named subsets' upstream mteb tasks; None when mteb
    is not installed or a task has no query prompt."""
    if importlib.util.find_spec("mteb") is None:
        log.warning("mteb is not installed: no query instructions are recorded, so the task "
                    "file carries none (pip install mteb, then build again)")
        return None
    import mteb

    out = {}
    for name in names:
        upstream = spec.subset(name).mteb.rsplit("/", 1)[-1]
        try:
            prompt = mteb.get_task(upstream).metadata.prompt
        except Exception as exc:  # noqa: BLE001 - any lookup failure: no instruction recorded
            log.warning("mteb %s has no task %s (%s): no query instructions recorded",
                        mteb.__version__, upstream, exc)
            return None
        text = prompt.get("query") if isinstance(prompt, dict) else prompt
        if not isinstance(text, str) or not text:
            log.warning("mteb task %s has no query prompt: no query instructions recorded",
                        upstream)
            return None
        out[name] = text
    return out


__all__ = ["mteb_instructions"]
