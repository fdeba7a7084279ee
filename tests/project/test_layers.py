"""The layers hold: the import-linter contracts pass on the package, and fail on a copy of it
with one import that runs back up (a core module importing the cli)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT), str(config), "--no-cache"], cwd=src.parent,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def lint_available():
    if not LINT.exists():
        pytest.fail(f"{LINT} is missing: install the test extra (pip install -e '.[test]')")


def test_contracts_kept(lint_available):
    proc = _lint(CHECKOUT / "src", CHECKOUT / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize("module, line", [
    ("core/gains.py", "from rcp_data.cli import main as _upward  # noqa"),
    ("scoring/replay.py", "import rcp_data.release.publish  # noqa"),
    ("hub/server.py", "from rcp_data.core import errors as _errors  # noqa"),
])
def test_an_upward_import_breaks_a_contract(lint_available, tmp_path, module, line):
    src = tmp_path / "src"
    shutil.copytree(CHECKOUT / "src" / "rcp_data", src / "rcp_data", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(CHECKOUT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = src / "rcp_data" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    proc = _lint(src, tmp_path / "pyproject.toml")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BROKEN" in proc.stdout
    importer = "rcp_data." + module.removesuffix(".py").replace("/", ".")
    assert importer in proc.stdout
