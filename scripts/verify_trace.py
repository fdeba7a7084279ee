"""Follow one release through ``verify``: the distinct functions and files of rcp_data it runs.

Usage (a folder ``rcp-data demo --out DIR`` wrote)::

    PYTHONPATH=src python scripts/verify_trace.py DIR [--out REPORTS]

The demo's local Hub is served again from ``DIR/hub`` and release 2 is verified by its tag
(its files downloaded first into a temporary cache) under :func:`sys.setprofile`; then the local ``DIR/release-v2``
folder is verified the same way. For each, it prints the distinct rcp_data functions and
files called, and those of them that a release reaches: a function whose arguments hold the
opened ``Release``, the release's root folder or its suite's spec. ``--out`` writes each
report's text and JSON (timings left out) there, to compare two trees byte for byte.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def _traced(run, root_of):
    """Run ``run()`` under a profiler; returns its result and the functions it called."""
    import rcp_data
    from rcp_data.core.specs import SuiteSpec
    from rcp_data.model.release import Release

    package = str(Path(rcp_data.__file__).parent)
    called: set[tuple[str, str]] = set()
    reached: set[tuple[str, str]] = set()
    roots: set[Path] = set()

    def holds_release(frame) -> bool:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        for name in code.co_varnames[:n]:
            value = frame.f_locals.get(name)
            if isinstance(value, Release | SuiteSpec):
                return True
            if isinstance(value, Path) and value in roots:
                return True
        return False

    def profile(frame, event, arg):
        if event != "call":
            return
        file = frame.f_code.co_filename
        if not file.startswith(package) or "/hub/" in file:
            return
        key = (file[len(package) + 1:], frame.f_code.co_qualname)
        called.add(key)
        if key not in reached and holds_release(frame):
            reached.add(key)

    roots.update(root_of())
    import threading

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        result = run(roots)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return result, called, reached


def _summary(label: str, called, reached) -> dict:
    files = {f for f, _ in called}
    reached_files = {f for f, _ in reached}
    print(f"{label}: {len(called)} functions in {len(files)} files called; "
          f"the release reaches {len(reached)} functions in {len(reached_files)} files")
    return {"called": len(called), "files": len(files), "reached": len(reached),
            "reached_files": len(reached_files),
            "reached_names": sorted(f"{f}:{q}" for f, q in reached)}


def _write(out: Path | None, name: str, report) -> None:
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    data = report.to_json()
    data["seconds"] = list(data["seconds"])     # the stages in order, not their timings
    data["path"] = "<path>"
    (out / f"{name}.txt").write_text(report.text().replace(str(report.root), "<path>") + "\n",
                                     encoding="utf-8")
    (out / f"{name}.json").write_text(json.dumps(data, indent=1, default=str)
                                      .replace(str(report.root), "<path>") + "\n",
                                      encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("demo", type=Path, help="a folder `rcp-data demo --out` wrote")
    parser.add_argument("--out", type=Path, help="write the reports here")
    parser.add_argument("--names", action="store_true", help="print the functions reached")
    args = parser.parse_args()
    from rcp_data.checks.verify import verify
    from rcp_data.core.hub_client import HubClient
    from rcp_data.demo.pipeline import DEMO_REPO
    from rcp_data.hub.server import LocalHub
    from rcp_data.model.history import read_history

    demo = args.demo.resolve()
    records = demo / "records"
    tag = read_history(records / "demo.json").releases[-1].tag
    summary = {}
    hub = LocalHub(demo / "hub")
    url = hub.start()
    try:
        with tempfile.TemporaryDirectory(prefix="rcp-verify-trace-") as tmp:
            client = HubClient(endpoint=url, token=hub.token, cache_dir=Path(tmp))
            # downloaded first (the traced run finds the files in the cache): its root folder
            root = client.download(DEMO_REPO, client.resolve(DEMO_REPO, tag).sha)
            report, called, reached = _traced(
                lambda roots: verify(repo=DEMO_REPO, revision=tag, client=client,
                                     histories=records), lambda: {root})
            print(report.verdict_line())
            summary["hub"] = _summary(f"verify {DEMO_REPO}@{tag}", called, reached)
            _write(args.out, "hub", report)
    finally:
        hub.stop()
    local = demo / "release-v2"
    report, called, reached = _traced(lambda roots: verify(path=local), lambda: {local})
    print(report.verdict_line())
    summary["local"] = _summary(f"verify {local}", called, reached)
    _write(args.out, "local", report)
    if args.names:
        for where, s in summary.items():
            print(f"-- {where}: reached")
            print("\n".join(s["reached_names"]))
    if args.out:
        (args.out / "trace.json").write_text(json.dumps(summary, indent=1) + "\n",
                                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
