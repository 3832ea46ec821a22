"""The library's own argument checks (defence in depth): hand-made DLTensors passed straight
to the exported C function, bypassing the Python checks. Each bad call returns -1 with an exact
message from tirc_last_error(), and never touches the bad memory."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from backend_support import build_library, flat_view, func, i64
from hypothesis import given, settings
from hypothesis import strategies as st
from tirc.ir import For, ForKind, Var, make_buffer
from tirc.ir.dtype import dtype
from tirc.ir.stmt import BufferStore
from tirc.runtime.dlpack import DLDataType, DLDevice, DLTensor, DLTensorPtr

I64 = dtype("int64")


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Any:
    n = Var("n", I64)
    x = make_buffer("X", (n, i64(4)), "float32")
    out = make_buffer("Out", (n, i64(4)), "float32")
    fx, fo = flat_view(x), flat_view(out)
    i = Var("i", I64)
    body = For(i, i64(0), n * 4, ForKind.SERIAL, BufferStore(fo, fx.vload(i) + 1.0, (i,)))
    s = Var("s", dtype("int32"))
    y = make_buffer("Y", (i64(2),), "int32")
    fill = For(i, i64(0), i64(2), ForKind.SERIAL, BufferStore(y, s, (i,)))
    return build_library([func("inc", [x, out], body), func("fill", [y], fill, scalars=(s,))],
                         tmp_path_factory.mktemp("lib") / "checks.so", 1)


class Call:
    """A raw call: DLTensors made field by field, passed to the C symbol."""

    def __init__(self, lib: Any, name: str) -> None:
        self.fn = getattr(lib._lib, name)
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
        self.fn.restype = ctypes.c_int32
        self.err = getattr(lib, name)._last_error
        self.keep: list[Any] = []

    def tensor(self, arr: np.ndarray | None, code: int = 2, bits: int = 32, lanes: int = 1,
               device: int = 1, shape: tuple[int, ...] | None = None,
               strides: tuple[int, ...] | None = None, byte_offset: int = 0,
               data: int | None = None, null_shape: bool = False) -> DLTensor:
        shape = tuple(arr.shape) if shape is None else shape
        c_shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        c_strides = (ctypes.c_int64 * len(strides))(*strides) if strides is not None else None
        self.keep += [arr, c_shape, c_strides]
        ptr = data if data is not None else (arr.ctypes.data if arr is not None else None)
        return DLTensor(ptr, DLDevice(device, 0), len(shape), DLDataType(code, bits, lanes),
                        None if null_shape else ctypes.cast(c_shape,
                                                            ctypes.POINTER(ctypes.c_int64)),
                        ctypes.cast(c_strides, ctypes.POINTER(ctypes.c_int64))
                        if c_strides is not None else None, byte_offset)

    def __call__(self, *tensors: DLTensor | None, num_args: int | None = None,
                 null_array: bool = False) -> tuple[int, str]:
        arr = (DLTensorPtr * max(1, len(tensors)))(
            *[ctypes.pointer(t) if t is not None else None for t in tensors])
        self.keep.append(arr)
        n = len(tensors) if num_args is None else num_args
        code = self.fn(None if null_array else ctypes.addressof(arr), n)
        return code, self.err().decode()


X = np.zeros((3, 4), np.float32)


def out() -> np.ndarray:
    return np.zeros((3, 4), np.float32)


def test_valid_raw_call(lib: Any) -> None:
    c = Call(lib, "inc")
    o = out()
    assert c(c.tensor(X), c.tensor(o))[0] == 0
    assert (o == 1).all()


def test_explicit_compact_strides_and_size_one_dims_are_accepted(lib: Any) -> None:
    c = Call(lib, "inc")
    o = out()
    assert c(c.tensor(X, strides=(4, 1)), c.tensor(o))[0] == 0
    one = np.zeros((1, 4), np.float32)
    assert c(c.tensor(one, strides=(999, 1)), c.tensor(np.zeros((1, 4), np.float32)))[0] == 0


def test_byte_offset_is_applied(lib: Any) -> None:
    c = Call(lib, "inc")
    big = np.arange(16, dtype=np.float32).reshape(4, 4)
    o = np.zeros((3, 4), np.float32)
    code, _ = c(c.tensor(big, shape=(3, 4), byte_offset=16), c.tensor(o))
    assert code == 0
    np.testing.assert_array_equal(o, big[1:] + 1)


BAD = [
    ("num_args", lambda c: c(c.tensor(X), num_args=1),
     "inc: expected 2 arguments (X, Out), got 1"),
    ("null_array", lambda c: c(c.tensor(X), c.tensor(out()), null_array=True),
     "inc: the argument array is NULL"),
    ("null_tensor", lambda c: c(c.tensor(X), None),
     "inc: argument Out: DLTensor pointer is NULL"),
    ("ndim", lambda c: c(c.tensor(X, shape=(12,)), c.tensor(out())),
     "inc: argument X: expected 2 dimensions, got 1"),
    ("dtype_bits", lambda c: c(c.tensor(X, bits=64), c.tensor(out())),
     "inc: argument X: expected dtype float32, got float64"),
    ("dtype_code", lambda c: c(c.tensor(X, code=0), c.tensor(out())),
     "inc: argument X: expected dtype float32, got int32"),
    ("dtype_unknown_code", lambda c: c(c.tensor(X, code=9), c.tensor(out())),
     "inc: argument X: expected dtype float32, got code?32"),
    ("lanes", lambda c: c(c.tensor(X, lanes=4), c.tensor(out())),
     "inc: argument X: expected dtype float32, got 4 lanes per element"),
    ("device", lambda c: c(c.tensor(X), c.tensor(out(), device=2)),
     "inc: argument Out: expected a CPU tensor (device_type 1), got device_type 2"),
    ("null_data", lambda c: c(c.tensor(X, data=0), c.tensor(out())),
     "inc: argument X: data pointer is NULL"),
    ("shape", lambda c: c(c.tensor(X), c.tensor(np.zeros((3, 5), np.float32))),
     "inc: argument Out: expected shape (3, 4), got (3, 5)"),
    ("symbolic", lambda c: c(c.tensor(X), c.tensor(np.zeros((2, 4), np.float32))),
     "inc: argument Out: expected shape (3, 4), got (2, 4)"),
    ("strides", lambda c: c(c.tensor(X, strides=(1, 3)), c.tensor(out())),
     "inc: argument X: expected a compact row-major (C-contiguous) tensor, got strides (1, 3)"),
    ("overlap", lambda c: (lambda a: c(c.tensor(a), c.tensor(a)))(out()),
     "inc: argument Out (an output) overlaps argument X in memory"),
    ("null_shape", lambda c: c(c.tensor(X, null_shape=True), c.tensor(out())),
     "inc: argument X: shape pointer is NULL"),
    ("negative_extent", lambda c: c(c.tensor(X, shape=(-3, 4)), c.tensor(out(), shape=(-3, 4))),
     "inc: argument X: negative extent in shape (-3, 4)"),
    ("negative_static_extent", lambda c: c(c.tensor(X), c.tensor(out(), shape=(3, -4))),
     "inc: argument Out: negative extent in shape (3, -4)"),
    ("size_overflow", lambda c: c(c.tensor(X, shape=(1 << 61, 4)), c.tensor(out())),
     "inc: argument X: shape (2305843009213693952, 4) has more than 2^63 - 1 bytes "
     "(4 per element)"),
    ("size_overflow_wrapping_to_small", lambda c: c(c.tensor(X, shape=(1 << 62, 1 << 2)),
                                                    c.tensor(out())),
     "inc: argument X: shape (4611686018427387904, 4) has more than 2^63 - 1 bytes "
     "(4 per element)"),
]


@pytest.mark.parametrize("case", BAD, ids=[b[0] for b in BAD])
def test_library_rejects_bad_tensor(lib: Any, case: tuple[Any, ...]) -> None:
    _, make_call, message = case
    code, text = make_call(Call(lib, "inc"))
    assert (code, text) == (-1, message)


def test_misaligned_data(lib: Any) -> None:
    c = Call(lib, "inc")
    addr = X.ctypes.data + 2
    code, text = c(c.tensor(X, data=addr), c.tensor(out()))
    assert (code, text) == (-1, f"inc: argument X: data address {addr:#x} is not aligned to "
                                "4 bytes (the size of float32)")


def test_scalar_argument_is_a_0d_tensor(lib: Any) -> None:
    c = Call(lib, "fill")
    y = np.zeros(2, np.int32)
    s = np.array(7, np.int32)
    assert c(c.tensor(y, code=0), c.tensor(s, code=0))[0] == 0
    assert y.tolist() == [7, 7]
    code, text = c(c.tensor(y, code=0), c.tensor(y, code=0))
    assert (code, text) == (-1, "fill: argument s: expected a scalar (a 0-d tensor), "
                                "got 1 dimension(s)")


def test_packed_arguments_match_the_dltensor_struct() -> None:
    from tirc.runtime.dlpack import ArgsPacker

    assert ctypes.sizeof(DLTensor) == 48
    a = np.zeros((3, 5), np.float16)
    s = np.array(2, np.int64)
    buf = ArgsPacker([2, 0], ["float16", "int64"]).pack([a, s])
    base = ctypes.addressof(buf)
    ptrs = (ctypes.c_uint64 * 2).from_buffer(buf)
    t0 = DLTensor.from_address(ptrs[0])
    t1 = DLTensor.from_address(ptrs[1])
    assert ptrs[0] == base + 16 and ptrs[1] == base + 16 + 48
    assert (t0.data, t0.device.device_type, t0.ndim) == (a.ctypes.data, 1, 2)
    assert (t0.dtype.code, t0.dtype.bits, t0.dtype.lanes) == (2, 16, 1)
    assert [t0.shape[0], t0.shape[1]] == [3, 5] and not t0.strides and t0.byte_offset == 0
    assert (t1.data, t1.ndim, t1.dtype.code, t1.dtype.bits) == (s.ctypes.data, 0, 0, 64)


# ---- a fuzz of wrong C calls: every field of every DLTensor may be wrong ---------------------

# Per field, values a careless caller might pass; the first of each is the valid one.
FUZZ_NDIM = [2, 0, 1, 3, -1, 127]
FUZZ_DTYPE = [(2, 32, 1), (2, 64, 1), (0, 32, 1), (2, 32, 4), (7, 32, 1), (2, 0, 1), (2, 32, 0)]
FUZZ_DEVICE = [1, 2, 0, -1]
FUZZ_DATA = ["ok", "null", "misaligned"]
FUZZ_SHAPE = ["ok", "null", "negative", "huge", "other_n", "zero"]
FUZZ_STRIDES = ["null", "row_major", "column_major", "garbage", "size_one_any"]


def _fuzz_tensor(c: Call, n: int, picks: dict[str, Any]) -> tuple[DLTensor, bool]:
    """A DLTensor for an (n, 4) float32 argument with the picked fields; whether it is valid
    (the storage behind it always holds n * 4 floats plus slack, so a valid call is safe)."""
    store = np.zeros(n * 4 + 16, np.float32)
    ndim, (code, bits, lanes), device = picks["ndim"], picks["dtype"], picks["device"]
    shape = {"ok": (n, 4), "null": (n, 4), "negative": (-n - 1, 4), "huge": (1 << 62, 4),
             "other_n": (n + 1, 4), "zero": (0, 4)}[picks["shape"]]
    shape = (tuple(shape) + (1,) * 8)[:max(ndim, 0)]
    strides = {"null": None, "row_major": (4, 1), "column_major": (1, n),
               "garbage": (-7, 1 << 40), "size_one_any": (99, 1) if n == 1 else (4, 1)}
    stride = strides[picks["strides"]]
    stride = None if stride is None else (tuple(stride) + (1,) * 8)[:max(ndim, 0)]
    data = {"ok": store.ctypes.data, "null": 0, "misaligned": store.ctypes.data + 2}
    t = c.tensor(store, code=code, bits=bits, lanes=lanes, device=device, shape=shape,
                 strides=stride, data=data[picks["data"]], null_shape=picks["shape"] == "null")
    t.ndim = ndim
    compact = stride is None or all(d == 1 or s == want for d, s, want in
                                    zip(shape, stride, (shape[1:2] or (1,)) + (1,)))
    valid = (ndim == 2 and (code, bits, lanes) == (2, 32, 1) and device == 1
             and picks["data"] == "ok" and picks["shape"] in ("ok", "zero", "other_n")
             and compact)
    return t, valid


FUZZ_FIELDS = {"ndim": FUZZ_NDIM, "dtype": FUZZ_DTYPE, "device": FUZZ_DEVICE,
               "data": FUZZ_DATA, "shape": FUZZ_SHAPE, "strides": FUZZ_STRIDES}


@st.composite
def _fuzz_picks(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Fields of two valid tensors, up to three of them replaced by another value."""
    picks = [{k: v[0] for k, v in FUZZ_FIELDS.items()} for _ in range(2)]
    for _ in range(draw(st.integers(0, 3))):
        which, field = draw(st.integers(0, 1)), draw(st.sampled_from(sorted(FUZZ_FIELDS)))
        picks[which][field] = draw(st.sampled_from(FUZZ_FIELDS[field]))
    return picks


@given(n=st.integers(1, 3), num_args=st.sampled_from([2] * 6 + [0, 1, 3, -1]),
       null_array=st.sampled_from([False] * 9 + [True]),
       null_tensor=st.sampled_from([None] * 8 + [0, 1]), picks=_fuzz_picks())
@settings(max_examples=500, deadline=None, derandomize=True)
def test_fuzz_of_wrong_c_calls(lib: Any, n: int, num_args: int, null_array: bool,
                               null_tensor: int | None, picks: list[dict[str, Any]]) -> None:
    """Random wrong calls never crash: each returns -1 with a message naming the function,
    and a call the ABI allows returns 0."""
    c = Call(lib, "inc")
    (tx, ok_x), (to, ok_o) = (_fuzz_tensor(c, n, p) for p in picks)
    shapes = [picks[0]["shape"], picks[1]["shape"]]
    same_n = shapes[0] == shapes[1] or "other_n" not in shapes and "zero" not in shapes
    tensors: list[DLTensor | None] = [tx, to]
    if null_tensor is not None:
        tensors[null_tensor] = None
    valid = (ok_x and ok_o and same_n and num_args == 2 and not null_array
             and null_tensor is None)
    code, text = c(*tensors, num_args=num_args, null_array=null_array)
    if valid:
        assert code == 0, text
    else:
        assert code == -1 and text.startswith("inc: "), (code, text)


WIDE = "\n".join([
    "@T.prim_func",
    "def wide(" + ", ".join(f"{n}{k}: T.Buffer((4,), \"float32\")" for n in "XY"
                           for k in range(8)) + "):",
    "    for i in range(4):",
    *[f"        Y{k}[i] = X{k}[i] + T.float32({k})" for k in range(8)],
])

# (which argument shares which other's memory, the message)
ALIASED = [
    ({"Y3": "X1"}, "wide: argument Y3 (an output) overlaps argument X1 in memory"),
    ({"Y4": "Y2"}, "wide: argument Y2 (an output) overlaps argument Y4 in memory"),
    ({"Y0": "X5", "Y1": "X0"}, "wide: argument Y0 (an output) overlaps argument X5 in memory"),
    ({"Y7": "X7"}, "wide: argument Y7 (an output) overlaps argument X7 in memory"),
    ({"X2": "X4"}, ""),  # two inputs may share memory
]


@pytest.fixture(scope="module")
def wide_libs(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """`wide` (8 outputs of 16 arguments: 92 pairs to check) with its overlap check as a
    loop, and with the inline checks of small functions."""
    from tirc.frontend import parse
    from tirc.ir.visitor import any_node
    from tirc.passes import make_entry

    tmp = tmp_path_factory.mktemp("wide")
    entry = make_entry.make_entry(parse(WIDE)["wide"])
    assert any_node(entry.body, lambda n: getattr(n, "buffer", None) is not None
                    and n.buffer.name == "overlap_lo")
    looped = build_library([parse(WIDE)["wide"]], tmp / "loop.so")
    limit = make_entry.INLINE_OVERLAP_PAIRS
    make_entry.INLINE_OVERLAP_PAIRS = 10**6
    try:
        inline = build_library([parse(WIDE)["wide"]], tmp / "inline.so")
    finally:
        make_entry.INLINE_OVERLAP_PAIRS = limit
    return [looped, inline]


@pytest.mark.parametrize("aliased", ALIASED, ids=[str(a[0]) for a in ALIASED])
def test_many_outputs_overlap_check_as_a_loop(wide_libs: list[Any],
                                               aliased: tuple[dict[str, str], str]) -> None:
    """The loop names the same first overlapping pair as the inline checks; a clean call
    runs."""
    names = [f"{n}{k}" for n in "XY" for k in range(8)]
    shares, message = aliased
    for lib in wide_libs:
        c = Call(lib, "wide")
        arrays = {name: np.full(4, float(k), np.float32) for k, name in enumerate(names)}
        for a, b in shares.items():
            arrays[a] = arrays[b]
        code, text = c(*[c.tensor(arrays[name]) for name in names])
        assert (code, text if code else "") == ((-1, message) if message else (0, ""))
    c = Call(wide_libs[0], "wide")
    arrays = {name: np.full(4, float(k), np.float32) for k, name in enumerate(names)}
    assert c(*[c.tensor(arrays[name]) for name in names])[0] == 0
    assert [float(arrays[f"Y{k}"][0]) for k in range(8)] == [2.0 * k for k in range(8)]
