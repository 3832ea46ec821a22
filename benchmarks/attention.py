"""Paged decode attention: tirc against NumPy and torch's scaled_dot_product_attention.

16 requests, 32 query heads over 8 KV heads (groups of 4), head dim 128, about 17k cached
tokens in pages of 16 handed out in a shuffled order, float16 storage; the requests' lengths
`even` (0.5-1.5x the mean) or `skewed` (one request holds half of the tokens). tirc compiles
samples/attention/paged_decode.tir (requests x KV heads in parallel, each K/V row loaded once
for its group of query heads, online softmax in float32), its split-KV variant (4 parts per
request, states merged by rfactor) and its balanced variant (the work items of
samples/attention/decode_plan.py's load-balancing plan, handed out one at a time, states merged
per request; the plan's own time is printed beside it) and the same decode written with sparse
axes (paged_decode_sparse) at -O3, checks each against a float64
reference, and times prepared calls. The NumPy reference gathers each request's pages and runs
softmax attention in float32; torch (2.13, CPU, when installed) gathers the pages with
index_select and calls scaled_dot_product_attention with enable_gqa per request, the gather
counted. Each thread count runs in its own process (OMP_NUM_THREADS; torch gets the same
thread count). Prints medians and ratios against the unsplit kernel.

    .venv/bin/python benchmarks/attention.py [--runs 10] [--threads 1,2] [--lengths even,skewed]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BATCH, HQ, HKV, DIM, PAGE, TOKENS = 16, 32, 8, 128, 16, 17_000


def tirc_command() -> list[str]:
    beside = Path(sys.executable).parent / "tirc"
    return [str(beside)] if beside.exists() else [shutil.which("tirc") or "tirc"]


def timings(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def numpy_decode(q: np.ndarray, cache) -> np.ndarray:
    """Paged decode the NumPy way, in float32: gather pages, grouped heads by reshaping."""
    out = np.empty(q.shape, np.float32)
    g = HQ // HKV
    for b in range(q.shape[0]):
        k, v = cache.gather(b)
        k = k.astype(np.float32)
        v = v.astype(np.float32)
        qb = q[b].astype(np.float32).reshape(HKV, g, DIM)
        s = np.einsum("hgd,nhd->hgn", qb, k) / np.float32(np.sqrt(DIM))
        s = np.exp(s - s.max(axis=2, keepdims=True))
        s /= s.sum(axis=2, keepdims=True)
        out[b] = np.einsum("hgn,nhd->hgd", s, v).reshape(HQ, DIM)
    return out


def torch_decode(q, k_pages, v_pages, page_ids: list, lens: list) -> object:
    """Per request: gather its pages (index_select), then SDPA with grouped-query heads."""
    import torch

    outs = []
    for b, (ids, n) in enumerate(zip(page_ids, lens)):
        k = k_pages.index_select(0, ids).reshape(-1, HKV, DIM)[:n].transpose(0, 1)
        v = v_pages.index_select(0, ids).reshape(-1, HKV, DIM)[:n].transpose(0, 1)
        qb = q[b].unsqueeze(1)  # (HQ, 1, DIM)
        outs.append(torch.nn.functional.scaled_dot_product_attention(
            qb.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), enable_gqa=True))
    return outs


def load_script(name: str):
    """A module of samples/attention by file name (they import NumPy only)."""
    path = ROOT / "samples" / "attention" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"paged_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def sequence_lengths(shape: str, rng: np.random.Generator) -> list[int]:
    """`even`: lengths within 0.5-1.5x of the mean; `skewed`: the first request holds half
    of the tokens, the others share the rest evenly (one long conversation among short ones)."""
    if shape == "skewed":
        rest = TOKENS // 2 // (BATCH - 1)
        return [TOKENS - rest * (BATCH - 1)] + [rest] * (BATCH - 1)
    lens = rng.integers(TOKENS // BATCH // 2, TOKENS // BATCH * 3 // 2, BATCH)
    return (lens * TOKENS / lens.sum()).astype(int).tolist()


def measure(lib_path: Path, runs: int, shape: str) -> dict:
    import tirc.runtime as rt

    ref = load_script("reference")
    plan_module = load_script("decode_plan")
    rng = np.random.default_rng(0)
    lens = sequence_lengths(shape, rng)
    cache = ref.make_cache(lens, PAGE, HKV, DIM, "float16", seed=1)
    q = rng.uniform(-1, 1, (BATCH, HQ, DIM)).astype(np.float16)
    want = ref.attention(q, cache)
    lib = rt.load(lib_path)
    table = (q, cache.k, cache.v, cache.kv_indptr, cache.kv_indices, cache.kv_last_page_len)
    workers = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    plan = plan_module.plan_decode(cache.kv_indptr, cache.kv_last_page_len, PAGE, workers)
    result: dict = {"tokens": int(sum(lens)), "items": int(plan.work_request.size)}
    for key, name, extra in (("tirc", "paged_decode", ()), ("split", "paged_decode_split", ()),
                             ("balanced", "paged_decode_balanced", plan.arrays())):
        fn = getattr(lib, name)
        out = np.zeros(q.shape, np.float16)
        call = fn.prepare((*table, *extra, out), {})
        fn.call_prepared(call)
        np.testing.assert_allclose(out.astype(np.float64), want, rtol=5e-3, atol=5e-3)
        result[key] = timings(partial(fn.call_prepared, call), runs)
    page_indptr = cache.page_indptr()
    grouped = (BATCH, HKV, HQ // HKV, DIM)
    out = np.zeros(grouped, np.float16)
    sparse = lib.paged_decode_sparse
    call = sparse.prepare((q.reshape(grouped), cache.k, cache.v, cache.kv_indptr,
                           cache.kv_indices, page_indptr, int(page_indptr[-1]), out), {})
    sparse.call_prepared(call)
    np.testing.assert_allclose(out.reshape(q.shape).astype(np.float64), want, rtol=5e-3,
                               atol=5e-3)
    result["sparse"] = timings(partial(sparse.call_prepared, call), runs)
    result["plan"] = timings(partial(plan_module.plan_decode, cache.kv_indptr,
                                     cache.kv_last_page_len, PAGE, workers), runs)
    np.testing.assert_allclose(numpy_decode(q, cache), want, rtol=5e-3, atol=5e-3)
    result["numpy"] = timings(partial(numpy_decode, q, cache), max(3, runs // 3))
    try:
        import torch
    except ImportError:
        result["torch"] = None
        return result
    torch.set_num_threads(workers)
    tq = torch.from_numpy(q)
    tk, tv = torch.from_numpy(cache.k), torch.from_numpy(cache.v)
    ids = [torch.from_numpy(cache.kv_indices[cache.kv_indptr[b]:cache.kv_indptr[b + 1]]
                            .astype(np.int64)) for b in range(BATCH)]
    got = torch_decode(tq, tk, tv, ids, lens)
    np.testing.assert_allclose(np.stack([o[0, :, 0].float().numpy() for o in got]), want,
                               rtol=5e-3, atol=5e-3)
    with torch.inference_mode():
        result["torch"] = timings(partial(torch_decode, tq, tk, tv, ids, lens), runs)
    result["torch_version"] = torch.__version__
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--lengths", default="even,skewed", help="sequence length shapes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--shape", default="even", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(measure(Path(opts.child), opts.runs, opts.shape)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "paged_decode.so"
        source = Path(tmp) / "paged_decode.tir"
        source.write_text("".join((ROOT / "samples" / "attention" / f"{name}.tir").read_text()
                                  for name in ("paged_decode", "paged_decode_split",
                                               "paged_decode_balanced",
                                               "paged_decode_sparse")))
        subprocess.run([*tirc_command(), str(source), "-O3", "-o", str(lib)], check=True)
        print(f"paged decode: {BATCH} requests, {HQ}/{HKV} heads, dim {DIM}, page {PAGE}, "
              "float16; ms, medians (ratios: the other's time over tirc's)")
        for shape in opts.lengths.split(","):
            for threads in opts.threads.split(","):
                env = dict(os.environ, OMP_NUM_THREADS=threads)
                r = json.loads(subprocess.run(
                    [sys.executable, __file__, "--child", str(lib), "--runs", str(opts.runs),
                     "--shape", shape], env=env, check=True, capture_output=True,
                    text=True).stdout)
                t, npy = r["tirc"][0], r["numpy"][0]
                line = (f"{shape:6} threads {threads}: {r['tokens']} tokens  tirc "
                        f"{t * 1e3:7.2f} (best {r['tirc'][1] * 1e3:.2f})  split-KV x4 "
                        f"{r['split'][0] * 1e3:7.2f}  balanced {r['balanced'][0] * 1e3:7.2f} "
                        f"({r['items']} items, plan {r['plan'][0] * 1e3:.2f})  sparse axes "
                        f"{r['sparse'][0] * 1e3:7.2f}  numpy "
                        f"{npy * 1e3:7.2f} ({npy / t:4.1f}x)")
                if r["torch"] is None:
                    line += "  torch: not installed"
                else:
                    tt = r["torch"][0]
                    line += f"  torch {r['torch_version']} sdpa+gather {tt * 1e3:7.2f} " \
                            f"({tt / t:4.2f}x)"
                print(line, flush=True)


if __name__ == "__main__":
    main()
