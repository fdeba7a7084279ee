"""The card's format as a file: its YAML front matter and the configs it declares."""

from __future__ import annotations

from rcp_data.core.errors import InputError
from rcp_data.model.layout import CARD_FILE


# -- the card's front matter -----------------------------------------------------------------
def card_front_matter(card_text: str, *, source: str = CARD_FILE) -> dict:
    """The YAML front matter of a card (empty without one); invalid YAML is an InputError."""
    import yaml

    if not card_text.startswith("---"):
        return {}
    try:
        # libyaml's safe loader when PyYAML has it (the pure-Python one takes 0.2 s on a
        # card of 200 configs)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        front = yaml.load(card_text.split("---", 2)[1], Loader=loader) or {}  # noqa: S506
    except (yaml.YAMLError, IndexError) as exc:
        raise InputError(f"front matter is not valid YAML ({exc})", path=source) from exc
    if not isinstance(front, dict):
        raise InputError("front matter is not a mapping", path=source)
    return front


def card_configs(card_text: str, *, source: str = CARD_FILE) -> list[dict]:
    """The ``configs:`` list of a card's YAML front matter (empty without front matter)."""
    configs = card_front_matter(card_text, source=source).get("configs") or []
    if not isinstance(configs, list):
        raise InputError("'configs' must be a list", path=source, field="configs")
    return configs




def config_data_files(config: dict) -> list[tuple[str, str]]:
    """``(split, path pattern)`` of every data file a card config declares."""
    files = config.get("data_files") or []
    if isinstance(files, str | dict):
        files = [files]
    out = []
    for entry in files:
        if isinstance(entry, str):
            out.append(("", entry))
        elif isinstance(entry, dict):
            paths = entry.get("path")
            for p in paths if isinstance(paths, list) else [paths]:
                out.append((str(entry.get("split", "")), str(p)))
    return out


