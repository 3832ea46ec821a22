"""Shared by the graph-pass tests: run passes, and interpret a graph function before/after."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tirc.ir import IRModule
from tirc.ir.graph import GCall, TensorSInfo
from tirc.ir.interpreter import Interpreter
from tirc.ir.ops.sinfo_util import const_dim
from tirc.passes.pass_base import Pass, PassContext
from tirc.passes.verify import verify_module

SAMPLES = Path(__file__).resolve().parents[1] / "samples"

# R.print in a graph function with a branch (tests of the interpreter's, the printer's and
# compiled libraries' printing).
PRINT_PROGRAM = """\
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32"), c: R.Tensor((), "bool")):
        R.print(x, format="x = {}")
        y = R.add(x, x)
        _ = R.print(y, R.shape([2, 3]), format=R.str("y = {} of shape {}"))
        R.print(R.prim_value(T.int64(7)), R.prim_value(T.float32(0.5)))
        if c:
            R.print(x)
            z = R.multiply(y, y)
        else:
            z = y
        return z
"""


def run_passes(mod: IRModule, passes: Sequence[Pass],
               ctx: PassContext | None = None) -> list[IRModule]:
    """The module after each pass (the input first, `ctx` shared); each must verify."""
    out = [mod]
    for p in passes:
        out.append(p(out[-1]) if ctx is None else p(out[-1], ctx))
        problems = verify_module(out[-1])
        assert not problems, f"after {p.name}: " + "\n".join(d.render() for d in problems)
    return out


def compile_sample(name: str | Path, out: Path, opt_level: int = 2) -> Any:
    """A graph sample (a name in samples/, or a path) through the default pipeline, loaded."""
    from tirc.backends import build
    from tirc.frontend import parse_file
    from tirc.ir.target import parse_target
    from tirc.passes.manager import run_pipeline
    from tirc.passes.pipeline import build_pipeline, default_pipeline
    from tirc.runtime import load

    target = parse_target("llvm")
    steps = default_pipeline(target, opt_level)
    mod = run_pipeline(parse_file(SAMPLES / name), build_pipeline(steps))
    build(mod, out, target, opt_level)
    return load(out)


def random_inputs(mod: IRModule, sizes: dict[str, int], seed: int = 0,
                  func: str = "main") -> list[np.ndarray]:
    """Arrays for a graph function's parameters, symbolic sizes taken from `sizes` by name."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod[func].params:
        s = p.struct_info
        assert isinstance(s, TensorSInfo) and s.shape is not None and s.dtype is not None
        shape = tuple(const_dim(d) if const_dim(d) is not None else sizes[d.name]
                      for d in s.shape)
        out.append((rng.standard_normal(shape) * 0.5).astype(str(s.dtype)))
    return out


def copy_arg(a: Any) -> Any:
    """A copy of an argument: an array, or a tuple of them."""
    return tuple(copy_arg(x) for x in a) if isinstance(a, tuple) else a.copy()


def interpret(mod: IRModule, args: list[np.ndarray], func: str = "main",
              externs: dict[str, Any] | None = None) -> tuple[np.ndarray, ...]:
    """`func` of `mod` run by the reference interpreter; results as a tuple (an argument
    that is a tuple, for an `R.Tuple` parameter, is copied array by array)."""
    got = Interpreter(mod, externs).call(func, *[copy_arg(a) for a in args])
    return got if isinstance(got, tuple) else (got,)


def assert_same(before: IRModule, after: IRModule | list[IRModule], args: list[np.ndarray],
                func: str = "main", externs: dict[str, Any] | None = None) -> None:
    """Every module after gives `before`'s results on `args` in the reference interpreter."""
    want = interpret(before, args, func, externs)
    for mod in after if isinstance(after, list) else [after]:
        got = interpret(mod, args, func, externs)
        assert len(got) == len(want)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def kernel_calls(mod: IRModule, func: str = "main") -> list[str]:
    """The loop functions a graph function calls, in order."""
    names = []
    for block in mod[func].body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(v, GCall) and v.op == "call_tir":
                names.append(v.args[0].name)
            elif isinstance(v, GCall) and v.op in mod.functions:
                names.append(v.op)
    return names


def functions_module(functions: dict[str, tuple[str, str]]) -> str:
    """The text of a module of graph functions `name: (parameters, returned expression)`."""
    out = ["from tvm.script import ir as I", "from tvm.script import relax as R", "",
           "@I.ir_module", "class Module:"]
    for name, (params, expr) in functions.items():
        out += ["    @R.function", f"    def {name}({params}):", f"        return {expr}", ""]
    return "\n".join(out)


def small_arguments(mod: IRModule, name: str, rng: np.random.Generator,
                    size: int = 3) -> list[np.ndarray]:
    """Arguments for `name`'s parameters: integers in [-5, 5], else standard normal floats;
    a symbolic dimension is `size`."""
    out = []
    for p in mod[name].params:
        s = p.struct_info
        shape = tuple(int(d.value) if hasattr(d, "value") else size for d in s.shape)
        dt = str(s.dtype)
        raw = rng.integers(-5, 6, shape) if "int" in dt else rng.standard_normal(shape)
        out.append(raw.astype(dt))
    return out


def compile_levels(text: str, tmp: Path, levels: tuple[int, ...] = (0, 3)
                   ) -> tuple[Path, dict[int, Any]]:
    """The module `text` written under `tmp` and compiled once per -O level, loaded."""
    path = tmp / "ops.tir"
    path.write_text(text)
    return path, {level: compile_sample(path, tmp / f"ops{level}.so", level) for level in levels}


def compile_with_cli(text: str, out: Path, *flags: str) -> Any:
    """The module `text` built with the tirc command (`tirc SRC -o OUT FLAGS`), loaded."""
    from click.testing import CliRunner
    from tirc.cli.main import cli
    from tirc.runtime import load

    src = out.with_suffix(".tir")
    src.write_text(text)
    result = CliRunner().invoke(cli, [str(src), "-o", str(out), *flags])
    assert result.exit_code == 0, result.output
    return load(out)


def run_everywhere(tmp: Path, text: str, args: list[Any]) -> list[list[np.ndarray]]:
    """`main` of the module `text` run by the interpreter and compiled at -O0 and -O3: each
    run's results (a tuple's fields, or the one tensor), on copies of `args`."""
    from tirc.frontend import parse_file

    path, libs = compile_levels(text, tmp)
    outs = [list(interpret(parse_file(path), args))]
    for lib in libs.values():
        got = lib.main(*[copy_arg(a) for a in args])
        outs.append(list(got) if isinstance(got, tuple) else [got])
    return outs


def assert_levels_agree(path: Path, libs: dict[int, Any], name: str, seed: int) -> None:
    """`name` of each compiled library equals the interpreter on `small_arguments` (float16
    results within 2e-3, others within 1e-5)."""
    from tirc.frontend import parse_file

    mod = parse_file(path)
    args = small_arguments(mod, name, np.random.default_rng(seed))
    want = Interpreter(mod).call(name, *[a.copy() for a in args])
    tol = 2e-3 if want.dtype == np.float16 else 1e-5
    for level, lib in libs.items():
        got = getattr(lib, name)(*[a.copy() for a in args])
        assert got.dtype == want.dtype and got.shape == want.shape, (name, level)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{name} -O{level}")


def normalize_diagnostic(tmp: Path, text: str) -> Any:
    """The first diagnostic that parsing `text` (as the file `bad.tir`) and normalizing it
    raise: graph inference's checks of a call run there."""
    import pytest
    from tirc.frontend import parse_file
    from tirc.ir.diagnostics import CompileError
    from tirc.passes.graph.normalize import Normalize

    path = tmp / "bad.tir"
    path.write_text(text)
    with pytest.raises(CompileError) as err:
        Normalize()(parse_file(path))
    return err.value.diagnostics[0]
