"""Reading configuration files: YAML, dotted ``key=value`` overrides, validation by the schemas.

Every problem is one `ConfigError` line naming the file, the dotted key and what is wrong, e.g.
``configs/solve/beam.yaml: beam.width: Input should be greater than or equal to 1``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engine.files import LongInteger, YamlError, load_yaml, parse_yaml
from engine.validation import closest, format_validation_error
from engine.paths import PathError, get_dotted, set_dotted

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A configuration problem, as one line: ``<file>: <key>: <problem>``."""


def locate(path: str | Path) -> Path:
    """``path`` when it exists; else, for a shipped configuration named as in a checkout
    (``configs/ga.yaml``) or by its name (``ga.yaml``), the installed copy (`configs.path`); else
    ``path`` (whose reading then says it is not found)."""
    path = Path(path)
    if path.exists() or path.is_absolute():
        return path
    import configs

    parts = path.parts[1:] if path.parts and path.parts[0] == "configs" else path.parts
    shipped = configs.path(Path(*parts)) if parts else None
    return shipped if shipped is not None and shipped.is_file() else path


def shipped_hint(path: str | Path) -> str:
    """For a configuration that is not there: the shipped one of the same name in the project's one
    style (``configs/segment-record.yaml`` finds ``configs/solve/segment_record.yaml``), else the one
    named most like it (`engine.validation.did_you_mean`), or ""."""
    import configs

    root = configs.path("")
    shipped = {p.stem: p.relative_to(root).as_posix() for p in root.glob("**/*.yaml")}
    word = Path(path)
    prefix = "configs/" if word.parts[:1] == ("configs",) else ""
    stem = word.stem.replace("-", "_")
    stem = stem if stem in shipped else closest(stem, shipped)
    return f" (did you mean {prefix + shipped[stem]!r}?)" if stem is not None else ""


def load_mapping(path: str | Path) -> dict:
    """The mapping of keys in a YAML configuration file. An empty file (or one of comments only) is
    an error, not every default: ``{}`` says that."""
    try:
        data = load_yaml(path)
    except YamlError as e:
        raise ConfigError(str(e) + (shipped_hint(path) if not Path(path).exists() else "")) from None
    if data is None:
        raise ConfigError(f"{path}: the file is empty (no keys); write {{}} to mean every default")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the file must hold a mapping of keys, not {type(data).__name__}")
    return data


def parse_override(item: str, origin: str = "command line") -> tuple[str, Any]:
    """(dotted key, value) of a ``dotted.key=value`` override; the value is read as YAML (``3`` an
    int, ``1e9`` a float, ``[1, 2]`` a list, ``null`` None), or kept as text when it is not YAML. An
    integer of more digits than Python reads from text is a `ConfigError` naming the key; the other
    numbers no setting can take (``.inf``, ``.nan``, ``1e400``, integers beyond 64 bits) are refused
    by the schema (`engine.validation.Strict`), naming the key too."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"{origin}: {item!r}: an override is dotted.key=value")
    try:
        value = parse_yaml(raw) if raw.strip() else ""
    except LongInteger as e:  # a number, but one no setting can take (not text to keep)
        raise ConfigError(f"{origin}: {key + '.' + e.key if e.key else key}: {e.what}") from None
    except YamlError:
        value = raw
    return key, value


def apply_overrides(data: dict, overrides: list[str], origin: str = "command line") -> dict:
    """A copy of ``data`` with each ``dotted.key=value`` set (`parse_override`). A part that is a
    whole number indexes a list that is already there (``space.0.low=100``,
    ``beam.clear_min_height.2=18``); missing mappings are made (`engine.paths.set_dotted`)."""
    data = copy.deepcopy(data)
    for item in overrides:
        key, value = parse_override(item, origin)
        try:
            set_dotted(data, key, value)
        except PathError as e:
            raise ConfigError(f"{origin}: {e}") from None
    return data


def holder(data: dict, key: str) -> tuple[dict | None, str]:
    """The mapping of ``data`` that holds the dotted ``key``'s last part (None when a mapping on the
    way is missing), and that part."""
    parent, _, last = key.rpartition(".")
    try:
        node = get_dotted(data, parent) if parent else data
    except KeyError:
        return None, last
    return (node if isinstance(node, dict) else None), last


def validate(model: type[M], data: Any, origin: str, prefix: str = "") -> M:
    """``data`` validated by ``model``; the first problem becomes a one-line `ConfigError`
    (`engine.validation.format_validation_error`; ``prefix`` is the key ``data`` sits under)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, origin, model, prefix=prefix)) from None


def resolve_relative(value: Any, base: Path) -> Any:
    """A relative ``.yaml``/``.yml`` path is read relative to the directory of the file naming it."""
    if isinstance(value, str) and value.endswith((".yaml", ".yml")):
        path = Path(value)
        if not path.is_absolute() and (base / path).exists():
            return str(base / path)
    return value
