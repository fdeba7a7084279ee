"""Reading a user's ranking: a TREC run file, a parquet table or mteb's saved predictions.

Every reader returns one long table ``query-id, corpus-id, score`` (strings, strings, float64)
with an optional ``subset`` column (mteb predictions name their subset; a parquet table may):

- TREC run file: ``qid Q0 docid rank score tag``, six fields a line (the project's one run
  parser);
- parquet: columns ``query-id``, ``corpus-id``, ``score`` and optionally ``subset``;
- mteb's prediction folder (``mteb.evaluate(..., prediction_folder=DIR)``): every
  ``*_predictions.json`` in it, ``{hf_subset: {split: {query-id: {corpus-id: score}}}}``; only
  the release's split is read.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.errors import InputError, NotFoundError, UsageError
from rcp_data.core.io import read_parquet, read_text
from rcp_data.runs.compressed import read_bytes, without_suffix
from rcp_data.runs.run_files import TAG_ATTR, read_run_file, read_trec_run_table
from rcp_data.runs.run_tags import tag_of

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["query-id", "corpus-id", "score"]
PREDICTIONS_GLOB = "*_predictions.json"


def read_ranking(path: str | Path, *, split: str) -> pd.DataFrame:
    """The ranking in ``path`` (file or mteb prediction folder) as a long table; a TREC run
    file's one tag in ``attrs[TAG_ATTR]`` (:func:`run_names` takes it)."""
    path = Path(path)
    if path.is_dir():
        return read_mteb_predictions(path, split=split)
    if not path.exists():
        raise NotFoundError("run not found (a TREC run file, a parquet table or an mteb "
                         "prediction folder)", path=str(path))
    if path.suffix == ".parquet":
        return _read_parquet_run(path)
    if path.suffix == ".json":
        return read_mteb_predictions(path, split=split)
    frame = read_run_file(path)
    out = _clean(frame[COLUMNS], str(path), lines=frame["_line"].to_numpy())
    out.attrs[TAG_ATTR] = frame.attrs.get(TAG_ATTR)     # the file's one tag: its run's name
    return out


def read_ranking_table(path: str | Path, *, split: str):
    """The ranking in ``path`` as an Arrow table ``query-id, corpus-id, score`` (strings,
    strings, float64), as :func:`read_ranking` reads it; a canonical TREC run file is parsed by
    Arrow and checked with vectorised tests (many large runs: ``score --qrels``)."""
    import numpy as np
    import pyarrow as pa

    path = Path(path)
    table = None
    if path.is_file() and path.suffix not in (".parquet", ".json"):
        table = read_trec_run_table(path)
    if table is None:
        frame = read_ranking(path, split=split)
        return pa.Table.from_pandas(frame[COLUMNS], preserve_index=False)
    score = table.column("score").to_numpy()
    bad = ~np.isfinite(score)
    if bad.any():
        row = int(bad.argmax())
        raise InputError(f"score {float(score[row])} is not finite", path=str(path),
                         row=row + 1, field="score")
    return table.select(COLUMNS)


def _read_parquet_run(path: Path) -> pd.DataFrame:
    table = read_parquet(path, required=COLUMNS, what="a run (query-id, corpus-id, score)")
    keep = COLUMNS + (["subset"] if "subset" in table.column_names else [])
    frame = table.select(keep).to_pandas()
    return _clean(frame, str(path))


def _clean(frame: pd.DataFrame, source: str, lines=None) -> pd.DataFrame:
    """String ids, finite float scores, no null (``lines``: each row's line in a text file,
    named in an error; else its row number)."""
    def where(row: int) -> int:
        return int(lines[row]) if lines is not None else row + 1

    for col in frame.columns:
        if frame[col].isna().any():
            row = int(frame[col].isna().to_numpy().nonzero()[0][0])
            raise InputError("null value", path=source, row=where(row), field=col)
    out = frame.astype({"query-id": str, "corpus-id": str})
    if "subset" in out.columns:
        out["subset"] = out["subset"].astype(str)
    try:
        out["score"] = out["score"].astype("float64")
    except (TypeError, ValueError) as exc:
        raise InputError(f"scores are not numbers ({exc})", path=source, field="score") from exc
    bad = ~out["score"].map(math.isfinite)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(f"score {float(out['score'].iloc[row])} is not finite", path=source,
                         row=where(row), field="score")
    return out.reset_index(drop=True)


def prediction_files(path: Path) -> list[Path]:
    """The mteb prediction files of a folder (or the one file given)."""
    if path.is_file():
        return [path]
    files = sorted(path.glob(PREDICTIONS_GLOB))
    if not files:
        raise InputError(f"no mteb prediction file ({PREDICTIONS_GLOB}) in the folder; save "
                         "them with mteb.evaluate(..., prediction_folder=DIR)", path=str(path))
    return files


def read_mteb_predictions(path: Path, *, split: str) -> pd.DataFrame:
    """mteb's saved predictions: one row per (subset, query, document) of ``split``."""
    import pandas as pd

    frames = []
    seen: dict[str, Path] = {}
    for file in prediction_files(Path(path)):
        try:
            data = json.loads(read_text(file))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"not an mteb prediction file ({exc})", path=str(file)) from exc
        except RecursionError:  # JSON nested deeper than Python's stack
            raise InputError("not an mteb prediction file (JSON nested too deep to read)",
                             path=str(file)) from None
        if not isinstance(data, dict):
            raise InputError("not an mteb prediction file (no JSON object)", path=str(file))
        for subset, splits in data.items():
            if subset == "mteb_model_meta":
                continue
            if not isinstance(splits, dict):
                raise InputError(f"not an mteb prediction file: subset {subset!r} holds "
                                 f"{_kind(splits)}, not {{split: predictions}}", path=str(file))
            part = split if split else (next(iter(splits)) if len(splits) == 1 else None)
            if part not in splits:
                continue
            if subset in seen:
                raise InputError(f"subset {subset!r} is predicted in two files ({seen[subset]} "
                                 "and this one); score them as two runs", path=str(file))
            seen[subset] = file
            frame = pd.DataFrame(_prediction_rows(splits[part], subset, part, str(file)),
                                 columns=COLUMNS)
            frame.insert(0, "subset", subset)
            frames.append(_clean(frame, str(file)))
    if not frames:
        raise InputError(f"the predictions hold no subset with split {split!r}", path=str(path))
    return pd.concat(frames, ignore_index=True)


def _prediction_rows(queries: object, subset: str, split: str, source: str
                     ) -> list[tuple[str, str, float]]:
    """``(query, document, score)`` of one subset's split, ``{query-id: {corpus-id: score}}``;
    any other shape is an InputError naming the file, the subset, split and query."""
    where = f"subset {subset!r}, split {split!r}"
    if not isinstance(queries, dict):
        raise InputError(f"not an mteb prediction file: {where} holds {_kind(queries)}, not "
                         "{query-id: {corpus-id: score}}", path=source)
    rows = []
    for q, docs in queries.items():
        if not isinstance(docs, dict):
            raise InputError(f"not an mteb prediction file: {where}, query {q!r} holds "
                             f"{_kind(docs)}, not {{corpus-id: score}}", path=source)
        for d, s in docs.items():
            if isinstance(s, bool) or not isinstance(s, int | float):
                raise InputError(f"not an mteb prediction file: {where}, query {q!r}, "
                                 f"document {d!r} has score {_kind(s)}, not a number",
                                 path=source, field="score")
            if isinstance(s, int) and not -_FLOAT_MAX <= s <= _FLOAT_MAX:
                raise InputError(f"not an mteb prediction file: {where}, query {q!r}, "
                                 f"document {d!r} has an integer score beyond a float's range",
                                 path=source, field="score")
            rows.append((q, d, s))
    return rows


_FLOAT_MAX = int(sys.float_info.max)


def _kind(value: object) -> str:
    """A JSON value as a message shows it: ``a list``, ``an object``, else its JSON text."""
    if isinstance(value, list | dict):
        return "a list" if isinstance(value, list) else "an object"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def default_name(path: str | Path) -> str:
    """A run's name when its file holds no one tag: a TREC run file's name without its
    compression suffix (``run.txt.gz`` -> ``run.txt``: the
    name a user sees in their folder); a table (``.parquet``, ``.json``): its stem; a
    prediction folder: the folder's name."""
    p = Path(path)
    if p.is_dir():
        return p.name
    name = without_suffix(p.name)
    return Path(name).stem if Path(name).suffix in (".parquet", ".json") else name


def is_text_run(path: object) -> bool:
    """Whether ``path`` names a file read as a TREC run (not a table, predictions or folder)."""
    return isinstance(path, str | Path) and Path(path).is_file() and \
        Path(path).suffix not in (".parquet", ".json")


def run_tag(path: str | Path) -> str | None:
    """The one tag (sixth field) of every line of a TREC run file (:func:`tag_of` of its
    bytes); a reader that has the bytes already takes the tag from them instead."""
    return tag_of(read_bytes(path))


# A run's name labels its row in every output (the Markdown tables, TSV, CSV, the plain table):
# a control character (newline, tab, ...) or a Markdown cell bar in it would split a row or add
# one, so such a name is refused, whichever way it came (--name, a file's name, a mapping key).
_UNSAFE_IN_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f|]")


def check_run_name(name: object, *, from_file: bool = False) -> str:
    """``name`` if it can label a table row; a :class:`UsageError` saying what is in it
    (``from_file``: the name is a file's, :func:`default_name`)."""
    text = str(name)
    bad = _UNSAFE_IN_NAME.search(text)
    if bad is None and text.strip():
        return text
    what = "is empty" if bad is None else f"holds {bad.group()!r}"
    origin = " (the file's name)" if from_file else ""
    raise UsageError(f"run name {text!r}{origin} {what}: a run's name labels a table row, so it "
                     "may hold no control character or '|'; pass --name")


def run_names(paths: Sequence[object], names: Sequence[str] | None,
              tags: Sequence[str | None] | None = None) -> list[str]:
    """The name of each run: ``names`` (one per run, in order), else each TREC run's tag (its
    sixth field, as trec_eval names a run) where its file holds one tag on every line, else
    the file's :func:`default_name`. Runs whose tags are one fall back to their file names.
    ``tags``: each run's tag as its reader found it (None: none); without them each TREC run
    file's tag is read here. Each name fit to label a table row (:func:`check_run_name`); two
    runs with one name are a UsageError naming both files."""
    if names and len(names) != len(paths):
        raise UsageError(f"--name was given {len(names)} time(s) for {len(paths)} run(s); "
                         "give one --name per run, in the same order")
    if names:
        labels = [check_run_name(n) for n in names]
    else:
        if tags is None:
            tags = [run_tag(p) if is_text_run(p) else None for p in paths]
        labels = [t if t is not None else default_name(p)
                  for t, p in zip(tags, paths, strict=True)]
        shared = {t for t in tags if t is not None and labels.count(t) > 1}
        labels = [default_name(p) if t in shared else n
                  for n, t, p in zip(labels, tags, paths, strict=True)]
        labels = [check_run_name(n, from_file=t is None) for n, t in
                  zip(labels, tags, strict=True)]
    for i, name in enumerate(labels):
        if name in labels[:i]:
            j = labels.index(name)
            raise UsageError(f"two runs are named {name!r} ({paths[j]} and {paths[i]}); pass "
                             "--name once per run to tell them apart")
    return labels


def check_name_count(paths: Sequence[object], names: Sequence[str] | None) -> None:
    """A UsageError where ``names`` is not one name per run (before any run is read)."""
    if names:
        run_names(paths, names)


__all__ = ["check_run_name", "default_name", "read_mteb_predictions", "read_ranking",
           "read_ranking_table", "run_names", "run_tag", "check_name_count", "is_text_run"]
