"""House rules of the package that a reader relies on, checked on the source.

- no module over 600 lines (small modules, one concept each);
- no import cycle between modules, counting imports inside functions (a module's
  dependencies are what it imports anywhere in its text; ``from . import x`` of a package
  counts as importing the module x);
- CUDA written by hand lives in ``.cu`` files: the package's Python strings that look like
  CUDA kernels are produced by generators, not stored whole;
- methods ask engines only through the contract: no ``hasattr(engine, ...)`` probing.
"""

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1] / "hartree"
MAX_LINES = 600


def _modules():
    mods = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _imports(name, path, mods):
    """Modules of the package that ``name`` imports anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in mods)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in mods else base)
    return {m for m in found if m in mods and m != name}


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_over_600_lines():
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_cycles():
    mods = _modules()
    graph = {name: _imports(name, path, mods) for name, path in mods.items()}
    assert "hartree.scf.kernel" in graph["hartree.scf"]  # the checker sees package imports
    assert not _cycles(graph), f"import cycles: {_cycles(graph)}"


def test_cycle_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_hand_written_kernels_in_python_strings():
    """A ``__global__`` in a string constant of a module means CUDA kept as Python text;
    generators build their kernels from parts, which never hold a whole ``__global__``
    function with its body in one literal."""
    offenders = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.search(r"__global__\s+void\s+\w+\s*\([^)]*\)\s*\{", node.value):
                    offenders.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert not offenders, f"hand-written CUDA kernels in Python strings (move them to .cu files): {offenders}"


def test_methods_do_not_probe_engines():
    offenders = []
    for path in ROOT.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"hasattr\(\s*(self\.)?engine\b|inspect\.signature\(\s*(self\.)?engine", text):
            offenders.append(f"{path.relative_to(ROOT.parent)}:{text.count(chr(10), 0, m.start()) + 1}")
    assert not offenders, f"engine capabilities probed instead of the contract: {offenders}"
