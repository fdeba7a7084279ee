"""The contract between a suite's upstream reader and the shared build stages.

A reader returns one :class:`SubsetSource` per subset: plain tables for queries, qrels and
exclusions, and a corpus that can be streamed in record batches (MS MARCO's 8.8M passages never
sit in memory at once). Subsets that share a corpus (TREC-DL; a ViDoRe domain) share one
:class:`CorpusReader` object, named by ``group``.

Whatever a reader returns passes the same checks before a build writes anything
(:mod:`rcp_data.building.input_checks`): queries with unique ids and non-blank text; a corpus with
unique ids and non-blank texts (:meth:`CorpusReader.facts`; empty texts only where the suite's
spec allows them); qrels naming known queries and documents once each, with integer grades in
the spec's range; exclusions as lists of known document ids. A reader folds and counts the
quirks its upstream documents (repeated rows, string-repr id lists) before handing tables over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class CorpusFacts:
    """What one pass over a corpus found, for the checks a build runs before writing.

    ``documents``: the number of documents; ``empty_ids``: documents whose text is null, empty
    or blank, and ``first_empty_row`` the (1-based) row of the first; ``repeated``: ``(row, id)``
    of the first id seen twice; ``missing_id_row``: the first row with a null or empty id;
    ``source``: the file or dataset the rows are counted in.
    """

    documents: int
    empty_ids: tuple[str, ...] = ()
    first_empty_row: int | None = None
    repeated: tuple[int, str] | None = None
    missing_id_row: int | None = None
    source: str = "the corpus"


def scan_batches(batches: Iterable[pa.RecordBatch], source: str = "the corpus"
                 ) -> tuple[CorpusFacts, pa.Array]:
    """One pass over ``id[, text]`` record batches: the :class:`CorpusFacts` and the ids."""
    seen: set[str] = set()
    parts: list[pa.Array] = []
    empty: list[str] = []
    first_empty = repeated = missing = None
    row = 0
    for batch in batches:
        ids = batch.column(batch.schema.get_field_index("id")).cast(pa.string())
        parts.append(ids)
        blank = None
        if "text" in batch.schema.names:
            text = batch.column(batch.schema.get_field_index("text")).cast(pa.string())
            blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(text), ""), True)
            blank = blank.to_numpy(zero_copy_only=False)
        for i, doc_id in enumerate(ids.to_pylist()):
            row += 1
            if not doc_id:
                missing = missing or row
                continue
            if doc_id in seen:
                repeated = repeated or (row, doc_id)
            seen.add(doc_id)
            if blank is not None and blank[i]:
                empty.append(doc_id)
                first_empty = first_empty or row
    facts = CorpusFacts(row, tuple(empty), first_empty, repeated, missing, source)
    return facts, (pa.concat_arrays(parts) if parts else pa.array([], pa.string()))


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
    #: optional cheaper :meth:`facts` a reader knows already (e.g. from its own scan)
    facts_of: Callable[[], CorpusFacts] | None = None
    #: what errors about the corpus name (a file or dataset)
    source: str = "the corpus"
    _ids: pa.Array | None = field(default=None, init=False, repr=False, compare=False)
    _facts: CorpusFacts | None = field(default=None, init=False, repr=False, compare=False)

    def facts(self) -> CorpusFacts:
        """What one pass over the corpus finds (:class:`CorpusFacts`), computed once."""
        if self._facts is None:
            if self.facts_of is not None:
                self._facts = self.facts_of()
            else:
                self._facts, ids = scan_batches(self.batches(), self.source)
                if self._ids is None:
                    self._ids = ids
        return self._facts

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
    def from_frame(cls, frame: pd.DataFrame, group: str | None = None,
                   source: str = "the corpus") -> CorpusReader:
        table = pa.Table.from_pandas(frame, preserve_index=False)

        def _batches() -> Iterator[pa.RecordBatch]:
            yield from table.to_batches(max_chunksize=65_536)

        return cls(_batches, group=group, size=len(frame), schema=table.schema, source=source)

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
    - ``origins``: where the ``queries``, ``qrels`` and ``excluded`` tables come from (a file
      or dataset; what errors about them name)
    """

    name: str
    corpus: CorpusReader
    queries: pd.DataFrame
    qrels: pd.DataFrame
    excluded: pd.DataFrame | None = None
    notes: dict = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def origin(self, table: str) -> str:
        """What errors about ``table`` name: the reader's file or dataset for it."""
        return self.origins.get(table) or f"the {table} of subset {self.name}"


@dataclass
class SuiteSource:
    """All subsets of a suite, plus suite-level facts about the sources (versions, counts)."""

    suite: str
    subsets: dict[str, SubsetSource]
    facts: dict = field(default_factory=dict)
