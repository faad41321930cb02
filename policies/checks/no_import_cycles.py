"""Proves that the workspace's own modules import each other without cycles.

--lang python: the graph's nodes are the workspace's Python modules (a src/ layout
and packages with __init__.py are honoured, see checklib.module_name); an edge
a -> b is an `import b...`, `from b import ...` or relative import in a that
resolves to a workspace module (the most specific one: `from pkg import mod` is
an edge to pkg.mod when that is a module, else to pkg). Imports under
`if TYPE_CHECKING:` never run and are left out; imports inside functions count.
--lang c: the nodes are the C/C++ sources and headers; an edge is an
#include "..." resolved relative to the including file, then include/ and src/.
Angle includes and includes that resolve nowhere are not edges (that is
dependencies_satisfied's business).

Each strongly connected group of modules is one finding: its shortest cycle
through its alphabetically first member, rotated to start there, reported at
the line of that member's import. Limits: one cycle per group, not every
elementary cycle (there can be exponentially many); dynamic imports
(importlib, __import__) and conditional includes (#if) are not understood.
"""

import ast
from collections import deque

import checklib


Graph = dict[str, dict[str, tuple[str, int]]]  # edges[a][b] = (path, line) of a's first import of b


def python_graph(findings: checklib.Findings) -> Graph:
    paths = checklib.python_files()
    trees = checklib.parse_python_files(paths, findings)
    modules = {checklib.module_name(p): p for p in paths}
    edges: Graph = {m: {} for m in modules}

    def most_specific(name: str) -> str | None:
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            candidate = ".".join(parts[:n])
            if candidate in modules:
                return candidate
        return None

    for path, tree in trees.items():
        importer = checklib.module_name(path)
        for node in checklib.runtime_imports(tree):
            if isinstance(node, ast.Import):
                targets = [most_specific(alias.name) for alias in node.names]
            else:
                if node.level:
                    base = checklib.relative_import_base(path, node.level)
                    if base is None:
                        continue
                    package = ".".join(p for p in (base, node.module or "") if p)
                else:
                    package = node.module or ""
                targets = [most_specific(f"{package}.{alias.name}" if package else alias.name)
                           for alias in node.names]
            for target in targets:
                if target and target != importer and target not in edges[importer]:
                    edges[importer][target] = (path, node.lineno)
    return edges


def c_graph() -> Graph:
    paths = checklib.workspace_files(checklib.C_SOURCE_SUFFIXES)
    files = set(paths)
    edges: Graph = {p: {} for p in paths}
    for path in paths:
        for kind, name, line in checklib.c_includes(checklib.read_text(path)):
            if kind != '"':
                continue
            target = checklib.resolve_quoted_include(path, name, files)
            if target and target != path and target not in edges[path]:
                edges[path][target] = (path, line)
    return edges


def strongly_connected(edges: Graph) -> list[list[str]]:
    """Tarjan's algorithm, iterative (deep include chains must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def shortest_cycle(start: str, group: set[str], edges: Graph) -> list[str]:
    """Breadth-first within the group from `start` back to itself (successors sorted)."""
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(edges[node]):
            if succ not in group:
                continue
            if succ == start:
                cycle = [node]
                while cycle[-1] != start:
                    cycle.append(parent[cycle[-1]])
                return list(reversed(cycle)) + [start]
            if succ not in parent:
                parent[succ] = node
                queue.append(succ)
    return [start]  # unreachable for a strongly connected group


def report_cycles(edges: Graph, findings: checklib.Findings) -> None:
    for group in strongly_connected(edges):
        cycle = shortest_cycle(group[0], set(group), edges)
        path, line = edges[cycle[0]][cycle[1]]
        message = "import cycle: " + " -> ".join(cycle)
        if len(group) > len(cycle) - 1:
            message += " (strongly connected: " + ", ".join(group) + ")"
        findings.add(path, line, message)


def main() -> None:
    checklib.run_check(__doc__.splitlines()[0], {
        "python": lambda findings: report_cycles(python_graph(findings), findings),
        "c": lambda findings: report_cycles(c_graph(), findings),
    })


if __name__ == "__main__":
    main()
