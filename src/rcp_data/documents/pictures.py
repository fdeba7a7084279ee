"""The release's pictures (PNG, matplotlib's headless Agg backend), from the numbers of
:mod:`rcp_data.scoring.release_diagnostics`.

Each picture function writes one PNG of :data:`SIZE` pixels and returns the arrays it plotted
(a frozen dataclass), so tests and ``verify`` look at the data, never at pixels:

- :func:`gain_curve`: gain(theta) of Eq. 4 over a histogram of the pool's calibrated theta,
  each criterion's difficulty marked;
- :func:`theta_by_grade`: the calibrated theta of the judged pool documents by human grade;
- :func:`reliability_diagram`: the calibration's ECE bins, observed pass rate against mean
  predicted pass probability;
- :func:`leaderboard_chart`: each system's RCP-nDCG@10 beside its qrel-nDCG@10 with 95%
  query-bootstrap intervals.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rcp_data.core.gains import ItemParams, gain

WIDTH, HEIGHT, DPI = 800, 480, 100
SIZE = (WIDTH, HEIGHT)
#: Where a release keeps its pictures, by name.
PICTURE_FILES = {
    "gain_curve": "provenance/pictures/gain_curve.png",
    "theta_by_grade": "provenance/pictures/theta_by_grade.png",
    "reliability": "provenance/pictures/reliability.png",
    "leaderboards": "provenance/pictures/leaderboards.png",
}
HIST_BINS = 30
GRID = 201


def _figure():
    # matplotlib's own debug chatter (font lookups) is not this toolkit's log
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
    return plt, fig, ax


#: The mark every picture drawn from SYNTHETIC data carries, across its middle.
SYNTHETIC_MARK = "SYNTHETIC DATA"


def _save(plt, fig, path: Path, *, synthetic: bool = False) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    if synthetic:
        fig.text(0.5, 0.5, SYNTHETIC_MARK, ha="center", va="center", rotation=20,
                 fontsize=44, color="red", alpha=0.25, fontweight="bold", zorder=10)
    # the mark is also in the PNG's text (``Description``), for tools that read no pixels
    fig.savefig(path, format="png", dpi=DPI,
                metadata={"Software": None, **({"Description": SYNTHETIC_MARK}
                                               if synthetic else {})})
    plt.close(fig)


@dataclass(frozen=True)
class GainCurve:
    theta: tuple[float, ...]
    gain: tuple[float, ...]
    difficulties: tuple[float, ...]
    hist_edges: tuple[float, ...]
    hist_counts: tuple[int, ...]


def gain_curve_data(params: ItemParams, pool_theta: np.ndarray, link: str) -> GainCurve:
    pool = np.asarray(pool_theta, dtype=np.float64)
    pool = pool[np.isfinite(pool)]
    lo = min(float(pool.min()) if pool.size else -3.0, min(params.beta)) - 0.5
    hi = max(float(pool.max()) if pool.size else 3.0, max(params.beta)) + 0.5
    grid = np.linspace(lo, hi, GRID)
    counts, edges = np.histogram(pool, bins=HIST_BINS, range=(lo, hi))
    return GainCurve(tuple(grid.tolist()), tuple(gain(grid, params, link).tolist()),
                     tuple(params.beta), tuple(edges.tolist()), tuple(int(c) for c in counts))


def gain_curve(params: ItemParams, pool_theta: np.ndarray, link: str, path: Path, *,
        synthetic: bool = False) -> GainCurve:
    data = gain_curve_data(params, pool_theta, link)
    plt, fig, ax = _figure()
    edges = np.asarray(data.hist_edges)
    ax2 = ax.twinx()
    ax2.bar(edges[:-1], data.hist_counts, width=np.diff(edges), align="edge", color="0.85",
            label="pool documents")
    ax2.set_ylabel("pool documents")
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.plot(data.theta, data.gain, color="C0", label=f"gain ({link})")
    for i, b in enumerate(data.difficulties):
        ax.axvline(b, color="C1", linestyle=":", linewidth=1)
        ax.text(b, 1.02, f"C{i + 1}", ha="center", va="bottom", fontsize=8, color="C1")
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("calibrated theta")
    ax.set_ylabel("gain")
    ax.set_title("Gain of theta (Eq. 4), criterion difficulties dotted")
    _save(plt, fig, path, synthetic=synthetic)
    return data


@dataclass(frozen=True)
class ThetaByGrade:
    grades: tuple[int, ...]
    theta: tuple[tuple[float, ...], ...]        # per grade, sorted


def theta_by_grade_data(grade: np.ndarray, theta: np.ndarray) -> ThetaByGrade:
    grade = np.asarray(grade, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    keep = np.isfinite(theta) & np.isfinite(grade)
    levels = sorted({int(g) for g in grade[keep]})
    return ThetaByGrade(tuple(levels), tuple(tuple(np.sort(theta[keep & (grade == g)]).tolist())
                                             for g in levels))


def theta_by_grade(grade: np.ndarray, theta: np.ndarray, path: Path, *,
        synthetic: bool = False) -> ThetaByGrade:
    data = theta_by_grade_data(grade, theta)
    plt, fig, ax = _figure()
    if data.grades:
        ax.boxplot([list(t) for t in data.theta], tick_labels=[str(g) for g in data.grades])
    ax.set_xlabel("human grade (qrels)")
    ax.set_ylabel("calibrated theta")
    ax.set_title("Calibrated theta of the judged pool documents by grade")
    _save(plt, fig, path, synthetic=synthetic)
    return data


@dataclass(frozen=True)
class ReliabilityData:
    predicted: tuple[float, ...]
    observed: tuple[float, ...]
    weight: tuple[float, ...]
    ece: float


def reliability_data(weight, predicted, observed, ece: float) -> ReliabilityData:
    used = [i for i, w in enumerate(weight) if w > 0]
    return ReliabilityData(tuple(float(predicted[i]) for i in used),
                           tuple(float(observed[i]) for i in used),
                           tuple(float(weight[i]) for i in used), float(ece))


def reliability_diagram(weight, predicted, observed, ece: float, path: Path, *,
        synthetic: bool = False) -> ReliabilityData:
    data = reliability_data(weight, predicted, observed, ece)
    plt, fig, ax = _figure()
    ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="perfect")
    w = np.asarray(data.weight)
    ax.scatter(data.predicted, data.observed, s=20 + 200 * w / (w.max() if w.size else 1),
               color="C0", label="bins (size: answers)")
    ax.plot(data.predicted, data.observed, color="C0", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted pass probability (2PL at calibrated theta)")
    ax.set_ylabel("observed pass rate (Stage B answers)")
    ax.set_title(f"Reliability of the calibration, ECE {data.ece:.3f}")
    ax.legend(loc="upper left")
    _save(plt, fig, path, synthetic=synthetic)
    return data


@dataclass(frozen=True)
class LeaderboardData:
    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    means: tuple[tuple[float, ...], ...]                 # per metric, per system
    intervals: tuple[tuple[tuple[float, float], ...], ...]


def leaderboard_data(systems, boards: dict, intervals: dict,
                     metrics=("rcp_ndcg", "qrel_ndcg")) -> LeaderboardData:
    metrics = tuple(m for m in metrics if m in boards)
    systems = tuple(systems)
    return LeaderboardData(
        systems, metrics,
        tuple(tuple(float(boards[m][s]) for s in systems) for m in metrics),
        tuple(tuple(tuple(map(float, intervals[m][s])) for s in systems) for m in metrics))


def leaderboard_chart(systems, boards: dict, intervals: dict, path: Path, *,
                      labels: dict[str, str] | None = None,
                      metrics=("rcp_ndcg", "qrel_ndcg"),
                      synthetic: bool = False, k: int = 10) -> LeaderboardData:
    data = leaderboard_data(systems, boards, intervals, metrics)
    labels = labels or {}
    plt, fig, ax = _figure()
    y = np.arange(len(data.systems))
    h = 0.8 / max(len(data.metrics), 1)
    for i, m in enumerate(data.metrics):
        mean = np.asarray(data.means[i]) * 100
        ci = np.asarray(data.intervals[i]).reshape(-1, 2) * 100
        err = np.vstack([mean - ci[:, 0], ci[:, 1] - mean]) if len(ci) else None
        ax.barh(y + (i - (len(data.metrics) - 1) / 2) * h, mean, height=h, xerr=err,
                capsize=3, label=labels.get(m, m), color=f"C{i}")
    ax.set_yticks(y, [labels.get(s, s) for s in data.systems])
    ax.invert_yaxis()
    ax.set_xlabel(f"nDCG@{k} (%), 95% query-bootstrap interval")
    ax.set_title(f"Leaderboards: RCP-nDCG@{k} beside qrel-nDCG@{k}")
    # the legend sits below the axes, where it cannot cover a bar
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=len(data.metrics),
              frameon=False)
    _save(plt, fig, path, synthetic=synthetic)
    return data


def release_pictures(diag, root: Path, *, labels: dict[str, str] | None = None,
                     synthetic: bool = False) -> dict:
    """Write every picture the release's numbers allow under ``root`` (:data:`PICTURE_FILES`);
    ``diag`` is a :class:`~rcp_data.scoring.release_diagnostics.ReleaseDiagnostics`;
    ``labels``: the names shown for metrics and systems (a system's default: its id);
    ``synthetic``: mark every picture :data:`SYNTHETIC_MARK`. Returns ``{name: plotted data}``
    of the pictures written."""
    from rcp_data.model.card_format import METRIC_TITLES

    root = Path(root)
    labels = {**{m: f"{t}@{diag.k}" for m, t in METRIC_TITLES.items()}, **(labels or {})}
    out: dict = {}
    if diag.item_params is not None:
        out["gain_curve"] = gain_curve(diag.item_params, diag.pool_theta, diag.link,
                                       root / PICTURE_FILES["gain_curve"], synthetic=synthetic)
    if len(diag.graded):
        out["theta_by_grade"] = theta_by_grade(diag.graded["grade"].to_numpy(),
                                               diag.graded["theta"].to_numpy(),
                                               root / PICTURE_FILES["theta_by_grade"], synthetic=synthetic)
    if diag.reliability is not None:
        r = diag.reliability
        out["reliability"] = reliability_diagram(
            r.weight, [np.nan if v is None else v for v in r.predicted],
            [np.nan if v is None else v for v in r.observed], r.ece,
            root / PICTURE_FILES["reliability"], synthetic=synthetic)
    systems = list(diag.leaderboards.get("rcp_ndcg", {}))
    if systems and "qrel_ndcg" in diag.leaderboards:
        out["leaderboards"] = leaderboard_chart(systems, diag.leaderboards, diag.intervals,
                                                root / PICTURE_FILES["leaderboards"],
                                                labels=labels, synthetic=synthetic, k=diag.k)
    return out


def picture_data(diag) -> dict:
    """The data :func:`release_pictures` would plot, without drawing (what ``verify``
    recomputes)."""
    out: dict = {}
    if diag.item_params is not None:
        out["gain_curve"] = gain_curve_data(diag.item_params, diag.pool_theta, diag.link)
    if len(diag.graded):
        out["theta_by_grade"] = theta_by_grade_data(diag.graded["grade"].to_numpy(),
                                                    diag.graded["theta"].to_numpy())
    if diag.reliability is not None:
        r = diag.reliability
        out["reliability"] = reliability_data(
            r.weight, [np.nan if v is None else v for v in r.predicted],
            [np.nan if v is None else v for v in r.observed], r.ece)
    systems = list(diag.leaderboards.get("rcp_ndcg", {}))
    if systems and "qrel_ndcg" in diag.leaderboards:
        out["leaderboards"] = leaderboard_data(systems, diag.leaderboards, diag.intervals)
    return out


def png_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` of a PNG from its IHDR chunk (ValueError if not a PNG)."""
    head = Path(path).read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


__all__ = ["PICTURE_FILES", "SIZE", "SYNTHETIC_MARK", "GainCurve", "LeaderboardData", "ReliabilityData",
           "ThetaByGrade", "gain_curve", "picture_data", "release_pictures", "leaderboard_chart", "png_size", "reliability_diagram",
           "theta_by_grade"]
