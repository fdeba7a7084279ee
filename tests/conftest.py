"""Shared fixtures: the ``../shared`` folder (skip when absent) and an isolated environment."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["support.hub_fixture", "support.vidore_hub", "support.demo_fixture"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# huggingface_hub and datasets read their endpoint and cache folders when imported: fix them
# here, before any test module imports either. The local Hub fixture serves on this port.
_SESSION_TMP = Path(tempfile.mkdtemp(prefix="rcp-data-tests-"))
HUB_PORT = int(os.environ.setdefault("RCP_DATA_TEST_HUB_PORT", str(_free_port())))
os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{HUB_PORT}"
os.environ["HF_HOME"] = str(_SESSION_TMP / "hf_home")
os.environ["HF_DATASETS_CACHE"] = str(_SESSION_TMP / "hf_datasets")
os.environ["HF_HUB_DISABLE_XET"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ.pop("HF_HUB_OFFLINE", None)
# the session's local Hub accepts this token (hub_fixture.HUB_TOKEN); every client in the tests
# sends it the usual way, from HF_TOKEN (and no user's token reaches a test)
os.environ["HF_TOKEN"] = "hf_rcp_data_tests_local_hub_token"
os.environ.setdefault("MTEB_CACHE", str(_SESSION_TMP / "mteb"))
# ir_datasets fixes its home when first imported: point it at the session's temp folder now.
os.environ["IR_DATASETS_HOME"] = str(_SESSION_TMP / "ir_datasets")
# receipts of passed verifications: none from the user's cache (session fixtures share these)
os.environ["RCP_DATA_CACHE"] = str(_SESSION_TMP / "rcp-data")


@pytest.fixture(autouse=True)
def _own_receipts(tmp_path_factory, monkeypatch):
    """Each test starts without receipts: one test's passed verification never stands in for
    another's (a test may make verification fail on purpose)."""
    monkeypatch.setenv("RCP_DATA_CACHE", str(tmp_path_factory.mktemp("rcp-data-cache")))


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's temp folder (caches, staged sources) goes when the session ends."""
    shutil.rmtree(_SESSION_TMP, ignore_errors=True)


ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RCP_DATA_SHARED", ROOT.parent / "shared"))


def _require(path: Path) -> Path:
    """``path`` under ../shared; a user's checkout without it skips, CI (.ci/run sets
    RCP_DATA_REQUIRE_SHARED=1) fails."""
    if not path.exists():
        why = f"needs {path} (the ../shared folder beside the project; present in CI)"
        if os.environ.get("RCP_DATA_REQUIRE_SHARED") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return path


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return _require(SHARED)


@pytest.fixture(scope="session")
def trecdl_data(shared_dir: Path) -> Path:
    return _require(shared_dir / "data" / "trec-dl")


@pytest.fixture(scope="session")
def bright_data(shared_dir: Path) -> Path:
    return _require(shared_dir / "data" / "bright")


@pytest.fixture(scope="session")
def reference_dir(shared_dir: Path) -> Path:
    return _require(shared_dir / "reference")


@pytest.fixture(scope="session")
def irds_home() -> Path:
    """ir_datasets' cache home: the session's temp folder set above, before anything imported
    ir_datasets. Tests stage upstream files there and nowhere else."""
    from rcp_data.sources import irds_cache

    actual = irds_cache.irds_home()
    expected = Path(os.environ["IR_DATASETS_HOME"])
    if actual != expected or actual == Path.home() / ".ir_datasets":
        pytest.fail(f"ir_datasets uses home {actual}, not the tests' {expected}; not staging there")
    return actual


@pytest.fixture(params=["compiled", "numpy"])
def either_run_reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A test twice: with the run reader's compiled passes (``_run_scan``, built at install) and
    with the NumPy fallback of an install without a C compiler. The compiled passes missing is
    a failure here, not a skip."""
    from rcp_data.runs import run_scan, trec_run_bytes

    if request.param == "numpy":
        monkeypatch.setattr(trec_run_bytes, "COMPILED", None)
        monkeypatch.setattr(run_scan, "COMPILED", None)
    elif run_scan.COMPILED is None:
        pytest.fail("rcp_data.runs._run_scan is not built: pip install -e . with a C "
                    "compiler")
    return request.param
