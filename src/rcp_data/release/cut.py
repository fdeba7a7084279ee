"""Cut a release: a suite's sources and a judge run's builder inputs -> a publishable directory.

One function for everyone who builds (``rcp-data build``, the demo, the Python API):
:func:`build_release_dir` reads the builder inputs and the suite's sources (its reader, named by
the spec, :mod:`rcp_data.sources.registry`), builds the data and provenance
(:func:`rcp_data.building.build.build_release`), its pictures and Diagnostics numbers
(:func:`write_release_diagnostics`) and, unless ``prepare`` is False, adds
``provenance/releases.json`` (the repo's history with this release appended as current), the
mteb task file and the card (:func:`rcp_data.release.prepare.prepare_release`). All of it is
written to a temporary folder beside ``out`` and moved into place only when complete.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from pathlib import Path

from rcp_data.core.gains import DEFAULT_LINK
from rcp_data.core.outputs import check_output_dir
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.history import History, history_path, read_history
from rcp_data.model.layout import RELEASE
from rcp_data.model.manifest import BuildManifest
from rcp_data.release.prepare import prepare_release
from rcp_data.sources.base import SuiteSource

# the build's counts summed over the subsets, in the order they are reported
TOTALS = ("queries", "pool_pairs", "gt_injected", "qrels_rows")


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build_release_dir` wrote: the release directory and its numbers.

    ``release``, ``tag`` and ``repo`` are the release as its history names it (None when the
    directory was not prepared); ``totals`` sums :data:`TOTALS` over the subsets.
    """

    out: Path
    suite: str
    synthetic: bool
    subsets: int
    totals: dict[str, int]
    release: int | None = None
    tag: str | None = None
    repo: str | None = None
    history: History | None = field(default=None, repr=False, compare=False)
    manifest: BuildManifest | None = field(default=None, repr=False, compare=False)

    @property
    def prepared(self) -> bool:
        return self.history is not None

    def to_dict(self) -> dict:
        """The JSON object of ``rcp-data build --json``."""
        out = {"out": str(self.out), "suite": self.suite, "synthetic": self.synthetic,
               **self.totals}
        if self.prepared:
            out.update(release=self.release, tag=self.tag, repo=self.repo)
        return out


def project_history(suite: str, repo: str) -> History | None:
    """The project's history of ``suite`` (``release/<suite>.json``) when it tracks ``repo``."""
    path = history_path(suite)
    if path.exists():
        history = read_history(path)
        if history.repo == repo:
            return history
    return None


def build_totals(manifest: BuildManifest) -> dict[str, int]:
    """:data:`TOTALS` of a build manifest, summed over its subsets."""
    return {k: sum(c.get(k, 0) for c in manifest.counts.values()
                   if isinstance(c.get(k, 0), int))
            for k in TOTALS}


def write_release_diagnostics(root: Path, spec: SuiteSpec) -> list[Path]:
    """Write the pictures and ``provenance/diagnostics.json`` of the built release ``root``
    (:func:`rcp_data.documents.diagnostics_files.write_diagnostics`) and list them in its
    build manifest; returns the paths written."""
    from rcp_data.documents.diagnostics_files import write_diagnostics
    from rcp_data.model.manifest import record_content

    # the Diagnostics recompute steps the build has logged already (calibration verdicts, the
    # replay): their INFO lines are not said a second time
    quiet = [logging.getLogger(name) for name in ("rcp_data.calibration", "rcp_data.scoring")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(max(q.getEffectiveLevel(), logging.WARNING))
    try:
        written = write_diagnostics(root, spec)
    finally:
        for q, level in zip(quiet, levels, strict=True):
            q.setLevel(level)
    logging.getLogger(__name__).info("diagnostics: %d files written (%s)", len(written),
                                     ", ".join(p.name for p in written))
    record_content(root)
    return written


def build_release_dir(spec: SuiteSpec, inputs, out: Path, *, source: SuiteSource | None = None,
                      source_options: dict | None = None, repo: str | None = None,
                      previous: History | Path | None = None, summary: str = "",
                      date: str | None = None, previous_revision: str | None = None,
                      link: str | None = None, force: bool = False, prepare: bool = True,
                      parameters: dict | None = None) -> BuildResult:
    """Build the release directory ``out`` of suite ``spec``; return what was written.

    ``inputs``: the builder inputs folder (judge/, first_stage/, runs/) or its
    :class:`~rcp_data.building.contract.BuildInputs`. ``source``: the suite's sources, read here by
    the spec's reader with ``source_options`` when None. ``repo`` defaults to the spec's;
    ``previous`` is the repo's history so far (a :class:`History` or its file; None: a new
    history). ``out`` must be new or empty, or (``force``) a release folder built earlier, and
    apart from ``inputs``; it is checked before anything is read. With ``prepare`` False only
    the data and provenance are written (no releases.json, task file, card).
    """
    from rcp_data.building.build import build_release
    from rcp_data.building.contract import BuildInputs, read_inputs

    out = Path(out)
    root = inputs.root if isinstance(inputs, BuildInputs) else Path(inputs)
    check_output_dir(out, RELEASE, inputs={"--inputs": root}, force=force)
    repo = repo or spec.repo
    if isinstance(previous, (str, Path)):
        previous = read_history(Path(previous))
    if not isinstance(inputs, BuildInputs):
        inputs = read_inputs(root)
    if source is None:
        from rcp_data.sources.registry import read_suite

        source = read_suite(spec, source_options)
    prepared: list[History] = []

    def finish(tmp: Path) -> None:  # inside the temporary folder: nothing can fail after it
        write_release_diagnostics(tmp, spec)
        if prepare:
            prepared.append(prepare_release(
                tmp, spec, repo, previous=previous, summary=summary,
                date=date or dt.date.today().isoformat(), previous_revision=previous_revision))

    manifest = build_release(spec, source, inputs, out, link=link or DEFAULT_LINK,
                             parameters=parameters, force=force, finish=finish)
    history = prepared[0] if prepared else None
    current = history.current if history is not None else None
    return BuildResult(
        out=out, suite=spec.name, synthetic=manifest.synthetic,
        subsets=len(manifest.counts), totals=build_totals(manifest),
        release=current.release if current else None, tag=current.tag if current else None,
        repo=repo if current else None, history=history, manifest=manifest)


__all__ = ["TOTALS", "BuildResult", "build_release_dir", "build_totals", "project_history",
           "write_release_diagnostics"]
