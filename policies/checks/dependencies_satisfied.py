"""Proves that everything the code imports or includes is available.

--lang python: every absolute import that can run (checklib.runtime_imports;
imports guarded by `try: ... except ImportError` are optional and exempt)
must name the standard library (sys.stdlib_module_names), a module or package
of the workspace (a src/ layout honoured, and modules beside the importing
file, as a script run from its folder sees them), or a distribution declared
in requirements.txt (following -r includes) or pyproject.toml's
[project].dependencies and optional-dependencies. Distribution names are
compared normalized (PEP 503); a short table maps well-known import names to
their distributions (yaml -> PyYAML, PIL -> Pillow, ...).
--lang c: every #include "x" must resolve in the workspace (relative to the
including file, then include/ and src/) or else among the system headers, and
every #include <x> among the system headers (/usr/include, its multiarch
folders, /usr/local/include, GCC's and libstdc++'s own folders) or under the
workspace's include/.

Limits: an installed-but-undeclared package is still a finding (declaring is
the point); version specifiers and environment markers are not evaluated;
conditional includes (#if) are all considered.
"""

import ast
import glob
import os
import re
import sys
import tomllib

import checklib

# Import names whose distribution is spelled differently.
DISTRIBUTION_OF = {
    "yaml": "pyyaml", "PIL": "pillow", "sklearn": "scikit-learn", "cv2": "opencv-python",
    "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "attr": "attrs", "jwt": "pyjwt",
    "dotenv": "python-dotenv", "Crypto": "pycryptodome", "OpenSSL": "pyopenssl", "serial": "pyserial",
    "git": "gitpython", "google": "protobuf", "pkg_resources": "setuptools", "_pytest": "pytest",
}

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str | None:
    match = _REQUIREMENT_NAME.match(spec)
    return normalize(match.group(1)) if match else None


def requirements_txt(path: str, seen: set[str]) -> set[str]:
    if path in seen or not os.path.isfile(path):
        return set()
    seen.add(path)
    names = set()
    for raw in checklib.read_text(path).splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line.startswith(("-r ", "--requirement ")):
            included = line.split(None, 1)[1].strip()
            names |= requirements_txt(os.path.normpath(os.path.join(os.path.dirname(path), included)), seen)
        elif line and not line.startswith(("#", "-")):
            name = requirement_name(line)
            if name:
                names.add(name)
    return names


def declared_distributions(findings: checklib.Findings) -> set[str]:
    names = requirements_txt("requirements.txt", set())
    if os.path.isfile("pyproject.toml"):
        try:
            with open("pyproject.toml", "rb") as f:
                project = tomllib.load(f).get("project", {})
        except tomllib.TOMLDecodeError as e:
            findings.add("pyproject.toml", 1, f"does not parse: {e}")
            return names
        specs = list(project.get("dependencies", []))
        for group in project.get("optional-dependencies", {}).values():
            specs.extend(group)
        names.update(n for n in map(requirement_name, specs) if n)
    return names


def optional_imports(tree: ast.Module) -> set[ast.AST]:
    """Import statements directly inside a try whose handlers catch ImportError."""
    optional: set[ast.AST] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught.update(t.id for t in types if isinstance(t, ast.Name))
        if caught & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"} or any(
                h.type is None for h in node.handlers):
            optional.update(n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    return optional


def importable_beside(paths: list[str]) -> dict[str, set[str]]:
    """Folder -> the top-level names a script in it can import from there: its
    sibling modules and the packages (folders) next to it."""
    beside: dict[str, set[str]] = {}
    for path in paths:
        folder, name = os.path.split(path)
        beside.setdefault(folder, set()).add(name[: -len(".py")])
        if folder:
            parent, package = os.path.split(folder)
            beside.setdefault(parent, set()).add(package)
    return beside


def python_unsatisfied(findings: checklib.Findings) -> None:
    paths = checklib.python_files()
    workspace = {checklib.module_name(p).split(".")[0] for p in paths}
    beside = importable_beside(paths)
    available = set(sys.stdlib_module_names) | {"__future__"} | workspace
    declared = declared_distributions(findings)
    for path, tree in checklib.parse_python_files(paths, findings).items():
        optional = optional_imports(tree)
        local = beside.get(os.path.dirname(path), set())
        for node in checklib.runtime_imports(tree):
            if node in optional:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif node.level == 0 and node.module:
                names = [node.module]
            else:
                continue  # relative: inside the workspace by construction
            for name in names:
                top = name.split(".")[0]
                if top in available or top in local or normalize(DISTRIBUTION_OF.get(top, top)) in declared:
                    continue
                findings.add(path, node.lineno,
                             f"import {name}: not in the standard library, the workspace or the declared dependencies")


def system_include_dirs() -> list[str]:
    patterns = ["/usr/include", "/usr/local/include", "/usr/include/*-linux-gnu", "/usr/lib/gcc/*/*/include",
                "/usr/include/c++/*", "/usr/include/*-linux-gnu/c++/*"]
    return sorted(d for pattern in patterns for d in glob.glob(pattern) if os.path.isdir(d))


def c_unsatisfied(findings: checklib.Findings) -> None:
    paths = checklib.workspace_files(checklib.C_SOURCE_SUFFIXES)
    files = set(paths)
    system_dirs = system_include_dirs()

    def in_system(name: str) -> bool:
        return any(os.path.isfile(os.path.join(d, name)) for d in system_dirs)

    for path in paths:
        for kind, name, line in checklib.c_includes(checklib.read_text(path)):
            if kind == '"':
                ok = checklib.resolve_quoted_include(path, name, files) is not None or in_system(name)
            else:
                ok = in_system(name) or os.path.normpath(os.path.join("include", name)) in files
            if not ok:
                spelled = f'"{name}"' if kind == '"' else f"<{name}>"
                findings.add(path, line, f"#include {spelled}: not found in the workspace or the system headers")


def main() -> None:
    checklib.run_check(__doc__.splitlines()[0], {"python": python_unsatisfied, "c": c_unsatisfied})


if __name__ == "__main__":
    main()
