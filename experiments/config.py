"""Reading configuration files: YAML, dotted ``key=value`` overrides, validation by the schemas.

Every problem is one `ConfigError` line naming the file, the dotted key and what is wrong, e.g.
``configs/solver.yaml: beam.width: Input should be greater than or equal to 1``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A configuration problem, as one line: ``<file>: <key>: <problem>``."""


def load_yaml(path: str | Path) -> dict:
    """The mapping in a YAML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise ConfigError(f"{path}: {where}invalid YAML: {getattr(e, 'problem', None) or e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the file must hold a mapping of keys, not {type(data).__name__}")
    return data


def apply_overrides(data: dict, overrides: list[str], origin: str = "command line") -> dict:
    """A copy of ``data`` with each ``dotted.key=value`` set (the value read as YAML: ``3`` is an
    int, ``[1, 2]`` a list, ``null`` None). A part that is a whole number indexes a list that is
    already there (``space.0.low=100``, ``beam.clear_min_height.2=18``); missing mappings are made."""
    data = copy.deepcopy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"{origin}: {item!r}: an override is dotted.key=value")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        parts = key.split(".")
        node = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            where = ".".join(parts[:i + 1])
            if isinstance(node, list):
                if not part.isdigit():
                    raise ConfigError(f"{origin}: {'.'.join(parts[:i]) or key}: is a list, index it by "
                                      f"position (0 to {len(node) - 1}), not {part!r}")
                if int(part) >= len(node):
                    raise ConfigError(f"{origin}: {where}: the list has {len(node)} items (0 to {len(node) - 1})")
                slot = int(part)
            elif isinstance(node, dict):
                slot = part
            else:
                raise ConfigError(f"{origin}: {'.'.join(parts[:i])}: is not a mapping or list, cannot set {key}")
            if last:
                node[slot] = value
                break
            child = node[slot] if isinstance(node, list) else node.get(slot)
            if child is None:
                child = node[slot] = {}
            node = child
    return data


def holder(data: dict, key: str) -> tuple[dict | None, str]:
    """The mapping of ``data`` that holds the dotted ``key``'s last part (None when a mapping on the
    way is missing), and that part."""
    *path, last = key.split(".")
    node = data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return (node if isinstance(node, dict) else None), last


def validate(model: type[M], data: Any, origin: str) -> M:
    """``data`` validated by ``model``; the first problem becomes a one-line `ConfigError`."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-after"))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "missing key"
        msg = msg.removeprefix("Value error, ")
        if not loc and ": " in msg:  # a whole-model check names its key first
            loc, msg = msg.split(": ", 1)
        raise ConfigError(f"{origin}: {loc or '(top level)'}: {msg}") from None


def resolve_relative(value: Any, base: Path) -> Any:
    """A relative ``.yaml``/``.yml`` path is read relative to the directory of the file naming it."""
    if isinstance(value, str) and value.endswith((".yaml", ".yml")):
        path = Path(value)
        if not path.is_absolute() and (base / path).exists():
            return str(base / path)
    return value
