"""The benchmarks run on demand, not in the tests; what they import from the package must
still exist, or a benchmark breaks only when someone runs it (minutes into a full-size run).
Every ``from rcp_data... import NAME`` in ``bench/`` and ``scripts/`` is resolved here."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py")])


def _package_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, module, name or None)`` of every import of the package in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rcp_data"):
            out += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, None) for alias in node.names
                    if alias.name.startswith("rcp_data")]
    return out


def test_the_benchmarks_import_the_package():
    assert [p.name for p in SCRIPTS if p.parent.name == "bench"] and \
        sum(len(_package_imports(p)) for p in SCRIPTS) > 20


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_package_name_a_script_imports_exists(script):
    missing = []
    for line, module, name in _package_imports(script):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{script.name}:{line}: {module}: {exc}")
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{script.name}:{line}: {module} has no {name}")
    assert not missing, "\n".join(missing)
