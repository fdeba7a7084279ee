"""Pictures of ``rcp-data agree --qrels ... --pictures DIR`` (PNG, matplotlib's Agg backend),
drawn from the analysis' JSON (:class:`~rcp_data.scoring.agreement.plain.PlainAgreement`):

- ``kappa_per_group.png``: Fleiss' kappa per group, four-grade and binarized, with and without
  the primary assessor;
- ``swap_probabilities.png``: each system pair's swap probability under label variation;
- ``rank_changes.png``: each system's leaderboard rank under every assessor's collection
  against its rank under the primary (off the diagonal: the system moved);
- ``ceilings.png``: each assessor's (and aggregate's) grade order scored on the primary, mean
  and 95% t-interval.

Written into a temporary folder beside ``DIR`` and moved in at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from rcp_data.core.outputs import own_folder
from rcp_data.documents.pictures import _figure, _save


def _kappa(data: dict, path: Path) -> None:
    plt, fig, ax = _figure()
    labels, bars = [], {"four-grade": [], "binary": []}
    for g in data["groups"]:
        for key, tag in (("without_primary", ""), ("with_primary", " + primary")):
            x = g[key]
            if x is None:
                continue
            labels.append(" + ".join(x["members"][1:] if tag else x["members"]) + tag)
            bars["four-grade"].append(np.nan if x["fleiss_kappa"] is None else x["fleiss_kappa"])
            bars["binary"].append(np.nan if x["fleiss_kappa_binary"] is None
                                  else x["fleiss_kappa_binary"])
    pos = np.arange(len(labels))
    ax.bar(pos - 0.2, bars["four-grade"], 0.4, label="four-grade")
    ax.bar(pos + 0.2, bars["binary"], 0.4, label="binary")
    ax.set_xticks(pos, labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("Fleiss' kappa")
    ax.legend()
    _save(plt, fig, path)


def _swaps(data: dict, path: Path) -> None:
    plt, fig, ax = _figure()
    swap = data["systems"]["variation"]["swap"]
    values = np.sort(np.array(list(swap.values())))[::-1]
    ax.bar(np.arange(len(values)), values, 1.0)
    ax.set_xlabel("system pair (sorted)")
    ax.set_ylabel("swap probability")
    ax.set_ylim(0, 0.5)
    _save(plt, fig, path)


def _rank_changes(data: dict, path: Path) -> None:
    plt, fig, ax = _figure()
    top = 1.0
    for name, x in data["systems"]["significance"].items():
        rows = [r for r in x["systems"] if r.get("rank_primary") is not None]
        if not rows:
            continue
        ax.plot([r["rank_primary"] for r in rows], [r["rank_collection"] for r in rows], "o",
                alpha=0.7, label=name)
        top = max(top, *(r["rank_primary"] for r in rows))
    ax.plot([1, top], [1, top], color="grey", linewidth=0.8)
    ax.set_xlabel("rank under the primary")
    ax.set_ylabel("rank under the collection")
    ax.legend(fontsize=7)
    _save(plt, fig, path)


def _ceilings(data: dict, path: Path) -> None:
    plt, fig, ax = _figure()
    runs = data["ceilings"]["runs"]
    names = list(runs)
    mean = [np.nan if runs[n]["mean"] is None else runs[n]["mean"] for n in names]
    half = [0.0 if runs[n]["half_width"] is None else runs[n]["half_width"] for n in names]
    ax.errorbar(np.arange(len(names)), mean, yerr=half, fmt="o")
    ax.set_xticks(np.arange(len(names)), names, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(data["ceilings"]["measure"])
    _save(plt, fig, path)


def agreement_pictures(data: dict, folder: str | Path) -> list[Path]:
    """Draw the pictures the analysis has numbers for into ``folder``; their paths."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".agree-pictures-", dir=folder.parent))
    try:
        names = ["kappa_per_group.png", "ceilings.png"]
        _kappa(data, tmp / names[0])
        _ceilings(data, tmp / names[1])
        if data.get("systems") and data["systems"].get("significance"):
            names.append("rank_changes.png")
            _rank_changes(data, tmp / names[-1])
        if data.get("systems") and data["systems"].get("variation"):
            names.append("swap_probabilities.png")
            _swaps(data, tmp / names[-1])
        own_folder(folder)   # a symbolic link there is replaced, never written through
        for n in names:
            os.replace(tmp / n, folder / n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [folder / n for n in names]


__all__ = ["agreement_pictures"]
