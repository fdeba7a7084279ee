"""rcp-data's version and the folder of its installed files (what a receipt's verifier
identity hashes). The package face re-exports :data:`__version__`."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

#: The installed package's folder.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
