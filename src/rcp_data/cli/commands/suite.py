"""``rcp-data suite``: a benchmark of one's own, from local files.

- ``suite init NAME --from DIR``: inspect DIR (BEIR folders, TREC topics + qrels + corpus, or CSV
  tables; one subset per sub-folder or per value of ``--subset-column``) and write the suite's
  spec (:func:`rcp_data.sources.local_spec.init_suite`). What is not given as a flag is asked on
  a terminal; card facts left unanswered stay TODO markers, which ``build`` refuses to prepare a
  release with.
- ``suite first-stage --spec FILE --out DIR``: the first-stage runs the build computes (BM25,
  ``[pool] dense``) and the pools a judge is shown, in the builder-input layout
  (:mod:`rcp_data.building.first_stage`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from rcp_data.cli.options import add_source_option, out_folder, source_options
from rcp_data.cli.output import say
from rcp_data.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("suite", help="a benchmark of one's own: write its spec, run its "
                            "first stage",
                            description="Make a suite from local files: write its spec "
                            "(init), compute its first stage and pools (first-stage).")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = actions.add_parser("init", help="write the spec of a benchmark given as local files",
                           description="Inspect a folder of local files and write a suite "
                           "spec for it (subsets, grade scale, pool, card facts).")
    p.add_argument("name", help="suite name (lower-case letters, digits, '_')")
    p.add_argument("--from", dest="data", required=True, metavar="DIR|irds:ID[,ID...]",
                   help="the benchmark's folder: BEIR (corpus.jsonl, queries.jsonl, "
                   "qrels/<split>.tsv), TREC (topics.tsv|topics.txt, qrels.txt, corpus.tsv|"
                   ".jsonl) or CSV (corpus.csv, queries.csv, qrels.csv), itself or one "
                   "sub-folder per subset; or irds: and ir_datasets ids (one subset each)")
    p.add_argument("--out", type=Path,
                   help="spec file to write (default: NAME.toml here; '-': stdout)")
    p.add_argument("--force", action="store_true", help="replace --out when it exists")
    p.add_argument("--format", choices=("beir", "trec", "csv", "table"),
                   help="the files' format (default: found from the file names); table: one "
                   "CSV/TSV/JSONL/parquet file of (query, document, grade) rows")
    for role, flag, what in (("query", "query", "the query text"),
                             ("query_id", "query-id", "the query id (default: made from the text)"),
                             ("document", "doc", "the document text"),
                             ("document_id", "doc-id",
                              "the document id (default: made from the text)"),
                             ("title", "title", "the document title"),
                             ("grade", "grade", "the grade")):
        p.add_argument(f"--{flag}-column", dest=f"col_{role}", default="", metavar="COLUMN",
                       help=f"format table: the column of {what} (default: found by name)")
    p.add_argument("--grade-map", default="", metavar="V=G[,V=G...]|FILE",
                   help="format table: grades that are not integers, mapped (2.1=2,2.2=2; or a "
                   "file of such pairs)")
    p.add_argument("--subset-column", default="", metavar="COLUMN",
                   help="one subset per value of this column of the tables (default: one per "
                   "sub-folder)")
    p.add_argument("--split", default="test", help="the qrels split to read (BEIR "
                   "qrels/<split>.tsv; default test)")
    p.add_argument("--grade-positive", type=int, metavar="N",
                   help="the lowest grade that is a positive label (asked when not given)")
    p.add_argument("--tie-rule", choices=("doc-id", "group-mean", "pool-order"),
                   default="doc-id", help="the tie rule of the card's tables (default doc-id, "
                   "trec_eval's)")
    p.add_argument("--judge-preset", choices=("full", "reduced", "stage-b-only"),
                   default="full", help="the judging schedule's preset (default full)")
    p.add_argument("--pool-size", type=int, default=150, help="documents per pool (default 150)")
    p.add_argument("--card-k", type=_cutoffs, default=None, metavar="K[,K...]",
                   help="the cutoffs of the card's tables, the first its main score (default "
                   "10; e.g. 20 or 5,20)")
    p.add_argument("--dense", action="append", default=[], metavar="[KEY=]MODEL",
                   help="a dense first-stage retriever: a sentence-transformers model (a local "
                   "folder or a cached Hub id; repeatable), fused with BM25")
    p.add_argument("--candidates", action="store_true",
                   help="the pools are the benchmark's fixed candidate lists, given with the "
                   "builder inputs as first_stage/candidates.trec (no first stage is computed, "
                   "no graded document added)")
    p.add_argument("--license", help="the data's licence (an SPDX id, e.g. cc-by-4.0)")
    p.add_argument("--citation", metavar="BIBTEX", help="a BibTeX entry of the benchmark")
    p.add_argument("--citation-file", type=Path, metavar="FILE",
                   help="a file holding the BibTeX entry")
    p.add_argument("--description", help="what the benchmark is, in a paragraph")
    p.add_argument("--link", action="append", default=[], metavar="URL",
                   help="a source link of the data (repeatable)")
    p.add_argument("--repo", metavar="OWNER/NAME", help="the Hub dataset repo of its releases")
    p.add_argument("--language", default="en", help="the language of the data (default en)")
    p.add_argument("--synthetic", action="store_true",
                   help="the data is SYNTHETIC (the card and releases say so)")
    p.add_argument("--no-input", action="store_true",
                   help="never ask: what is not given stays a TODO marker")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_init)

    p = actions.add_parser("first-stage", help="compute the first-stage runs and the pools",
                           description="Compute the runs the build computes (BM25, [pool] "
                           "dense) and the pools a judge is shown, into DIR/first_stage/ and "
                           "DIR/pools.parquet (the builder-input layout), and the pools as "
                           "judge run --pool DIR reads them.")
    p.add_argument("--spec", type=Path, required=True, help="the suite's spec file")
    p.add_argument("--out", type=out_folder, required=True, help="builder inputs folder to write into")
    p.add_argument("--dense", action="append", default=[], metavar="[KEY=]MODEL",
                   help="a dense retriever: the model of one the spec fuses, or a new one "
                   "fused beside them (named KEY or after the model; repeatable)")
    add_source_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_first_stage)


def _cutoffs(text: str) -> list[int]:
    """``--card-k 20`` or ``--card-k 5,20``: positive integers, none twice."""
    try:
        values = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--card-k {text!r}: expected integers (20 or 5,20)") from None
    if not values or min(values) < 1 or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"--card-k {text!r}: expected positive integers, none twice")
    return values


def _ask(args: argparse.Namespace, question: str) -> str | None:
    if args.no_input or not sys.stdin.isatty():
        return None
    answer = input(f"{question}: ").strip()
    return answer or None


def run_init(args: argparse.Namespace) -> int:
    from rcp_data.core.io import read_text
    from rcp_data.sources.local_files import OTHER_FORMATS
    from rcp_data.sources.local_spec import SpecAnswers, init_suite
    from rcp_data.sources.local_table import ROLES, parse_grade_map

    if str(args.out or "") != "-" and not str(args.data).startswith("irds:"):
        from rcp_data.core.outputs import check_apart

        # the spec is never written over, around or inside its input, asked nothing first
        check_apart(Path(args.out or f"{args.name}.toml"), {"--from": args.data})
    positive = args.grade_positive
    if positive is None:
        text = _ask(args, "the lowest grade that is a positive label (grade_positive)")
        if text is not None:
            try:
                positive = int(text)
            except ValueError as exc:
                raise UsageError(f"grade_positive must be an integer, got {text!r}") from exc
    citation = args.citation
    if args.citation_file:
        citation = read_text(args.citation_file).strip()
    answers = SpecAnswers(
        grade_positive=positive, tie_rule=args.tie_rule, judge_preset=args.judge_preset,
        pool_size=args.pool_size, dense=tuple(args.dense), repo=args.repo,
        candidates=args.candidates,
        license=args.license or _ask(args, "licence of the data (SPDX id)"),
        citation=citation or _ask(args, "BibTeX entry (one line)"),
        description=args.description or _ask(args, "description (one paragraph)"),
        links=tuple(args.link) or tuple(filter(None, [_ask(args, "source link (URL)")])),
        language=args.language, synthetic=args.synthetic,
        **({"card_k": tuple(args.card_k)} if args.card_k else {}))
    out = args.out or Path(f"{args.name}.toml")
    result = init_suite(args.name, args.data, out, answers, fmt=args.format,
                        subset_column=args.subset_column, split=args.split, force=args.force,
                        columns={r: getattr(args, f"col_{r}") for r in ROLES
                                 if getattr(args, f"col_{r}")},
                        grade_map=parse_grade_map(args.grade_map))
    found = result.found
    if found.detected:
        logging.getLogger(__name__).warning("format %s (found from the file names; %s "
                                            "chooses another)", found.format, OTHER_FORMATS)
    if str(out) == "-":
        if args.json:
            raise UsageError("--out - prints the spec; --json cannot print beside it")
        sys.stdout.write(result.text)
        return 0
    say(args, f"wrote {out}: suite {args.name}, {len(found.subsets)} subset(s) "
        f"({found.format}), grades {found.grades[0]}..{found.grades[1]}, positive >= "
        f"{positive}")
    if result.todos:
        logging.getLogger(__name__).warning(
            "%s has TODO markers (build refuses to prepare a release until they are filled "
            "in): %s", out, ", ".join(result.todos))
    if args.json:
        print(json.dumps({"spec": str(out), "suite": args.name, "format": found.format,
                          "subsets": [s.name for s in found.subsets], "detected": found.detected,
                          "grades": list(found.grades), "grade_counts": found.grade_counts,
                          "todo": list(result.todos)}))
    return 0


def run_first_stage(args: argparse.Namespace) -> int:
    from rcp_data.cli.extras import require_extra

    require_extra("build")
    from rcp_data.cli.commands.build import build_inputs
    from rcp_data.core.outputs import check_apart
    from rcp_data.core.specs import load_spec_file, with_dense

    spec = load_spec_file(args.spec)
    options = source_options(args)
    check_apart(args.out, build_inputs(args, spec, options))  # before the first stage runs
    if args.dense:
        require_extra("dense")
        spec = with_dense(spec, args.dense)
    elif spec.pool.dense:
        require_extra("dense")
    from rcp_data.building.first_stage import first_stage
    from rcp_data.sources.registry import read_suite

    source = read_suite(spec, options)
    result = first_stage(spec, source)
    written = result.write(args.out)
    # and the pools as a judge run reads them: judge run --pool OUT --out OUT
    from rcp_data.release.pools_only import write_pools_folder

    write_pools_folder(spec, source, {split: [frame.drop(columns="split")] for split, frame
                                      in result.pools.groupby("split", sort=False)}, args.out)
    say(args, f"wrote the first stage of {spec.name} into {args.out}: "
        f"{', '.join(result.runs)} runs, {len(result.pools):,} pool pairs")
    if args.json:
        print(json.dumps({"out": str(args.out), "runs": list(result.runs),
                          "pool_pairs": len(result.pools),
                          "files": [str(p) for p in written]}))
    return 0
