"""The package installs anywhere: a wheel built from the checkout, installed (not editable) into
a fresh venv, runs from an unrelated folder; the core install verifies and replays, and a command
whose extra is missing says which extra to install.

The fresh venvs install the wheel itself with ``pip --no-deps`` and see their dependencies
through a folder of links to this venv's packages, so no network is needed; the core venv's
folder leaves out every module of the ``build`` and ``calibrate`` extras, exactly as a core
install lacks them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.packaging import CHECKOUT, EXTRA_DISTS, EXTRA_MODULES, _env, _run, _venv
from support.packaging import wheel as wheel  # noqa: F401 - the fixture (module scope)

pytestmark = pytest.mark.slow


def test_wheel_carries_the_data_and_no_checkout_path(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, pattern in (("builders", "*.toml"), ("release", "*.json"),
                            ("provenance", "*.json")):
        packaged = "release_history" if folder == "release" else folder
        expected = {f"rcp_data/resources/{packaged}/{p.name}"
                    for p in (CHECKOUT / folder).glob(pattern)}
        assert expected and expected <= names, folder
    assert {"rcp_data/documents/templates/card.md.j2",
            "rcp_data/documents/templates/rcp_ndcg_tasks.py.tmpl"} <= names
    meta = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("dist-info/METADATA"))).decode()
    core = [line for line in meta.splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert not any(dist in line.lower() for line in core for dist in EXTRA_DISTS), core


def test_installed_wheel_runs_demo_replay_verify_from_elsewhere(tmp_path, demo_out):
    exe, out = demo_out
    elsewhere = out.parent
    release = out / "release-v2"
    assert (release / "README.md").exists()
    proc = _run([str(exe), "replay", str(release), "--json"], cwd=elsewhere, env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert '"rcp_ndcg"' in proc.stdout
    proc = _run([str(exe), "verify", str(release)], cwd=elsewhere, env=_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "VERIFIED" in proc.stdout
    # nothing was written into the installed package: it holds exactly what pip recorded
    (site,) = (exe.parents[1] / "lib").glob("python3*/site-packages")
    pkg = site / "rcp_data"
    installed = {p.relative_to(site).as_posix() for p in pkg.rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts}
    record = next(site.glob("rcp_data-*.dist-info")).joinpath("RECORD").read_text()
    recorded = {line.split(",")[0] for line in record.splitlines()
                if line.startswith("rcp_data/") and "__pycache__" not in line}
    assert installed == recorded


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory, wheel) -> tuple[Path, Path]:
    """``rcp-data demo`` run by the installed wheel from an unrelated folder: (exe, out)."""
    base = tmp_path_factory.mktemp("installed")
    exe = _venv(base / "venv", wheel, core_only=False)
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    proc = _run([str(exe), "-q", "demo", "--out", "x"], cwd=elsewhere, env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe, elsewhere / "x"


def test_core_install_verifies_and_build_names_its_extra(tmp_path, wheel, demo_out):
    release = demo_out[1] / "release-v2"
    exe = _venv(tmp_path / "venv", wheel, core_only=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    python = tmp_path / "venv" / "bin" / "python"
    probe = _run([str(python), "-c", "import importlib.util as u; print([m for m in "
                  f"{sorted(EXTRA_MODULES)!r} if u.find_spec(m)])"], cwd=elsewhere, env=_env())
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr
    for cmd in (["verify", str(release)], ["replay", str(release)]):
        proc = _run([str(exe), *cmd], cwd=elsewhere, env=_env())
        assert proc.returncode == 0, cmd + [proc.stdout[-2000:], proc.stderr[-2000:]]
    inputs = demo_out[1] / "inputs"
    proc = _run([str(exe), "build", "demo", "--inputs", str(inputs), "--out",
                 str(tmp_path / "out")], cwd=elsewhere, env=_env())
    assert proc.returncode == 2
    assert "'build' extra" in proc.stderr and "rcp-data[build]" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
    proc = _run([str(exe), "calibrate", "--help"], cwd=elsewhere, env=_env())
    assert proc.returncode == 0
