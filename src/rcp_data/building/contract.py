"""The builder-input contract (docs/concepts/release-layout.md, "Builder inputs"): what a judge
run hands the build, its folder layout, reading it (:func:`read_inputs`) and writing it
(:func:`write_builder_inputs`).

```
inputs/judge/judge.json            who judged (model, revision, short name)
inputs/judge/item_params.json      the calibration's item parameters
inputs/judge/thetas.parquet        query-id, corpus-id, theta
inputs/judge/criteria.parquet      the Stage B verdicts (C1..Cn)
inputs/judge/tournament.parquet    the Stage A answers (optional)
inputs/first_stage/<retriever>.{parquet,trec}
inputs/first_stage/first_stage.json   which runs rcp-data computed (suite first-stage; optional)
inputs/runs/runs.json + one file per reranker run
inputs/calibration/                 calibrate --inputs: item_params.json and thetas.parquet are
                                    read from here when judge/ does not hold them
```
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa

from rcp_data.building.input_checks import check_verdicts
from rcp_data.building.input_records import (  # the records; kept importable here
    BuildInputs,
    JudgeInfo,
    RunSpec,
    for_split,
    table_for_split,
)
from rcp_data.core.errors import InputError
from rcp_data.core.files import sha256_file
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import read_json, read_parquet, write_json
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.manifest import RUN_ORIGINS, FirstStageRecord, first_stage_records
from rcp_data.model.tables import write_parquet
from rcp_data.runs.run_files import ids_as_text, read_run_file

log = logging.getLogger(__name__)

JUDGE_DIR = "judge"
FIRST_STAGE_DIR = "first_stage"
RUNS_DIR = "runs"
CALIBRATION_DIR = "calibration"  # written by rcp-data calibrate --inputs
JUDGE_JSON = "judge.json"
ITEM_PARAMS_JSON = "item_params.json"
THETAS_FILE = "thetas.parquet"
CRITERIA_FILE = "criteria.parquet"
TOURNAMENT_FILE = "tournament.parquet"
JUDGING_FILE = "judging.json"  # written by rcp-data judge run: prompts, usage, cut census
RUNS_JSON = "runs.json"
FIRST_STAGE_JSON = "first_stage.json"  # written by rcp-data suite first-stage


def read_runs_json(path: Path) -> list[RunSpec]:
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("runs.json must be a JSON list of runs", path=str(path))
    specs = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError(f"a run must be a JSON object, got {entry!r}", path=str(path),
                             row=i + 1)
        for key in ("file", "model"):
            if key not in entry:
                raise InputError(f"missing key {key!r}", path=str(path), row=i + 1, field=key)
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise InputError(f"{key} {entry[key]!r} is not a name", path=str(path),
                                 row=i + 1, field=key)
        if Path(entry["file"]).name != entry["file"] or entry["file"].startswith("."):
            raise InputError(f"file {entry['file']!r} must name a file inside runs/",
                             path=str(path), row=i + 1, field="file")
        origin = entry.get("origin", "given")
        if origin not in RUN_ORIGINS:
            raise InputError(f"origin {origin!r} is not one of {', '.join(RUN_ORIGINS)}",
                             path=str(path), row=i + 1, field="origin")
        computed_with = entry.get("computed_with", "")
        if (origin == "computed") != bool(computed_with) or not isinstance(computed_with, str):
            raise InputError("a computed run names the model it was computed with "
                             "(computed_with), and only a computed run does", path=str(path),
                             row=i + 1, field="computed_with")
        configuration = _configuration(entry.get("configuration"), path, i + 1)
        run = RunSpec(entry["file"], entry["model"], entry.get("short", ""),
                      bool(entry.get("is_judge", False)), origin=origin,
                      computed_with=computed_with, configuration=configuration)
        if any(s.run_id == run.run_id for s in specs):
            if configuration:
                raise InputError(f"model {run.model!r} with this configuration is listed "
                                 "twice (a run is its model and its configuration)",
                                 path=str(path), row=i + 1, field="configuration")
            raise InputError(f"model {entry['model']!r} is listed twice; give each run of one "
                             "model its \"configuration\" (instruction, query_wording, any "
                             "named setting)", path=str(path), row=i + 1, field="model")
        specs.append(run)
    return specs


_SETTING = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _configuration(raw: object, path: Path, row: int) -> tuple[tuple[str, str], ...]:
    """A run's ``configuration``: named settings (text, numbers, true/false), names sorted,
    values as JSON (the run's name shows them as written here)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise InputError(f"configuration must be a JSON object of named settings, got "
                         f"{raw!r}", path=str(path), row=row, field="configuration")
    out = []
    for name, value in sorted(raw.items()):
        if not _SETTING.match(name):
            raise InputError(f"setting name {name!r} must be a letter, then letters, digits, "
                             "'_' or '-'", path=str(path), row=row,
                             field=f"configuration.{name}")
        if not isinstance(value, str | int | float | bool):
            raise InputError(f"setting {name!r} must be text, a number or true/false, got "
                             f"{value!r}", path=str(path), row=row,
                             field=f"configuration.{name}")
        out.append((name, json.dumps(value, ensure_ascii=False)))
    return tuple(out)


def read_inputs(root: Path) -> BuildInputs:
    """Read ``inputs/`` (judge/, first_stage/, runs/) as laid out in the docs/concepts."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("builder inputs folder not found", path=str(root))
    judge_dir = root / JUDGE_DIR
    judge = JudgeInfo.read(judge_dir / JUDGE_JSON)
    params_file, thetas_file = calibrated_file(root, ITEM_PARAMS_JSON), calibrated_file(
        root, THETAS_FILE)
    params = ItemParams.read(params_file)
    thetas = _read_parquet(thetas_file, ["query-id", "corpus-id", "theta"])
    criteria = _read_parquet(judge_dir / CRITERIA_FILE, ["query-id", "call_index", "corpus-id"])
    criteria = check_verdicts(criteria, params, source=str(judge_dir / CRITERIA_FILE))
    files = [judge_dir / JUDGE_JSON, params_file, thetas_file, judge_dir / CRITERIA_FILE]
    tournament = None
    if (judge_dir / TOURNAMENT_FILE).exists():
        from rcp_data.calibration.tournament import load_tournament, read_tournament

        tournament = read_tournament(judge_dir / TOURNAMENT_FILE)
        load_tournament(tournament, source=str(judge_dir / TOURNAMENT_FILE))  # the checks
        files.append(judge_dir / TOURNAMENT_FILE)
    judging = None
    if (judge_dir / JUDGING_FILE).exists():
        judging = read_json(judge_dir / JUDGING_FILE)
        files.append(judge_dir / JUDGING_FILE)
    first_stage: dict[str, pd.DataFrame] = {}
    fs_dir = root / FIRST_STAGE_DIR
    for path in sorted(fs_dir.glob("*")) if fs_dir.exists() else []:
        if path.suffix not in (".trec", ".parquet"):
            continue
        frame = read_run_file(path)
        frame.attrs["source"] = str(path)
        first_stage[path.stem] = frame
        files.append(path)
    computed_runs = {}
    if (fs_dir / FIRST_STAGE_JSON).exists():
        computed_runs = read_computed_runs(fs_dir / FIRST_STAGE_JSON, first_stage)
        files.append(fs_dir / FIRST_STAGE_JSON)
    runs = []
    runs_json = root / RUNS_DIR / RUNS_JSON
    for spec in read_runs_json(runs_json):
        path = root / RUNS_DIR / spec.file
        runs.append((spec, read_run_file(path)))
        files.append(path)
    files.append(runs_json)
    log.info("read builder inputs from %s: %d thetas, %d verdict rows, %s tournament rows, "
             "%d first-stage runs, %d reranker runs", root, len(thetas), len(criteria),
             "no" if tournament is None else f"{tournament.num_rows:,}", len(first_stage),
             len(runs))
    return BuildInputs(judge, params, thetas, criteria, first_stage, runs, files, root,
                       tournament, judging, computed_runs)


def calibrated_file(root: Path, name: str) -> Path:
    """Where the builder inputs ``root`` hold the calibration's ``name`` (``item_params.json``,
    ``thetas.parquet``): ``judge/``, else ``calibration/`` (``calibrate --inputs``)."""
    given = Path(root) / JUDGE_DIR / name
    written = Path(root) / CALIBRATION_DIR / name
    return written if not given.exists() and written.exists() else given


def write_computed_runs(records: list[FirstStageRecord], files: dict[str, Path],
                        path: Path) -> None:
    """Write ``first_stage/first_stage.json``: each computed run's record and its file's
    sha256 (``files``: retriever -> run file)."""
    write_json({"runs": [{**r.to_dict(), "file": files[r.retriever].name,
                          "sha256": sha256_file(files[r.retriever])} for r in records]}, path)


def read_computed_runs(path: Path, first_stage: dict[str, pd.DataFrame]
                       ) -> dict[str, FirstStageRecord]:
    """The computed (or generated) runs ``first_stage.json`` records, by retriever. A record
    whose run file is gone or changed since (another sha256) no longer holds: that run counts
    as given."""
    raw = read_json(path)
    entries = raw.get("runs") if isinstance(raw, dict) else None
    records = first_stage_records(entries, source=str(path), where="runs")
    out = {}
    for rec, entry in zip(records, entries or [], strict=True):
        run = path.parent / str(entry.get("file", ""))
        if rec.retriever not in first_stage or not run.is_file() \
                or sha256_file(run) != entry.get("sha256"):
            log.warning("%s: the run of %r is not the one recorded as %s; it counts as "
                        "given", path, rec.retriever,
                        "computed" if rec.computed else "generated")
            continue
        out[rec.retriever] = rec
    return out


def run_file_name(model: str) -> str:
    """The file of a model's run in ``runs/`` (hub ids hold ``/`` and ``:``)."""
    return model.replace("/", "__").replace(":", "_") + ".parquet"


def write_builder_inputs(out: Path, spec: SuiteSpec, *, judge: dict, params: ItemParams,
                         thetas: pd.DataFrame, criteria: pd.DataFrame,
                         first_stage: dict[str, pd.DataFrame],
                         runs: dict[str, pd.DataFrame],
                         tournament: pa.Table | pd.DataFrame | None = None,
                         generated: tuple[str, ...] = ()) -> Path:
    """Write the builder-input contract that :func:`read_inputs` reads (``judge/``,
    ``first_stage/``, ``runs/``). A run whose model ends in ``:theta`` is a judge strategy.
    ``generated``: the parts whose tables were generated (``first_stage``: each run is recorded
    so in ``first_stage/first_stage.json``; ``runs``: each reranker run's ``origin`` in
    runs.json), which the build records and the card says."""
    out = Path(out)
    judge_dir = out / JUDGE_DIR
    judge_dir.mkdir(parents=True, exist_ok=True)
    write_json(judge, judge_dir / JUDGE_JSON)
    params.write(judge_dir / ITEM_PARAMS_JSON)
    write_parquet(thetas, judge_dir / THETAS_FILE)
    write_parquet(criteria, judge_dir / CRITERIA_FILE)
    if tournament is not None:
        write_parquet(tournament, judge_dir / TOURNAMENT_FILE)
    fs_files = {}
    for retriever, frame in first_stage.items():
        fs_files[retriever] = out / FIRST_STAGE_DIR / f"{retriever}.parquet"
        write_parquet(frame, fs_files[retriever])
    if "first_stage" in generated and fs_files:
        write_computed_runs([FirstStageRecord(r, generated=True) for r in fs_files], fs_files,
                            out / FIRST_STAGE_DIR / FIRST_STAGE_JSON)
    entries = []
    for model, frame in runs.items():
        write_parquet(frame, out / RUNS_DIR / run_file_name(model))
        judge_run = model.endswith(":theta")
        entries.append({"file": run_file_name(model), "model": model,
                        "short": spec.short_name(model), "is_judge": judge_run,
                        **({"origin": "generated"} if "runs" in generated and not judge_run
                           else {})})
    write_json(entries, out / RUNS_DIR / RUNS_JSON)
    log.info("wrote builder inputs to %s: %d thetas, %d verdict rows, %d first-stage runs, "
             "%d runs", out, len(thetas), len(criteria), len(first_stage), len(runs))
    return out


def _read_parquet(path: Path, required: list[str]) -> pd.DataFrame:
    frame = read_parquet(path, required=required, what="a builder input table").to_pandas()
    return ids_as_text(frame)


__all__ = ["CALIBRATION_DIR", "CRITERIA_FILE", "FIRST_STAGE_DIR", "FIRST_STAGE_JSON", "ITEM_PARAMS_JSON",
           "JUDGE_DIR", "JUDGE_JSON", "JUDGING_FILE", "RUNS_DIR", "RUNS_JSON", "THETAS_FILE",
           "TOURNAMENT_FILE", "BuildInputs", "JudgeInfo", "RunSpec", "calibrated_file", "for_split",
           "read_computed_runs", "read_inputs", "read_runs_json", "run_file_name",
           "table_for_split", "write_builder_inputs", "write_computed_runs"]
