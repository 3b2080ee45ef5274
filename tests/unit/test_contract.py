"""The contract between the harness and the systems under test (hdfs_contract/), checked
on the source: the contract imports only the standard library, the harness reaches the
mini-HDFS through harness/systems/minihdfs.py alone, and no import circle joins two
packages (harness.backends and harness.systems, say)."""

from __future__ import annotations

import ast
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("hdfs_contract", "minihdfs", "faults", "harness")
# the one place of the harness that imports the mini-HDFS (a module, or a package of it)
MINIHDFS_SEAM = os.path.join("harness", "systems", "minihdfs")


def _sources(package: str) -> dict[str, str]:
    """{dotted module name: path} of every .py file of `package`."""
    out = {}
    for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                out[".".join(parts)] = path
    return out


MODULES = {name: path for package in PACKAGES for name, path in _sources(package).items()}


def _statements(node: ast.AST, in_functions: bool):
    for child in ast.iter_child_nodes(node):
        if in_functions or not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield child
            yield from _statements(child, in_functions)


def _imports(module: str, path: str, in_functions: bool = True) -> list[tuple[str, list[str]]]:
    """The file's import statements (those in functions too, unless `in_functions` is
    False): (module imported, names imported from it), relative imports resolved
    against `module`'s package."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    out = []
    for node in _statements(tree, in_functions):
        if isinstance(node, ast.Import):
            out.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.append((target, [alias.name for alias in node.names]))
    return out


def test_the_contract_imports_only_the_standard_library():
    assert "hdfs_contract.events" in MODULES     # the scan sees the package
    allowed = set(sys.stdlib_module_names) | {"hdfs_contract"}
    bad = [f"{module}: {target}" for module, path in MODULES.items()
           if module.split(".")[0] == "hdfs_contract"
           for target, _ in _imports(module, path) if target.split(".")[0] not in allowed]
    assert not bad, f"hdfs_contract must stay stdlib-only: {bad}"


def test_only_the_mini_hdfs_system_module_imports_minihdfs():
    bad = []
    for module, path in MODULES.items():
        rel = os.path.relpath(path, ROOT)
        if module.split(".")[0] not in ("harness", "faults") or rel.startswith(MINIHDFS_SEAM):
            continue
        bad += [f"{rel}: {target}" for target, _ in _imports(module, path)
                if target.split(".")[0] == "minihdfs"]
    assert not bad, ("the harness imports minihdfs only in harness/systems/minihdfs.py, "
                     f"faults/ never (both import hdfs_contract): {bad}")


def _edges(module: str, path: str, in_functions: bool = True) -> set[str]:
    """The project's modules `module` imports (a `from a import b` imports a.b if that is a module)."""
    out = set()
    for target, names in _imports(module, path, in_functions):
        out.update(t for t in [target] + [f"{target}.{n}" for n in names] if t in MODULES)
    out.discard(module)
    return out


def _area(module: str) -> str:
    """A module's subpackage (harness.systems.hadoop.cluster -> harness.systems): a
    circle inside one (a registry that imports its members on first use, the members
    importing its base class) is the package's own business; one across two is not."""
    return ".".join(module.split(".")[:2])


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of `graph`, as the path around it, or None."""
    state: dict[str, int] = {}     # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_circle_finder_finds_a_circle_and_accepts_a_tree():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_circle_at_import_time():
    graph = {module: _edges(module, path, in_functions=False) for module, path in MODULES.items()}
    circle = _circle(graph)
    assert circle is None, "import circle between modules: " + " -> ".join(circle)


def test_no_import_circle_across_packages():
    # every import counts, in a function too: a lazy import only delays a circle to the
    # first call that takes it
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        for target in _edges(module, path):
            a, b = _area(module), _area(target)
            if a != b:
                graph.setdefault(a, set()).add(b)
    circle = _circle(graph)
    assert circle is None, "import circle across packages: " + " -> ".join(circle)
