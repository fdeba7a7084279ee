"""Apply each wrong change of scripts/mutations.toml alone to a copy of the checkout and run the
tests named for it: a mutation is caught when they fail, survived when they pass, stale when
its text is no longer in the file. Not part of CI (it runs the named tests once per entry).

    .venv/bin/python scripts/mutation_check.py [--only ID ...] [--list FILE]

Exit 0 when every applicable mutation is caught, 1 when one survived or is stale.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
COPIED = ("pyproject.toml", "src", "tests", "builders", "release", "provenance")


def _copy(dest: Path) -> None:
    for name in COPIED:
        src = CHECKOUT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / name)


def run_one(entry: dict, shared: Path) -> tuple[str, float]:
    """``caught`` | ``survived`` | ``stale``, and the seconds the tests took."""
    with tempfile.TemporaryDirectory(prefix="rcp-mutation-") as tmp:
        root = Path(tmp)
        _copy(root)
        target = root / "src" / "rcp_data" / entry["file"]
        text = target.read_text(encoding="utf-8")
        if text.count(entry["find"]) != 1:
            return "stale", 0.0
        target.write_text(text.replace(entry["find"], entry["replace"]), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(root / "src"), "RCP_DATA_SHARED": str(shared)}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                               *entry["tests"]], cwd=root, env=env, capture_output=True,
                              text=True)
        seconds = time.perf_counter() - t0
        if proc.returncode == 0:
            return "survived", seconds
        if proc.returncode not in (1,):   # collection errors etc. still fail the tests, say so
            return f"caught (pytest exit {proc.returncode})", seconds
        return "caught", seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", type=Path, default=CHECKOUT / "scripts" / "mutations.toml")
    ap.add_argument("--only", nargs="*", default=None, metavar="ID")
    ap.add_argument("--shared", type=Path, default=CHECKOUT.parent / "shared")
    args = ap.parse_args(argv)
    entries = tomllib.loads(args.list.read_text(encoding="utf-8"))["mutation"]
    if args.only:
        entries = [e for e in entries if e["id"] in args.only]
    bad = 0
    for entry in entries:
        status, seconds = run_one(entry, args.shared)
        bad += not status.startswith("caught")
        print(f"{entry['id']:<40} {status:<28} {seconds:6.1f} s  ({', '.join(entry['tests'])})",
              flush=True)
    print(f"{len(entries) - bad} of {len(entries)} caught")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
