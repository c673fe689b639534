"""Dotted paths into nested configuration data: ``beam.width``, ``space.0.low`` (a part that is a
whole number indexes a list that is already there). The one walker behind the command line's
overrides (`engine.config.apply_overrides`), the search space's settings and the re-scoring's
(`optimizers.space.set_path`, `optimizers.space.with_settings`).
"""

from __future__ import annotations

from typing import Any


class PathError(ValueError):
    """A path that cannot be followed, as one line ``<the path up to the problem>: <problem>``."""


def get_dotted(data: Any, path: str) -> Any:
    """The value at ``path`` (KeyError naming the first part that is not there)."""
    node = data
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(part)
    return node


def _slot(node: Any, parts: list[str], i: int) -> int | str:
    """The key (of a mapping) or the index (of a list) that ``parts[i]`` names in ``node``, the
    value at ``parts[:i]``; `PathError` when ``node`` has no such slot."""
    part, here, path = parts[i], ".".join(parts[:i]), ".".join(parts)
    if isinstance(node, dict):
        return part
    if not isinstance(node, list):
        raise PathError(f"{here}: is not a mapping or list, cannot set {path}")
    if not part.isdigit():
        raise PathError(f"{here or path}: is a list, index it by position (0 to {len(node) - 1}), not {part!r}")
    if int(part) >= len(node):
        raise PathError(f"{'.'.join(parts[:i + 1])}: the list has {len(node)} items (0 to {len(node) - 1})")
    return int(part)


def set_dotted(data: dict, path: str, value: Any) -> None:
    """Set the value at ``path`` in place; a mapping missing (or null) on the way is made, a list
    is indexed by position within its length."""
    parts = path.split(".")
    node = data
    for i in range(len(parts) - 1):
        slot = _slot(node, parts, i)
        child = node[slot] if isinstance(node, list) else node.get(slot)
        if child is None:
            child = node[slot] = {}
        node = child
    node[_slot(node, parts, len(parts) - 1)] = value
