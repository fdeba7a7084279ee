"""The scoring half of the public Python API: replay a release, score runs on it, compare tables.

Each function takes an opened :class:`~rcp_data.model.release.Release` or anything
:func:`~rcp_data.model.release.open_release` takes (a release directory, or
``"hf://datasets/OWNER/NAME@REV"``), prints nothing (what it finds is logged under
``rcp_data``), shows a progress bar only with ``progress=True`` (and only on a terminal), and
returns a frozen result that renders the card's tables (``markdown()``) or the CLI's ``--json``
(``to_json()``). They are re-exported flat as ``rcp_data.replay``, ``rcp_data.score`` and
``rcp_data.compare``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.progress import bars, hub_bars

if TYPE_CHECKING:
    from rcp_data.core.hub_client import HubClient
    from rcp_data.core.specs import SuiteSpec
    from rcp_data.model.release import Release
    from rcp_data.scoring.compare import Comparison
    from rcp_data.scoring.replay import ReleaseRuns, ReplayResult
    from rcp_data.scoring.score import ScoreResult


def opened(release: Release | str | Path, *, suite: str | SuiteSpec | None = None,
           client: HubClient | None = None, progress: bool = False) -> Release:
    """``release`` itself when it is opened, else :func:`open_release` of it as a replay reads
    it: a release of an unknown suite by its folders, from the Hub only the tables a replay
    reads (its download bars only with ``progress``)."""
    from rcp_data.model.layout import REPLAY_PATTERNS
    from rcp_data.model.release import Release, open_release

    if isinstance(release, Release):
        return release
    with hub_bars(progress or not str(release).startswith("hf://")):
        return open_release(release, suite=suite, client=client, adhoc=True,
                            allow_patterns=REPLAY_PATTERNS)


def _runs_of(release: Release, *, include_judge: bool = False) -> ReleaseRuns:
    from rcp_data.scoring.replay import load_release

    return load_release(release.root, release.spec, include_judge=include_judge,
                        known=release.known)


def replay(release: Release | str | Path, *, k: int | None = None, tie_rule: str | None = None,
           view: str = "subsets", include_judge: bool = False,
           suite: str | SuiteSpec | None = None, client: HubClient | None = None,
           progress: bool = False, without_positives: str = "skip") -> ReplayResult:
    """Replay a release's result tables from its qrels, top_ranked, excluded and
    provenance runs, as ``rcp-data replay`` does.

    ``k``: the cutoff (default: the card's main k, ``[suite] card_k``'s first, 10 when the
    spec names none); ``tie_rule``: ``"doc-id"``, ``"group-mean"`` or ``"pool-order"``
    (default: the suite's paper rule); ``without_positives``: ``"skip"`` (the paper's: qrel-nDCG
    leaves out queries without a positive label) or ``"zero"`` (mteb's: they count); ``view``: ``"subsets"`` (default), or ``"native"`` /
    ``"languages"`` for suites with domains; ``include_judge``: also replay the judge's runs.
    ``suite`` and ``client`` are passed to :func:`~rcp_data.model.release.open_release` when
    ``release`` is not opened yet.

    Returns a :class:`~rcp_data.scoring.replay.ReplayResult`:
    ``result.tables["rcp_ndcg"].at[model, "mean"]`` is a model's RCP-nDCG@k (a fraction).
    Raises :class:`~rcp_data.core.errors.InputError` (a ``ValueError``) for a malformed
    table, :class:`~rcp_data.core.errors.UsageError` for a bad argument and
    :class:`~rcp_data.core.errors.NotFoundError` for a missing release.
    """
    from rcp_data.scoring.replay import default_tie_rule, replay_loaded

    rel = opened(release, suite=suite, client=client, progress=progress)
    rel.spec.view_columns(view)                    # refuse a bad view before reading
    with bars(progress):
        data = _runs_of(rel, include_judge=include_judge)
        rule = tie_rule or default_tie_rule(data.spec, data.suite_known)
        return replay_loaded(data, k=k if k is not None else rel.spec.main_k,
                             tie_rule=rule, view=view,
                             without_positives=without_positives)


def score(release: Release | str | Path,
          runs: str | Path | Sequence[str | Path] | Mapping[str, str | Path], *,
          names: Sequence[str] | None = None, k: int | None = None, tie_rule: str | None = None,
          view: str = "subsets", depth: int | None = None,
          against: Sequence[str] | None = None, suite: str | SuiteSpec | None = None,
          client: HubClient | None = None, progress: bool = False,
          without_positives: str = "skip") -> ScoreResult:
    """Score your own rankings on a release with the engine of the card's tables, as
    ``rcp-data score`` does.

    ``runs``: one run or several — a TREC run file, a parquet table (``query-id``,
    ``corpus-id``, ``score``, optionally ``subset``) or a folder of mteb's saved predictions —
    or ``{name: run}``. ``names``: a name per run (default: its tag, else the file name
    without a compression suffix). ``depth``: only each query's ``depth`` best-scored
    candidates count. ``against``: published rerankers (short
    names or hub ids, or ``["all"]``) to compare each run with (paired t-test and bootstrap).
    ``k``, ``tie_rule``, ``view``, ``without_positives``, ``suite``, ``client`` as for
    :func:`replay`.

    Returns a :class:`~rcp_data.scoring.score.ScoreResult`: ``result.mean(name)`` is a run's
    RCP-nDCG@k (a fraction), ``result.coverage[name]`` what of the release it scores,
    ``result.revision`` the commit sha a Hub release resolved to.
    Raises :class:`~rcp_data.core.errors.NotFoundError` for a missing run file and
    :class:`~rcp_data.core.errors.InputError` for a malformed one.
    """
    from dataclasses import replace

    from rcp_data.model.release import Release
    from rcp_data.scoring.score import score_files

    rel = opened(release, suite=suite, client=client, progress=progress)
    with bars(progress):
        result = score_files(_runs_of(rel), runs, names,
                             k=k if k is not None else rel.spec.main_k, tie_rule=tie_rule, view=view,
                             depth=depth, against=against, without_positives=without_positives)
    named = str(rel.root) if isinstance(release, Release) else str(release)
    return replace(result, dataset=named, revision=rel.revision)


def compare(tables: str | Path | ReplayResult, reference: str | Path | ReplayResult, *,
            suite: str | SuiteSpec | None = None,
            known_deviations: str | Path | None = None) -> Comparison:
    """Compare result tables with a reference cell by cell, as ``rcp-data compare`` does.

    Either side is a replay JSON file, a card (``README.md``, or a release directory for
    its card), the paper's values (``paper_values.json``), or a :class:`ReplayResult` in
    memory. Cells are matched by metric, model, column and tie rule with a tolerance of 0.05
    points; ``known_deviations`` (default: the project's) lists the paper's known
    differences. Returns a :class:`~rcp_data.scoring.compare.Comparison` (``ok`` is False
    when a cell fails; it does not raise for that).
    """
    from rcp_data.scoring.compare import compare_files

    return compare_files(tables, reference, suite=suite, known_path=known_deviations)


__all__ = ["compare", "opened", "replay", "score"]
