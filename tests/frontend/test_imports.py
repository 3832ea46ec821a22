"""Imports between `.tir` files: relative to the importer, then along include directories."""

from __future__ import annotations

from pathlib import Path

import pytest
from tirc.frontend import parse, parse_file
from tirc.ir import Function, GCall, PrimFunc
from tirc.ir.diagnostics import CompileError

GEMM = '''from tvm.script import tir as T


@T.prim_func
def gemm(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        B[i, j] = A[i, j] * 2.0


@T.prim_func
def unused(A: T.Buffer((4,), "float32")):
    A[0] = 0.0


@S.schedule("gemm")
def _(sch):
    b = sch.get_block("x")
'''

GRAPH_LIB = '''from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i]

    @R.function
    def run(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.call_tir(Module.copy, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
'''

MAIN = '''from tvm.script import relax as R
from kernels.gemm import gemm
from lib.graph import run as run_lib


@R.function
def main(x: R.Tensor((4, 4), "float32")):
    y = R.call_tir(gemm, (x,), out_sinfo=R.Tensor((4, 4), "float32"))
    return y
'''


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "proj" / "kernels" / "gemm.tir", GEMM)
    write(tmp_path / "include" / "lib" / "graph.tir", GRAPH_LIB)
    return write(tmp_path / "proj" / "main.tir", MAIN)


def test_imports_relative_and_from_include_dirs(project: Path, tmp_path: Path) -> None:
    mod = parse_file(project, include_dirs=[tmp_path / "include"])
    assert list(mod.functions) == ["gemm", "run_lib", "copy", "main"]
    assert isinstance(mod["gemm"], PrimFunc) and "unused" not in mod
    # The imported graph function brings the kernel it calls along.
    run = mod["run_lib"]
    assert isinstance(run, Function) and run.name == "run_lib"
    call = run.body.blocks[0].bindings[0].value
    assert isinstance(call, GCall) and call.args[0].name == "copy"
    assert [s.func_name for s in mod.schedules] == ["gemm"]
    assert mod.sources == (str(project), str(tmp_path / "proj" / "kernels" / "gemm.tir"),
                           str(tmp_path / "include" / "lib" / "graph.tir"))


def test_parse_text_imports_next_to_its_filename(project: Path, tmp_path: Path) -> None:
    mod = parse(project.read_text(), str(project), include_dirs=[str(tmp_path / "include")])
    assert "gemm" in mod and "run_lib" in mod
    assert str(project) not in mod.sources  # no file was read for the text itself


def test_missing_include_dir_is_an_error_at_the_import(project: Path) -> None:
    with pytest.raises(CompileError) as info:
        parse_file(project)
    (d,) = info.value.diagnostics
    assert (d.span.file, d.span.line, d.span.col) == (str(project), 3, 6)
    assert d.message == "cannot find 'lib/graph.tir' for 'from lib.graph import ...'"


def test_missing_name(tmp_path: Path) -> None:
    write(tmp_path / "kernels" / "gemm.tir", GEMM)
    main = write(tmp_path / "main.tir", "from kernels.gemm import gemm, nothing\n")
    with pytest.raises(CompileError) as info:
        parse_file(main)
    (d,) = info.value.diagnostics
    assert (d.span.line, d.span.col) == (1, 32)
    assert d.message == "'kernels/gemm.tir' has no function 'nothing'"


def test_errors_in_the_imported_file_are_reported_there(tmp_path: Path) -> None:
    write(tmp_path / "bad.tir", "from tvm.script import tir as T\n\n@T.prim_func\n"
                                "def k():\n    x = y\n")
    main = write(tmp_path / "main.tir", "from bad import k\n")
    with pytest.raises(CompileError) as info:
        parse_file(main)
    first, second = info.value.diagnostics
    assert (first.span.file, first.span.line, first.message) == (
        str(tmp_path / "bad.tir"), 5, "unknown name 'y'")
    assert (second.span.file, second.message) == (
        str(main), "cannot import from 'bad.tir' because of the errors in it")


def test_import_cycle(tmp_path: Path) -> None:
    write(tmp_path / "a.tir", "from b import g\n")
    write(tmp_path / "b.tir", "from a import f\n")
    with pytest.raises(CompileError) as info:
        parse_file(tmp_path / "a.tir")
    messages = [d.message for d in info.value.diagnostics]
    assert messages[0] == "import cycle: a.tir -> b.tir -> a.tir"


def test_conflicting_import_and_definition(tmp_path: Path) -> None:
    write(tmp_path / "kernels" / "gemm.tir", GEMM)
    main = write(tmp_path / "main.tir", "from kernels.gemm import gemm\n\n@T.prim_func\n"
                                        "def gemm():\n    pass\n")
    with pytest.raises(CompileError) as info:
        parse_file(main)
    (d,) = info.value.diagnostics
    assert (d.span.line, d.span.col, d.message) == (4, 5, "redefinition of function 'gemm'")


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as info:
        parse_file(tmp_path / "nope.tir")
    assert info.value.diagnostics[0].message.startswith(f"cannot read '{tmp_path / 'nope.tir'}'")


PYTHON_PRELUDE = '''from __future__ import annotations
import numpy as np
import IPython, os.path as osp
import tvm
from tvm.script import tir as T


@T.prim_func
def double(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        B[i] = A[i] * 2.0
'''


def test_python_imports_of_a_tvmscript_file_are_skipped(tmp_path: Path) -> None:
    """A tutorial's `from __future__` and `import numpy as np` lines bind nothing in tirc."""
    mod = parse_file(write(tmp_path / "prelude.tir", PYTHON_PRELUDE))
    assert list(mod.functions) == ["double"]


def test_import_of_a_tir_file_asks_for_from(tmp_path: Path) -> None:
    """`import kernels.gemm` names a .tir file, which only `from ... import` reads."""
    write(tmp_path / "kernels" / "gemm.tir", GEMM)
    main = write(tmp_path / "main.tir", "import numpy\nimport kernels.gemm\n")
    with pytest.raises(CompileError) as info:
        parse_file(main)
    (d,) = info.value.diagnostics
    assert (d.span.line, d.span.col) == (2, 1)
    assert d.message == ("unsupported: 'import' of the file 'kernels/gemm.tir' "
                         "(write `from kernels.gemm import name`)")
