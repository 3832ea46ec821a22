"""NumPy reference and inputs for the paged attention samples (loaded by path by the tests and
benchmarks/attention.py; imports NumPy only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PagedCache:
    """A paged KV cache with its page table (FlashInfer's CSR layout)."""

    k: np.ndarray            # (num_pages, page_size, num_kv_heads, head_dim)
    v: np.ndarray
    kv_indptr: np.ndarray    # (batch + 1,) int32
    kv_indices: np.ndarray   # (nnz_pages,) int32, page ids
    kv_last_page_len: np.ndarray  # (batch,) int32, in 1..page_size

    def seq_lens(self) -> np.ndarray:
        pages = np.diff(self.kv_indptr)
        page_size = self.k.shape[1]
        return np.where(pages > 0, (pages - 1) * page_size + self.kv_last_page_len, 0)

    def page_indptr(self) -> np.ndarray:
        """The tokens of each page of the page table, as an indptr (nnz_pages + 1,) int32: a
        full page, or its request's last page's `kv_last_page_len` (the ragged axis under the
        pages in paged_decode_sparse)."""
        page_size = self.k.shape[1]
        tokens = np.full(self.kv_indices.size, page_size, np.int64)
        pages = np.diff(self.kv_indptr)
        tokens[self.kv_indptr[1:][pages > 0] - 1] = self.kv_last_page_len[pages > 0]
        return np.concatenate([[0], np.cumsum(tokens)]).astype(np.int32)

    def gather(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Request b's keys and values in sequence order: (seq_len, heads, dim) each."""
        ids = self.kv_indices[self.kv_indptr[b]:self.kv_indptr[b + 1]]
        n = int(self.seq_lens()[b])
        k = self.k[ids].reshape(-1, *self.k.shape[2:])[:n]
        v = self.v[ids].reshape(-1, *self.v.shape[2:])[:n]
        return k, v


def make_cache(seq_lens: list[int], page_size: int, num_kv_heads: int, head_dim: int,
               dtype: str, seed: int, spare_pages: int = 3) -> PagedCache:
    """Random K/V in a pool of pages handed out in a shuffled (permuted) order."""
    rng = np.random.default_rng(seed)
    counts = [-(-n // page_size) for n in seq_lens]
    total = sum(counts) + spare_pages
    order = rng.permutation(total).astype(np.int32)
    shape = (total, page_size, num_kv_heads, head_dim)
    k = rng.uniform(-1, 1, shape).astype(dtype)
    v = rng.uniform(-1, 1, shape).astype(dtype)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    last = np.array([n - (c - 1) * page_size if c else 1 for n, c in zip(seq_lens, counts)],
                    np.int32)
    return PagedCache(k, v, indptr, order[:indptr[-1]].copy(), last)


def attention(q: np.ndarray, cache: PagedCache, qo_indptr: np.ndarray | None = None,
              soft_cap: float | None = None, window: int | None = None) -> np.ndarray:
    """Softmax attention of each query row over its request's cached tokens, in float64.

    Decode: `q` is (batch, heads, dim), one query per request at the end of its sequence.
    Append: `q` is (total_q, heads, dim) with `qo_indptr`; the queries of request b are its
    last tokens, each attending causally (to positions up to its own)."""
    batch = cache.kv_indptr.size - 1
    hq, d = q.shape[1], q.shape[2]
    group = hq // cache.k.shape[2]
    out = np.zeros(q.shape, np.float64)
    lens = cache.seq_lens()
    qo = qo_indptr if qo_indptr is not None else np.arange(batch + 1)
    for b in range(batch):
        k, v = cache.gather(b)
        k = np.repeat(k.astype(np.float64), group, axis=1)   # (n, hq, d)
        v = np.repeat(v.astype(np.float64), group, axis=1)
        n_q = qo[b + 1] - qo[b]
        for r in range(n_q):
            pos = int(lens[b]) - n_q + r
            limit = pos + 1 if qo_indptr is not None else int(lens[b])
            start = max(limit - window, 0) if window is not None else 0
            qv = q[qo[b] + r].astype(np.float64)            # (hq, d)
            s = np.einsum("hd,nhd->hn", qv, k[start:limit]) / np.sqrt(d)
            if soft_cap is not None:
                s = soft_cap * np.tanh(s / soft_cap)
            if s.shape[1] == 0:
                continue
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            out[qo[b] + r] = np.einsum("hn,nhd->hd", p, v[start:limit])
    return out


def decoder_layer(x: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray,
                  wo: np.ndarray, cache: PagedCache, head_dim: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The decoder layer sample in float64: the new token's K/V written at each request's last
    position (the page table already counts it), decode attention, projection, residual."""
    batch = x.shape[0]
    hkv = cache.k.shape[2]
    q = (x @ wq).reshape(batch, -1, head_dim)
    k_new = (x @ wk).reshape(batch, hkv, head_dim)
    v_new = (x @ wv).reshape(batch, hkv, head_dim)
    k_pages, v_pages = cache.k.copy(), cache.v.copy()
    for b in range(batch):
        page = cache.kv_indices[cache.kv_indptr[b + 1] - 1]
        slot = cache.kv_last_page_len[b] - 1
        k_pages[page, slot] = k_new[b]
        v_pages[page, slot] = v_new[b]
    updated = PagedCache(k_pages, v_pages, cache.kv_indptr, cache.kv_indices,
                         cache.kv_last_page_len)
    o = attention(q, updated).reshape(batch, -1)
    return x + o @ wo, k_pages, v_pages
