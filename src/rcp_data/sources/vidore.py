"""ViDoRe v3 through ``datasets``: page images, OCR text, 8 domains x 6 query languages.

Upstream (no ir_datasets family): ``vidore/vidore_v3_<domain>_mteb_format`` holds the page
images (configs ``<language>-corpus``, ``-queries``, ``-qrels``; split ``test``) and
``mteb/Vidore3<Domain>OCRRetrieval`` adds the OCR markdown as ``text``. Quirks handled here:

- each language's qrels config holds ALL six languages' judgements: qrels are filtered to the
  subset's own queries (else gold counts inflate about 6x);
- a query's language is read from its record, never from its row position (5 of 8 domains
  have two batches of 6 language blocks);
- the corpus is read once per domain, page bytes untouched, and shared by the six subsets;
- data notes (empty OCR pages, byte-identical OCR groups and those with different qrels,
  questions per language) are computed from the data.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa

from rcp_data.core.errors import InputError
from rcp_data.core.specs import DomainSpec, SuiteSpec
from rcp_data.sources.base import (
    CorpusFacts,
    CorpusReader,
    SubsetSource,
    SuiteSource,
    scan_batches,
)

log = logging.getLogger(__name__)

SPLIT = "test"
BATCH_ROWS = 256


def corpus_schema() -> pa.Schema:
    """``id, image, text`` with the metadata that makes ``datasets`` decode ``image``."""
    import datasets

    return datasets.Features({
        "id": datasets.Value("string"),
        "image": datasets.Image(),
        "text": datasets.Value("string"),
    }).arrow_schema


def _local_cache(folder: Path) -> str:
    """A datasets cache folder of a local mirror's own: ``datasets`` keys a local folder's
    cache by its name and file names, not its place or bytes, so two mirrors with the same
    names (or a mirror rewritten in place) would read each other's cached tables."""
    import hashlib

    import datasets

    h = hashlib.sha256(str(folder.resolve()).encode())
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(folder).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n"
                     .encode())
    return str(Path(datasets.config.HF_DATASETS_CACHE) / "rcp-data-local" / h.hexdigest()[:16])


def _load(repo: str, config: str, root: Path | None, revision: str | None):
    import datasets

    path = str(root / repo.split("/", 1)[1]) if root is not None else repo
    cache = _local_cache(Path(path)) if root is not None and Path(path).is_dir() else None
    try:
        return datasets.load_dataset(path, config, split=SPLIT, revision=revision,
                                     cache_dir=cache)
    except (FileNotFoundError, ValueError) as exc:
        raise InputError(f"cannot load config {config!r} ({exc})", path=path) from exc


def _arrow(ds) -> pa.Table:
    """The dataset's arrow table without decoding images."""
    return ds.with_format("arrow")[:]


def _domain_corpus(domain: DomainSpec, languages: list[str], root: Path | None,
                   revision: str | None) -> tuple[CorpusReader, pd.DataFrame]:
    lang = languages[0]
    images = _load(domain.source, f"{lang}-corpus", root, revision)
    ocr = _load(domain.ocr_source, f"{lang}-corpus", root, revision)
    text = _arrow(ocr).select(["id", "text"]).to_pandas()
    if text["id"].duplicated().any():
        dup = text.loc[text["id"].duplicated(), "id"].iloc[0]
        raise InputError(f"duplicate page id {dup!r} in the OCR corpus", path=domain.ocr_source)
    text_by_id = dict(zip(text["id"], text["text"].fillna(""), strict=True))
    ids = _arrow(images).column("id").to_pylist()
    missing = [i for i in ids if i not in text_by_id]
    if missing:
        raise InputError(f"{len(missing)} page(s) have no OCR text, e.g. {missing[0]!r}",
                         path=domain.ocr_source)
    schema = corpus_schema()
    img_ds = images

    def batches() -> Iterator[pa.RecordBatch]:
        arrow_ds = img_ds.with_format("arrow")
        for start in range(0, len(arrow_ds), BATCH_ROWS):
            chunk = arrow_ds[start:start + BATCH_ROWS]
            page_ids = chunk.column("id").to_pylist()
            yield pa.RecordBatch.from_arrays(
                [chunk.column("id").combine_chunks().cast(pa.string()),
                 chunk.column("image").combine_chunks(),
                 pa.array([text_by_id[i] for i in page_ids], pa.string())],
                schema=schema,
            )

    ocr_frame = pd.DataFrame({"id": ids, "text": [text_by_id[i] for i in ids]})
    table = pa.Table.from_pandas(ocr_frame, preserve_index=False)

    def facts() -> CorpusFacts:  # from the ids and OCR texts in memory: no pass over images
        return scan_batches(iter(table.to_batches()), domain.source)[0]

    return CorpusReader(batches, group=domain.name, size=len(ids), schema=schema,
                        facts_of=facts, source=domain.source), ocr_frame


def _queries(domain: DomainSpec, languages: list[str], root: Path | None,
             revision: str | None) -> pd.DataFrame:
    frames = []
    for lang in languages:
        q = _arrow(_load(domain.source, f"{lang}-queries", root, revision)).to_pandas()
        frames.append(q)
    queries = pd.concat(frames, ignore_index=True)
    if "language" not in queries.columns:
        raise InputError("queries carry no 'language' field", path=domain.source,
                         field="language")
    queries = queries.drop_duplicates("id", keep="first")
    return queries


def _qrels(domain: DomainSpec, languages: list[str], root: Path | None,
           revision: str | None) -> pd.DataFrame:
    frames = [_arrow(_load(domain.source, f"{lang}-qrels", root, revision)).to_pandas()
              for lang in languages]
    qrels = pd.concat(frames, ignore_index=True)[["query-id", "corpus-id", "score"]]
    qrels = qrels.astype({"query-id": str, "corpus-id": str})
    conflict = qrels.groupby(["query-id", "corpus-id"])["score"].nunique()
    if (conflict > 1).any():
        q, d = conflict[conflict > 1].index[0]
        raise InputError(f"query {q!r}, page {d!r} has different grades in different configs",
                         path=domain.source, field="score")
    return qrels.drop_duplicates(["query-id", "corpus-id"]).reset_index(drop=True)


def data_notes(ocr: pd.DataFrame, qrels: pd.DataFrame, queries: pd.DataFrame) -> dict:
    """Empty OCR pages, byte-identical OCR groups (and those with different qrels), per language."""
    empty = ocr["text"].str.strip() == ""
    nonempty = ocr[~empty]
    groups = nonempty.groupby("text")["id"].agg(list)
    groups = groups[groups.map(len) > 1]
    pos = qrels[qrels["score"] > 0]
    by_doc = pos.groupby("corpus-id").apply(
        lambda g: frozenset(zip(g["query-id"], g["score"], strict=True)), include_groups=False)
    differing = 0
    for ids in groups:
        labels = {by_doc.get(i, frozenset()) for i in ids}
        if len(labels) > 1:
            differing += 1
    return {
        "empty_ocr_pages": int(empty.sum()),
        "empty_ids": ocr.loc[empty, "id"].tolist(),
        "identical_ocr_groups": int(len(groups)),
        "identical_ocr_pages": int(groups.map(len).sum()) if len(groups) else 0,
        "identical_ocr_groups_with_different_qrels": differing,
        "questions_per_language": {str(k): int(v) for k, v in
                                   queries["language"].value_counts().sort_index().items()},
    }


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Read ViDoRe v3 (``options``: ``root`` = local mirror folder, ``domains`` = comma list,
    ``revision``)."""
    options = dict(options or {})
    root = Path(options["root"]) if options.get("root") else None
    revision = options.get("revision")
    wanted = options.get("domains")
    domains = [d for d in spec.domains if not wanted or d.name in wanted.split(",")]
    languages = list(spec.view_languages)
    subsets: dict[str, SubsetSource] = {}
    facts: dict = {"domains": {}}
    for domain in domains:
        corpus, ocr = _domain_corpus(domain, languages, root, revision)
        queries = _queries(domain, languages, root, revision)
        qrels = _qrels(domain, languages, root, revision)
        notes = data_notes(ocr, qrels, queries)
        unknown = set(qrels["corpus-id"]) - set(ocr["id"])
        if unknown:
            raise InputError(f"qrels name {len(unknown)} page(s) missing from the corpus, e.g. "
                             f"{sorted(unknown)[0]!r}", path=domain.source, field="corpus-id")
        facts["domains"][domain.name] = {k: v for k, v in notes.items() if k != "empty_ids"}
        for lang in languages:
            name = f"{domain.name}__{lang}"
            q = queries[queries["language"] == lang]
            sub_q = pd.DataFrame({"id": q["id"].astype(str).to_numpy(),
                                  "text": q["text"].astype(str).to_numpy()})
            sub_qrels = qrels[qrels["query-id"].isin(set(sub_q["id"]))].reset_index(drop=True)
            sub_notes = {"empty_ids": notes["empty_ids"], "questions": int(len(sub_q)),
                         "empty_ocr_pages": notes["empty_ocr_pages"]}
            subsets[name] = SubsetSource(name, corpus, sub_q, sub_qrels, None, sub_notes,
                                         {"queries": domain.source, "qrels": domain.source})
        log.info("read ViDoRe v3 %s: %d pages, %d questions over %d languages, %d qrels", domain.name,
                 corpus.size, len(queries), len(languages), len(qrels))
    return SuiteSource(spec.name, subsets, json.loads(json.dumps(facts)))
