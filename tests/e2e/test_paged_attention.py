"""Paged attention from one template: decode, soft-cap, sliding window and causal append, with
grouped-query heads, against a dense NumPy reference; the interpreter and the compiled library
agree (block-form kernels also after their schedules: split-KV by rfactor; the balanced form
over a load-balancing plan; the form written with sparse axes, in sparse form and lowered).
Cases: one page, last pages of 1 and of page_size tokens, permuted pages, an empty request,
group sizes 1/4/8, float16 storage with float32 accumulation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tirc.frontend import parse

from tests.script_modules import load_script
from tests.sparse_support import compile_library, interpret, lowered

HERE = Path(__file__).resolve().parents[2] / "samples" / "attention"
TEMPLATE = load_script("paged_attention_template", HERE / "paged_attention.py")
REF = load_script("paged_attention_reference", HERE / "reference.py")
PLAN = load_script("paged_attention_plan", HERE / "decode_plan.py")

SMALL = dict(page_size=4, num_kv_heads=2, head_dim=16)
# seq lens: one page, last page of page_size tokens, last page of 1 token, empty, several
SEQS = [3, 8, 9, 0, 14]


def _variant(name: str, **kw: object):
    base = {v.name: v for v in TEMPLATE.VARIANTS}[name]
    tag = "".join(f"_{k[0]}{str(x).replace('.', '')}" for k, x in sorted(kw.items()))
    return dataclasses.replace(base, name=f"{name}{tag}", **{**SMALL, **kw})


def _case(v, seed: int):
    cache = REF.make_cache(SEQS, v.page_size, v.num_kv_heads, v.head_dim, v.dtype, seed)
    hq = v.num_kv_heads * v.group
    rng = np.random.default_rng(seed + 1)
    if v.kind == "append":
        n_q = [min(2, n) for n in SEQS]
        qo = np.concatenate([[0], np.cumsum(n_q)]).astype(np.int32)
        q = rng.uniform(-1, 1, (int(qo[-1]), hq, v.head_dim)).astype(v.dtype)
    else:
        qo = None
        q = rng.uniform(-1, 1, (len(SEQS), hq, v.head_dim)).astype(v.dtype)
    want = REF.attention(q, cache, qo, v.soft_cap, v.window)
    if v.form == "sparse":  # query heads as (KV head, group); the page table's token indptr
        page_indptr = cache.page_indptr()
        shape = (len(SEQS), v.num_kv_heads, v.group, v.head_dim)
        return [q.reshape(shape), cache.k, cache.v, cache.kv_indptr, cache.kv_indices,
                page_indptr, int(page_indptr[-1]), np.zeros(shape, v.dtype)], want.reshape(shape)
    args = [q, cache.k, cache.v, cache.kv_indptr, cache.kv_indices, cache.kv_last_page_len]
    if qo is not None:
        args.append(qo)
    if v.form == "balanced":  # items of 1-2 pages: some requests in several items, one in none
        plan = PLAN.plan_decode(cache.kv_indptr, cache.kv_last_page_len, v.page_size,
                                workers=2, window=v.window, min_chunk_pages=1)
        assert plan.work_request.size > len(SEQS) and 0 not in np.diff(plan.merge_indptr)[:3]
        args += plan.arrays()
    args.append(np.zeros(q.shape, v.dtype))
    return args, want


CASES = [("paged_decode", {"group": g}) for g in (1, 4, 8)] + [
    ("paged_decode_softcap", {"group": 2, "soft_cap": 0.5}),
    ("paged_decode_window", {"group": 2, "window": 6}),
    ("paged_append_causal", {"group": 4}),
    ("paged_decode_split", {"group": 2, "splits": 3}),
    ("paged_decode_split", {"group": 4, "splits": 2, "soft_cap": 0.5, "window": 6}),
    ("paged_decode_gpu", {"group": 4}),
    ("paged_decode_gpu", {"group": 2, "soft_cap": 0.5, "window": 6}),
    ("paged_append_causal_gpu", {"group": 2}),
    ("paged_append_causal_gpu", {"group": 1, "window": 5}),
    ("paged_decode_balanced", {"group": 4}),
    ("paged_decode_balanced", {"group": 2, "soft_cap": 0.5, "window": 6}),
    ("paged_decode_sparse", {"group": 4}),
    ("paged_decode_sparse", {"group": 1, "soft_cap": 0.5}),
    ("paged_decode", {"group": 2, "dtype": "float32"}),
]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("paged")
    text = "".join(TEMPLATE.render(_variant(n, **kw)).split("\n", 2)[2] for n, kw in CASES
                   if kw.get("dtype") != "float32") + \
        TEMPLATE.render(dataclasses.replace(_variant("paged_decode", group=2, dtype="float32"),
                                            name="paged_decode_f32")).split("\n", 2)[2]
    (d / "k.tir").write_text("from tvm.script import tir as T\n" + text)
    return compile_library(d / "k.tir", d / "k.so")


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{kw}" for n, kw in CASES])
def test_paged_attention_matches_numpy(lib, name: str, kw: dict) -> None:
    v = _variant(name, **kw)
    if v.dtype == "float32":
        v = dataclasses.replace(v, name="paged_decode_f32")
    args, want = _case(v, seed=len(name))
    tol = 2e-3 if v.dtype == "float16" else 1e-5
    mod = parse(TEMPLATE.render(v))
    for stage in (mod, lowered(mod, "apply-schedules")):  # split-KV: before and after rfactor
        interpreted = interpret(stage, v.name, args)[-1]
        np.testing.assert_allclose(interpreted.astype(np.float64), want, rtol=tol, atol=tol)
    compiled = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    getattr(lib, v.name)(*compiled)
    np.testing.assert_allclose(compiled[-1].astype(np.float64), want, rtol=tol, atol=tol)


def test_samples_are_the_template_output() -> None:
    for v in TEMPLATE.VARIANTS:
        path = HERE / f"{v.name}.tir"
        assert path.read_text() == TEMPLATE.formatted(TEMPLATE.render(v), path), v.name


def test_full_size_decode_sample(tmp_path: Path) -> None:
    lib = compile_library(HERE / "paged_decode.tir", tmp_path / "d.so")
    v = TEMPLATE.VARIANTS[0]
    cache = REF.make_cache([40, 16, 1], v.page_size, v.num_kv_heads, v.head_dim, v.dtype, 5)
    q = np.random.default_rng(6).uniform(-1, 1, (3, 32, 128)).astype(np.float16)
    out = lib.paged_decode(q, cache.k, cache.v, cache.kv_indptr, cache.kv_indices,
                           cache.kv_last_page_len)
    np.testing.assert_allclose(out.astype(np.float64), REF.attention(q, cache), rtol=2e-3,
                               atol=2e-3)


def test_decoder_layer_over_a_paged_cache(tmp_path: Path) -> None:
    """The graph-level sample: interpreter and compiled library against NumPy."""
    from tirc.ir.interpreter import Interpreter

    v = TEMPLATE.LAYER
    hq, hkv, d = v.num_kv_heads * v.group, v.num_kv_heads, v.head_dim
    hidden = hq * d
    cache = REF.make_cache([1, 8, 9, 20], v.page_size, hkv, d, "float32", seed=7)
    rng = np.random.default_rng(8)
    x = rng.uniform(-1, 1, (4, hidden)).astype(np.float32)
    ws = [rng.uniform(-0.2, 0.2, shape).astype(np.float32)
          for shape in ((hidden, hidden), (hidden, hkv * d), (hidden, hkv * d),
                        (hidden, hidden))]
    want = REF.decoder_layer(x, *ws, cache, d)
    args = [x, *ws, cache.k, cache.v, cache.kv_indptr, cache.kv_indices,
            cache.kv_last_page_len]
    mod = parse((HERE / "decoder_layer.tir").read_text())
    got = Interpreter(mod).call("decode_layer", *args)
    lib = compile_library(HERE / "decoder_layer.tir", tmp_path / "layer.so")
    compiled = lib.decode_layer(*args)
    for result in (got, compiled):
        for g, w in zip(result, want):
            np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=1e-4, atol=1e-4)
    path = HERE / "decoder_layer.tir"
    assert path.read_text() == TEMPLATE.formatted(TEMPLATE.render_decoder_layer(), path)


def test_the_sparse_form_checks_its_page_table(lib) -> None:
    """Written with sparse axes, decode checks the page table on entry (the axis arrays):
    a page id outside the pool or a token count that does not add up is an error naming the
    axis, where the loop forms would read outside the pool."""
    from tirc.runtime.errors import TircError

    v = _variant("paged_decode_sparse", group=4)
    args, _ = _case(v, seed=3)
    bad_page = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    bad_page[4][1] = bad_page[1].shape[0]  # kv_indices: one past the pool
    with pytest.raises(TircError, match="axis P: an index is outside"):
        getattr(lib, v.name)(*bad_page)
    bad_count = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    bad_count[6] += 1  # nnz_tokens: one more than page_indptr ends at
    with pytest.raises(TircError, match="axis L: indptr must start at 0 and end at nnz"):
        getattr(lib, v.name)(*bad_count)


@pytest.mark.parametrize("bad", ["end_past_tokens", "other_request", "merge_total"])
def test_the_balanced_form_checks_its_plan(lib, bad: str) -> None:
    """A plan that does not fit the page table (made for another one, or edited) is an error,
    not a read outside the pages."""
    from tirc.runtime.errors import TircError

    v = _variant("paged_decode_balanced", group=4)
    args, _ = _case(v, seed=5)
    args = [a.copy() for a in args]
    work_request, work_end, merge_indptr = args[6], args[8], args[9]
    if bad == "end_past_tokens":
        work_end[-1] += 1
        message = "has a work item outside its request's tokens"
    elif bad == "other_request":
        work_request[0] = 1
        message = "has a work item outside its request's tokens"
    else:
        merge_indptr[-1] -= 1
        message = "merge_indptr must run from 0 to the number of work items"
    with pytest.raises(TircError, match=f"{v.name}: the plan.*{message}"):
        getattr(lib, v.name)(*args)
