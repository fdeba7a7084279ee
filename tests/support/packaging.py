"""Building the project's wheel and installing it into a fresh virtualenv (the packaging and
Python API tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from rcp_data.cli.extras import EXTRAS

CHECKOUT = Path(__file__).resolve().parents[2]
# what a wheel is built from (everything else in the checkout is not needed)
SOURCE_PATHS = ("pyproject.toml", "README.md", "src", "builders", "release", "provenance")
# distributions of the extras, by their dist-info name prefix and their top-level modules
EXTRA_DISTS = ("ir_datasets", "ftfy", "bm25s", "pystemmer", "pillow", "torch")
EXTRA_MODULES = {m for mods in EXTRAS.values() for m in mods} | {"torchgen", "functorch"}


def _run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: int = 600):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("checkout")
    for name in SOURCE_PATHS:
        path = CHECKOUT / name
        if path.is_dir():
            shutil.copytree(path, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("wheel")
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "--no-index", "-q", "-w", str(out), str(src)], cwd=src)
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("rcp_data-*.whl")
    return whl


def _venv(root: Path, wheel: Path, *, core_only: bool) -> Path:
    """A fresh venv with the wheel installed and the dependencies linked in."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(root)], cwd=root.parent)
    deps = root / "deps"
    deps.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        name = entry.name
        low = name.lower()
        if name.endswith(".pth") or low.startswith(("rcp_data", "__editable__", "_rcp_data")):
            continue
        if core_only and (low.startswith(EXTRA_DISTS) or name.split(".")[0] in EXTRA_MODULES
                          or name.startswith("Stemmer")):
            continue
        (deps / name).symlink_to(entry)
    (site,) = (root / "lib").glob("python3*/site-packages")
    (site / "deps.pth").write_text(f"{deps}\n")
    proc = _run([sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"),
                 "install", "--no-deps", "--no-index", "-q", str(wheel)], cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    return root / "bin" / "rcp-data"


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RCP_DATA_BUILDERS")}
    env.pop("HF_ENDPOINT", None)
    env.pop("HF_HUB_DISABLE_XET", None)    # as a user runs it: the tool itself keeps Xet off
    env["HF_HUB_DISABLE_TELEMETRY"] = "1"
    return env
