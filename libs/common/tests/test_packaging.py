"""What each workspace package imports, it declares: an image built from its own requirements runs.
Test-only libraries stay out of what a service imports to serve."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {
    "lore-core": ROOT / "libs/core/src/lore_core",
    "lore-common": ROOT / "libs/common/src/lore_common",
    "lore-docdb": ROOT / "services/docdb/src/lore_docdb",
    "lore-gen": ROOT / "services/gen/src/lore_gen",
    "lore-mem": ROOT / "services/mem/src/lore_mem",
    "lore-gateway": ROOT / "gateway/src/lore_gateway",
}
COMMON = ROOT / "libs/common/src/lore_common"
# Parts of lore-common whose libraries are extras: the store clients and local models a service asks for
# (`vectors`, `bm25`, `embed`, `graph`, `objects`), the test helpers (`testing`) and the development
# stack `lore-servers` (`servers`).
EXTRAS = {
    COMMON / "stores/vector.py": "vectors",
    COMMON / "stores/qdrant.py": "vectors",
    COMMON / "stores/pgvector.py": "vectors",
    COMMON / "stores/collection.py": "vectors",
    COMMON / "matrix.py": "vectors",
    COMMON / "stores/edge.py": "vectors",
    COMMON / "vector_worker.py": "vectors",
    COMMON / "bm25.py": "bm25",
    COMMON / "providers/embedders.py": "embed",
    COMMON / "providers/embed_worker.py": "embed",
    COMMON / "providers/minilm.py": "embed",
    COMMON / "providers/container.py": "embed",
    COMMON / "stores/graph.py": "graph",
    COMMON / "backup.py": "graph",
    COMMON / "stores/objects.py": "objects",
    COMMON / "testing": "testing",
    COMMON / "servers.py": "servers",
}


def declared(package: str, extras: tuple[str, ...] = ()) -> set[str]:
    """The distributions `package` (with `extras`) requires, with those of the workspace packages it
    requires, each with the extras its requirement names."""
    seen: set[tuple[str, str]] = set()  # (distribution, extra) pairs already walked; "" is the base
    names: set[str] = set()
    pending = [(canonicalize_name(package), ("", *extras))]
    while pending:
        name, wanted = pending.pop()
        names.add(name)
        fresh = [extra for extra in wanted if (name, extra) not in seen]
        if not name.startswith("lore-") or not fresh:
            continue
        seen.update((name, extra) for extra in fresh)
        for line in requires(name) or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in fresh):
                pending.append((canonicalize_name(requirement.name), ("", *sorted(requirement.extras))))
    return names


def imported_modules(folder: Path, skip: tuple[Path, ...] = ()) -> set[str]:
    names: set[str] = set()
    for path in [folder] if folder.is_file() else folder.rglob("*.py"):
        if any(path.is_relative_to(s) for s in skip):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def undeclared(modules: set[str], allowed: set[str]) -> dict[str, list[str]]:
    owners = packages_distributions()
    missing = {}
    for module in sorted(modules):
        if module in sys.stdlib_module_names or module.startswith("lore_") or module == "__future__":
            continue
        dists = {canonicalize_name(d) for d in owners.get(module, [module])}
        if not dists & allowed:
            missing[module] = sorted(dists)
    return missing


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_imported_library_is_declared(package: str) -> None:
    modules = imported_modules(PACKAGES[package], skip=tuple(EXTRAS))
    assert undeclared(modules, declared(package)) == {}


@pytest.mark.parametrize("part", sorted(EXTRAS), ids=lambda part: EXTRAS[part])
def test_optional_parts_declare_their_libraries_in_an_extra(part: Path) -> None:
    assert undeclared(imported_modules(part), declared("lore-common", (EXTRAS[part],))) == {}


def test_serving_imports_no_test_library() -> None:
    # psutil is not probed: opentelemetry-sdk (a serving dependency, which redis imports when present)
    # reads it when it is installed, and it is, for the tests; the declared-imports test above is what
    # keeps our own code from importing it.
    probe = (
        "import sys, lore_docdb.app, lore_gen.app, lore_mem.app, lore_gateway.app, lore_gateway.launch; "
        "print(sorted(m for m in ('pytest', 'respx', 'lore_common.testing') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
