"""No module of the project imports itself through others: a static scan of every import (those
inside functions too, which only defer a cycle to the first call) finds none.

An import names its target module: ``import a.b`` and ``from a import b`` name ``a.b`` when
``a/b`` is a module or package, ``from a import name`` names ``a`` (its ``__init__``) otherwise.
The packages a dotted name passes through are not edges of their own: importing ``a.b`` runs
``a/__init__`` first, but what that imports is ``a``'s own edges. A submodule that names its own
package (``from solver import X`` inside ``solver/``) is an edge to the package's ``__init__``,
so it makes a cycle exactly when that ``__init__`` imports the submodule (through others or not).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "evaluators", "solver", "optimizers", "experiments", "benchmarks")


def _modules() -> dict[str, Path]:
    """dotted name -> source file of every module of `PACKAGES` (a package by its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project's modules that the module ``name`` (its source at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                targets.add(sub if sub in modules else source)
    return {t for t in targets if t in modules and t != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, the first again at the end) per strongly connected component
    of more than one module (Tarjan's algorithm, then a shortest path back in the component)."""
    index, low, stack, on, components = {}, {}, [], set(), []

    def connect(v):  # (the graph is a few hundred modules: recursion is shallow enough)
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        paths, frontier = {start: [start]}, [start]
        while frontier:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & component):
                    if w == start:
                        cycles.append(paths[v] + [start])
                        nxt = []
                        break
                    if w not in paths:
                        paths[w] = paths[v] + [w]
                        nxt.append(w)
                else:
                    continue
                break
            frontier = nxt
    return sorted(cycles)


def test_the_scan_resolves_submodules_and_packages():
    graph = _graph()
    assert "solver.registry" in graph["solver"]  # from . import registry: the submodule
    assert "engine" in graph["solver.config"]  # from engine import get_rules: the package's __init__
    assert "optimizers.fitness" in graph["optimizers.run"]  # from .fitness import canonical


def test_no_module_imports_itself_through_others():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
