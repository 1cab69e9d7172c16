"""Kernels copy arrays in loops, not by slice assignment: a compile-time rule (issue 37).

``out[a:b] = values`` with an array on the right makes numba compile its
shape-mismatch error message once per process and per rank (about 1.9 CPU
seconds, against 0.07 for the loop that does the same copy; docs/PERFORMANCE.md,
"Slice copies written as loops").  The rule is read from the sources: in a
``@kernel`` or ``@inline_kernel`` function, a slice may be assigned only a
scalar (a number, ``math.inf``, or a parameter annotated ``int``, ``float`` or
``bool``).  Read from the installed package's files, so it runs on the wheel too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import culling

PACKAGE = Path(culling.__file__).resolve().parent

#: The decorators that make a function a compiled kernel (``culling.runtime.jit``).
KERNEL_DECORATORS = {"kernel", "inline_kernel"}

#: Parameter annotations that name a scalar.
SCALAR_ANNOTATIONS = {"int", "float", "bool"}


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")


def _kernels(tree: ast.AST) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            and any(_decorator_name(d) in KERNEL_DECORATORS for d in node.decorator_list)]


def _is_scalar(value: ast.expr, scalars: set[str]) -> bool:
    if isinstance(value, ast.UnaryOp):
        return _is_scalar(value.operand, scalars)
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (int, float, bool))
    if isinstance(value, ast.Attribute):
        return ast.unparse(value) in ("math.inf", "math.nan", "np.inf", "np.nan")
    return isinstance(value, ast.Name) and value.id in scalars


def _slice_copies(path: Path, root: Path = PACKAGE) -> list[str]:
    found = []
    for fn in _kernels(ast.parse(path.read_text(), str(path))):
        scalars = {a.arg for a in fn.args.args if a.annotation is not None
                   and ast.unparse(a.annotation) in SCALAR_ANNOTATIONS}
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Assign, ast.AugAssign)):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            sliced = any(isinstance(t, ast.Subscript) and any(isinstance(s, ast.Slice) for s in ast.walk(t.slice))
                         for t in targets)
            if sliced and not _is_scalar(node.value, scalars):
                found.append(f"{path.relative_to(root)}:{node.lineno} in {fn.name}: {ast.unparse(node)}")
    return found


def test_kernels_copy_arrays_in_loops_not_by_slice_assignment():
    copies = [line for path in sorted(PACKAGE.rglob("*.py")) for line in _slice_copies(path)]
    assert not copies, "slice copies in kernels (write them as loops: issue 37):\n" + "\n".join(copies)


def test_the_rule_finds_a_slice_copy_and_allows_scalar_fills(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        "@kernel\n"
        "def fill(out: np.ndarray, values: np.ndarray, probe: int) -> None:\n"
        "    out[:2] = 0\n"
        "    out[2:3] = -math.inf\n"
        "    out[3:4] = probe\n"
        "    out[4:] = values[4:]\n")
    assert _kernels(ast.parse(source.read_text()))
    found = [line.split(": ", 1)[1] for line in _slice_copies(source, tmp_path)]
    assert found == ["out[4:] = values[4:]"]

