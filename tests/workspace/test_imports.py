"""The workspace's own imports form no circle, between modules or between a service's domain folders.

A circle makes every change to one side a change to the other, and decides import order by accident.
Imports inside functions count (they only hide a circle); `if TYPE_CHECKING:` imports do not (they never
run)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = ["libs/*/src", "services/*/src", "gateway/src", "clients/python/src"]
SERVICES = ["lore_docdb", "lore_gen", "lore_mem", "lore_gateway", "lore_common", "lore_core", "lore_client"]


def workspace_modules(root: Path = ROOT) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pattern in SOURCE_ROOTS:
        for src in root.glob(pattern):
            for path in src.rglob("*.py"):
                parts = list(path.relative_to(src).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join(parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The workspace modules that `path` (module `name`) imports, at module level or in a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    out.add(target)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    out.add(full)
                elif base in known:
                    out.add(base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    out.discard(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def module_graph() -> dict[str, set[str]]:
    modules = workspace_modules()
    known = set(modules)
    return {name: imported(name, path, known) for name, path in modules.items()}


def folder_graph(package: str, graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each domain folder of `package` (`lore_docdb.datasets`…) and the folders it imports; modules
    directly in the package (app.py, database.py) wire the folders together and are left out."""
    folders = {
        name.split(".")[1] for name in graph if name.count(".") >= 2 and name.startswith(package + ".")
    }
    folder_of = {
        name: name.split(".")[1] for name in graph if name.startswith(package + ".") and name.count(".") >= 1
    }
    edges: dict[str, set[str]] = defaultdict(set)
    for name, targets in graph.items():
        here = folder_of.get(name)
        if here not in folders:
            continue
        edges[here]
        for target in targets:
            there = folder_of.get(target)
            if there in folders and there != here:
                edges[here].add(there)
    return dict(edges)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The workspace's import graph, parsed once for the module's eight tests (about 1.3 s each)."""
    return module_graph()


def test_no_module_imports_itself_through_others(graph: dict[str, set[str]]) -> None:
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("package", SERVICES)
def test_no_folder_cycle_inside_a_package(package: str, graph: dict[str, set[str]]) -> None:
    found = cycles(folder_graph(package, graph))
    assert not found, f"folder cycles in {package}:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_check_finds_a_circle_and_passes_a_chain() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    graph = {"p.x.m": {"p.y.m"}, "p.y.m": {"p.x.n"}, "p.x.n": set(), "p.app": {"p.x.m", "p.y.m"}}
    assert folder_graph("p", graph) == {"x": {"y"}, "y": {"x"}}
