"""The one way a configuration problem is told: ``<origin>: <dotted key>: <problem>``, one line.

Every configuration of the workbench (evaluators, solver, tuning runs) is validated by pydantic,
its sections built on `Strict` (an unknown key is an error, and so is a number that is not one a
computation can use: an infinity or NaN where a float is read, an integer beyond the 64-bit range
anywhere, `number_problem`); `format_validation_error` turns the first problem of a
`pydantic.ValidationError` into that line. It lives in the lowest layer so that every layer can use
it.
"""

from __future__ import annotations

import math
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

#: longest value quoted in a message before it is cut
SHOWN_CHARS = 40
#: integers of a configuration lie in [-INT_LIMIT, INT_LIMIT): the 64-bit range numba and numpy
#: compute in (Python's own integers have no bound, and past 4,300 digits cannot even be printed)
INT_LIMIT = 2**63


def digits(n: int) -> int:
    """The decimal digits of ``n`` (without its sign), counted without printing it (`str` refuses
    integers of more than 4,300 digits)."""
    n = abs(n)
    if n < 10**18:
        return len(str(n))
    d = int(math.log10(n)) + 1  # (a float's rounding can be one off near a power of ten)
    return d - 1 if 10 ** (d - 1) > n else d + 1 if 10**d <= n else d


def out_of_range(shown: str) -> str:
    """The problem of an integer outside the 64-bit range, ``shown`` as `show` gives it."""
    return f"{shown} is outside the 64-bit integer range (-2**63 to 2**63 - 1)"


def number_problem(v: Any) -> str | None:
    """What makes ``v`` a number no computation of the workbench can use, or None: an integer outside
    the 64-bit range (`INT_LIMIT`). (An infinity or NaN is refused where a float field reads it,
    `Strict`'s ``allow_inf_nan=False``; elsewhere, in free-form notes, it is text like any other.)"""
    if isinstance(v, int) and not isinstance(v, bool) and not -INT_LIMIT <= v < INT_LIMIT:
        return out_of_range(show(v))
    return None


def first_number_problem(data: Any) -> tuple[str, str] | None:
    """(dotted key, `number_problem`) of the first such number inside the mappings and lists of
    ``data`` (the key empty when ``data`` is that number), or None."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{key}.{k}" if key else str(k), x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{key}.{i}" if key else str(i), x) for i, x in reversed(list(enumerate(v))))
        else:
            found = number_problem(v)
            if found is not None:
                return key, found
    return None


#: the validation context of a configuration read back from a file another machine may have
#: written (a summary.json's): the checks of what this machine can run (its memory, its CPUs,
#: `runs_here`) are left out, the types and bounds of every key are not
WRITTEN_ELSEWHERE = {"runs_here": False}


def runs_here(info) -> bool:
    """Whether a model validator (given its `pydantic.ValidationInfo`) checks what this machine can
    run: not under `WRITTEN_ELSEWHERE`."""
    return (info.context or {}).get("runs_here", True)


class Strict(BaseModel):
    """A section of a configuration (the solver's, a tuning run's, ...): an unknown key is an
    error, and so is a value assigned later that its field refuses, an infinity or NaN where a float
    is read (none of the workbench's settings gives an infinity a meaning: an unbounded setting is
    ``null``), and an integer outside the 64-bit range under any key (`number_problem`), before any
    field reads it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _numbers_in_range(cls, data: Any) -> Any:
        found = first_number_problem(data) if isinstance(data, (dict, list, tuple)) else None
        if found is not None:
            raise ValueError(f"{found[0]}: {found[1]}")
        return data


def show(v: Any) -> str:
    """A value as YAML would spell it, short (for messages); an integer too long to quote as the
    number of its digits."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int) and abs(v) >= 10**SHOWN_CHARS:
        return f"an integer of {digits(v):,} digits"
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
    """The model an annotation holds: a pydantic model, or a class standing for one whose fields it
    answers (`solver.SolverConfig`, the schema of the policies registered now)."""
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel) or
                                         isinstance(getattr(annotation, "model_fields", None), dict)):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def closest(word, choices) -> str | None:
    """The name of ``choices`` closest to ``word`` (difflib, at least 0.7 alike), or None."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.7)
    return close[0] if close else None


def did_you_mean(word, choices) -> str:
    """``" (did you mean 'x'?)"`` for the name of ``choices`` closest to ``word`` (`closest`), else "":
    the hint an unknown key, feature, preset or name is given."""
    close = closest(word, choices)
    return f" (did you mean {close!r}?)" if close else ""


def problem(e: ValidationError, model: type[BaseModel] | None = None) -> tuple[str, str]:
    """(dotted key, problem) of the first error of ``e``. A check that names its key first
    (``"holse: unknown feature"``) has that key appended; an unknown key lists the known ones when
    ``model`` (the validated model) is given."""
    err = e.errors()[0]
    loc = [str(p) for p in err["loc"] if not str(p).startswith("function-") and str(p) != "[key]"]
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        holder = _model_at(model, loc)
        msg = "unknown key" + (did_you_mean(loc[-1], holder.model_fields) + f" (known: {', '.join(holder.model_fields)})"
                               if holder is not None and loc else "")
    elif err["type"] == "missing":
        msg = "missing key"
    elif err["type"] == "literal_error" and isinstance(err.get("input"), str):
        import re

        msg += did_you_mean(err["input"], re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", ""))))
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
