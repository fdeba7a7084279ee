"""No module imports a higher layer by string either: the import-linter contracts see only
``import`` statements, so every ``importlib.import_module("...")``, every ``"rcp_data.x:fn"``
or ``"rcp_data.x.y"`` string under ``src/`` and every such string in a suite spec
(``builders/*.toml``) is checked here against the same contracts (read from pyproject.toml).
A spec is resolved by the sources layer (its ``[source] read`` names a reader of
:mod:`rcp_data.sources.registry`), so it may name nothing above that layer. And the demo suite
still builds through the registry."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
SRC = CHECKOUT / "src"
BUILDERS = CHECKOUT / "builders"
PACKAGE = "rcp_data"
# a whole string that names a module of the package, optionally with ":attribute"
MODULE_REF = re.compile(r"rcp_data(?:\.\w+)*(?::\w+(?:\.\w+)*)?")
IMPORTERS = {"import_module", "__import__", "find_spec", "resolve_name"}
# the layer that resolves what a spec names (its reader, by name)
SPEC_LAYER = "rcp_data.sources"


@dataclass(frozen=True)
class Ref:
    where: str     # file:line
    holder: str    # the module (or, for a spec, the layer) that holds the string
    target: str    # the module the string names

    def __str__(self) -> str:
        return f"{self.where}: {self.holder} names {self.target!r}"


def _contracts() -> tuple[list[str], list[tuple[list[str], list[str]]]]:
    config = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    layers, forbidden = [], []
    for c in config["tool"]["importlinter"]["contracts"]:
        if c["type"] == "layers":
            layers = list(c["layers"])
        elif c["type"] == "forbidden":
            forbidden.append((list(c["source_modules"]), list(c["forbidden_modules"])))
    return layers, forbidden


LAYERS, FORBIDDEN = _contracts()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _siblings(layer: str) -> list[str]:
    """The modules of one layer (``"a | b"``: independent siblings)."""
    return [m.strip() for m in layer.split("|")]


def _room(module: str) -> tuple[int, str] | None:
    """``module``'s layer index in :data:`LAYERS` (0 the top) and the sibling it lies in, None
    outside the layers."""
    return next(((i, s) for i, layer in enumerate(LAYERS) for s in _siblings(layer)
                 if _within(module, s)), None)


def _layer(module: str) -> int | None:
    """Index of ``module``'s layer in :data:`LAYERS` (0 the top), None outside the layers."""
    room = _room(module)
    return None if room is None else room[0]


def violation(ref: Ref) -> str | None:
    """Why ``ref`` breaks a contract, or None."""
    target = ref.target.split(":", 1)[0]
    have, want = _room(ref.holder), _room(target)
    if have is not None and want is not None and want[0] < have[0]:
        return f"{ref}: {want[1]} is above {have[1]}"
    if have is not None and want is not None and want[0] == have[0] and want[1] != have[1]:
        return f"{ref}: {want[1]} and {have[1]} are independent siblings"
    for sources, banned in FORBIDDEN:
        if any(_within(ref.holder, s) for s in sources) and \
                any(_within(target, b) for b in banned):
            return f"{ref}: {ref.holder} may not reach {target}"
    return None


def can_break(holder: str) -> bool:
    """Whether some import of ``holder`` could break a contract (the top layer may import any
    layer, unless a forbidden contract holds it)."""
    return _layer(holder) != 0 or any(_within(holder, s) for sources, _ in FORBIDDEN
                                      for s in sources)


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            ids.add(id(node.body[0].value))
    return ids


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _dynamic_target(arg: ast.expr, module: str, package: str) -> str | None:
    """The module a computed import names, as far as the code fixes it: ``f"{__name__}.x"``
    is the module itself; ``f"rcp_data.a.{x}"`` is within ``rcp_data.a``; None when unknown."""
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head = arg.values[0]
        if isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name) \
                and head.value.id in ("__name__", "__package__"):
            return module if head.value.id == "__name__" else package
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value.rstrip(".") or None
    return None


def python_refs(path: Path, src: Path = SRC) -> tuple[list[Ref], list[str]]:
    """The module references of one source file, and its computed imports whose module is
    unknown (where an import could break a contract)."""
    module = _module_name(path, src)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _docstrings(tree)
    refs, unknown = [], []
    rel = path.relative_to(src.parent)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and MODULE_REF.fullmatch(node.value):
            refs.append(Ref(f"{rel}:{node.lineno}", module, node.value))
        elif isinstance(node, ast.Call) and _call_name(node) in IMPORTERS and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant):
                continue  # a literal: the constant itself is checked above (when ours)
            target = _dynamic_target(arg, module, package)
            if target is None:
                if can_break(module):
                    unknown.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            elif _within(target, PACKAGE):
                refs.append(Ref(f"{rel}:{node.lineno}", module, target))
    return refs, unknown


def _strings(value, key: str = ""):
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{key}.{k}" if key else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{key}[{i}]")


def spec_refs(path: Path) -> list[Ref]:
    """The module references of one suite spec: held by the layer that resolves specs."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Ref(f"{path.name} [{key}]", SPEC_LAYER, value)
            for key, value in _strings(data) if MODULE_REF.fullmatch(value)]


def spec_problems(path: Path) -> list[str]:
    """Contract breaks of a spec, and a ``[source] read`` that is no registered reader."""
    from rcp_data.sources.registry import reader_names

    problems = [v for ref in spec_refs(path) if (v := violation(ref))]
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if path.name.startswith("_") and "source" not in data:
        return problems  # a part every spec shares (_card.toml, _rerankers.toml), no suite
    read = data.get("source", {}).get("read")
    if read not in reader_names():
        problems.append(f"{path.name} [source.read]: {read!r} is not a reader of "
                        f"rcp_data.sources.registry ({', '.join(reader_names())})")
    return problems


SOURCES = sorted((SRC / PACKAGE).rglob("*.py"))
SPECS = sorted(BUILDERS.glob("*.toml"))


def test_the_scan_sees_the_package_and_the_specs():
    assert len(SOURCES) > 100 and {p.stem for p in SPECS} >= {"demo", "trecdl", "nanobeir",
                                                             "bright", "vidore_v3"}
    assert LAYERS[0] == "rcp_data.cli" and LAYERS[-1] == "rcp_data.resources"
    # the cli finds its commands by name (a computed import the scan resolves)
    refs, _ = python_refs(SRC / PACKAGE / "cli" / "main.py")
    assert [r.target for r in refs] == ["rcp_data.cli.commands"]


def test_no_module_names_a_higher_layer_by_string():
    problems, unknown = [], []
    for path in SOURCES:
        refs, dynamic = python_refs(path)
        problems += [v for ref in refs if (v := violation(ref))]
        unknown += dynamic
    assert problems == []
    assert unknown == [], "imports whose module the scan cannot tell"


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.name)
def test_no_spec_names_a_higher_layer(spec):
    assert spec_problems(spec) == []


def test_the_old_demo_spec_is_refused(tmp_path):
    """``read = "rcp_data.demo.suite:read_suite"`` (the demo reader by module path) breaks the
    layers: the sources layer would import the demo layer."""
    text = (BUILDERS / "demo.toml").read_text(encoding="utf-8")
    old = re.sub(r'^read = "demo"', 'read = "rcp_data.demo.suite:read_suite"', text, flags=re.M)
    assert old != text
    (tmp_path / "demo.toml").write_text(old, encoding="utf-8")
    assert spec_problems(tmp_path / "demo.toml") == [
        "demo.toml [source.read]: rcp_data.sources names 'rcp_data.demo.suite:read_suite': "
        "rcp_data.demo is above rcp_data.sources",
        "demo.toml [source.read]: 'rcp_data.demo.suite:read_suite' is not a reader of "
        "rcp_data.sources.registry (bright, demo, local, nanobeir, trecdl, vidore)"]


@pytest.mark.parametrize("module, line, expected", [
    ("sources/registry.py", 'importlib.import_module("rcp_data.demo.suite")',
     "rcp_data.demo is above rcp_data.sources"),
    ("core/specs.py", 'ENTRY = "rcp_data.cli:main"', "rcp_data.cli is above rcp_data.core"),
    ("building/pools.py", 'importlib.import_module(f"rcp_data.release.{name}")',
     "rcp_data.release is above rcp_data.building"),
    ("runs/run_files.py", 'FIT = "rcp_data.calibration.fit"',
     "rcp_data.calibration and rcp_data.runs are independent siblings"),
    ("checks/verify.py", '_HUB = "rcp_data.hub.server:LocalHub"',
     "rcp_data.checks.verify may not reach rcp_data.hub.server"),
])
def test_a_string_import_upwards_is_found(tmp_path, module, line, expected):
    src = tmp_path / "src"
    target = src / PACKAGE / module
    target.parent.mkdir(parents=True)
    target.write_text((SRC / PACKAGE / module).read_text(encoding="utf-8") + f"\n{line}\n",
                      encoding="utf-8")
    refs, _ = python_refs(target, src)
    found = [v for ref in refs if (v := violation(ref))]
    assert len(found) == 1 and found[0].endswith(expected), found


def test_an_import_of_unknown_target_is_reported(tmp_path):
    src = tmp_path / "src"
    target = src / PACKAGE / "core" / "x.py"
    target.parent.mkdir(parents=True)
    target.write_text("import importlib\nname = input()\nimportlib.import_module(name)\n",
                      encoding="utf-8")
    assert python_refs(target, src) == ([], ["src/rcp_data/core/x.py:3: "
                                             "importlib.import_module(name)"])


# -- the demo suite builds through the registry ------------------------------------------------

def test_the_demo_reader_is_found_by_name():
    from rcp_data.core.specs import load_spec
    from rcp_data.sources import registry
    from rcp_data.sources.synthetic import SEED, make_sources

    spec = load_spec("demo")
    assert registry.get_reader(spec) is registry.PACKAGED["demo"]
    source = registry.read_suite(spec)
    assert sorted(source.subsets) == ["alpha", "beta"] and source.facts["seed"] == SEED
    again = make_sources(spec)[0]
    for name in ("alpha", "beta"):
        assert source.subsets[name].qrels.equals(again.subsets[name].qrels)
        assert source.subsets[name].corpus.to_frame().equals(again.subsets[name].corpus.to_frame())


def test_a_registered_reader_and_an_unknown_name(monkeypatch, tmp_path):
    from rcp_data.core.errors import UsageError
    from rcp_data.core.specs import load_spec
    from rcp_data.sources import registry

    def spec_reading(name: str):
        folder = tmp_path / name
        folder.mkdir()
        for path in SPECS:
            (folder / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        toml = (folder / "demo.toml").read_text(encoding="utf-8")
        (folder / "demo.toml").write_text(re.sub(r'^read = "demo"', f'read = "{name}"', toml,
                                                 flags=re.M), encoding="utf-8")
        monkeypatch.setenv("RCP_DATA_BUILDERS", str(folder))
        return load_spec("demo")

    monkeypatch.setattr(registry, "_registered", {})
    calls = []
    registry.register_reader("mine", lambda spec, options: calls.append(options) or "read")
    assert registry.read_suite(spec_reading("mine"), {"seed": "1"}) == "read"
    assert calls == [{"seed": "1"}] and "mine" in registry.reader_names()
    with pytest.raises(UsageError, match=r"names the source reader 'nope' .*demo\.toml.*which is "
                       r"not one of bright, demo, local, mine, nanobeir, trecdl, vidore"):
        registry.get_reader(spec_reading("nope"))


def test_the_demo_builds_through_the_registry(demo_data, tmp_path):
    """``build_release_dir`` reads the demo's sources by the spec's reader name and prepares
    release 1: its numbers are those of the files it wrote."""
    from rcp_data.core.specs import load_spec
    from rcp_data.release.cut import build_release_dir

    out = tmp_path / "release"
    result = build_release_dir(load_spec("demo"), demo_data / "inputs", out,
                               date="2026-11-29")
    qrels = sum(pq.read_metadata(p).num_rows for p in out.glob("*/qrels.parquet"))
    queries = sum(pq.read_metadata(p).num_rows for p in out.glob("*/queries.parquet"))
    assert (result.suite, result.synthetic, result.subsets) == ("demo", True, 2)
    assert (result.totals["qrels_rows"], result.totals["queries"]) == (qrels, queries) \
        and qrels > 0
    assert (result.release, result.repo) == (1, "rcp-data/rcp-ndcg-demo")
    assert result.tag == result.history.current.tag and (out / "README.md").is_file()
    assert result.to_dict() == {"out": str(out), "suite": "demo", "synthetic": True,
                                **result.totals, "release": 1, "tag": result.tag,
                                "repo": "rcp-data/rcp-ndcg-demo"}
