"""Proves that the workspace's code makes none of the calls Warden treats as dangerous.

--lang python (every .py file, tests included), from the AST with import
aliases resolved (`import os as o; o.system(...)`, `from os import system`):
eval, exec, compile and __import__ (also through builtins); os.system, os.popen,
os.exec*, os.spawn* and os.posix_spawn*; any subprocess.* call with shell= set
to anything but a literal False/None; pickle.load(s), pickle.Unpickler,
marshal.load(s); yaml.load without Loader=SafeLoader (or CSafeLoader) and
yaml.unsafe_load.
--lang c (C/C++ sources and headers): calls to system, popen, gets, strcpy,
strcat, sprintf, vsprintf and the exec family (execl, execlp, execle, execv,
execvp, execve, execvpe), and any asm / __asm / __asm__ block. A linear-time
tokenizer skips comments and string and character literals first, so a
mention in a comment or a string is not a finding; member calls (x.system(),
p->gets()) are not the libc functions and are not findings either.

Limits: the name of the called thing is what is judged, so a dangerous
function reached through a variable (f = eval; f(s)) or getattr is not seen.
"""

import ast

import checklib

PYTHON_CALLS = {
    "eval", "exec", "compile", "__import__",
    "builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__",
    "os.system", "os.popen", "pickle.load", "pickle.loads", "pickle.Unpickler",
    "marshal.load", "marshal.loads", "yaml.unsafe_load",
}
PYTHON_CALL_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
SAFE_YAML_LOADERS = {"SafeLoader", "CSafeLoader"}

C_CALLS = {"system", "popen", "gets", "strcpy", "strcat", "sprintf", "vsprintf",
           "execl", "execlp", "execle", "execv", "execvp", "execve", "execvpe"}
C_ASM = {"asm", "__asm", "__asm__"}


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it stands for, from every import in the file."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    return None


def yaml_loader_is_safe(call: ast.Call, aliases: dict[str, str]) -> bool:
    loader = call.args[1] if len(call.args) > 1 else None
    for keyword in call.keywords:
        if keyword.arg == "Loader":
            loader = keyword.value
    name = dotted(loader, aliases) if loader is not None else None
    return name is not None and name.rsplit(".", 1)[-1] in SAFE_YAML_LOADERS


def shell_requested(call: ast.Call) -> bool:
    for keyword in call.keywords:
        if keyword.arg == "shell":
            value = keyword.value
            return not (isinstance(value, ast.Constant) and value.value in (False, None, 0))
    return False


def python_findings(findings: checklib.Findings) -> None:
    for path, tree in checklib.parse_python_files(checklib.python_files(), findings).items():
        aliases = import_aliases(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = dotted(node.func, aliases)
            if name is None:
                continue
            if name in PYTHON_CALLS or name.startswith(PYTHON_CALL_PREFIXES):
                findings.add(path, node.lineno, f"dangerous operation: {name}()")
            elif name.startswith("subprocess.") and shell_requested(node):
                findings.add(path, node.lineno, f"dangerous operation: {name}() with shell=True")
            elif name == "yaml.load" and not yaml_loader_is_safe(node, aliases):
                findings.add(path, node.lineno, "dangerous operation: yaml.load() without Loader=SafeLoader")


def c_findings(findings: checklib.Findings) -> None:
    for path in checklib.workspace_files(checklib.C_SOURCE_SUFFIXES):
        tokens = checklib.c_tokens(checklib.strip_c(checklib.read_text(path)))
        for i, (token, line) in enumerate(tokens):
            if token in C_ASM:
                findings.add(path, line, f"dangerous operation: {token} block")
            elif (token in C_CALLS and i + 1 < len(tokens) and tokens[i + 1][0] == "("
                  and (i == 0 or tokens[i - 1][0] not in (".", "->"))):
                findings.add(path, line, f"dangerous operation: {token}()")


def main() -> None:
    checklib.run_check(__doc__.splitlines()[0], {"python": python_findings, "c": c_findings})


if __name__ == "__main__":
    main()
