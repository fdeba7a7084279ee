"""README front matter (the dataset card's YAML metadata), read safely.

YAML aliases let a few hundred bytes describe a structure of billions of nodes ("billion
laughs"): the document is parsed with the safe loader, and its node graph, aliases expanded, may
hold at most ``ALIAS_NODE_BUDGET`` nodes and ``ALIAS_CHAR_BUDGET`` scalar characters more than
the document itself; a recursive alias is refused. The result is made JSON-safe (string keys,
ISO dates) before it is served as ``cardData``.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re

import yaml

from rcp_data.hub.errors import HubError

MAX_CARD_BYTES = 1 << 20  # a README above this size is served without cardData
ALIAS_NODE_BUDGET = 1000
ALIAS_CHAR_BUDGET = 64 << 10

_FRONT_MATTER = re.compile(r"\A\s*---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _expansion(root: yaml.Node) -> tuple[int, int, int, int]:
    """(distinct nodes, distinct scalar chars, expanded nodes, expanded scalar chars) of the
    graph under ``root``; HubError 400 on a cycle (a recursive alias)."""
    memo: dict[int, tuple[int, int]] = {}
    distinct_nodes = distinct_chars = 0
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            nodes, chars = 1, 0
            for child in _children(node):
                sub_nodes, sub_chars = memo[id(child)]
                nodes, chars = nodes + sub_nodes, chars + sub_chars
            memo[key] = (nodes, chars)
            continue
        if key in memo:
            continue
        if key in on_path:
            raise HubError(400, "Invalid YAML in README.md metadata: a recursive alias")
        if isinstance(node, yaml.ScalarNode):
            memo[key] = (1, len(node.value))
            distinct_nodes += 1
            distinct_chars += len(node.value)
            continue
        distinct_nodes += 1
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise HubError(400, "Invalid YAML in README.md metadata: a recursive alias")
            if id(child) not in memo:
                stack.append((child, False))
    nodes, chars = memo[id(root)]
    return distinct_nodes, distinct_chars, nodes, chars


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def safe_yaml(text: str) -> object:
    """Parse one YAML document with the safe loader and the alias budget (HubError 400)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        distinct_nodes, distinct_chars, nodes, chars = _expansion(node)
        if nodes - distinct_nodes > ALIAS_NODE_BUDGET or chars - distinct_chars > ALIAS_CHAR_BUDGET:
            raise HubError(
                400,
                "Invalid YAML in README.md metadata: aliases expand it beyond "
                f"{ALIAS_NODE_BUDGET} extra nodes or {ALIAS_CHAR_BUDGET} extra characters",
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise HubError(400, f"Invalid YAML in README.md metadata: {exc}") from exc
    except RecursionError:
        raise HubError(400, "Invalid YAML in README.md metadata: nested too deeply") from None
    finally:
        loader.dispose()


def parse_front_matter(text: str) -> dict | None:
    """The YAML metadata block of a README (None when absent); HubError 400 when malformed."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return None
    data = safe_yaml(match.group(1))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HubError(400, "README.md metadata must be a YAML mapping")
    return jsonable(data)


def jsonable(value: object) -> object:
    """``value`` with only JSON types: string keys, ISO dates, base64 bytes, finite floats."""
    if isinstance(value, dict):
        return {_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return str(key).lower() if key is not None else "null"
    converted = jsonable(key)
    return converted if isinstance(converted, str) else str(converted)


def card_errors(card: dict) -> list[str]:
    """Light checks of the ``configs`` block that the Hub's validator also rejects."""
    configs = card.get("configs")
    if configs is None:
        return []
    if not isinstance(configs, list):
        return ["'configs' must be a list"]
    errors = []
    for i, cfg in enumerate(configs):
        if not isinstance(cfg, dict) or not isinstance(cfg.get("config_name"), str):
            errors.append(f"configs[{i}] must be a mapping with a string 'config_name'")
    return errors
