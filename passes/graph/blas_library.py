"""The BLAS behind `-fblas`: find a CBLAS and build the small C library that tirc calls.

`tirc_cblas_sgemm` has tirc's DLTensor ABI (`int32_t f(DLTensor **args, int32_t n)`, as
`R.call_dps_packed` wants) and calls `cblas_sgemm` on row-major float32 data: `x (..., m, k)`
times `w (k, n)` into `out (..., m, n)`, the leading dimensions of `x` taken as rows. The
CBLAS is OpenBLAS from the `scipy-openblas32` wheel (`pip install 'tirc[blas]'`, symbols
`scipy_cblas_*`) or, failing that, a system `libcblas`/`libopenblas`. The library is built once
per CBLAS with the C compiler (`$CC` or `cc`) into a cache folder (`$TIRC_CACHE_DIR`, else
`~/.cache/tirc`); None means no BLAS, and the caller keeps the tiled loops.
"""

from __future__ import annotations

import ctypes.util
import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from tirc.ir.lean_dataclass import dataclass

SHIM_NAME = "tirc_blas"
NO_BLAS = ("-fblas: no CBLAS found (pip install 'tirc[blas]' for scipy-openblas32, or a "
           "system libcblas/libopenblas) or it could not be built against; matmuls use the "
           "tiled loops")

SHIM_SOURCE = r"""
#include <stdint.h>

typedef struct {
  void *data;
  struct { int32_t device_type, device_id; } device;
  int32_t ndim;
  struct { uint8_t code, bits; uint16_t lanes; } dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

void CBLAS_SGEMM(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c,
                 int ldc);

static float *data_of(DLTensor *t) { return (float *)((char *)t->data + t->byte_offset); }

/* out (..., m, n) = x (..., m, k) @ w (k, n), row-major float32; 0 on success. */
int32_t tirc_cblas_sgemm(DLTensor **args, int32_t num_args) {
  if (num_args != 3 || args[0]->ndim < 2 || args[1]->ndim != 2) return -1;
  DLTensor *x = args[0], *w = args[1], *out = args[2];
  int64_t rows = 1;
  for (int32_t d = 0; d + 1 < x->ndim; ++d) rows *= x->shape[d];
  int64_t k = x->shape[x->ndim - 1], n = w->shape[1];
  if (w->shape[0] != k || rows > INT32_MAX || k > INT32_MAX || n > INT32_MAX) return -2;
  if (rows == 0 || n == 0) return 0;
  CBLAS_SGEMM(101 /* row-major */, 111 /* no transpose */, 111, (int)rows, (int)n, (int)k,
              1.0f, data_of(x), k > 0 ? (int)k : 1, data_of(w), (int)n, 0.0f, data_of(out),
              (int)n);
  return 0;
}
"""


@dataclass(frozen=True)
class Cblas:
    """A CBLAS to link: library `name` in folder `lib_dir`, its sgemm symbol."""

    name: str
    lib_dir: str
    sgemm: str


@dataclass(frozen=True)
class BlasLibrary:
    """The built shim: link with `-l{name} -L{lib_dir}` (its run path finds the CBLAS)."""

    name: str
    lib_dir: str
    cblas: Cblas


def find_cblas() -> Cblas | None:
    """scipy-openblas32 if installed, else a system CBLAS, else None."""
    try:
        import scipy_openblas32  # type: ignore[import-not-found]

        lib_dir = scipy_openblas32.get_lib_dir()
        name = scipy_openblas32.get_library()
        if (Path(lib_dir) / f"lib{name}.so").exists():
            return Cblas(name, lib_dir, "scipy_cblas_sgemm")
    except ImportError:
        pass
    for name in ("cblas", "openblas", "blis"):
        found = ctypes.util.find_library(name)
        if found:
            return Cblas(name, _system_dir(found), "cblas_sgemm")
    return None


def _system_dir(soname: str) -> str:
    """The folder of a system library (ctypes gives only its soname), '' when unknown."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"):
        if (Path(d) / soname).exists():
            return d
    return ""


def _cache_dir() -> Path:
    base = os.environ.get("TIRC_CACHE_DIR") or Path.home() / ".cache" / "tirc"
    return Path(base)


def blas_library() -> BlasLibrary | None:
    """The shim library over the CBLAS found (built on first use), or None with no CBLAS or
    no C compiler."""
    cblas = find_cblas()
    if cblas is None:
        return None
    key = hashlib.sha256(f"{SHIM_SOURCE}{cblas}".encode()).hexdigest()[:16]
    out_dir = _cache_dir() / f"blas-{key}"
    lib = out_dir / f"lib{SHIM_NAME}.so"
    if not lib.exists() and not _build(cblas, out_dir, lib):
        return None
    return BlasLibrary(SHIM_NAME, str(out_dir), cblas)


def _build(cblas: Cblas, out_dir: Path, lib: Path) -> bool:
    """Compile the shim against `cblas` into `lib` (atomically); False when that fails."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cc = shlex.split(os.environ.get("CC", "") or "cc")
    link = [f"-L{cblas.lib_dir}", f"-Wl,-rpath,{cblas.lib_dir}"] if cblas.lib_dir else []
    with tempfile.TemporaryDirectory(prefix="tirc-blas-") as tmp:
        src = Path(tmp) / "tirc_blas.c"
        src.write_text(SHIM_SOURCE)
        tmp_lib = Path(tmp) / lib.name
        cmd = [*cc, "-shared", "-fPIC", "-O2", f"-DCBLAS_SGEMM={cblas.sgemm}", "-o",
               str(tmp_lib), str(src), *link, f"-l{cblas.name}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except OSError:
            return False
        if proc.returncode != 0:
            return False
        _copy(tmp_lib, lib)
    return True


def _copy(src: Path, dst: Path) -> None:
    """Copy `src` to `dst` through a temporary file beside it and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", dir=dst.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(src.read_bytes())
    os.chmod(tmp, 0o755)
    os.replace(tmp, dst)
