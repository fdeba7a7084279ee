"""The judging schedules' settings: presets ``full``, ``reduced`` and ``stage-b-only``.

Settings are placements per document, so a schedule scales with the pool: a phase of ``p``
placements asks ``round(p * n / w)`` windows of ``w = min(window, n)`` documents of a pool of
``n`` (ties to even). At a pool of 150 the ``full`` preset gives the paper's counts (App. C.2,
Table 2, Table 4): 53 random and 27 stratified windows, each shown again reversed (160 calls),
plus 7 adaptive batches of 8 windows: 216 Stage A calls, 14.4 windows per document; Stage B 100
windows of 10 (6.67 placements per document), the first half balanced.

``reduced`` is TREC-DL's protocol (App. C.7): no reversed copies and fewer adaptive windows per
passage. The paper gives its outcome, not its settings (Table 4: 325 and 375 calls, 11.27 and
13.08 windows per passage at a mean pool of 287; Stage B 113 windows, 3.92-3.94 placements);
the placements below are this project's choice that lands in that range for pools of 198-585.
``stage-b-only`` is ViDoRe v3's (App. C.6): Stage B's schedule alone.

A suite's default preset is its spec's ``[judge] preset``; every setting can be overridden.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import SuiteSpec

SCHEDULE_SEED = 42  # Table 2
ADAPTIVE_DEPTH = 150  # the authors' bound: adaptive rounds refine the top 150 ranks only
STAGE_A_PHASES = ("random", "stratified", "adaptive")
STAGE_B_PHASES = ("balanced", "grouped")


@dataclass(frozen=True)
class StageASettings:
    window: int = 10
    random_placements: float = 53 * 10 / 150
    stratified_placements: float = 27 * 10 / 150
    reversed_copies: bool = True
    adaptive_placements: float = 7 * 8 * 10 / 150
    adaptive_batches: int = 7
    discount: float = 0.3
    adaptive_depth: int = ADAPTIVE_DEPTH  # adaptive windows lie within these top ranks

    @property
    def enabled(self) -> bool:
        return (self.random_placements + self.stratified_placements
                + self.adaptive_placements) > 0


@dataclass(frozen=True)
class StageBSettings:
    window: int = 10
    placements: float = 100 * 10 / 150
    balanced_share: float = 0.5  # the first half: balanced windows; then grouped by Rasch

    @property
    def enabled(self) -> bool:
        return self.placements > 0


@dataclass(frozen=True)
class Schedule:
    """Both stages' schedule and the seed of every query's random streams."""

    preset: str
    stage_a: StageASettings = field(default_factory=StageASettings)
    stage_b: StageBSettings = field(default_factory=StageBSettings)
    seed: int = SCHEDULE_SEED

    def to_dict(self) -> dict:
        """The schedule as a store's identity holds it; ``adaptive_depth`` only when it is
        not the default, so stores written before the setting existed still resume."""
        a = dataclasses.asdict(self.stage_a)
        if a["adaptive_depth"] == ADAPTIVE_DEPTH:
            del a["adaptive_depth"]
        return {"preset": self.preset, "seed": self.seed, "stage_a": a,
                "stage_b": dataclasses.asdict(self.stage_b)}

    def digest_text(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


PRESETS: dict[str, Schedule] = {
    "full": Schedule("full"),
    "reduced": Schedule(
        "reduced",
        StageASettings(random_placements=6.0, stratified_placements=3.0, reversed_copies=False,
                       adaptive_placements=3.2, adaptive_batches=7),
        StageBSettings(placements=3.93)),
    "stage-b-only": Schedule(
        "stage-b-only",
        StageASettings(random_placements=0.0, stratified_placements=0.0,
                       adaptive_placements=0.0)),
}
OVERRIDABLE = {f"a.{f.name}": f for f in dataclasses.fields(StageASettings)} | {
    f"b.{f.name}": f for f in dataclasses.fields(StageBSettings)}


def windows_for(placements: float, n_docs: int, window: int) -> int:
    """``round(placements * n / w)`` (ties to even; a float product near a whole number is
    taken as that number) for the effective window ``w = min(window, n)``."""
    w = min(window, n_docs)
    if w <= 0 or placements <= 0:
        return 0
    return int(round(round(placements * n_docs / w, 9)))


def suite_preset(spec: SuiteSpec | None) -> str:
    """The suite's default preset: its spec's ``[judge] preset`` (``full`` without a suite)."""
    return spec.judge.preset if spec is not None else "full"


def make_schedule(preset: str, overrides: dict[str, str] | None = None, *,
                  seed: int = SCHEDULE_SEED) -> Schedule:
    """A preset with ``overrides`` (``{"a.window": "8", "b.placements": "5"}``) applied."""
    if preset not in PRESETS:
        raise UsageError(f"unknown schedule preset {preset!r}; choose one of "
                         f"{', '.join(PRESETS)}")
    base = PRESETS[preset]
    a, b = {}, {}
    for key, text in (overrides or {}).items():
        f = OVERRIDABLE.get(key)
        if f is None:
            raise UsageError(f"unknown schedule setting {key!r}; known: "
                             f"{', '.join(sorted(OVERRIDABLE))}")
        value = _parse(f, key, text)
        (a if key.startswith("a.") else b)[f.name] = value
    s = Schedule(preset, dataclasses.replace(base.stage_a, **a),
                 dataclasses.replace(base.stage_b, **b), seed)
    _check(s)
    return s


def _parse(f: dataclasses.Field, key: str, text: str):
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    try:
        if kind == "bool":
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        return int(text) if kind == "int" else float(text)
    except ValueError as exc:
        raise UsageError(f"schedule setting {key}={text!r} is not a {kind}") from exc


def _check(s: Schedule) -> None:
    a, b = s.stage_a, s.stage_b
    if a.window < 2 or b.window < 1:
        raise UsageError("a Stage A window holds at least 2 documents, a Stage B window 1")
    if min(a.random_placements, a.stratified_placements, a.adaptive_placements,
           b.placements) < 0:
        raise UsageError("placements per document cannot be negative")
    if a.adaptive_batches < 1 or not 0 < a.discount <= 1:
        raise UsageError("adaptive batches must be >= 1 and the discount in (0, 1]")
    if a.adaptive_depth < a.window:
        raise UsageError(f"a.adaptive_depth={a.adaptive_depth} is below the Stage A window "
                         f"({a.window}): an adaptive window must fit in the top ranks")
    if not 0 <= b.balanced_share <= 1:
        raise UsageError("the balanced share of Stage B must be in [0, 1]")


@dataclass(frozen=True)
class QueryPlan:
    """The windows one query of ``n_docs`` documents gets, per stage and phase."""

    n_docs: int
    window_a: int
    window_b: int
    random: int  # distinct windows (each also reversed with reversed_copies)
    stratified: int
    adaptive_batches: int
    adaptive_per_batch: int
    reversed_copies: bool
    balanced: int
    grouped: int

    @property
    def calls_a(self) -> dict[str, int]:
        k = 2 if self.reversed_copies else 1
        return {"random": self.random * k, "stratified": self.stratified * k,
                "adaptive": self.adaptive_batches * self.adaptive_per_batch}

    @property
    def calls_b(self) -> dict[str, int]:
        return {"balanced": self.balanced, "grouped": self.grouped}

    @property
    def total_a(self) -> int:
        return sum(self.calls_a.values())

    @property
    def total_b(self) -> int:
        return sum(self.calls_b.values())

    @property
    def placements_a(self) -> float:
        return self.total_a * self.window_a / self.n_docs if self.n_docs else 0.0

    @property
    def placements_b(self) -> float:
        return self.total_b * self.window_b / self.n_docs if self.n_docs else 0.0


def plan_query(n_docs: int, schedule: Schedule) -> QueryPlan:
    """The exact window counts the schedulers (:mod:`.schedule`) produce for a pool of
    ``n_docs`` (Stage A needs two documents; a pool no larger than the adaptive window gets
    one adaptive window: every further one would show the same documents)."""
    a, b = schedule.stage_a, schedule.stage_b
    wa, wb = min(a.window, n_docs), min(b.window, n_docs)
    if n_docs >= 2 and a.enabled:
        rnd = windows_for(a.random_placements, n_docs, a.window)
        strat = windows_for(a.stratified_placements, n_docs, a.window)
        per_batch = windows_for(a.adaptive_placements / a.adaptive_batches, n_docs, a.window)
        batches = a.adaptive_batches
        if n_docs <= a.window and per_batch:
            batches, per_batch = 1, 1
    else:
        rnd = strat = per_batch = batches = 0
        wa = 0
    total_b = windows_for(b.placements, n_docs, b.window) if n_docs >= 1 else 0
    balanced = int(round(total_b * b.balanced_share))
    return QueryPlan(n_docs, wa, wb, rnd, strat, batches if per_batch else 0, per_batch,
                     a.reversed_copies, balanced, total_b - balanced)


def _longest_round(n: int, w: int) -> int:
    """The most windows one round of ``w`` consecutive ranks of ``n`` takes over its random
    offsets (the rounds of :func:`rcp_data.judging.schedule._starts`)."""
    if n <= w:
        return 1
    longest = 0
    for offset in range(w):
        starts = list(range(offset, n - w + 1, w))
        extra = (offset > 0) + (not starts or starts[-1] + w < n)
        longest = max(longest, len(starts) + extra)
    return longest


def stage_b_unshown(n_docs: int, schedule: Schedule) -> tuple[int, int]:
    """The fewest and the most documents of a pool of ``n_docs`` that Stage B's windows may
    leave unshown (both 0 when every document is surely shown). Balanced windows show the
    least-shown documents first, so ``b`` of them show ``min(b * w, n)``; grouped windows are
    rounds of consecutive ranks, so a full round shows every document."""
    b = schedule.stage_b
    if not b.enabled or n_docs == 0:
        return 0, 0
    p = plan_query(n_docs, schedule)
    w = p.window_b
    balanced = min(p.balanced * w, n_docs)
    # k grouped windows of a partial round show at least w, then at least one new document
    # for the second (it may overlap the first) and w for each further one
    k = p.grouped
    if k >= _longest_round(n_docs, w):
        grouped = n_docs
    else:
        grouped = min(n_docs, 0 if k == 0 else w if k == 1 else (k - 1) * w + 1)
    surely = max(balanced, grouped)
    if surely >= n_docs:
        return 0, 0
    return max(n_docs - balanced - k * w, 0), n_docs - surely


def check_stage_b_coverage(sizes: list[int], schedule: Schedule) -> None:
    """Refuse a schedule whose Stage B surely leaves a pool document never shown (a document
    Stage B never saw has no criteria answers to calibrate): one line with the count. A
    schedule that only may leave some unshown (the windows' overlap decides) is warned about,
    with the count."""
    found = [(n, *stage_b_unshown(n, schedule)) for n in sizes]
    maybe = [t for t in found if t[2] > 0]
    if not maybe:
        return
    sure = [t for t in maybe if t[1] > 0]
    n, low, high = max(sure or maybe, key=lambda t: (t[2], t[0]))
    p = plan_query(n, schedule)
    span = f"{high}" if low == high else f"{low} to {high}"
    text = (f"{len(sure or maybe):,} of {len(sizes):,} queries; a pool of {n} gets "
            f"{p.total_b} windows of {p.window_b} ({p.balanced} balanced, {p.grouped} "
            f"grouped), which leave {span} of its {n} documents unshown; raise b.placements "
            f"(now {schedule.stage_b.placements:g})")
    if sure:
        raise UsageError(f"schedule leaves documents never shown to Stage B: {text}")
    logging.getLogger(__name__).warning(
        "schedule may leave documents never shown to Stage B: %s", text)
