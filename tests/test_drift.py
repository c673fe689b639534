"""The lists of registered things (board features and tie-breaks, policies and their settings,
tuners, rules presets, the entries of a function table, modules and commands) in the README,
docs/*.md, the package docstrings, the configuration schemas and the package exports agree with
what is registered: a test here fails when a registered item is missing from a list of its kind,
or when a list names one that does not exist. Every kind found by name is one
`engine.registry.Registry`, and no source module is longer than `MAX_MODULE_LINES`. Imports only:
nothing is compiled.
"""

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

import engine
import evaluators
import optimizers
import solver
import solver.online  # noqa: F401  (registers the policies for unknown pieces)
from engine._jit.dispatch import _TABLES
from engine.registry import Registry
from engine.rules import PRESETS, Rules
from evaluators import preset_names
from evaluators import registry as features
from optimizers.tuners import TUNERS
from solver import registry as policies
from solver.beam import TIE_ORDERS
from solver.config import BeamConfig

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: the pages that describe the present (the results log keeps history, commands of its time included)
PAGES = [README, *sorted(p for p in DOCS.glob("*.md") if p.name != "results-log.md")]
PACKAGES = ("engine", "evaluators", "solver", "optimizers", "experiments")
#: a reference in single backticks (Markdown code, or a docstring's cross-reference); ``literals``
#: in double backticks are not references
TICKED = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
#: the project's folders a path in the docs may start with
PROJECT_PATH = re.compile(r"(?<![\w./<-])((?:engine|evaluators|solver|optimizers|experiments|configs|benchmarks|tests"
                          r"|notebooks|results|docs)/[\w./-]*)")
#: an argument naming a file a command writes (it need not exist)
OUTPUT_OPTION = re.compile(r"(?:--json|--out|--save|-o|>)\s+(\S+)")
PYTHON_M = re.compile(r"python -m ([\w.]+)")


def _ticked(text: str) -> list[str]:
    return [t.strip() for t in TICKED.findall(text)]


def _modules(package: str) -> set[str]:
    """The public modules and subpackages of ``package`` (a folder of the checkout)."""
    folder = ROOT.joinpath(*package.split("."))
    found = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
    return {name for name in found if not name.startswith("_")}


def _commands() -> set[str]:
    """The modules of experiments/ that run as ``python -m experiments.<name>``."""
    return {p.stem for p in (ROOT / "experiments").glob("*.py")
            if not p.stem.startswith("_") and 'if __name__ == "__main__"' in p.read_text(encoding="utf-8")}


def _section(text: str, heading: str) -> str:
    """The part of a Markdown page under ``heading`` (a whole heading line), to the next heading of
    the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level), len(lines))
    return "\n".join(lines[start + 1:end])


def _table(text: str) -> list[list[str]]:
    """The rows (cells) of the first Markdown table in ``text``, header and rule left out."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[c.strip() for c in row.strip().strip("|").split("|")] for row in lines[start + 2:end]]


def _layout() -> dict[str, str]:
    """The README's layout table: folder (``engine`` ...) -> what it says lives there."""
    return {row[0].strip("`").rstrip("/"): row[1] for row in _table(_section(README.read_text(encoding="utf-8"),
                                                                                "## Layout"))}


def _bullets(text: str) -> list[str]:
    """The names that open the bullets of a list, ``- `name`: ...``."""
    return re.findall(r"^- `(\w+)`:", text, flags=re.M)


def _registered(kind: str) -> set[str]:
    return {
        "presets": set(PRESETS),
        # the project's own: a test module registers a policy when pytest imports it, before this runs
        "known policies": {e.name for e in policies.entries(shipped_only=True) if e.known_pieces},
        "online policies": {e.name for e in policies.entries(shipped_only=True) if not e.known_pieces},
        "tuners": set(TUNERS),
        "commands": _commands(),
        "features": set(features.names()) | set(features.aliases()),
        "tie-breaks": set(features.tie_breaks()),
        "evaluator presets": set(preset_names()),
    }[kind]


#: what each layout row lists besides its modules, and the names the package exports
ROW_KINDS = {"engine": ("presets",), "solver": ("known policies", "online policies"), "optimizers": ("tuners",),
             "experiments": ("commands",), "evaluators": ()}


def _resolves(token: str, package: str | None = None) -> bool:
    """Whether a reference names something that exists: a path of the checkout, ``python -m`` of a
    module, a module or an attribute (dotted, from ``package`` or from the top)."""
    token = token.split("<")[0].rstrip(".,:;")  # `python -m experiments.<name>`: the part before the placeholder
    if token.startswith("python -m "):
        return importlib.util.find_spec(token.split()[2]) is not None
    if "/" in token:
        return (ROOT / token).exists()
    if not re.fullmatch(r"[A-Za-z_][\w.]*", token):
        return False
    for base in ([package] if package else []) + [None]:
        parts = token.split(".")
        for i in range(len(parts), -1 if base else 0, -1):
            name = ".".join(([base] if base else []) + parts[:i])
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                continue
            obj = importlib.import_module(name)
            try:
                for attribute in parts[i:]:
                    obj = getattr(obj, attribute)
            except AttributeError:
                break
            return True
    return False


# ------------------------------------------------------------------------------------------------
# The README's layout table


@pytest.mark.parametrize("folder", sorted(_layout()), ids=str)
def test_the_layout_names_only_what_exists(folder):
    """Each name in a layout row is a module of that folder, a registered item of a kind the row
    lists, a name the package exports, or a path of the checkout."""
    cell = _layout()[folder]
    known = set()
    if folder in PACKAGES:
        known = _modules(folder) | set(getattr(importlib.import_module(folder), "__all__", ()))
        for kind in ROW_KINDS[folder]:
            known |= _registered(kind)
    unknown = []
    for token in _ticked(cell):
        qualified = "/" in token or "." in token or token.startswith("python -m ")  # not a bare name
        if token in known or (qualified and _resolves(token)) or (ROOT / folder / token).exists():
            continue
        unknown.append(token)
    assert not unknown, f"README.md, layout, {folder}/: no such module, registered name or file: {unknown}"


@pytest.mark.parametrize("folder", sorted(ROW_KINDS), ids=str)
def test_the_layout_lists_every_registered_item(folder):
    assert folder in _layout(), f"README.md, layout: no row for {folder}/"
    listed = set(_ticked(_layout()[folder]))
    for kind in ROW_KINDS[folder]:
        missing = sorted(_registered(kind) - listed)
        assert not missing, f"README.md, layout, {folder}/: {kind} missing: {missing}"


# ------------------------------------------------------------------------------------------------
# docs/*.md


def test_the_engine_page_lists_the_rules_presets():
    text = (DOCS / "engine.md").read_text(encoding="utf-8")
    listed = {row[0].strip("`") for row in _table(_section(text, "## Rules as data"))}
    assert listed == set(PRESETS), f"docs/engine.md, the presets table: {sorted(listed ^ set(PRESETS))}"
    modules = next(line for line in text.split("\n\n") if line.startswith("Modules:"))
    unknown = [t for t in _ticked(modules) if t not in _modules("engine") | set(PRESETS)]
    assert not unknown, f"docs/engine.md, Modules: no such module or preset: {unknown}"
    assert set(PRESETS) <= set(_ticked(modules)), "docs/engine.md, Modules: a preset is missing"


@pytest.mark.parametrize(("page", "heading", "kind"), [
    ("policies.md", "## The policies", "known policies"),
    ("family.md", "## Policies for unknown pieces", "online policies"),
], ids=["known", "online"])
def test_the_policy_pages_describe_every_policy(page, heading, kind):
    listed = _bullets(_section((DOCS / page).read_text(encoding="utf-8"), heading))
    assert len(listed) == len(set(listed)), f"docs/{page}: a policy described twice: {listed}"
    assert set(listed) == _registered(kind), (
        f"docs/{page}, {heading}: listed {sorted(listed)}, registered {sorted(_registered(kind))}")


def test_the_tuning_page_names_every_tuner():
    text = (DOCS / "tuning.md").read_text(encoding="utf-8")
    files = set(re.findall(r"optimizers/tuners/(\w+)\.py", text))
    modules = {cls.__module__.rsplit(".", 1)[1] for cls in TUNERS.values()}
    assert files == modules, f"docs/tuning.md: tuner modules named {sorted(files)}, registered {sorted(modules)}"
    missing = sorted(set(TUNERS) - set(_ticked(text)))
    assert not missing, f"docs/tuning.md: tuners not named by their algorithm name: {missing}"


def test_the_evaluators_page_lists_the_tie_breaks():
    listed = _bullets(_section((DOCS / "evaluators.md").read_text(encoding="utf-8"), "## The YAML format"))
    assert len(listed) == len(set(listed)) and set(listed) == _registered("tie-breaks"), (
        f"docs/evaluators.md, the YAML format: tie-breaks listed {sorted(listed)}, "
        f"registered {sorted(_registered('tie-breaks'))}")


def test_the_evaluators_page_lists_features_and_presets():
    text = (DOCS / "evaluators.md").read_text(encoding="utf-8")
    table = {row[0].strip("`") for row in _table(text[text.index("<!-- feature-table:start"):])}
    assert table == _registered("features"), f"docs/evaluators.md, features: {sorted(table ^ _registered('features'))}"
    listed = {t for row in _table(_section(text, "## Presets")) for t in _ticked(row[0])}
    assert listed == _registered("evaluator presets"), (
        f"docs/evaluators.md, presets: {sorted(listed ^ _registered('evaluator presets'))}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_docs_name_modules_and_files_that_exist(page):
    """Every ``python -m <module>`` names a module, and every path of the checkout a page mentions
    exists (a file a command is told to write excepted)."""
    text = page.read_text(encoding="utf-8")
    outputs = set(OUTPUT_OPTION.findall(text))
    wrong = [m for m in (m.rstrip(".") for m in PYTHON_M.findall(text))
             if m.split(".")[0] in PACKAGES and importlib.util.find_spec(m) is None]
    for m in PROJECT_PATH.finditer(text):
        path = m.group(1).rstrip(".,:;")
        if "<" in text[m.end():m.end() + 1] or "*" in path or path in outputs or path.endswith("-"):
            continue
        if not (ROOT / path).exists():
            wrong.append(path)
    assert not wrong, f"{page.relative_to(ROOT)}: no such module or file: {sorted(set(wrong))}"


# ------------------------------------------------------------------------------------------------
# The packages: docstrings and exports


def test_the_engine_exports_every_rules_preset():
    constants = {name: getattr(engine.rules, name) for name in dir(engine.rules)
                 if name.isupper() and isinstance(getattr(engine.rules, name), Rules)}
    exported = {name for name in engine.__all__ if name in constants}
    for preset, rules in PRESETS.items():
        names = [name for name, value in constants.items() if value is rules]
        assert names and set(names) & exported, f"engine: the preset {preset!r} has no constant in engine.__all__"
    strays = [name for name in exported if not any(constants[name] is rules for rules in PRESETS.values())]
    assert not strays, f"engine exports rules that are not in PRESETS: {strays}"


def test_everything_found_by_name_is_one_registry():
    """Rules presets, features, tie-breaks, policies and their shared sections, tuners and every
    function table: one idiom (`engine.registry.Registry`), so one way to register and to read."""
    kinds = {"rules presets": PRESETS, "features": features.FEATURES, "tie-breaks": features.TIE_BREAKS,
             "policies": policies.POLICIES, "sections": policies.SECTIONS, "tuners": TUNERS,
             **{f"function table {name}": table for name, table in _TABLES.items()}}
    wrong = sorted(kind for kind, found in kinds.items() if not isinstance(found, Registry))
    assert not wrong, f"kept outside an engine.registry.Registry: {wrong}"
    assert engine.PRESETS is PRESETS and set(PRESETS) == {r.name for r in PRESETS.values()}


@pytest.mark.parametrize(("package", "known"), [("solver", True), ("solver.online", False)], ids=["known", "online"])
def test_each_policy_package_exports_its_policies_settings(package, known):
    """A package exports the settings model of each of its registered policies (the configuration
    section named after it), and no settings model of a policy that is not registered."""
    module = importlib.import_module(package)
    settings = {e.settings for e in policies.entries(shipped_only=True) if e.known_pieces == known and e.settings}
    exported = {getattr(module, name) for name in module.__all__}
    missing = sorted(s.__name__ for s in settings - exported)
    assert not missing, f"{package}.__all__: the settings of registered policies missing: {missing}"
    others = {section.model for section in policies.SECTIONS.values()} | {solver.SolverConfig}
    strays = sorted(m.__name__ for m in exported if isinstance(m, type) and issubclass(m, BaseModel)
                    and m not in settings | others)
    assert not strays, f"{package}.__all__: settings of no registered policy: {strays}"


def test_the_beam_tie_break_key_lists_its_table():
    """``beam.tie_break`` offers exactly the entries of the beam's tie-order table."""
    choices = BeamConfig.model_fields["tie_break"].annotation.__args__
    assert set(choices) == set(TIE_ORDERS.names()), (
        f"solver.config.BeamConfig.tie_break offers {sorted(choices)}, beam.tie_break registers {TIE_ORDERS.names()}")


#: what each package's docstring lists in full
DOCSTRING_LISTS = {
    "engine": ("modules",),
    "evaluators": ("modules",),
    "solver": ("known policies",),
    "solver.online": ("online policies", "modules"),
    "optimizers": ("modules", "tuners"),
    "experiments": ("commands", "modules"),
}


@pytest.mark.parametrize("package", sorted(DOCSTRING_LISTS), ids=str)
def test_each_package_docstring_lists_its_kinds(package):
    doc = importlib.import_module(package).__doc__ or ""
    listed = set(_ticked(doc))
    for kind in DOCSTRING_LISTS[package]:
        expected = _modules(package) if kind == "modules" else _registered(kind)
        missing = sorted(expected - listed)
        assert not missing, f"{package}/__init__.py: its docstring does not name these {kind}: {missing}"


@pytest.mark.parametrize("package", sorted(DOCSTRING_LISTS), ids=str)
def test_each_package_docstring_names_what_exists(package):
    doc = importlib.import_module(package).__doc__ or ""
    registered = set().union(*(_registered(k) for k in ("known policies", "online policies", "tuners", "commands")))
    unknown = [t for t in _ticked(doc) if t not in registered and not _resolves(t, package)]
    assert not unknown, f"{package}/__init__.py: its docstring names what does not exist: {unknown}"


def test_only_experiments_parses_arguments():
    """The README says the command-line layer is the only one that parses arguments."""
    parsing = [str(p.relative_to(ROOT)) for package in PACKAGES if package != "experiments"
               for p in (ROOT / package).rglob("*.py") if re.search(r"^\s*import argparse|^\s*from argparse",
                                                                    p.read_text(encoding="utf-8"), re.M)]
    assert not parsing, f"argument parsing outside experiments/: {parsing}"


def test_the_performance_page_lists_every_benchmark_script():
    """docs/performance.md's table of scripts names each script of benchmarks/, and no other."""
    page = (DOCS / "performance.md").read_text()
    table = page.split("## How figures are measured", 1)[1].split("\n\n", 2)[1]
    listed = set(re.findall(r"`python benchmarks/(\w+)\.py", table))
    assert listed == {p.stem for p in (ROOT / "benchmarks").glob("*.py")}


def test_the_readme_is_a_front_door():
    """The README says what the project is, the two commands, the workflow, the layout and the
    scores, and links into docs/ for the rest: at most 150 lines."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move narrative and dated figures to docs/"


def test_every_commands_help_begins_with_a_whole_sentence():
    """``--help``'s description is the docstring's first paragraph (`experiments.description`),
    never a first line cut mid-sentence: every command and benchmark that parses arguments."""
    from experiments import description

    root = Path(__file__).resolve().parents[1]
    files = [*sorted((root / "experiments").glob("*.py")), *sorted((root / "benchmarks").glob("*.py"))]
    checked = 0
    for path in files:
        text = path.read_text()
        if "description(__doc__)" not in text:
            assert "__doc__.splitlines()[0]" not in text, f"{path.name}: a --help cut at the docstring's first line"
            continue
        doc = ast.get_docstring(ast.parse(text))
        line = description(doc)
        assert line.endswith((".", ":", ")")), f"{path.name}: --help stops mid-sentence: {line[-60:]!r}"
        checked += 1
    assert checked >= 20


# ------------------------------------------------------------------------------------------------
# The modules: each of a readable size

#: the folders of the project's own Python sources (engine/envs/ within engine/; tests/ and the data
#: under results/ aside, and configs/ holds its YAML beside its one module)
SOURCE_FOLDERS = ("engine", "evaluators", "solver", "optimizers", "experiments", "benchmarks", "configs")
#: the most lines a source module may have: a longer one is split along its seams
MAX_MODULE_LINES = 500


def test_no_source_module_is_longer_than_the_limit():
    modules = [p for folder in SOURCE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(modules) > 100  # the folders are where the sources are
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in modules}
    long = [f"{name} ({n} lines)" for name, n in sizes.items() if n > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines, to split along their seams: {long}"


#: the most lines a module's docstring may have: what the module is for, its main names, where to
#: read more (the details live with the functions and classes, the measurements in docs/)
MAX_DOCSTRING_LINES = 15


def test_no_module_docstring_is_longer_than_the_limit():
    import ast

    modules = [p for folder in SOURCE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    long = []
    for p in modules:
        doc = ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")), clean=False)
        if doc is not None and doc.count("\n") + 1 > MAX_DOCSTRING_LINES:
            long.append(f"{p.relative_to(ROOT).as_posix()} ({doc.count(chr(10)) + 1} lines)")
    assert not long, f"module docstrings over {MAX_DOCSTRING_LINES} lines, to say only what the module is for: {long}"
