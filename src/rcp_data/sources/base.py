"""The contract between a suite's upstream reader and the shared build stages.

A reader returns one :class:`SubsetSource` per subset: plain tables for queries, qrels and
exclusions, and a corpus that can be streamed in record batches (MS MARCO's 8.8M passages never
sit in memory at once). Subsets that share a corpus (TREC-DL; a ViDoRe domain) share one
:class:`CorpusReader` object, named by ``group``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class CorpusReader:
    """A corpus as a re-iterable stream of record batches with columns ``id, title, text``
    (ViDoRe: ``id, image, text``).

    ``batches()`` may be called more than once (e.g. once for BM25, once for writing).
    ``size`` is the number of documents when known up front.
    """

    batches: Callable[[], Iterator[pa.RecordBatch]]
    group: str | None = None
    size: int | None = None
    schema: pa.Schema | None = None
    #: optional fast membership test: ids -> boolean mask (else :meth:`known` streams the ids
    #: once and keeps them)
    contains: Callable[[pa.Array], pa.Array] | None = None
    _ids: pa.Array | None = field(default=None, init=False, repr=False, compare=False)

    def known(self, ids: pd.Series | list[str]) -> np.ndarray:
        """Boolean mask: which of ``ids`` are documents of this corpus."""
        values = pa.array(list(map(str, ids)), pa.string())
        if self.contains is not None:
            mask = self.contains(values)
        else:
            if self._ids is None:
                parts = [b.column(b.schema.get_field_index("id")).cast(pa.string())
                         for b in self.batches()]
                self._ids = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
            mask = pc.is_in(values, value_set=self._ids)
        return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, group: str | None = None) -> CorpusReader:
        table = pa.Table.from_pandas(frame, preserve_index=False)

        def _batches() -> Iterator[pa.RecordBatch]:
            yield from table.to_batches(max_chunksize=65_536)

        return cls(_batches, group=group, size=len(frame), schema=table.schema)

    def to_frame(self, columns: list[str] | None = None) -> pd.DataFrame:
        """Whole corpus in memory (small corpora and tests only)."""
        batches = list(self.batches())
        if not batches:
            return pd.DataFrame(columns=columns or ["id", "title", "text"])
        table = pa.Table.from_batches(batches)
        if columns:
            table = table.select(columns)
        return table.to_pandas()


@dataclass
class SubsetSource:
    """One subset as read from upstream.

    - ``queries``: ``id, text`` (optional ``instruction``, ``language``)
    - ``qrels``: ``query-id, corpus-id, score`` (int upstream grade; only rows upstream has)
    - ``excluded``: ``query-id, excluded-corpus-ids`` (list), one row per query with exclusions
    - ``notes``: counts of documented quirks (empty documents, repeated exclusions, ...)
    """

    name: str
    corpus: CorpusReader
    queries: pd.DataFrame
    qrels: pd.DataFrame
    excluded: pd.DataFrame | None = None
    notes: dict = field(default_factory=dict)


@dataclass
class SuiteSource:
    """All subsets of a suite, plus suite-level facts about the sources (versions, counts)."""

    suite: str
    subsets: dict[str, SubsetSource]
    facts: dict = field(default_factory=dict)
