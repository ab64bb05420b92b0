"""The package's shape, pinned: no import cycles, no deep class hierarchies, no class over
~700 lines, no ``__init__`` of more than 12 parameters, no private attribute of ``asyncio``, no
re-export module imported by the library, and runtime packages holding the same modules.

The import graph is computed with ``ast`` over every source file of ``mcp_sansio`` and
``adapters`` (installed as ``mcp_sansio.adapters``). Every ``import``/``from ... import`` counts,
at module level and inside functions alike -- a function-level import still ties the two
modules together, it only hides the cycle until the call -- and so do imports under ``if
TYPE_CHECKING:``: never executed, but a module that needs another's type to be checked
depends on it as much (the cycles once hidden there are broken with small protocols or a
type moved down a layer; docs/architecture.rst, "Seams"). Not counted: the implicit import
of a parent package that importing a submodule performs (otherwise every package
``__init__`` re-exporting its submodules would be a "cycle"). The app layer, besides, loads
nothing by name (``importlib``, ``sys.modules``): what it needs of a runtime is handed in.

The class check imports every module and looks at ``inspect.getmro`` of every class defined
in it: a concrete class may resolve through at most three classes of ours (itself included).

Classes stack on two axes only -- ``Session``, the role (``ClientLogic``, ``ServerLogic``),
the colour (``AsyncClient``, ``SyncServerSession``, ...) -- and everything else (the runtime
object, a stdio child, the HTTP link of either role, an HTTP client's sockets) is held, not
mixed in (docs/architecture.rst). No class anywhere, core, app layer or adapters, is
deeper.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGES = {"mcp_sansio": ROOT / "mcp_sansio", "mcp_sansio.adapters": ROOT / "adapters"}

#: Import cycles of adapters/ (strongly connected components), by module names: none; any
#: new one fails.
KNOWN_ADAPTER_CYCLES: set[frozenset[str]] = set()

#: Deepest resolution allowed: the class itself and two more classes of ours.
MAX_OWN_MRO = 3

def _modules() -> dict[str, Path]:
    """Every module of both packages: dotted name -> source file."""
    found: dict[str, Path] = {}
    for package, directory in PACKAGES.items():
        for path in sorted(directory.rglob("*.py")):
            relative = path.relative_to(directory).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Import statements, at any depth (``if TYPE_CHECKING:`` blocks included)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that an imported dotted name lands in (None: not ours)."""
    if name.startswith("adapters"):  # the source tree's name for the installed subpackage
        name = "mcp_sansio." + name
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of ours it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base_parts = package.split(".")
                    base = ".".join(base_parts[: len(base_parts) - (node.level - 1)])
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                # ``from pkg import sub`` imports the submodule when there is one.
                targets = [f"{module}.{alias.name}" for alias in node.names]
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: set[frozenset[str]] = set()
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_cycle_and_ignores_a_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == {frozenset({"a", "b", "c"})}
    assert cycles({"a": {"b"}, "b": set()}) == set()


def test_the_import_graph_sees_relative_function_level_and_package_imports() -> None:
    graph = import_graph()
    # A relative module-level import in the core.
    assert "mcp_sansio._admission" in graph["mcp_sansio._connection"]
    # ``from . import _codec`` lands in the submodule, not the package.
    assert "mcp_sansio._codec" in graph["mcp_sansio._connection"]
    assert "mcp_sansio" not in graph["mcp_sansio._connection"]
    # adapters importing the core by its absolute name.
    assert "mcp_sansio" in graph["mcp_sansio.adapters.common.async_session"]


def test_imports_under_type_checking_count() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
                     "else:\n    import b\ndef f():\n    if typing.TYPE_CHECKING:\n"
                     "        from c import d\n")
    names = {alias.name for node in _imports(tree) for alias in node.names}
    assert {"a", "b", "d"} <= names
    # In the package: the asyncio runtime object names the tasks' runtime type only for
    # the type checker, and the edge is there.
    assert "mcp_sansio.app.tasks" in import_graph()["mcp_sansio.adapters.asyncio.runtime"]


def test_the_app_layer_loads_nothing_by_name() -> None:
    """``Server.enable_tasks`` once loaded the tasks runtime with ``importlib``: the app layer
    now takes what it needs of a runtime through its seams (``TaskHost``), never by name."""
    for name, path in _modules().items():
        if not name.startswith("mcp_sansio.app"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        imported = {alias.name.split(".")[0] for node in _imports(tree)
                    for alias in node.names if isinstance(node, ast.Import)}
        imported |= {(node.module or "").split(".")[0] for node in _imports(tree)
                     if isinstance(node, ast.ImportFrom) and not node.level}
        assert not imported & {"importlib", "sys"}, name
        assert "sys.modules" not in path.read_text(), name


def test_no_import_cycles_in_the_core() -> None:
    core = [c for c in cycles(import_graph())
            if any(not m.startswith("mcp_sansio.adapters") for m in c)]
    assert core == []


def test_adapter_import_cycles_only_shrink() -> None:
    found = {c for c in cycles(import_graph()) if all(
        m.startswith("mcp_sansio.adapters") for m in c)}
    new = found - KNOWN_ADAPTER_CYCLES
    assert not new, f"new import cycles: {[sorted(c) for c in new]}"
    gone = KNOWN_ADAPTER_CYCLES - found
    assert not gone, f"fixed cycles still listed (remove them): {[sorted(c) for c in gone]}"


def _all_module_names() -> list[str]:
    # From the source files: the installed adapters subpackage is mapped from another
    # directory, which walking ``mcp_sansio.__path__`` would not see.
    return sorted(_modules())


def own_mro_depths() -> dict[str, int]:
    """``module.Class`` -> how many classes of ours its MRO holds, for every class defined in
    a module of ours."""
    depths: dict[str, int] = {}
    for name in _all_module_names():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional runtime (trio) not installed
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name:
                continue
            ours = [c for c in inspect.getmro(cls) if c.__module__.startswith("mcp_sansio")]
            depths[f"{name}.{cls.__qualname__}"] = len(ours)
    return depths


def test_no_class_resolves_through_more_than_three_of_ours() -> None:
    deep = {name: depth for name, depth in own_mro_depths().items() if depth > MAX_OWN_MRO}
    assert deep == {}


@pytest.mark.parametrize("module", ["mcp_sansio._admission", "mcp_sansio._listen",
                                    "mcp_sansio._mrtr", "mcp_sansio._handshake"])
def test_each_core_sub_state_opens_with_its_theory_of_operation(module: str) -> None:
    # Read from the source: a compiled build's module (docs/compiled.rst) keeps no __doc__.
    path = ROOT / (module.replace(".", "/") + ".py")
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "Theory of operation" in doc


def test_no_import_cycles_at_all() -> None:
    assert cycles(import_graph()) == set()


#: Longest class allowed, in lines (its ``class`` line to its last).
MAX_CLASS_LINES = 700
#: Most parameters an ``__init__`` may take (besides ``self``); more is a configuration
#: object's job.
MAX_INIT_PARAMETERS = 12
#: Classes above those bounds today, each with its size: the table only shrinks (a class
#: that shrinks below the bound must leave it; none may join).
KNOWN_LONG_CLASSES: dict[str, int] = {}
KNOWN_WIDE_INITS: dict[str, int] = {}


def _classes() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for _, path in sorted(_modules().items()):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                found.append((f"{path.relative_to(ROOT).as_posix()}:{node.name}", node))
    return found


def test_no_class_is_longer_than_the_bound() -> None:
    long = {name: node.end_lineno - node.lineno + 1 for name, node in _classes()
            if node.end_lineno and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES}
    assert set(long) <= set(KNOWN_LONG_CLASSES), set(long) - set(KNOWN_LONG_CLASSES)
    grown = {name: size for name, size in long.items() if size > KNOWN_LONG_CLASSES[name]}
    assert not grown, f"grew (split instead): {grown}"
    gone = set(KNOWN_LONG_CLASSES) - set(long)
    assert not gone, f"now within the bound (remove from the table): {gone}"


def test_no_init_takes_more_than_twelve_parameters() -> None:
    wide = {}
    for name, node in _classes():
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                args = item.args
                count = len(args.posonlyargs) + len(args.args) - 1 + len(args.kwonlyargs)
                if count > MAX_INIT_PARAMETERS:
                    wide[name] = count
    assert set(wide) <= set(KNOWN_WIDE_INITS), set(wide) - set(KNOWN_WIDE_INITS)
    assert all(wide[name] <= KNOWN_WIDE_INITS[name] for name in wide), wide
    assert set(KNOWN_WIDE_INITS) == set(wide), "within the bound now: remove from the table"


#: Private parts of asyncio that code reached for to step a coroutine or judge a loop:
#: the library uses public API only (run_until_complete, all_tasks).
_PRIVATE_ASYNCIO = re.compile(
    r"asyncio\.(?:events\.)?_\w+|\bloop\w*\._(?:ready|scheduled)\b|"
    r"getattr\(\s*\w*loop\w*\s*,\s*[\"'](?:_ready|_scheduled)")


def test_no_private_asyncio_attribute() -> None:
    assert _PRIVATE_ASYNCIO.search("asyncio._set_running_loop(loop)")
    assert _PRIVATE_ASYNCIO.search('getattr(loop, "_ready", None)')
    found = [f"{path}: {match.group(0)}" for path in _modules().values()
             for match in _PRIVATE_ASYNCIO.finditer(path.read_text())]
    assert found == []


#: Modules kept only to re-export another's names under a documented path: applications
#: and the docs import them, the library never does.
REEXPORTS = {f"mcp_sansio.adapters.{name}" for name in (
    "testing_client", "testing_http", "testing_server", "testing_stdio")}


def test_no_reexport_module_is_imported_by_the_library() -> None:
    graph = import_graph()
    users = {name: sorted(graph[name] & REEXPORTS) for name in graph
             if graph[name] & REEXPORTS and name not in REEXPORTS}
    assert users == {}
    modules = _modules()
    for name in REEXPORTS:  # what makes one: nothing but a star import of the tool
        tree = ast.parse(modules[name].read_text())
        body = [node for node in tree.body if not isinstance(node, ast.Expr | ast.If)]
        assert len(body) == 1 and isinstance(body[0], ast.ImportFrom), name
    for gone in ("_session", "_http_client_logic", "_http_service"):
        assert f"mcp_sansio.adapters.{gone}" not in modules


RUNTIMES = ("asyncio", "trio", "threading")


def test_the_runtime_packages_hold_the_same_modules() -> None:
    names = {runtime: sorted(p.name for p in (ROOT / "adapters" / runtime).glob("*.py"))
             for runtime in RUNTIMES}
    assert names["asyncio"] == names["trio"] == names["threading"], names
    assert {"__init__.py", "runtime.py", "session.py", "http_server.py",
            "http_client.py"} <= set(names["asyncio"])


#: Most lines a module docstring may have: what the module is and its theory of operation in
#: brief; the rest goes to docs/ (docs/architecture.rst, "Module notes").
MAX_MODULE_DOC_LINES = 25
#: Modules above the bound today, each with its docstring's length: the table only shrinks
#: (a module that comes within the bound must leave it; none may join).
KNOWN_LONG_MODULE_DOCS = {
    "adapters/redis.py": 29,
    "adapters/stores/driver.py": 48,
    "adapters/stores/tasks.py": 30,
}


def _module_doc_lines(path: Path) -> int:
    doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
    return len(doc.strip("\n").splitlines()) if doc else 0


def test_module_docstrings_say_it_in_brief() -> None:
    long = {path.relative_to(ROOT).as_posix(): lines for path in _modules().values()
            if (lines := _module_doc_lines(path)) > MAX_MODULE_DOC_LINES}
    assert set(long) <= set(KNOWN_LONG_MODULE_DOCS), set(long) - set(KNOWN_LONG_MODULE_DOCS)
    grown = {name: size for name, size in long.items() if size > KNOWN_LONG_MODULE_DOCS[name]}
    assert not grown, f"grew (move the rest to docs/): {grown}"
    gone = set(KNOWN_LONG_MODULE_DOCS) - set(long)
    assert not gone, f"now within the bound (remove from the table): {gone}"
