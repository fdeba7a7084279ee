"""Reading JSON files with errors that name the file."""

from __future__ import annotations

import json
from pathlib import Path

from rcp_data.core.errors import InputError


def read_json(path: str | Path) -> object:
    """Parse a JSON file; a missing or malformed file is an :class:`InputError` naming it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("file not found", path=str(path)) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc})", path=str(path)) from exc
