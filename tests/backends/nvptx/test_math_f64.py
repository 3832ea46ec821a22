"""The NVPTX float64 math (tirc.backends.nvptx.math_f64) is double precision: the same LLVM IR
the GPU gets (it has no PTX-only instruction) runs on the CPU through llvmlite's MCJIT, over
arrays of inputs, and is compared in ulps with long double references; ptxas takes it."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np
import pytest
from gpu_support import require_ptxas
from llvmlite import ir
from tirc.backends.llvm.context import ModuleContext
from tirc.backends.nvptx.math_f64 import EXPANDED_F64, F64, I64, Float64Math
from tirc.driver import compile_ptx
from tirc.frontend import parse

LD = np.longdouble
if np.finfo(LD).nmant < 63:  # pragma: no cover - x86-64 and aarch64 Linux have more
    pytest.skip("long double is no wider than double here: no reference to measure ulps",
                allow_module_level=True)

_ENGINES: list[object] = []


def jit(op: str, nargs: int = 1) -> Callable[..., np.ndarray]:
    """`op` of EXPANDED_F64 as a CPU function over float64 arrays (one loop, one call)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    ctx = ModuleContext("m", llvm.get_process_triple())
    ptr = ir.PointerType()
    fn = ir.Function(ctx.module, ir.FunctionType(ir.VoidType(), [ptr] * (nargs + 1) + [I64]),
                     name="f")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    n = fn.args[-1]
    b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), entry)
    xs = [b.load(b.gep(fn.args[k], [i], source_etype=F64), typ=F64) for k in range(nargs)]
    b.store(EXPANDED_F64[op](Float64Math(ctx, b), xs),
            b.gep(fn.args[nargs], [i], source_etype=F64))
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    module = llvm.parse_assembly(str(ctx.module))
    module.verify()
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(module, tm)
    engine.finalize_object()
    _ENGINES.append(engine)  # keeps the code alive
    proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (nargs + 1), ctypes.c_int64)
    f = proto(engine.get_function_address("f"))

    def call(*arrays: np.ndarray) -> np.ndarray:
        args = [np.ascontiguousarray(np.broadcast_to(a, np.shape(arrays[0])), np.float64)
                for a in arrays]
        out = np.empty_like(args[0])
        f(*[a.ctypes.data for a in args], out.ctypes.data, out.size)
        return out

    return call


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the last place of want rounded to double."""
    spacing = np.spacing(np.abs(want.astype(np.float64))).astype(LD)
    return np.abs(got.astype(LD) - want.astype(LD)) / spacing


RNG = np.random.default_rng(7)
WIDE = np.concatenate([RNG.uniform(-745, 709.7, 20000), RNG.uniform(-1, 1, 10000),
                       RNG.standard_normal(5000) * 1e-6])
POSITIVE = np.concatenate([np.exp(RNG.uniform(-744, 709, 20000)), RNG.uniform(0.5, 2, 10000),
                           1 + RNG.uniform(-0.02, 0.02, 5000),  # log near 0: no cancellation
                           1 + 2.0 ** -np.arange(1, 53), 1 - 2.0 ** -np.arange(2, 54),
                           [5e-324, 1e-310, 2.0 ** -1022]])
TRIG = np.concatenate([RNG.uniform(-10, 10, 20000), RNG.uniform(-1e6, 1e6, 10000),
                       RNG.uniform(-1e9, 1e9, 10000), RNG.standard_normal(2000) * 1e-8])
HYP = np.concatenate([RNG.uniform(-25, 25, 20000), RNG.standard_normal(10000) * 1e-3,
                      RNG.standard_normal(1000) * 1e-12])

# op: (inputs, long double reference, max ulps measured with margin)
CASES: dict[str, tuple[np.ndarray, Callable[[np.ndarray], np.ndarray], float]] = {
    "exp": (WIDE, np.exp, 1.0),
    "fast_exp": (WIDE, np.exp, 1.0),
    "exp2": (WIDE * 1.4, np.exp2, 1.1),
    "log": (POSITIVE, np.log, 0.51),
    "log2": (POSITIVE, np.log2, 0.51),
    "sin": (TRIG, np.sin, 2.5),
    "cos": (TRIG, np.cos, 2.5),
    "tanh": (HYP, np.tanh, 2.6),
    "sigmoid": (HYP * 30, lambda x: 1 / (1 + np.exp(-x)), 2.0),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_double_precision_within_the_ulp_bound(op: str) -> None:
    xs, ref, bound = CASES[op]
    got = jit(op)(xs)
    err = ulps(got, ref(xs.astype(LD)))
    assert not np.isnan(err).any()
    assert err.max() <= bound, (op, xs[np.argmax(err)], err.max())


def test_erf_against_libm() -> None:
    xs = np.concatenate([RNG.uniform(-7, 7, 20000), RNG.standard_normal(5000) * 1e-3,
                         [1.5, -1.5, 1.5 - 2 ** -52, 6.0, 5.999]])
    got = jit("erf")(xs)
    want = np.array([math.erf(v) for v in xs])  # glibc: within 1 ulp
    err = np.abs(got - want) / np.spacing(np.abs(want))
    assert err.max() <= 2.0, (xs[np.argmax(err)], err.max())


def test_pow_stays_within_an_ulp_and_a_bit_for_large_results_and_exponents() -> None:
    """exp(y * log(x)) in plain double is off by |y ln x| ulps (hundreds here): the
    double-double log and product keep pow to the accuracy of exp."""
    x = np.concatenate([np.exp(RNG.uniform(-5, 5, 20000)), 1 + RNG.uniform(-0.05, 0.05, 10000),
                        np.exp(RNG.uniform(-700, 700, 10000))])
    y = np.concatenate([RNG.uniform(-100, 100, 20000), RNG.uniform(-1e4, 1e4, 10000),
                        RNG.uniform(-1, 1, 10000)])
    want = np.power(x.astype(LD), y.astype(LD))
    finite = np.isfinite(want.astype(np.float64)) & (want.astype(np.float64) != 0)
    err = ulps(jit("pow", 2)(x, y)[finite], want[finite])
    assert np.abs(y * np.log(x))[finite].max() > 500
    assert err.max() <= 1.3, err.max()


def _same(got: np.ndarray, want: list[float]) -> None:
    w = np.array(want)
    np.testing.assert_array_equal(got, w)
    numbers = ~np.isnan(w)
    assert list(np.signbit(got[numbers])) == list(np.signbit(w[numbers]))  # signed zeros


INF, NAN = math.inf, math.nan


def test_special_values() -> None:
    _same(jit("exp")(np.array([0.0, -0.0, INF, -INF, NAN, 710.0, -746.0, 709.78, -745.1])),
          [1.0, 1.0, INF, 0.0, NAN, INF, 0.0, math.exp(709.78), 5e-324])
    _same(jit("log")(np.array([0.0, -0.0, -1.0, INF, NAN, 1.0, 5e-324])),
          [-INF, -INF, NAN, INF, NAN, 0.0, math.log(5e-324)])
    _same(jit("log2")(np.array([8.0, 0.5, 2.0 ** -1074, 2.0 ** 1023])),
          [3.0, -1.0, -1074.0, 1023.0])
    _same(jit("exp2")(np.array([3.0, -1074.0, 1024.0, -1075.5, NAN])),
          [8.0, 5e-324, INF, 0.0, NAN])
    _same(jit("sin")(np.array([0.0, -0.0, INF, -INF, NAN])), [0.0, -0.0, NAN, NAN, NAN])
    _same(jit("cos")(np.array([0.0, INF, NAN])), [1.0, NAN, NAN])
    _same(jit("tanh")(np.array([0.0, -0.0, INF, -INF, 30.0, NAN])),
          [0.0, -0.0, 1.0, -1.0, 1.0, NAN])
    _same(jit("erf")(np.array([0.0, -0.0, INF, -INF, NAN, -6.5])),
          [0.0, -0.0, 1.0, -1.0, NAN, -1.0])
    _same(jit("sigmoid")(np.array([0.0, INF, -INF, -800.0, NAN])), [0.5, 1.0, 0.0, 0.0, NAN])
    assert jit("sigmoid")(np.array([-709.9]))[0] == pytest.approx(math.exp(-709.9), rel=1e-15)


def test_pow_special_cases_match_numpy() -> None:
    x = np.array([2.0, -2.0, -2.0, 0.0, 0.0, 9.0, -2.0, 1.0, 5.0, 0.0, -8.0, 10.0])
    y = np.array([10.0, 3.0, 2.0, 0.0, 2.0, 0.5, 0.5, NAN, 0.0, -1.0, 1.0 / 3.0, -400.0])
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    _same(jit("pow", 2)(x, y), list(want))


KERNEL = """
@T.prim_func
def f64_math(A: T.Buffer((256,), "float64"), P: T.Buffer((256,), "float64"),
             B: T.Buffer((12, 256), "float64")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            B[0, bx * 128 + tx] = T.exp(A[bx * 128 + tx])
            B[1, bx * 128 + tx] = T.log(A[bx * 128 + tx])
            B[2, bx * 128 + tx] = T.sin(A[bx * 128 + tx])
            B[3, bx * 128 + tx] = T.cos(A[bx * 128 + tx])
            B[4, bx * 128 + tx] = T.tanh(A[bx * 128 + tx])
            B[5, bx * 128 + tx] = T.erf(A[bx * 128 + tx])
            B[6, bx * 128 + tx] = T.pow(A[bx * 128 + tx], P[bx * 128 + tx])
            B[7, bx * 128 + tx] = T.exp2(A[bx * 128 + tx])
            B[8, bx * 128 + tx] = T.log2(A[bx * 128 + tx])
            B[9, bx * 128 + tx] = T.sigmoid(A[bx * 128 + tx])
            B[10, bx * 128 + tx] = T.fast_exp(A[bx * 128 + tx])
            B[11, bx * 128 + tx] = T.rsqrt(A[bx * 128 + tx])
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_float64_kernel_is_double_precision_ptx_that_ptxas_takes(arch: str) -> None:
    result = compile_ptx(parse(KERNEL), f"cuda -arch={arch}", 2)
    assert "cvt.rn.f32.f64" not in result.ptx  # nothing goes through float32
    assert ".approx" not in result.ptx
    assert "fma.rn.f64" in result.ptx
    require_ptxas()
    (usage,) = result.usage()
    assert usage.spill_stores == 0
