"""Pytest plugin: a local Hub for the whole session, and fresh repository ids.

Loaded from conftest.py (``pytest_plugins``). The server listens on the port conftest.py chose
for ``HF_ENDPOINT`` (``RCP_DATA_TEST_HUB_PORT``), so ``huggingface_hub`` and ``datasets`` talk to
it without being told.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rcp_data.hub.server import LocalHub

_REPO_NUMBERS = itertools.count(1)
HUB_TOKEN = os.environ["HF_TOKEN"]  # set by conftest.py: the token every test client sends


@pytest.fixture(scope="session")
def local_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    """A running LocalHub (``.url``, ``.root``) at ``HF_ENDPOINT``, stopped after the session."""
    root: Path = tmp_path_factory.mktemp("local-hub")
    hub = LocalHub(root, port=int(os.environ["RCP_DATA_TEST_HUB_PORT"]), token=HUB_TOKEN)
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()


@pytest.fixture
def hub_repo(local_hub: LocalHub) -> str:
    """A repository id not used before in this session (``rcp-test/repo-<n>``), not yet created."""
    return f"rcp-test/repo-{next(_REPO_NUMBERS)}"
