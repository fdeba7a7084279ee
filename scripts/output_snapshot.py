"""Snapshot of what the toolkit writes and prints, to compare two checkouts byte for byte.

    PYTHONPATH=CHECKOUT/src .venv/bin/python scripts/output_snapshot.py --out SNAP
    diff -r SNAP_A/normalized SNAP_B/normalized

Builds (every suite SYNTHETIC; nothing here is a published number):
- the demo (``rcp-data demo``: build, publish v1 and the recalibrated v2 to a local Hub, verify);
- NanoBEIR and BRIGHT from the test suite's SYNTHETIC upstream files (BRIGHT's real examples from
  the reference data with SYNTHETIC corpora), TREC-DL from the REAL DL19/DL20 topics and qrels
  with a SYNTHETIC collection, ViDoRe v3 from SYNTHETIC upstream datasets on a local Hub; each
  with SYNTHETIC judge inputs, built and prepared (releases.json, task file, card);
- then the commands' outputs on the demo release: replay, score, agree, card render, release
  table, release check, verify of the directory.

``SNAP/normalized`` holds every written file (cards, task files, releases.json, manifests, tables
as their bytes' sha256) and every command's stdout and stderr, with the two things that differ
between two runs of the same code replaced: 40-hex git commit shas (the commits carry their
time; also their 12-hex and 8-hex short forms, and a release digest, which covers releases.json
and so those shas: the files it covers are compared one by one), temporary folder names and the
snapshot's own folder.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RCP_DATA_SHARED", CHECKOUT.parent / "shared"))
DATE = "2026-11-30"
SHA = re.compile(rb"\b[0-9a-f]{40}\b")
SHORT_SHA = re.compile(rb"(?<![0-9a-f])[0-9a-f]{12}(?![0-9a-f])|`[0-9a-f]{8}`")
# a release digest covers releases.json, which names the commit shas: compared file by file
DIGEST = re.compile(rb'(digest"?:?\s+"?)[0-9a-f]{64}')
TMP = re.compile(rb"\.([\w-]+)\.tmp-\d+-[0-9a-f]+")
TEXT_SUFFIXES = {".md", ".json", ".py", ".txt", ".toml", ".jsonl", ".tsv", ".csv", ".out", ".err"}


def _module(*names: str):
    """The first of ``names`` that imports (the same module before and after a move)."""
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(names[0])


def _normalize(data: bytes, root: Path) -> bytes:
    data = data.replace(str(root).encode(), b"<SNAP>")
    data = DIGEST.sub(rb"\1<DIGEST>", SHA.sub(b"<SHA>", data))
    return TMP.sub(rb"\1", SHORT_SHA.sub(b"<SHORT-SHA>", data))


def write_normalized(raw: Path, out: Path) -> int:
    """Every file under ``raw`` into ``out``: text files normalized, others as their sha256."""
    n = 0
    for path in sorted(raw.rglob("*")):
        rel = path.relative_to(raw)
        if not path.is_file() or rel.parts[0] in ("work",) or "hub" in rel.parts \
                or "verify-cache" in rel.parts or "cache" in rel.parts:
            continue
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        if path.suffix in TEXT_SUFFIXES:
            target.write_bytes(_normalize(data, raw))
        else:
            target.with_name(target.name + ".sha256").write_text(
                hashlib.sha256(data).hexdigest() + "\n")
        n += 1
    return n


def run_cli(raw: Path, name: str, *args: str, env: dict | None = None) -> None:
    exe = Path(sys.executable).with_name("rcp-data")
    env = {k: v for k, v in (env or os.environ).items() if k not in ("HF_ENDPOINT", "HF_TOKEN")}
    proc = subprocess.run([str(exe), *args], cwd=raw, capture_output=True, env=env, timeout=1200)
    out = raw / "commands"
    out.mkdir(exist_ok=True)
    (out / f"{name}.out").write_bytes(proc.stdout + f"\nexit {proc.returncode}\n".encode())
    (out / f"{name}.err").write_bytes(proc.stderr)


def build_suite(name: str, raw: Path, hub_url: str | None) -> None:
    build = _module("rcp_data.building.build", "rcp_data.stages.build")
    contract = _module("rcp_data.building.contract", "rcp_data.stages.inputs.contract")
    from rcp_data.core.specs import load_spec
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.release.prepare import prepare_release

    sys.path.insert(0, str(CHECKOUT / "tests"))
    spec = load_spec(name)
    work = raw / "work" / name
    work.mkdir(parents=True)
    inputs = None
    if name == "nanobeir":
        from support.nanobeir_fixtures import make_all, stage

        from rcp_data.sources.nanobeir import read_suite
        stage(make_all())
        source = read_suite(spec, {"allow_download": "0"})
    elif name == "bright":
        from support.bright_fixtures import synthetic_corpus

        from rcp_data.sources import irds_cache
        from rcp_data.sources.bright import read_suite, task_name
        for sub in spec.subsets:
            task = task_name(sub)
            examples = SHARED / "data" / "bright" / f"examples.bright-{task}.jsonl.gz"
            irds_cache.stage_bright(task, examples=examples,
                                    docs=synthetic_corpus(examples, task))
        source = read_suite(spec, {"allow_download": "0"})
    elif name == "trecdl":
        import support.trecdl_fixtures as fx

        from rcp_data.sources.trecdl import read_suite
        staged = fx.stage_cache(work / "stage", SHARED / "data" / "trec-dl")
        source = read_suite(spec, {"raw_collection": str(staged.raw)})
        inputs = work / "inputs"
        fx.write_inputs(inputs, staged, spec=spec)
    elif name == "vidore_v3":
        from huggingface_hub import CommitOperationAdd, HfApi
        from support.vidore_fixtures import write_domain

        from rcp_data.sources.vidore import read_suite
        api = HfApi(endpoint=hub_url, token=os.environ.get("HF_TOKEN"))
        up = work / "upstream"
        for i, d in enumerate(spec.domains):
            write_domain(up, d.name, d.task.removeprefix("Vidore3"), seed=i)
            for repo, folder in ((d.source, up / f"vidore_v3_{d.name}_mteb_format"),
                                 (d.ocr_source, up / d.ocr_source.split("/")[1])):
                api.create_repo(repo, repo_type="dataset", exist_ok=True)
                ops = [CommitOperationAdd(str(p.relative_to(folder)), str(p))
                       for p in sorted(folder.rglob("*")) if p.is_file()]
                api.create_commit(repo, ops, commit_message="SYNTHETIC upstream",
                                  repo_type="dataset")
        source = read_suite(spec, {})
    else:
        raise SystemExit(f"unknown suite {name}")
    if inputs is None:
        inputs = write_synthetic_inputs(spec, source, work / "inputs", seed=5)
    out = raw / "suites" / name
    build.build_release(spec, source, contract.read_inputs(inputs), out)
    prepare_release(out, spec, f"rcp-snapshot/{name}", date=DATE)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--normalize-only", action="store_true",
                   help="only rewrite OUT/normalized from OUT/raw")
    p.add_argument("--suites", default="nanobeir,bright,trecdl,vidore_v3")
    args = p.parse_args(argv)
    raw = (args.out / "raw").resolve()
    if args.normalize_only:
        import shutil
        shutil.rmtree(args.out / "normalized", ignore_errors=True)
        print(f"{write_normalized(raw, args.out / 'normalized')} files")
        return 0
    raw.mkdir(parents=True)
    scratch = Path(tempfile.mkdtemp(prefix="rcp-snapshot-"))
    os.environ.update(IR_DATASETS_HOME=str(scratch / "irds"), HF_HOME=str(scratch / "hf"),
                      RCP_DATA_CACHE=str(scratch / "cache"), HF_HUB_DISABLE_XET="1",
                      HF_HUB_DISABLE_TELEMETRY="1", TQDM_DISABLE="1")
    # datasets and huggingface_hub fix the Hub's URL at import: the local Hub's port is chosen
    # (and HF_ENDPOINT set) before anything imports them
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
    run_cli(raw, "demo", "demo", "--out", str(raw / "demo"))
    demo = raw / "demo" / "release-v1"
    run_cli(raw, "replay", "replay", str(demo), "--json")
    run_cli(raw, "replay-text", "replay", str(demo))
    run_cli(raw, "score", "score", str(demo),
            str(raw / "demo" / "inputs" / "runs" / "demo__alpha-reranker.parquet"), "--json")
    run_cli(raw, "agree", "agree", str(demo))
    run_cli(raw, "card-render", "card", "render", str(demo), "--out", "-")
    run_cli(raw, "release-table", "release", "table", "demo")
    run_cli(raw, "release-check", "release", "check", str(demo))
    run_cli(raw, "verify-dir", "verify", str(demo))
    suites = [s for s in args.suites.split(",") if s]
    if suites:
        from rcp_data.hub.server import LocalHub
        token = scratch / "hub-token"
        token.write_text("snapshot-token\n")
        os.environ["HF_TOKEN"] = "snapshot-token"
        with LocalHub(scratch / "hub", port=port, token_file=token) as hub:
            for name in suites:
                print(f"building SYNTHETIC {name}", file=sys.stderr, flush=True)
                build_suite(name, raw, hub.url)
    n = write_normalized(raw, args.out / "normalized")
    print(f"{n} files in {args.out / 'normalized'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
