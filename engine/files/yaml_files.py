"""YAML read safely and bounded (`load_yaml`, `parse_yaml`), and written as it reads (`write_yaml`).

Numbers written the YAML 1.2 way (``1e9``, ``-1e-3``) are read as floats as well as ``1.0e+9``, a
key given twice in one mapping is refused, an integer of more digits than Python reads from text
(4,300) is refused naming its key (`LongInteger`), and a document whose aliases would expand it
past `MAX_YAML_NODES` values (an alias bomb) or into itself is refused once composed, before
anything is built from it; every problem is one `YamlError` line naming the file, e.g.
``configs/x.yaml: invalid YAML: line 3, column 1: expected ',' or ']', but got '<stream end>'``.
`write_yaml` quotes strings that this loader would read as numbers, so what it writes reads back
as it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .reading import MAX_CONFIG_BYTES, ReadError, _TooManyDigits, read_text
from .writing import write_text


#: a YAML 1.2 float without a dot in its mantissa or a sign in its exponent (``1e9``), which YAML 1.1
#: (PyYAML's default) reads as a string
YAML12_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class YamlError(ReadError):
    """A YAML file that cannot be read or parsed (`ReadError`'s one line)."""


class LongInteger(YamlError):
    """A YAML integer of more decimal digits than Python converts from text
    (`sys.get_int_max_str_digits`): ``key`` is its dotted key in the document (empty for a document
    that is that integer), ``digits`` its digits; the problem is ``<key>: <what is wrong>``."""

    def __init__(self, path: str | Path, key: str, digits: int):
        from ..validation import out_of_range

        self.key, self.digits = key, digits
        self.what = out_of_range(f"an integer of {digits:,} digits")
        super().__init__(path, f"{key}: {self.what}" if key else self.what)


#: the most values (nodes) a YAML document may hold once its aliases are expanded: as many as a
#: configuration file of the largest size (`MAX_CONFIG_BYTES`) can hold written out (a byte each at
#: least), so through aliases no document stands for more than its kind's read limit allows; the
#: configurations hold no alias or a handful (``<<: *base`` merges), thousands of values in all
MAX_YAML_NODES = MAX_CONFIG_BYTES


class _Loader(yaml.SafeLoader):
    """Safe loader that also reads YAML 1.2 floats such as ``1e9`` and ``-1e-3`` as numbers, and
    refuses a key given twice in one mapping (a merge, ``<<: *base``, may still be overridden) and an
    integer of more digits than ``int()`` reads from text (`parse_yaml` names its key).

    Aliases are bounded: a document whose values, its aliases expanded, are more than ``max_nodes``
    (`MAX_YAML_NODES`; `_TooManyAliases`), or that holds an alias inside the value it names (a
    recursive structure), is refused once composed, before anything is built from it. PyYAML
    builds an alias as a reference, but the code that walks a configuration (validation, JSON,
    digests) expands it: nine levels of nine aliases stand for about 400 million values."""

    #: the most values a document may hold, its aliases expanded (`parse_yaml` sets it per document)
    max_nodes = MAX_YAML_NODES

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            _check_expansion(node, self.max_nodes)
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = key in first  # (1 and true are one key to Python's dict too)
                except TypeError:  # an unhashable key: the base class says so
                    continue
                if seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"key {key!r} given twice (first on line {first[key] + 1})", key_node.start_mark)
                first[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() reads from text: found again by its node
            raise _TooManyDigits(node) from None


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def _key_of(text: str, target) -> str:
    """The dotted key of the scalar node at ``target``'s place in the document ``text`` (composed,
    not constructed: no number is converted), or "" at the top."""
    stack = [("", yaml.compose(text, Loader=_Loader))]
    seen = set()
    while stack:
        key, node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.start_mark.index == target.start_mark.index and isinstance(node, yaml.ScalarNode):
            return key
        if isinstance(node, yaml.MappingNode):
            stack.extend(reversed([(f"{key}.{k.value}" if key else str(k.value), v) for k, v in node.value]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(f"{key}.{i}" if key else str(i), v) for i, v in enumerate(node.value)]))
    return ""


class _TooManyAliases(yaml.YAMLError):
    """A document refused for its aliases (`_check_expansion`): ``what`` is the kind of problem,
    ``mark`` where the value is, ``problem`` what is wrong with it."""

    def __init__(self, what: str, mark, problem: str):
        super().__init__(f"{what}: {problem}")
        self.what, self.mark, self.problem = what, mark, problem


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root, limit: int) -> None:
    """Refuse (`_TooManyAliases`) the composed document ``root`` when, its aliases expanded, it holds
    more than ``limit`` values (nodes), or when a value holds an alias of itself. Every node is
    visited once (a node an alias names again is counted from its first visit), so the check takes
    a time linear in the document's text however far its aliases would expand."""
    size: dict[int, int] = {}  # id(node) -> its values, aliases expanded
    open_: set[int] = set()  # the nodes whose values are being counted
    stack = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            open_.discard(key)
            n = 1 + sum(size[id(c)] for c in _children(node))
            if n > limit:
                raise _TooManyAliases("too many aliases", node.start_mark,
                                      f"the value there holds more than {limit:,} values once its aliases are "
                                      "expanded")
            size[key] = n
        elif key in open_:  # reached again from inside itself
            raise _TooManyAliases("a recursive alias", node.start_mark,
                                  "the value there holds an alias of itself")
        elif key not in size:
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))


class _Dumper(yaml.SafeDumper):
    """Safe dumper that quotes the strings `_Loader` would read as YAML 1.2 floats."""


for _cls in (_Loader, _Dumper):
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", YAML12_FLOAT, list("-+0123456789"))


def parse_yaml(text: str, origin: str = "<text>", max_nodes: int | None = None) -> Any:
    """The document in ``text`` (None when it is empty); `YamlError` naming ``origin``, the line and
    column when it is not YAML, or when its aliases expand it to more than ``max_nodes`` values
    (default `MAX_YAML_NODES`: ``"<file>: too many aliases: line 12, column 6: the value there holds
    more than 1,048,576 values once its aliases are expanded"``) or make it recursive."""
    loader = _Loader(text)
    loader.max_nodes = MAX_YAML_NODES if max_nodes is None else max_nodes
    try:
        return loader.get_single_data()
    except _TooManyAliases as e:
        raise YamlError(origin, f"{e.what}: line {e.mark.line + 1}, column {e.mark.column + 1}: {e.problem}") from None
    except _TooManyDigits as e:
        key = _key_of(text, e.node)
        raise LongInteger(origin, key, sum(c.isdigit() for c in e.node.value)) from None
    except RecursionError:
        raise YamlError(origin, "invalid YAML: nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).split("\n")[0]
        raise YamlError(origin, f"invalid YAML: {where}{problem}") from None
    finally:
        loader.dispose()


def load_yaml(path: str | Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    """The document in the YAML file ``path``, whatever its type (None for an empty file: the caller
    says what it expects); `YamlError` when the file is missing, unreadable, larger than ``limit``
    bytes (`read_text`), not YAML, or when its aliases expand it to more than ``limit`` values
    (`parse_yaml`)."""
    try:
        text = read_text(path, limit, "a configuration file")
    except ReadError as e:
        raise YamlError(path, e.problem) from None
    return parse_yaml(text, str(path), max_nodes=limit)


def write_yaml(path: str | Path, data: Any, header: str = "") -> None:
    """``data`` as block YAML in its own key order; ``header`` (comment lines) first."""
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    write_text(path, (header + "\n" if header else "") + body)
