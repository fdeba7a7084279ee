"""The card's judge-run section: what ``rcp-data judge`` recorded in the build manifest
(``parameters.judging``, :func:`rcp_data.judging.tables.judging_record`).

The judge model, the sha256 of the Stage A and Stage B prompts and of the rubric, the schedule,
and per stage Table 4's columns with the server's token usage, the wall time and the cut
census, in the sentences of ``templates/card_prose.md.j2`` (macro ``judge_run``). A release built without a judge run's record has no such section (its card is
unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping

from rcp_data.model.manifest import BuildManifest


def judging_of(manifest: BuildManifest | None) -> Mapping | None:
    """The manifest's judge-run record, None when the build took none."""
    if manifest is None:
        return None
    judging = manifest.parameters.get("judging")
    return judging if isinstance(judging, Mapping) and judging.get("stages") else None


def judging_markdown(judging: Mapping) -> str:
    """The section's body (markdown, no heading): the template's ``judge_run`` macro."""
    from rcp_data.documents.card_text import card_sentence

    return card_sentence("judge_run", judging)


def judge_run_markdown(manifest: BuildManifest | None) -> str:
    """The section's body for a release's manifest, "" when its build took no judge run."""
    judging = judging_of(manifest)
    return judging_markdown(judging) if judging is not None else ""


__all__ = ["judge_run_markdown", "judging_markdown", "judging_of"]
