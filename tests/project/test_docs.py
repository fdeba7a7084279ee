"""The documentation site: it builds offline with ``--strict``, a broken link fails the build, its
CLI reference holds every subcommand's help, its API page every public name, and nothing the
project ships for readers (docstrings, the README, the docs) cites a path outside the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rcp_data
from rcp_data.cli.main import build_parser, subcommand_parsers

CHECKOUT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")
# a path beside the checkout (the developers' folder), which no user of the package has
OUTSIDE = re.compile(r"\.\./shared|\bshared/(design|data|reference)\b|design note")


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(CHECKOUT / "src")}
    return subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(site)], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def _copy_site_sources(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy2(CHECKOUT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(CHECKOUT / "docs", root / "docs")
    shutil.copytree(CHECKOUT / "scripts", root / "scripts")
    (root / "src").symlink_to(CHECKOUT / "src")
    return root


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if not MKDOCS.exists():
        pytest.fail(f"{MKDOCS} is missing: install the docs extra (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    proc = _build(CHECKOUT, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_cli_reference_holds_every_subcommand(site):
    page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for parser in [build_parser(), *subcommand_parsers(build_parser())]:
        assert f"<code>{parser.prog}</code>" in page, parser.prog
    assert "exit codes:" in page


def test_the_api_reference_documents_the_public_functions(site):
    page = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("open_release", "replay", "score", "score_qrels", "verify", "judge", "calibrate",
                 "build", "publish"):
        module = getattr(rcp_data, name).__module__
        assert f'id="{module}.{name}"' in page, name


@pytest.mark.parametrize("damage, expected", [
    ("[a page that is not there](nowhere.md)", "nowhere.md"),
    ("[an anchor that is not there](concepts/calibration.md#no-such-heading)", "no-such-heading"),
])
def test_a_broken_link_fails_the_build(tmp_path, damage, expected):
    root = _copy_site_sources(tmp_path)
    index = root / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + f"\n{damage}\n", encoding="utf-8")
    proc = _build(root, tmp_path / "site")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert expected in proc.stdout + proc.stderr


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path):
    root = _copy_site_sources(tmp_path)
    (root / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    proc = _build(root, tmp_path / "site")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "orphan.md" in proc.stdout + proc.stderr


def _reader_facing_files() -> list[Path]:
    files = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").rglob("*.md"))]
    files += sorted((CHECKOUT / "src" / "rcp_data").rglob("*.py"))
    files += sorted((CHECKOUT / "src" / "rcp_data").rglob("*.j2"))
    return files


def test_nothing_cites_a_path_outside_the_repository():
    hits = [f"{path.relative_to(CHECKOUT)}:{n}: {line.strip()}"
            for path in _reader_facing_files()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if OUTSIDE.search(line)]
    assert hits == []


def test_the_readme_is_a_door():
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    for needed in ("make demo", "make test", "make docs", "docs/"):
        assert needed in readme, needed
