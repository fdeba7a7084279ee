"""``rcp-data release cut``: one flow from a served judge to a checked release directory.

The steps are the commands a user could run one by one, each writing what the next reads, all in
one work folder::

    WORK/inputs/   build --until pools (the pools, with the --inputs' first-stage and reranker
                   runs), then judge run --out (judge/), then calibrate --inputs (calibration/)
    WORK/store/    the judge's store (append-only: a killed run resumes from it)
    WORK/release/  build --inputs WORK/inputs (with the pictures and Diagnostics), then the
                   release check of publish, uploading nothing

A step whose output is there is not run again (each output is written atomically, so being
there means being complete): a rerun with the same work folder continues where the last one
stopped, and a rerun after the end calls no judge. Publishing stays the user's: the flow ends
with the one ``rcp-data release publish`` command to run.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rcp_data.building.contract import CALIBRATION_DIR, JUDGE_DIR, JUDGE_JSON, JUDGING_FILE
from rcp_data.core.errors import UsageError
from rcp_data.core.io import read_json
from rcp_data.core.outputs import CALIBRATION
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.history import History, read_history
from rcp_data.model.layout import BUILD_MANIFEST, RELEASES_JSON
from rcp_data.release.pools_only import POOLS_ONLY

log = logging.getLogger(__name__)

STEPS = ("pools", "judge", "calibrate", "build", "check")


@dataclass(frozen=True)
class WorkFolder:
    """Where each step of the flow writes (see the module docstring)."""

    root: Path

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def release(self) -> Path:
        return self.root / "release"

    def done(self, step: str) -> bool:
        """Whether ``step``'s output is there (the check is always run again)."""
        marker = {"pools": self.inputs / POOLS_ONLY,
                  "judge": self.inputs / JUDGE_DIR / JUDGING_FILE,
                  "calibrate": self.inputs / CALIBRATION_DIR / CALIBRATION.manifest,
                  "build": self.release / BUILD_MANIFEST}.get(step)
        return marker is not None and marker.is_file()


@dataclass(frozen=True)
class CutResult:
    """What :func:`cut_release` did: the steps run now and those found done, the release
    directory, its tag and the publish command to run."""

    release: Path
    repo: str
    tag: str | None
    ran: tuple[str, ...]
    skipped: tuple[str, ...]
    publish_command: str

    def to_json(self) -> dict:
        return {"release": str(self.release), "repo": self.repo, "tag": self.tag,
                "ran": list(self.ran), "skipped": list(self.skipped),
                "publish": self.publish_command}


def publish_command(release: Path, repo: str) -> str:
    """The one command that publishes the release the flow built."""
    return f"rcp-data release publish {shlex.quote(str(release))} --repo {shlex.quote(repo)}"


def _same_judge(work: WorkFolder, model: str, judge_name: str | None) -> None:
    """A finished judge step of another judge is refused (its work folder is not this run's)."""
    info = read_json(work.inputs / JUDGE_DIR / JUDGE_JSON)
    served = info.get("served_model", info.get("model"))
    if served != model or (judge_name is not None and info.get("model") != judge_name):
        raise UsageError(f"--work {work.root} holds the judge run of {served!r} (named "
                         f"{info.get('model')!r}), not of --model {model!r}: give another "
                         "--work folder")


def cut_release(spec: SuiteSpec, work: str | Path, inputs: str | Path, *, repo: str,
                judge_options: Mapping[str, Any], source_options: Mapping[str, str] | None = None,
                previous: History | str | Path | None = None, previous_revision: str | None = None,
                summary: str = "", date: str | None = None, rule: str = "complete",
                device: str = "cpu", progress: bool = False,
                step: Callable[[str, object], None] | None = None) -> CutResult:
    """Run the steps not done yet in ``work``: pools of ``spec`` (with ``inputs``' first-stage
    and reranker runs), the judge (``judge_options``: the keyword arguments of
    :func:`rcp_data.release.judge_run.judge` but the pool, store and out), the calibration
    (reading rule ``rule``), the build for ``repo`` (on the history ``previous``) and the
    release check. ``step(name, result)`` is told of each step run now (its result: the
    counts, :class:`~rcp_data.release.judge_run.JudgeResult`,
    :class:`~rcp_data.release.calibrate_run.CalibrateResult`,
    :class:`~rcp_data.release.cut.BuildResult`, the check's report)."""
    from rcp_data.checks.release_check import check_release_dir
    from rcp_data.core.progress import bars
    from rcp_data.release.calibrate_run import calibrate
    from rcp_data.release.cut import build_release_dir
    from rcp_data.release.judge_run import judge
    from rcp_data.release.pools_only import build_pools_only

    if judge_options.get("stages", "AB") != "AB":
        raise UsageError("release cut judges both stages (a calibration needs Stage A and B)")
    work = WorkFolder(Path(work))
    tell = step or (lambda name, result: None)
    ran: list[str] = []
    skipped: list[str] = []
    options = None if source_options is None else dict(source_options)
    tag = None

    def mark(name: str, result: object) -> None:
        ran.append(name)
        tell(name, result)

    if work.done("pools"):
        skipped.append("pools")
    else:
        mark("pools", build_pools_only(spec, Path(inputs), work.inputs, source_options=options))
    if work.done("judge"):
        _same_judge(work, str(judge_options["model"]), judge_options.get("judge_name"))
        skipped.append("judge")
    else:
        mark("judge", judge(work.inputs, work.store, work.inputs,
                            **{**judge_options, "progress": progress}))
    if work.done("calibrate"):
        skipped.append("calibrate")
    else:
        mark("calibrate", calibrate(inputs=work.inputs, rule=rule, device=device,
                                    progress=progress))
    if work.done("build"):
        skipped.append("build")
    else:
        with bars(progress):
            built = build_release_dir(spec, work.inputs, work.release, repo=repo,
                                      source_options=options, previous=previous,
                                      previous_revision=previous_revision, summary=summary,
                                      date=date)
        tag = built.tag
        mark("build", built)
    report = check_release_dir(work.release)
    report.raise_if_failed()
    mark("check", report)
    if tag is None:
        tag = read_history(work.release / RELEASES_JSON).releases[-1].tag
    return CutResult(work.release, repo, tag, tuple(ran), tuple(skipped),
                     publish_command(work.release, repo))


__all__ = ["STEPS", "CutResult", "WorkFolder", "cut_release", "publish_command"]
