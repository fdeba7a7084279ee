"""How a release travels through the code: counts read from the source with :mod:`ast`.

Usage: ``python scripts/release_api_counts.py [SRC] [-v]`` (default ``src/rcp_data``).

- ``Release(...)`` built by hand: calls of ``Release`` outside ``open_release``
  (``model/release.py``), the one constructor.
- public functions by what they take: a ``Release`` (a parameter annotated ``Release``);
  a directory and a suite (a directory parameter, see ``DIRECTORY``, and a parameter named
  ``spec``/``suite`` or annotated ``SuiteSpec``); a bare directory (a directory parameter and
  neither). Private functions (``_name``) and methods of private classes are left out.
- ``.get(`` on release data: ``x.get(...)`` where ``x`` is (or is indexed out of) a record
  of the release read as a dict: a name bound to ``read_json``/``loads_json``/``json.loads``
  /``load_json``/``.to_dict()`` in the same function, or an attribute in ``RECORD_FIELDS``
  (the judge, calibration and extra entries of a history, the dict fields of a manifest).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

DIRECTORY = {"root", "directory", "release_dir", "release_root", "release", "rel_dir",
             "folder", "built", "prev", "src_dir"}
SUITE = {"spec", "suite"}
READERS = {"read_json", "loads_json", "load_json", "loads", "to_dict", "read_record",
           "read_json_object"}
RECORD_FIELDS = {"judge", "calibration", "extra", "sources", "parameters", "counts",
                 "recalibration", "tools", "inputs", "stage_a", "stage_b", "reading", "raw",
                 "subsets", "corpus_files"}
PATHLIKE = ("Path", "str | Path", "Path | str", "str | os.PathLike")


def _annotation(node: ast.arg) -> str:
    return ast.unparse(node.annotation) if node.annotation is not None else ""


def _kind(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    args = [a for a in args if a.arg not in ("self", "cls")]
    notes = {a.arg: _annotation(a) for a in args}
    if any("Release" in n.replace("ReleaseRecord", "").replace("PaperRelease", "")
           for n in notes.values()):
        return "release"
    directory = [a for a, n in notes.items()
                 if a in DIRECTORY and (not n or any(p in n for p in PATHLIKE))
                 and "Release" not in n]
    if not directory:
        return None
    suite = [a for a, n in notes.items() if a in SUITE or "SuiteSpec" in n]
    return "directory+suite" if suite else "directory"


def _receiver_is_record(node: ast.expr, bound: set[str]) -> bool:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in bound
    if isinstance(node, ast.Attribute):
        return node.attr in RECORD_FIELDS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in READERS
    return False


def _bound_to_records(fn: ast.AST) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            func = node.value.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else ""
            if name in READERS:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    return bound


def _enclosing(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.AST]:
    """The nodes around ``node``, innermost first."""
    out = []
    while node in parents:
        node = parents[node]
        out.append(node)
    return out


def count(src: Path) -> dict:
    constructions, gets = [], []
    kinds: Counter[str] = Counter()
    listed: dict[str, list[str]] = {"release": [], "directory+suite": [], "directory": []}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node

        def enclosing(node: ast.AST, parents=parents) -> list[ast.AST]:
            return _enclosing(node, parents)

        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else \
                    func.attr if isinstance(func, ast.Attribute) else ""
                outer = [n.name for n in enclosing(node)
                         if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                if name == "Release" and "open_release" not in outer:
                    constructions.append(f"{rel}:{node.lineno}")
                if name == "get" and isinstance(func, ast.Attribute):
                    fns = [n for n in enclosing(node)
                           if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                    bound = _bound_to_records(fns[0]) if fns else set()
                    if _receiver_is_record(func.value, bound):
                        gets.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("_"):
                    continue
                if any(isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef)
                       or (isinstance(p, ast.ClassDef) and p.name.startswith("_"))
                       for p in enclosing(node)):
                    continue
                kind = _kind(node)
                if kind:
                    kinds[kind] += 1
                    listed[kind].append(f"{rel}:{node.name}")
    return {"constructions": constructions, "kinds": kinds, "listed": listed, "gets": gets}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="?", type=Path, default=Path("src/rcp_data"))
    parser.add_argument("-v", "--verbose", action="store_true", help="list every one")
    args = parser.parse_args()
    found = count(args.src)
    modules = {g.split(":")[0] for g in found["gets"]}
    print(f"Release(...) built outside open_release: {len(found['constructions'])}")
    print(f"public functions taking a Release: {found['kinds']['release']}")
    print(f"public functions taking (directory, suite): {found['kinds']['directory+suite']}")
    print(f"public functions taking a bare directory: {found['kinds']['directory']}")
    print(f".get( reads of release data: {len(found['gets'])} in {len(modules)} modules")
    if args.verbose:
        print("-- constructions", *found["constructions"], sep="\n  ")
        for kind, names in found["listed"].items():
            print(f"-- taking {kind}", *names, sep="\n  ")
        print("-- .get( reads", *found["gets"], sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
