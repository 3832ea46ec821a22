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
  if (rc != 0) { printf("error %d: %s\n", rc, tirc_last_error()); return 1; }
  for (int i = 0; i < 1000; ++i) {
    if (out[i] != 3.0f * i + 1.0f) { printf("wrong out[%d] = %f\n", i, out[i]); return 1; }
  }
  printf("ok\n");
  DLTensor bad = vector(out, &short_n);
  args[2] = &bad;
  rc = saxpy(args, 3);
  printf("rc=%d msg=%s\n", rc, tirc_last_error());
  printf("metadata starts %.12s\n", tirc_metadata());
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
