"""BRIGHT through ir_datasets: the 12 ``bright/<task>`` datasets (hyphens) as subsets (underscores).

Facts about the source (the suites' source notes, checked against the real examples in tests):

- Each task's examples (``<task>.queries.parquet``: ``id, query, gold_ids, gold_ids_long,
  excluded_ids, ...``) give the queries (``queries_iter``) and, through ``qrels_iter``, one
  relevance-1 qrel per ``gold_ids`` entry and one relevance -100 qrel per ``excluded_ids`` entry
  (``"N/A"`` skipped). Documents: ``<task>.docs.parquet`` (``id, content``), no title.
- Gold = ``gold_ids`` (spec ``[source] gold``), the field of BRIGHT's own evaluation, mteb's
  BRIGHT tasks and ir_datasets' qrels. The separately distributed ``qrels.bright-<task>.txt``
  files equal it exactly; the ``.fixed`` variants add pairs (never remove any) in five tasks
  (biology, earth-science, robotics, stackoverflow, sustainable-living), so they are NOT used.
- Id lists repeat: aops' ``excluded_ids`` repeat ids, theoremqa-questions' ``gold_ids`` too.
  Repeats are folded and counted (``notes``). An id list stored as the string repr of a list
  (which ir_datasets iterates character by character) is restored and parsed.
- The per-task query instruction is mteb's BRIGHT task prompt (:func:`bright_instructions`,
  read from the installed mteb); it belongs in the task metadata, not in the queries.
- Bad input is an InputError: a gold or excluded id missing from the corpus, an id both gold and
  excluded, a document or query id repeated with different text.
"""

from __future__ import annotations

import logging
from functools import cache

import pandas as pd

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import SubsetSpec, SuiteSpec, load_spec
from rcp_data.sources import irds, irds_cache
from rcp_data.sources.base import SubsetSource, SuiteSource

log = logging.getLogger(__name__)

PREFIX = "bright/"
GOLD = 1
EXCLUDED = -100
NONE_MARK = "N/A"


def task_name(sub: SubsetSpec) -> str:
    """The ir_datasets task of a subset (``bright/earth-science`` -> ``earth-science``)."""
    return irds.dataset_key(sub, PREFIX, "bright")


def _cache_file(task: str, key: str) -> str:
    return irds.cache_file(irds_cache.BRIGHT, PREFIX, task, key)


def _restore(ids: list[str], path: str, row: int, field: str) -> list[str]:
    """Undo ir_datasets iterating a string-repr id list character by character."""
    if len(ids) > 1 and all(len(x) == 1 for x in ids):
        joined = "".join(ids)
        if joined.startswith("[") or joined == NONE_MARK:
            return irds_cache.parse_id_list(joined, path=path, row=row, field=field)
    return ids


def _fold(ids: list[str]) -> tuple[list[str], int]:
    """Ids without ``"N/A"`` and without repeats (first appearance kept), and the repeat count."""
    kept = [x for x in ids if x != NONE_MARK]
    unique = list(dict.fromkeys(kept))
    return unique, len(kept) - len(unique)


def read_examples(ds, dataset_id: str, path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Queries (``id, text``) and the examples' id lists through ir_datasets.

    Returns the folded queries and a frame ``query-id, gold, excluded`` (one row per query; the
    id lists as upstream lists them, repeats and ``"N/A"`` not yet removed).
    """
    with irds.upstream(dataset_id, "examples (queries)", path):
        queries = pd.DataFrame([(str(q.query_id), q.text) for q in ds.queries_iter()],
                               columns=["id", "text"])
    queries, repeats = irds.fold_rows(queries, ["id"], what="query", path=path)
    if repeats:
        log.warning("%s: %d repeated queries folded", dataset_id, repeats)
    row_of = {q: i for i, q in enumerate(queries["id"], start=1)}
    gold: dict[str, list[str]] = {q: [] for q in row_of}
    excluded: dict[str, list[str]] = {q: [] for q in row_of}
    with irds.upstream(dataset_id, "examples (qrels)", path):
        for r in ds.qrels_iter():
            qid = str(r.query_id)
            if qid not in row_of:
                raise InputError(f"qrel names unknown query {qid!r}", path=path)
            if r.relevance == GOLD:
                gold[qid].append(str(r.doc_id))
            elif r.relevance == EXCLUDED:
                excluded[qid].append(str(r.doc_id))
            else:
                raise InputError(f"query {qid!r}: relevance {r.relevance} is neither {GOLD} "
                                 f"(gold) nor {EXCLUDED} (excluded)", path=path, row=row_of[qid])
    lists = pd.DataFrame({
        "query-id": list(row_of),
        "gold": [_restore(gold[q], path, row_of[q], "gold_ids") for q in row_of],
        "excluded": [_restore(excluded[q], path, row_of[q], "excluded_ids") for q in row_of],
    })
    return queries, lists


def _first_missing(ids: pd.Series, scan: irds.CorpusScan) -> int | None:
    known = scan.known(ids)
    if known.all():
        return None
    return int((~known).to_numpy().argmax())


def read_subset(sub: SubsetSpec, *, gold_field: str = "gold_ids") -> SubsetSource:
    """One ``bright/<task>`` dataset as a :class:`SubsetSource`."""
    if gold_field != "gold_ids":
        raise UsageError(f"gold field {gold_field!r} is not supported: the standard BRIGHT "
                         "datasets of ir_datasets give gold_ids")
    task = task_name(sub)
    ds = irds.load(sub.source)
    docs_file = _cache_file(task, "docs")
    examples_file = _cache_file(task, "queries")
    scan = irds.scan_corpus(ds, sub.source, docs_file)
    queries, lists = read_examples(ds, sub.source, examples_file)
    row_of = {q: i for i, q in enumerate(queries["id"], start=1)}

    gold_rows, ex_rows = [], []
    gold_repeats = ex_repeats = gold_listed = ex_listed = 0
    for qid, gold, excl in zip(lists["query-id"], lists["gold"], lists["excluded"], strict=True):
        g, rep = _fold(gold)
        gold_repeats += rep
        gold_listed += len(gold)
        e, rep = _fold(excl)
        ex_repeats += rep
        ex_listed += len([x for x in excl if x != NONE_MARK])
        both = set(g) & set(e)
        if both:
            raise InputError(f"query {qid!r}: document {sorted(both)[0]!r} is both gold and "
                             "excluded", path=examples_file, row=row_of[qid], field="excluded_ids")
        gold_rows.extend((qid, d) for d in g)
        if e:
            ex_rows.append((qid, e))

    qrels = pd.DataFrame(gold_rows, columns=["query-id", "corpus-id"])
    qrels["score"] = GOLD
    miss = _first_missing(qrels["corpus-id"], scan)
    if miss is not None:
        qid, did = qrels["query-id"].iloc[miss], qrels["corpus-id"].iloc[miss]
        raise InputError(f"query {qid!r}: gold id {did!r} is not in the corpus {docs_file}",
                         path=examples_file, row=row_of[qid], field="gold_ids")
    excluded = None
    if ex_rows:
        excluded = pd.DataFrame(ex_rows, columns=["query-id", "excluded-corpus-ids"])
        flat = excluded.explode("excluded-corpus-ids")
        miss = _first_missing(flat["excluded-corpus-ids"], scan)
        if miss is not None:
            qid, did = flat["query-id"].iloc[miss], flat["excluded-corpus-ids"].iloc[miss]
            raise InputError(f"query {qid!r}: excluded id {did!r} is not in the corpus "
                             f"{docs_file}", path=examples_file, row=row_of[qid],
                             field="excluded_ids")
    if excluded is not None and not sub.excludes:
        log.warning("%s: upstream lists exclusions for %d queries though the spec names none",
                    sub.name, len(excluded))

    n_excluded_pairs = (0 if excluded is None
                        else int(excluded["excluded-corpus-ids"].map(len).sum()))
    notes = {
        **irds.reader_notes(scan, queries, qrels),
        "gold_listed": gold_listed,
        "gold_repeats": gold_repeats,
        "excluded_queries": 0 if excluded is None else len(excluded),
        "excluded_listed": ex_listed,
        "excluded_pairs": n_excluded_pairs,
        "excluded_repeats": ex_repeats,
    }
    log.info("%s (%s): %d queries, %d gold qrels (%d repeats folded), %d documents (%d empty)",
             sub.name, sub.source, len(queries), len(qrels), gold_repeats, len(scan),
             len(scan.empty_ids))
    if excluded is not None:
        log.info("%s: %d queries exclude %d documents (%d listed; %d repeats folded)", sub.name,
                 len(excluded), n_excluded_pairs, ex_listed, ex_repeats)
    return SubsetSource(sub.name, irds.corpus_reader(sub.source, scan), queries, qrels,
                        excluded, notes, dict.fromkeys(("queries", "qrels", "excluded"),
                                                       examples_file))


@cache
def _mteb_prompts() -> dict[str, tuple[str, object]]:
    import mteb

    return {t.metadata.name.lower(): (t.metadata.name, t.metadata.prompt)
            for t in mteb.get_tasks(task_types=["Retrieval"])
            if t.metadata.name.lower().startswith("bright")}


def bright_instructions(spec: SuiteSpec | None = None) -> dict[str, str]:
    """Each subset's query instruction: the ``prompt["query"]`` of mteb's task
    ``<spec task>Retrieval`` (case-insensitive), read from the installed mteb."""
    import mteb

    spec = spec or load_spec("bright")
    prompts = _mteb_prompts()
    out = {}
    for sub in spec.subsets:
        found = prompts.get(f"{sub.task}Retrieval".lower())
        if found is None:
            raise UsageError(f"mteb {mteb.__version__} has no task {sub.task}Retrieval "
                             f"(subset {sub.name!r})")
        name, prompt = found
        text = prompt.get("query") if isinstance(prompt, dict) else prompt
        if not isinstance(text, str) or not text:
            raise UsageError(f"mteb task {name} has no query prompt")
        out[sub.name] = text
    return out


def read_bright(spec: SuiteSpec | None = None, subsets: list[str] | None = None, *,
                instructions: bool = True) -> SuiteSource:
    """Read the BRIGHT suite (all subsets of the spec, or the named ones) through ir_datasets.

    ``facts["instructions"]`` holds :func:`bright_instructions` (skipped with
    ``instructions=False``).
    """
    spec = spec or load_spec("bright")
    names = subsets or spec.subset_names
    unknown = [n for n in names if n not in spec.subset_names]
    if unknown:
        raise UsageError(f"suite {spec.name!r} has no subsets {unknown}; "
                         f"known: {', '.join(spec.subset_names)}")
    gold_field = spec.source.gold or "gold_ids"
    read = {n: read_subset(spec.subset(n), gold_field=gold_field) for n in names}
    facts = {
        "reader": "ir_datasets",
        "ir_datasets": irds.irds_version(),
        "gold": gold_field,
        "sources": {n: spec.subset(n).source for n in names},
        "queries": sum(len(s.queries) for s in read.values()),
        "qrels": sum(len(s.qrels) for s in read.values()),
        "documents": sum(s.corpus.size or 0 for s in read.values()),
        "excluded_queries": sum(s.notes["excluded_queries"] for s in read.values()),
    }
    if instructions:
        import mteb

        every = bright_instructions(spec)
        facts["instructions"] = {n: every[n] for n in names}
        facts["mteb"] = mteb.__version__
    log.info("bright: %d subsets, %d queries, %d gold qrels, %d queries with exclusions",
             len(read), facts["queries"], facts["qrels"], facts["excluded_queries"])
    return SuiteSource(spec.name, read, facts)


def _truthy(value: str) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def check_cached(spec: SuiteSpec, names: list[str]) -> None:
    """Offline guard: each named task's examples and documents are in ir_datasets' cache
    (the model-reasoning files too, which ``queries_iter`` opens)."""
    keys = ["docs", "queries"] + [f"{s}/queries" for s in irds_cache.reasoning_sources()]
    irds.require_cached(irds_cache.BRIGHT, [task_name(spec.subset(n)) for n in names], keys,
                        family="BRIGHT", stager="stage_bright")


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Source reader of the BRIGHT suite (``[source] read`` in builders/bright.toml).

    Options (``--source-option K=V``): ``subsets`` (comma list), ``examples_dir`` (a folder of
    ``examples.bright-<task>.jsonl.gz`` mirrors, placed at ir_datasets' cache paths before
    reading), ``instructions`` (1 default / 0), ``allow_download`` (1 default: ir_datasets
    downloads what its cache lacks; 0: refuse).
    """
    options = dict(options or {})
    known = {"subsets", "examples_dir", "instructions", "allow_download"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"unknown BRIGHT source option(s) {unknown}; known: {sorted(known)}")
    names = [n for n in str(options.get("subsets", "")).split(",") if n] or spec.subset_names
    bad = [n for n in names if n not in spec.subset_names]
    if bad:
        raise UsageError(f"suite {spec.name!r} has no subsets {bad}")
    if options.get("examples_dir"):
        tasks = [task_name(spec.subset(n)) for n in names]
        irds_cache.stage_bright_mirror(options["examples_dir"], tasks=tasks)
    if not _truthy(options.get("allow_download", "1")):
        check_cached(spec, names)
    return read_bright(spec, names, instructions=_truthy(options.get("instructions", "1")))
