"""The one way a configuration problem is told: ``<origin>: <dotted key>: <problem>``, one line.

Every configuration of the workbench (evaluators, solver, tuning runs) is validated by pydantic,
its sections built on `Strict` (an unknown key is an error); `format_validation_error` turns the
first problem of a `pydantic.ValidationError` into that line. It lives in the lowest layer so that
every layer can use it.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

#: longest value quoted in a message before it is cut
SHOWN_CHARS = 40


class Strict(BaseModel):
    """A section of a configuration (the solver's, a tuning run's, ...): an unknown key is an
    error, and so is a value assigned later that its field refuses."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def show(v: Any) -> str:
    """A value as YAML would spell it, short (for messages)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    text = repr(v) if isinstance(v, str) else str(v)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _model_at(model: type[BaseModel] | None, loc: list[str]) -> type[BaseModel] | None:
    """The model that holds the last part of ``loc`` (walking fields, mappings and lists), or None."""
    for part in loc[:-1]:
        if model is None:
            return None
        if part.isdigit() or part not in model.model_fields:
            continue  # a list index or a mapping key: the annotation below says what it holds
        annotation = model.model_fields[part].annotation
        model = _inner_model(annotation)
    return model


def _inner_model(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def problem(e: ValidationError, model: type[BaseModel] | None = None) -> tuple[str, str]:
    """(dotted key, problem) of the first error of ``e``. A check that names its key first
    (``"holse: unknown feature"``) has that key appended; an unknown key lists the known ones when
    ``model`` (the validated model) is given."""
    err = e.errors()[0]
    loc = [str(p) for p in err["loc"] if not str(p).startswith("function-") and str(p) != "[key]"]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        holder = _model_at(model, loc)
        msg = "unknown key" + (f" (known: {', '.join(holder.model_fields)})" if holder is not None else "")
    elif err["type"] == "missing":
        msg = "missing key"
    head, sep, rest = msg.partition(": ")
    if sep and head and " " not in head and "'" not in head and "(" not in head:
        loc.extend(head.split("."))
        msg = rest
    return ".".join(loc) or "(top level)", msg


def format_validation_error(e: ValidationError, origin: str, model: type[BaseModel] | None = None,
                            prefix: str = "") -> str:
    """``"<origin>: <prefix.dotted key>: <problem>"`` for the first error of ``e``."""
    key, msg = problem(e, model)
    if prefix:
        key = prefix if key == "(top level)" else f"{prefix}.{key}"
    return f"{origin}: {key}: {msg}"
