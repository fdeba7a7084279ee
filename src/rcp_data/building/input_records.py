"""The records of the builder inputs (:class:`BuildInputs` and its parts), apart from reading
and checking them, so that :mod:`~rcp_data.building.contract` (which reads them) and
:mod:`~rcp_data.building.input_checks` (which checks them) both import this module and not
each other."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import read_json
from rcp_data.model.manifest import FirstStageRecord
from rcp_data.runs.run_files import SPLIT_COLUMN


def for_split(frame: pd.DataFrame, split: str) -> pd.DataFrame:
    """Rows of a builder-input table that belong to provenance split ``split``."""
    if SPLIT_COLUMN not in frame.columns:
        return frame
    return frame[frame[SPLIT_COLUMN].astype(str) == split]


def table_for_split(table: pa.Table, split: str) -> pa.Table:
    """:func:`for_split` of an arrow table."""
    if SPLIT_COLUMN not in table.column_names:
        return table
    col = pc.cast(table.column(SPLIT_COLUMN), pa.string())
    return table.filter(pc.equal(col, split))


@dataclass(frozen=True)
class JudgeInfo:
    """Who judged: ``judge/judge.json`` of the builder inputs."""

    model: str
    revision: str
    short: str
    synthetic: bool = False          # a generated judge (``"synthetic": true`` in judge.json)
    served_model: str = ""           # the model the endpoint served, when named otherwise

    @property
    def kind(self) -> str:
        """What answered (:data:`rcp_data.model.manifest.JUDGE_KINDS`): ``simulated`` (a
        SIMULATED judge, e.g. :mod:`rcp_data.demo.simulated_judge`, named so), ``generated``
        (any other judge ``judge.json`` marks synthetic) or ``real`` (a served model)."""
        if not self.synthetic:
            return "real"
        return "simulated" if "SIMULATED" in f"{self.model} {self.served_model}" else "generated"

    @classmethod
    def read(cls, path: Path) -> JudgeInfo:
        data = read_json(path)
        if not isinstance(data, dict):
            raise InputError("judge.json must be a JSON object", path=str(path))
        for key in ("model", "short"):
            if not data.get(key):
                raise InputError(f"missing key {key!r}", path=str(path), field=key)
        return cls(model=data["model"], revision=str(data.get("revision", "")),
                   short=data["short"], synthetic=data.get("synthetic") is True,
                   served_model=str(data.get("served_model") or ""))


@dataclass(frozen=True)
class RunSpec:
    """One reranker's (or judge strategy's) run, from ``runs/runs.json``: a run is its model
    and its configuration (instruction, query wording, any named settings), so several runs
    of one model coexist, each under its :attr:`run_id`."""

    file: str
    model: str
    short: str = ""
    is_judge: bool = False
    # how its scores came about (:data:`rcp_data.model.manifest.RUN_ORIGINS`): given as a file
    # (the default), generated, SIMULATED, or computed with the model ``computed_with``
    origin: str = "given"
    computed_with: str = ""
    configuration: tuple[tuple[str, str], ...] = ()   # (name, value as JSON), names sorted

    @property
    def run_id(self) -> str:
        """The run's name in ``provenance-runs.model``: the model id, and its configuration
        when it has one (``org/model [instruction="...", query_wording="short"]``)."""
        return run_id(self.model, self.configuration)


def run_id(model: str, configuration: tuple[tuple[str, str], ...] = ()) -> str:
    """A run's name: ``model`` alone, or ``model [name=value, ...]`` (values as JSON)."""
    if not configuration:
        return model
    return f"{model} [{', '.join(f'{k}={v}' for k, v in configuration)}]"


@dataclass
class BuildInputs:
    """The builder-input contract (docs/concepts): judge outputs, first-stage and reranker runs."""

    judge: JudgeInfo
    item_params: ItemParams
    thetas: pd.DataFrame
    criteria: pd.DataFrame
    first_stage: dict[str, pd.DataFrame]
    runs: list[tuple[RunSpec, pd.DataFrame]]
    files: list[Path] = field(default_factory=list)
    root: Path | None = None
    tournament: pa.Table | None = None  # Stage A answers (judge/tournament.parquet), checked
    judging: dict | None = None  # judge/judging.json of an rcp-data judge run, when present
    # first_stage/first_stage.json: the given runs rcp-data computed, by retriever
    computed_runs: dict[str, FirstStageRecord] = field(default_factory=dict)

    def only_split(self, split: str) -> BuildInputs:
        """The rows of one provenance split (tables with a ``split`` column are filtered once
        here rather than once per subset; tables without one are shared as they are)."""

        def keep(frame: pd.DataFrame) -> pd.DataFrame:
            out = for_split(frame, split)
            out.attrs.update(frame.attrs)
            return out

        return replace(self, thetas=keep(self.thetas), criteria=keep(self.criteria),
                       first_stage={k: keep(v) for k, v in self.first_stage.items()},
                       runs=[(spec, keep(frame)) for spec, frame in self.runs],
                       tournament=None if self.tournament is None else table_for_split(
                           self.tournament, split))

    @property
    def reading_rules(self) -> dict:
        """The reading rules the calibration recorded in its item parameters (may be empty)."""
        rules = self.item_params.extra.get("reading_rules")
        return dict(rules) if isinstance(rules, dict) else {}


__all__ = ["BuildInputs", "JudgeInfo", "RunSpec", "for_split", "run_id", "table_for_split"]
