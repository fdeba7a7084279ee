"""SYNTHETIC BRIGHT corpora for the REAL upstream examples (the reference data's BRIGHT files)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd

FILLER = 300


def synthetic_corpus(examples: Path, task: str, filler: int = FILLER) -> pd.DataFrame:
    """SYNTHETIC documents: every gold and excluded id of the task's real examples, ``filler``
    more so that every query has more than a pool's worth of candidates, and one empty document."""
    ids: dict[str, None] = {}
    with gzip.open(examples, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            ids.update(dict.fromkeys(rec["gold_ids"]))
            ids.update(dict.fromkeys(d for d in rec["excluded_ids"] if d != "N/A"))
    ids.update(dict.fromkeys(f"synthetic-filler-{task}-{i}" for i in range(filler)))
    docs = pd.DataFrame({"id": list(ids), "content": [f"SYNTHETIC document {d}" for d in ids]})
    empty = pd.DataFrame({"id": [f"synthetic-empty-{task}"], "content": [""]})
    return pd.concat([docs, empty], ignore_index=True)
