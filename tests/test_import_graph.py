"""The import graph of the product: one direction, no circles.

Every module under ``triage/`` is parsed with :mod:`ast` (``triage/features`` and
``triage/training`` are links to the top-level ``features/`` and ``training/``
folders and are followed, so those modules carry their installed names).  Every
import of a project module counts, wherever it stands: at module level, inside a
function, under ``if TYPE_CHECKING:`` or in ``try``.  An import placed inside a
function still runs, so it cannot hide a circle.

Edges, from the importing module to:

* ``import a.b.c`` -> ``a.b.c``;
* ``from a.b import c`` -> ``a.b.c`` when that is a module, else ``a.b``;
* relative imports, resolved against the importing module's package;
* ``importlib.import_module(...)`` / ``__import__(...)``: every string constant
  of the module that names a project module (covers a literal argument and a
  list of names looped over).

A package's ``__init__`` importing its own submodules is an ordinary edge; a
submodule is not given an edge to its parent package merely for living in it.

Layers, bottom to top::

    triage.core
    triage.detectors, triage.features      (core only)
    triage.training                        (core, features)
    product modules                        (anything below triage.cli)
    triage.cli                             (and triage.__main__, python -m triage)
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "triage"

# The bare names of the design folders: the installed names are triage.features
# and triage.training, and the bare ones refuse to import.
BARE = {"features": "triage.features", "training": "triage.training"}


def _module_files() -> dict[str, Path]:
    """Module name -> file, walking triage/ and following directory links."""
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(PACKAGE, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = Path(dirpath).relative_to(PACKAGE)
        parts = ["triage", *rel.parts]
        if "__init__.py" not in filenames:
            continue  # not a package: nothing in it is importable as triage.*
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            stem = name[: -len(".py")]
            mod = ".".join(parts if stem == "__init__" else [*parts, stem])
            found[mod] = Path(dirpath) / name
    return found


@cache
def modules() -> dict[str, Path]:
    return _module_files()


def _is_package(mod: str) -> bool:
    return modules()[mod].name == "__init__.py"


def _owner(name: str) -> str | None:
    """The most specific project module that ``name`` (a dotted import) denotes."""
    if name.split(".")[0] in BARE:
        head, _, rest = name.partition(".")
        name = BARE[head] + (f".{rest}" if rest else "")
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in modules():
            return cand
        parts.pop()
    return None


def _resolve_relative(importer: str, level: int, module: str | None) -> str:
    package = importer if _is_package(importer) else importer.rpartition(".")[0]
    parts = package.split(".")
    if level > 1:
        parts = parts[: -(level - 1)]
    base = ".".join(parts)
    return f"{base}.{module}" if module else base


def _calls_dynamic_import(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in {"import_module", "__import__"}:
                return True
    return False


def _imports(mod: str) -> Iterator[tuple[str, int, str]]:
    """(imported project module, line, how it was written) for every import in ``mod``."""
    path = modules()[mod]
    yield from _imports_in(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), mod)


def _imports_in(tree: ast.AST, mod: str) -> Iterator[tuple[str, int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _owner(alias.name)
                if target:
                    yield target, node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve_relative(mod, node.level, node.module)
            else:
                base = node.module or ""
            written = f"from {'.' * node.level}{node.module or ''} import "
            for alias in node.names:
                full = _canonical(f"{base}.{alias.name}")
                if alias.name != "*" and full in modules():
                    yield full, node.lineno, written + alias.name
                else:
                    target = _owner(base)
                    if target:
                        yield target, node.lineno, written + alias.name
    if _calls_dynamic_import(tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _canonical(node.value) in modules():
                    yield _canonical(node.value), node.lineno, f"import_module({node.value!r})"


def _canonical(name: str) -> str:
    head, _, rest = name.partition(".")
    if head in BARE:
        return BARE[head] + (f".{rest}" if rest else "")
    return name


@cache
def graph() -> dict[str, dict[str, list[str]]]:
    """importer -> {imported: [where, ...]} (self-imports left out)."""
    g: dict[str, dict[str, list[str]]] = {}
    for mod in modules():
        edges: dict[str, list[str]] = {}
        for target, line, written in _imports(mod):
            where = f"{modules()[mod].relative_to(ROOT)}:{line}"
            seen = edges.setdefault(target, [])
            if target != mod and not any(w.startswith(where + ":") for w in seen):
                seen.append(f"{where}: {written}")
        edges = {t: w for t, w in edges.items() if w}
        g[mod] = edges
    return g


def _cycles(g: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def _one_cycle(g: dict[str, dict[str, list[str]]], comp: list[str]) -> list[str]:
    """A shortest circle through the component's first module, as a path a -> ... -> a."""
    members = set(comp)
    start = comp[0]
    prev: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(g[v]):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w in members and w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle through {start}")  # cannot happen in a component


def _describe_cycle(g: dict[str, dict[str, list[str]]], comp: list[str]) -> str:
    path = _one_cycle(g, comp)
    lines = [f"circle among {len(comp)} modules: {', '.join(comp)}", "  e.g. " + " -> ".join(path)]
    for a, b in zip(path, path[1:], strict=False):
        lines.append(f"    {a} -> {b}: {'; '.join(g[a][b])}")
    return "\n".join(lines)


def _layer_of(mod: str) -> str:
    if mod == "triage.__main__":  # ``python -m triage``: the command's other entry point
        return "triage.cli"
    for layer in (
        "triage.core",
        "triage.detectors",
        "triage.features",
        "triage.training",
        "triage.cli",
    ):
        if mod == layer or mod.startswith(layer + "."):
            return layer
    return "product"


# What each layer may import besides itself (None: anything but triage.cli).
ALLOWED: dict[str, set[str] | None] = {
    "triage.core": set(),
    "triage.detectors": {"triage.core"},
    "triage.features": {"triage.core"},
    "triage.training": {"triage.core", "triage.features"},
    "product": None,
    "triage.cli": None,
}


def _violations(layer: str) -> list[str]:
    bad = []
    for mod, edges in sorted(graph().items()):
        if _layer_of(mod) != layer:
            continue
        for target, where in sorted(edges.items()):
            tl = _layer_of(target)
            if tl == layer:
                continue
            allowed = ALLOWED[layer]
            if allowed is None:
                ok = layer == "triage.cli" or tl != "triage.cli"
            else:
                ok = tl in allowed
            if not ok:
                bad.extend(f"{mod} -> {target} ({w})" for w in where)
    return bad


# -- the walk itself ---------------------------------------------------------------


def test_the_walk_finds_every_module_including_the_linked_folders():
    on_disk = set()
    for top in ("triage", "features", "training"):
        for dirpath, dirnames, filenames in os.walk(ROOT / top):  # links not followed here
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            on_disk |= {(Path(dirpath) / f).resolve() for f in filenames if f.endswith(".py")}
    # Every .py file of the three folders is reached exactly once, under a triage.* name.
    reached = [p.resolve() for p in modules().values()]
    assert len(reached) == len(set(reached))
    assert set(reached) == on_disk
    for pkg in (
        "triage.core",
        "triage.detectors",
        "triage.features",
        "triage.training",
        "triage.cli",
    ):
        assert pkg in modules() and _is_package(pkg)
    assert "triage.features.extract" in modules() and "triage.training.classifier" in modules()


def test_the_parser_sees_imports_inside_functions_and_relative_ones():
    # A synthetic check of the edge rules against the real module table.
    src = (
        "import triage.core.labels\n"
        "from triage.core import labels as L, history\n"
        "from triage.detectors import make\n"
        "from . import metrics\n"
        "def f():\n"
        "    from .errors import InputError\n"
        "    import features.extract\n"
    )
    # From a module inside triage.core, so that the relative imports resolve there.
    got = {target for target, _, _ in _imports_in(ast.parse(src), "triage.core.atomic")}
    assert got == {
        "triage.core.labels",
        "triage.core.history",
        "triage.detectors",
        "triage.core.metrics",
        "triage.core.errors",
        "triage.features.extract",
    }


# -- the assertions ------------------------------------------------------------------


def test_no_import_circle():
    g = graph()
    comps = _cycles(g)
    assert not comps, "import circles:\n" + "\n".join(_describe_cycle(g, c) for c in comps)


def test_no_bare_features_or_training_import():
    bad = []
    for mod in modules():
        path = modules()[mod]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            bad += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {n}"
                for n in names
                if n.split(".")[0] in BARE
            ]
    assert not bad, "import triage.features / triage.training, not the bare names:\n" + "\n".join(
        bad
    )


@pytest.mark.parametrize(
    "layer",
    ["triage.core", "triage.detectors", "triage.features", "triage.training", "product"],
)
def test_layer_direction(layer):
    bad = _violations(layer)
    allowed = ALLOWED[layer]
    rule = (
        "nothing below triage.cli imports triage.cli"
        if allowed is None
        else f"{layer} imports only {', '.join(sorted(allowed))} (and itself)"
        if allowed
        else f"{layer} imports nothing else of triage"
    )
    assert not bad, f"{rule}; found:\n" + "\n".join(bad)
