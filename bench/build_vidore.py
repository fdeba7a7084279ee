"""Benchmark: ``rcp-data build vidore_v3`` at ViDoRe v3 shape with page images, then publish
and verify, at a stated scale fraction, extrapolated to the full size.

On demand, not a test (everything here is SYNTHETIC: page images, OCR text, questions, qrels,
judge outputs and reranker runs):

    .venv/bin/python bench/build_vidore.py --scale 0.05        # 5% of the pages and questions
    .venv/bin/python bench/build_vidore.py --scale 0.2 --work /data/v --keep

The full shape (mteb's descriptive statistics of the ``Vidore3<Domain>Retrieval`` tasks, english
subset): 19,252 pages over 8 domains, page images about 1,700 x 2,200 pixels, and 2,419
questions per language (x 6 languages = 14,514 question rows, 150 pool pages each). At
``--scale s`` each domain gets ``s`` of its pages (at least 160, so that pools of 150 form) and of
its questions (at least 2 per language).

Prepared (not targets):

- ``generate``: the upstream datasets in their layouts (as ``tests/vidore_fixtures.py`` writes
  them; read by ``rcp_data.sources.vidore`` through ``datasets``): per domain
  ``vidore_v3_<domain>_mteb_format`` (``english-corpus`` with the page images, every language's
  ``-queries`` and ``-qrels`` holding all languages' rows) and ``Vidore3<Domain>OCRRetrieval``
  (``english-corpus`` with the OCR text). Page images: JPEG renderings of SYNTHETIC text
  lines at 1,700 x 2,200. Only the english corpus configs are written: the reader reads no other.
- ``inputs``: ``rcp_data.demo.synthetic_judge.write_synthetic_inputs`` with 14 rerankers.

Measured as for TREC-DL (``bench/build_trecdl.py``): ``build``, ``copy``, ``transfer-floor``,
``verify-local``, ``publish``, ``verify``, ``publish-reverify``. Every measure is extrapolated linearly to scale 1 by the number of pages (question
rows grow with the same fraction); the floor of 160 pages per domain makes small scales
over-represent pages, so the extrapolation is an upper bound there. ``--against`` a run at
another scale fits a line through both (CPU time, peak RSS, peak anonymous memory: the build's
RSS also counts the memory-mapped ``datasets`` cache of the page images, which the kernel can
drop).

Re-run on 2026-11-30 (second session, idle cores) with ``--scale 0.02`` (0.066 of the pages:
1,280 pages, 282 question rows): build 50.0 s, 1.10 GiB; publish of 197 files (495 MiB) 13.8 s,
its upload 6.3 s = 0.17 x the copy (the CPUs idle: every response waited 40 ms for a delayed
ACK); verify by tag 13.2 s. With TCP_NODELAY on the local Hub's connections: build 35.4 s;
publish 9.6 s, its upload 2.7 s = 0.31 x the copy; verify by tag 9.8 s. Third session, with
the receipts and the background hashing: build 31.5 s; verify-local 5.5 s; publish after it
3.6 s (0.25 x the copy of 0.9 s; its upload 2.0 s = 0.46 x); publish --reverify 9.6 s; verify by
tag 9.7 s. Fourth session, two runs: copy 1.2 s; transfer floor 1.5-1.8 s = 0.66-0.82 x the
copy; publish 3.4-4.3 s = 0.28-0.36 x the copy, 2.3-2.4 x the floor (1.3 s of it before the
upload: imports and the release check of 197 files); verify by tag 9.6-11.6 s. Fifth session
(objects written past the page cache, the release check covered by the receipt): copy 0.8 s;
floor 1.1 s; publish 2.0 s = 0.39 x the copy (0.75 s before the upload; the upload of 192 LFS
objects, 189 of them under 1 MiB, 1.25 s: per-file requests, a fixed cost that the eight page
shards' 509 MB do not grow); verify by tag 7.0 s. With the publish the median of three: copy
0.7 s, publish 2.0 s = 0.37 x; publish --reverify 5.4 s; verify by tag 7.6 s.

Measured on 2026-11-30 (2 shared cores, load 2-4) at 0.072 and 0.104 of the pages (1,382 and
1,996 pages of 417 KiB; 720 and 1,452 question rows), local Hub from the LFS branch
(``--hub-src``): at 0.104 build 73 s (1.79 GiB RSS, 0.93 GiB anonymous), publish 25 s (its
upload 11.7 s = 0.16 x the copy; client 340 MiB, server 151 MiB), verify by tag 13-47 s
(load-dependent). Through both, at full size: build 13.5 min CPU, 9.3 GiB anonymous (the inputs
and runs grow with the question rows); publish 4.2 min CPU. On the inline path (before LFS) the
same 811 MiB took the server to 3.30 GiB and the client to 2.40 GiB: the full 7.6 GiB of pages
cannot be published that way on a 24 GiB machine.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _measure as m
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REPO = "bench/rcp-ndcg-vidore-v3-synthetic"
LANGS = ("english", "french", "german", "italian", "portuguese", "spanish")
# pages and questions per language of each domain (mteb descriptive statistics, english subset)
PAGES = {"computer_science": 1360, "energy": 2225, "finance_en": 2942, "finance_fr": 2384,
         "hr": 1110, "industrial": 5244, "pharmaceuticals": 2313, "physics": 1674}
QUESTIONS = {"computer_science": 215, "energy": 308, "finance_en": 309, "finance_fr": 320,
             "hr": 318, "industrial": 283, "pharmaceuticals": 364, "physics": 302}
PAGE_SIZE = (1700, 2200)
MIN_PAGES = 160
SEED = 20261202
WORDS = ("SYNTHETIC revenue total energy figure table report annual quarter risk capital "  # noqa: SIM905
         "policy employee benefit plant safety reactor dose trial patient protocol physics "
         "wave field force model data network system analysis results method section page "
         "summary growth margin cost price market unit value rate index").split()


def sizes(scale: float, query_scale: float) -> dict[str, tuple[int, int]]:
    """``{domain: (pages, questions per language)}`` at a scale."""
    return {d: (max(MIN_PAGES, round(PAGES[d] * scale)),
                max(2, round(QUESTIONS[d] * query_scale))) for d in PAGES}


# -- stage: generate ----------------------------------------------------------------------------
def page_image(rng: np.random.Generator, title: str, font) -> bytes:
    """A SYNTHETIC page: a title and lines of random words, as a JPEG of the real size."""
    from PIL import Image, ImageDraw

    img = Image.new("L", PAGE_SIZE, 255)
    draw = ImageDraw.Draw(img)
    draw.text((120, 90), title, fill=0, font=font)
    y = 180
    while y < PAGE_SIZE[1] - 120:
        if rng.random() < 0.06:  # a figure: a block of smooth grey blotches
            h = int(rng.integers(150, 400))
            block = rng.integers(80, 255, size=(h // 16, 90), dtype=np.uint8)
            img.paste(Image.fromarray(block).resize((1440, h)), (120, y))
            y += h + 30
            continue
        words = rng.choice(WORDS, size=int(rng.integers(8, 16)))
        draw.text((120, y), " ".join(words), fill=int(rng.integers(0, 60)), font=font)
        y += 34
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def _write_repo(folder: Path, tables: dict) -> None:
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---", "configs:"]
    for name, table in tables.items():
        pq.write_table(table, folder / f"{name}.parquet", row_group_size=64)
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test",
                  f"    path: {name}.parquet"]
    lines += ["---", "", "SYNTHETIC ViDoRe v3-shaped data generated by bench/build_vidore.py."]
    (folder / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def generate(work: Path, scale: float, query_scale: float, seed: int) -> None:
    """The SYNTHETIC upstream datasets of every domain (see the module docstring)."""
    import datasets
    import pyarrow as pa
    from PIL import ImageFont

    from rcp_data.core.specs import load_spec

    spec = load_spec("vidore_v3")
    font = ImageFont.load_default(size=22)
    root = work / "upstream"
    facts = {"pages": 0, "image_bytes": 0, "question_rows": 0, "domains": {}}
    for di, (domain, (n_pages, n_q)) in enumerate(sizes(scale, query_scale).items()):
        rng = np.random.default_rng(seed + di)
        dom = next(d for d in spec.domains if d.name == domain)
        ids = [f"corpus-test-{i}" for i in range(n_pages)]
        texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(40, 200))))
                 for _ in range(n_pages)]
        images = [{"bytes": page_image(rng, f"{domain} page {i} (SYNTHETIC)", font), "path": None}
                  for i in range(n_pages)]
        feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image()})
        corpus = pa.Table.from_pydict({"id": ids, "image": images}, schema=feats.arrow_schema)
        ocr = pa.table({"id": ids, "text": texts})
        rows = [(f"query-test-{n + n_q * li}", f"[{lang}] SYNTHETIC question {n} on {domain}: "
                 + " ".join(rng.choice(WORDS, size=8)), lang)
                for li, lang in enumerate(LANGS) for n in range(n_q)]
        queries = pa.table({"id": [r[0] for r in rows], "text": [r[1] for r in rows],
                            "language": [r[2] for r in rows]})
        qrels = []
        for n in range(n_q):
            pages = rng.choice(n_pages, size=int(rng.integers(1, 6)), replace=False)
            grades = rng.integers(1, 3, size=len(pages))
            qrels += [(f"query-test-{n + n_q * li}", ids[p], int(g))
                      for li in range(len(LANGS)) for p, g in zip(pages, grades, strict=True)]
        qrels_t = pa.table({"query-id": [r[0] for r in qrels], "corpus-id": [r[1] for r in qrels],
                            "score": pa.array([r[2] for r in qrels], pa.int64())})
        tables = {"english-corpus": corpus}
        for lang in LANGS:
            tables[f"{lang}-queries"] = queries
            tables[f"{lang}-qrels"] = qrels_t
        _write_repo(root / dom.source.split("/", 1)[1], tables)
        _write_repo(root / dom.ocr_source.split("/", 1)[1], {"english-corpus": ocr})
        n_bytes = sum(len(im["bytes"]) for im in images)
        facts["domains"][domain] = {"pages": n_pages, "questions_per_language": n_q,
                                    "image_bytes": n_bytes}
        facts["pages"] += n_pages
        facts["image_bytes"] += n_bytes
        facts["question_rows"] += len(rows)
        print(f"{domain}: {n_pages} pages ({n_bytes / n_pages / 1024:,.0f} KiB each), "
              f"{n_q} questions per language", flush=True)
    (work / "generated.json").write_text(json.dumps(facts, indent=2) + "\n")


def make_inputs(work: Path, seed: int) -> None:
    from rcp_data.core.specs import load_spec
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.sources.vidore import read_suite

    spec = load_spec("vidore_v3")
    source = read_suite(spec, {"root": str(work / "upstream")})
    write_synthetic_inputs(spec, source, work / "inputs", seed=seed, n_rerankers=14)
    print(f"SYNTHETIC inputs for {len(source.subsets)} subsets", flush=True)


# -- the run ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=0.05, help="fraction of the pages")
    p.add_argument("--query-scale", type=float, default=None,
                   help="fraction of the questions (default: --scale)")
    m.add_run_arguments(p, SEED)
    p.add_argument("--stage", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    qs = args.scale if args.query_scale is None else args.query_scale
    if args.stage:
        {"generate": lambda: generate(args.work, args.scale, qs, args.seed),
         "inputs": lambda: make_inputs(args.work, args.seed)}[args.stage]()
        return 0
    work = (args.work or Path(tempfile.mkdtemp(prefix="rcp-bench-vidore-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    logs, py = work / "logs", sys.executable
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_DISABLE_XET", "HF_HUB_OFFLINE", "HF_TOKEN")}
    env.update(PYTHONPATH=str(ROOT / "src"), HF_HOME=str(work / "hf_home"),
               HF_DATASETS_CACHE=str(work / "hf_datasets"), HF_HUB_DISABLE_TELEMETRY="1",
               TQDM_DISABLE="1")
    me = [py, str(Path(__file__).resolve()), "--work", str(work), "--scale", str(args.scale),
          "--query-scale", str(qs), "--seed", str(args.seed), "--stage"]
    stages = [m.run_stage("baseline", [py, "-c", "import rcp_data.building.build, datasets"],
                          env=env, log_dir=logs)]
    key = {"scale": args.scale, "query_scale": qs, "seed": args.seed}
    done = work / "prepared.json"
    if not (args.keep and done.exists() and json.loads(done.read_text()) == key):
        for name in ("generate", "inputs"):
            st = m.run_stage(name, [*me, name], env=env, log_dir=logs)
            st.note = "preparation (SYNTHETIC), not a target"
            stages.append(st)
            if not st.ok:
                return finish(stages, work, args)
        done.write_text(json.dumps(key))
    release = work / "release"
    skip = {s for s in args.skip.split(",") if s}
    if "build" in skip and (release / "provenance" / "releases.json").exists():
        print(f"reusing the release built before in {release} (--skip build)")
        stages += m.release_stages(py, release, REPO, work, env, logs, skip, args.hub_src)
        return finish(stages, work, args)
    shutil.rmtree(release, ignore_errors=True)
    build = m.run_stage("build", [py, "-m", "rcp_data", "build", "vidore_v3", "--inputs",
                                  work / "inputs", "--out", release, "--source-option",
                                  f"root={work / 'upstream'}", "--repo", REPO, "--date",
                                  "2026-12-02", "--summary",
                                  "SYNTHETIC benchmark build (generated page images)"],
                        env=env, log_dir=logs)
    stages.append(build)
    if build.ok:
        n_files, n_bytes = m.tree_bytes(release)
        build.note = f"{n_files} files, {n_bytes / m.MIB:,.0f} MiB"
        stages += m.release_stages(py, release, REPO, work, env, logs, skip, args.hub_src)
    return finish(stages, work, args)


def finish(stages: list[m.Stage], work: Path, args: argparse.Namespace) -> int:
    path = work / "generated.json"
    if not path.exists():
        m.print_table(stages, scale=args.scale, linear=set())
        return 1
    facts = json.loads(path.read_text())
    scale = facts["pages"] / sum(PAGES.values())
    by = {s.name: s for s in stages}
    m.print_table(stages, scale=scale,
                  linear={"generate", "inputs", "build", "copy", "verify-local", "publish",
                          "publish-reverify", "verify"},
                  base=by.get("baseline"))
    print(f"SYNTHETIC ViDoRe v3 shape at {scale:.3f} of the pages: {facts['pages']:,} pages, "
          f"{facts['image_bytes'] / m.MIB:,.0f} MiB of page images "
          f"({facts['image_bytes'] / facts['pages'] / 1024:,.0f} KiB a page), "
          f"{facts['question_rows']:,} question rows; full size: 19,252 pages, about "
          f"{facts['image_bytes'] / facts['pages'] * 19_252 / m.GIB:,.1f} GiB of images, "
          "14,514 question rows")
    base = by.get("baseline")
    for name in ("build", "verify-local", "publish", "publish-reverify", "verify"):
        if name in by:
            s = by[name]
            wall = m.extrapolate(s.seconds, base.seconds if base else 0, scale)
            cpu = m.extrapolate(s.cpu_seconds, base.cpu_seconds if base else 0, scale)
            print(f"{name}: {s.seconds:,.1f} s wall, {s.cpu_seconds:,.1f} s CPU, "
                  f"{s.peak_rss / m.GIB:,.2f} GiB peak RSS measured; at full size about "
                  f"{wall / 60:,.1f} min wall, {cpu / 60:,.1f} min CPU (linear in pages; RSS: "
                  "see --against)")
    if "publish" in by and "copy" in by:
        print(f"publish: {by['copy'].seconds / by['publish'].seconds:.2f} x the copy's speed, "
              "measured (target >= 0.5)")
    if "publish-reverify" in by and "copy" in by:
        print(f"publish --reverify (every check run again): "
              f"{by['copy'].seconds / by['publish-reverify'].seconds:.2f} x the copy's speed")
    if args.against:
        m.two_point(stages, scale, args.against)
    m.save(stages, work / "results.json", scale=scale, synthetic=True,
           date=time.strftime("%Y-%m-%d %H:%M"), generated=facts)
    if not args.keep and args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(s.ok for s in stages) else 1


if __name__ == "__main__":
    sys.exit(main())
