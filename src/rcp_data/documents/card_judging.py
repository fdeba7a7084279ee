"""The card's judge-run section: what ``rcp-data judge`` recorded in the build manifest
(``parameters.judging``, :func:`rcp_data.stages.judging.tables.judging_record`).

The judge model, the sha256 of the Stage A and Stage B prompts and of the rubric, the schedule,
and per stage Table 4's columns with the server's token usage, the wall time and the cut
census. A release built without a judge run's record has no such section (its card is
unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping

from rcp_data.model.manifest import BuildManifest

STAGE_NAMES = {"A": "Stage A (tournament)", "B": "Stage B (rubric)"}
HEADER = ("| stage | windows | windows per query | placements per document | reversed | calls "
          "| input tokens | output tokens | seconds in calls | invalid windows "
          "| documents cut | tokens cut |")


def judging_of(manifest: BuildManifest | None) -> Mapping | None:
    """The manifest's judge-run record, None when the build took none."""
    if manifest is None:
        return None
    judging = manifest.parameters.get("judging")
    return judging if isinstance(judging, Mapping) and judging.get("stages") else None


def _n(value: object, digits: int = 0) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _hash(value: object) -> str:
    return f"`{value}`" if value else "not recorded"


def judging_markdown(judging: Mapping) -> str:
    """The section's body (markdown, no heading)."""
    schedule = judging.get("schedule") or {}
    lines = [
        f"The judge `{judging.get('judge_model')}` answered every window below "
        f"(schedule preset `{schedule.get('preset')}`, seed {schedule.get('seed')}); tokens "
        f"were counted with {judging.get('token_counts') or 'the server'}.",
        "",
        f"- Stage A prompt sha256: {_hash(judging.get('prompt_a_sha256'))}",
        f"- Stage B prompt sha256: {_hash(judging.get('prompt_b_sha256'))}",
        f"- Rubric sha256: {_hash(judging.get('rubric_sha256'))} (criteria "
        f"{', '.join(judging.get('criteria') or []) or 'not recorded'})",
    ]
    wall = judging.get("wall_seconds")
    if wall is not None:
        lines.append(f"- Wall time: {_n(float(wall), 1)} s over {_n(judging.get('runs'))} "
                     "run(s)")
    lines += ["", HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
    for stage, u in (judging.get("stages") or {}).items():
        cells = [STAGE_NAMES.get(stage, stage), _n(u.get("windows")),
                 _n(u.get("windows_per_query"), 2), _n(u.get("placements_per_document"), 2),
                 _n(u.get("reversed")), _n(u.get("calls")), _n(u.get("input_tokens")),
                 _n(u.get("output_tokens")), _n(u.get("seconds_in_calls"), 1),
                 _n(u.get("invalid_windows")), _n(u.get("documents_cut")),
                 _n(u.get("tokens_cut"))]
        lines.append("| " + " | ".join(cells) + " |")
    invalid = [(stage, {k: v for k, v in (u.get("invalid_by_category") or {}).items() if v})
               for stage, u in (judging.get("stages") or {}).items()]
    for stage, cats in invalid:
        if cats:
            lines.append("")
            lines.append(f"{STAGE_NAMES.get(stage, stage)} invalid windows by cause: "
                         + ", ".join(f"{k} {v:,}" for k, v in cats.items()) + ".")
    return "\n".join(lines)


def judge_run_markdown(manifest: BuildManifest | None) -> str:
    """The section's body for a release's manifest, "" when its build took no judge run."""
    judging = judging_of(manifest)
    return judging_markdown(judging) if judging is not None else ""


__all__ = ["judge_run_markdown", "judging_markdown", "judging_of"]
