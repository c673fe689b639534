"""The docs' generated sections, made from the registrations so they cannot drift: the configuration
reference in docs/configuration.md (from the config schemas and the registered policies) and the
feature table in docs/evaluators.md (from the registered features).

    python -m experiments.reference            # print every generated section
    python -m experiments.reference --write    # replace them in their pages

A section lies between its start and end comment lines (`Generated.start`, `Generated.end`); the
rest of a page is written by hand. A test (tests/test_reference_doc.py) checks that each page's
section equals this output.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from engine.files import MAX_CONFIG_BYTES, read_text, write_text
from evaluators import registry as features
from optimizers.config import RunConfig
from solver import SolverConfig, registry
from experiments import description

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _type_name(annotation) -> str:
    """A short human name: ``int``, ``int or null``, ```a`, `b` or `c```, ``list of float``."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return ", ".join(f"`{a}`" for a in args)
    if origin in (Union, UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}" if args and args[0] is not Any else "list"
    if origin is dict or annotation is dict:
        return "mapping"
    if annotation is Any:
        return "any"
    if annotation is SolverConfig:  # (its keys: the solver configuration's table)
        return "solver configuration"
    if annotation is type(None):
        return "null"
    if annotation is dict:
        return "mapping"
    return getattr(annotation, "__name__", str(annotation))


def _model_in(annotation) -> tuple[type[BaseModel] | None, str]:
    """(model, how) when ``annotation`` is a section: a model (``""``), a model or null
    (``"or null"``) or a list of models (``"list"``); (None, "") otherwise."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    origin, args = get_origin(annotation), get_args(annotation)
    models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    if origin in (Union, UnionType) and len(models) == 1 and len(args) == 2 and type(None) in args:
        return models[0], "or null"
    if origin is list and models:
        return models[0], "list"
    return None, ""


def _doc(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").strip().split("\n\n")[0].split()).replace("``", "`")


def _rows(model: type[BaseModel], prefix: str = "") -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        ann = field.annotation
        sub, how = _model_in(ann)
        if sub is not None:
            if how == "list":
                rows.append(f"| `{key}` | list of sections | | {_doc(sub)} Each entry: |")
                rows.extend(_rows(sub, key + "[]."))
            else:
                kind = "section or null" if how else "section"
                default = " null " if how and field.get_default(call_default_factory=True) is None else " "
                rows.append(f"| `{key}` | {kind} |{default}| {_doc(sub)} |")
                rows.extend(_rows(sub, key + "."))
            continue
        default = field.get_default(call_default_factory=True)
        if field.is_required():
            shown = "required"
        elif isinstance(default, bool):
            shown = f"`{str(default).lower()}`"
        else:
            shown = "null" if default is None else f"`{default}`"
        shown = shown.replace("|", "\\|")
        desc = (field.description or "").replace("|", "\\|")
        rows.append(f"| `{key}` | {_type_name(ann)} | {shown} | {desc} |")
    return rows


def configuration_reference() -> str:
    """Every key of a solver configuration and of a tuning run configuration, as Markdown tables."""
    lines = ["## Solver configuration (`configs/solve/beam.yaml`, a run's `best.yaml`)", "",
             "| key | type | default | meaning |", "|---|---|---|---|"]
    lines += _rows(registry.config_model())  # the project's policies, whatever else this process registered
    lines += ["", "## Tuning run configuration (`configs/ga.yaml`, `pso.yaml`, `random.yaml`, `ga_full.yaml`, `ga_record.yaml`)", "",
              "| key | type | default | meaning |", "|---|---|---|---|"]
    lines += _rows(RunConfig)
    return "\n".join(lines)


def feature_table() -> str:
    """Every registered board and placement feature, in slot order, with its docstring's first line."""
    return features.table()


@dataclass(frozen=True)
class Generated:
    """A generated section: its ``name`` (in its marker lines), the ``page`` holding it and the
    function making its text."""

    name: str
    page: Path
    make: Callable[[], str]

    @property
    def start(self) -> str:
        return f"<!-- {self.name}:start (generated by python -m experiments.reference --write) -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"

    def markdown(self) -> str:
        """The section's text, its marker lines included."""
        return "\n".join([self.start, "", self.make(), "", self.end])

    def in_page(self, text: str) -> str:
        """The section as the page's ``text`` has it, marker lines included."""
        if self.start not in text or self.end not in text:
            raise ValueError(f"{self.page}: no generated {self.name} section (the lines {self.start!r} and "
                             f"{self.end!r})")
        return text[text.index(self.start): text.index(self.end) + len(self.end)]

    def write(self) -> bool:
        """Replace the section in its page; whether the page changed."""
        page = read_text(self.page, MAX_CONFIG_BYTES, "a documentation page")
        updated = page.replace(self.in_page(page), self.markdown())
        if updated != page:
            write_text(self.page, updated)
        return updated != page


SECTIONS = (
    Generated("config-reference", DOCS / "configuration.md", configuration_reference),
    Generated("feature-table", DOCS / "evaluators.md", feature_table),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.reference", description=description(__doc__))
    parser.add_argument("--write", action="store_true", help="update the generated sections of the docs in place")
    args = parser.parse_args(argv)
    for section in SECTIONS:
        if not args.write:
            print(section.markdown())
        elif section.write():
            print(f"updated {section.page.relative_to(DOCS.parent)} ({section.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
