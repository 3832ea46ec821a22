"""A C program that includes the generated header, links the shared object, calls a function,
checks the result, and checks that a wrong call returns an error with a message."""

from __future__ import annotations

import subprocess
from pathlib import Path

from backend_support import elementwise, emit
from tirc.backends.link import c_compiler
from tirc.ir import ForKind, IRModule, Var
from tirc.ir.dtype import dtype

PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "libsaxpy.h"

static DLTensor vector(float *data, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = 1;
  t.ndim = 1;
  t.dtype.code = 2;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

int main(void) {
  float x[1000], y[1000], out[1000];
  int64_t n = 1000, short_n = 999;
  for (int i = 0; i < 1000; ++i) { x[i] = (float)i; y[i] = 1.0f; out[i] = 0.0f; }
  DLTensor tx = vector(x, &n), ty = vector(y, &n), tout = vector(out, &n);
  DLTensor *args[3] = {&tx, &ty, &tout};
  int32_t rc = saxpy(args, 3);
  if (rc != 0) { printf("error %d: %s\n", rc, saxpy_last_error()); return 1; }
  for (int i = 0; i < 1000; ++i) {
    if (out[i] != 3.0f * i + 1.0f) { printf("wrong out[%d] = %f\n", i, out[i]); return 1; }
  }
  printf("ok\n");
  DLTensor bad = vector(out, &short_n);
  args[2] = &bad;
  rc = saxpy(args, 3);
  printf("rc=%d msg=%s\n", rc, saxpy_last_error());
  printf("metadata starts %.12s\n", saxpy_metadata());
  return 0;
}
"""


def test_c_program_calls_the_library(tmp_path: Path) -> None:
    n = Var("n", dtype("int64"))
    f = elementwise("saxpy", ["float32", "float32"], "float32", lambda x, y: x * 3.0 + y, n,
                    kind=ForKind.PARALLEL)
    mod = IRModule({"saxpy": f})
    emit(mod, "so", None, 2, tmp_path / "libsaxpy.so")
    emit(mod, "h", None, 2, tmp_path / "libsaxpy.h")
    (tmp_path / "main.c").write_text(PROGRAM)
    subprocess.run([*c_compiler(), "-Wall", "-Werror", "-o", "main", "main.c", "-L.", "-lsaxpy",
                    "-Wl,-rpath," + str(tmp_path)], cwd=tmp_path, check=True)
    proc = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "ok",
        "rc=-1 msg=saxpy: argument Out: expected shape (1000,), got (999,)",
        'metadata starts {"tirc_abi":',
    ]


A_TIR = '''from tvm.script import relax as R


@R.function
def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", 4), "float32")):
    with R.dataflow():
        z = R.add(x, y)
        R.output(z)
    return z
'''

B_TIR = '''from tvm.script import relax as R


@R.function
def main(x: R.Tensor((8,), "float32")):
    R.func_attr({"global_symbol": "forward"})
    with R.dataflow():
        z = R.multiply(x, x)
        R.output(z)
    return z
'''

TWO_LIBRARIES = r"""
#include <stdio.h>
#include <string.h>
#include "a.h"
#include "b.h"

static DLTensor tensor(float *data, int32_t ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = 1;
  t.ndim = ndim;
  t.dtype.code = 2;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

int main(void) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {1, 1, 1, 1, 1, 1, 1, 1}, z[8];
  int64_t s24[2] = {2, 4}, s8[1] = {8}, s7[1] = {7};
  DLTensor tx = tensor(x, 2, s24), ty = tensor(y, 2, s24), tz = tensor(z, 2, s24);
  DLTensor *a_args[3] = {&tx, &ty, &tz};
  if (a_main(a_args, 3) != 0 || z[7] != 9.0f) { printf("a: %s\n", a_last_error()); return 1; }
  DLTensor bx = tensor(x, 1, s8), bz = tensor(z, 1, s8);
  DLTensor *b_args[2] = {&bx, &bz};
  if (b_forward(b_args, 2) != 0 || z[7] != 64.0f) { printf("b failed\n"); return 1; }
  DLTensor bad_y = tensor(y, 1, s8);
  a_args[1] = &bad_y;
  int32_t rc_a = a_main(a_args, 3);
  DLTensor bad_z = tensor(z, 1, s7);
  b_args[1] = &bad_z;
  int32_t rc_b = b_forward(b_args, 2);
  printf("a rc=%d: %s\n", rc_a, a_last_error());
  printf("b rc=%d: %s\n", rc_b, b_last_error());
  printf("a metadata: %d\n", strstr(a_metadata(), "\"symbol\":\"a_main\"") != NULL);
  printf("b metadata: %d\n", strstr(b_metadata(), "\"symbol\":\"b_forward\"") != NULL);
  printf("a has no b: %d\n", strstr(a_metadata(), "b_forward") == NULL);
  return 0;
}
"""


def test_two_libraries_link_into_one_program(tmp_path: Path, run_tirc) -> None:
    """Each library's `main`, errors and metadata are its own: a graph `main` becomes
    `<library>_main`, a global_symbol is honoured, `--symbol-prefix` prefixes every export."""
    (tmp_path / "a.tir").write_text(A_TIR)
    (tmp_path / "b.tir").write_text(B_TIR)
    for args in (["a.tir", "-o", "liba.so"], ["a.tir", "--emit", "h", "-o", "a.h"],
                 ["b.tir", "--symbol-prefix", "b_", "-o", "libb.so"],
                 ["b.tir", "--symbol-prefix", "b_", "--emit", "h", "-o", "b.h"]):
        done = run_tirc(*args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    (tmp_path / "two.c").write_text(TWO_LIBRARIES)
    subprocess.run([*c_compiler(), "-Wall", "-Werror", "-o", "two", "two.c", "-L.", "-la", "-lb",
                    "-Wl,-rpath," + str(tmp_path)], cwd=tmp_path, check=True)
    proc = subprocess.run([str(tmp_path / "two")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "a rc=-1: main: argument y: expected 2 dimensions, got 1",
        "b rc=-1: forward: argument z: expected shape (8,), got (7,)",
        "a metadata: 1", "b metadata: 1", "a has no b: 1",
    ]
    import numpy as np
    import tirc.runtime as rt

    a, b = rt.load(tmp_path / "liba.so"), rt.load(tmp_path / "libb.so")
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(b.forward(x), x * x)
    np.testing.assert_array_equal(a.main(x.reshape(2, 4), x.reshape(2, 4)), 2 * x.reshape(2, 4))
    assert (a.main.symbol, b.forward.symbol) == ("a_main", "b_forward")
