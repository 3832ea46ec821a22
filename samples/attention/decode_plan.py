"""The load-balancing plan of split-KV decode over a paged KV cache (FlashInfer's `plan`).

Requests of very different lengths make uneven work: with requests x KV heads handed to the
workers in equal static ranges, the worker holding a long request finishes last while the others
wait. The plan cuts every request's visited tokens into work items of at most `chunk` tokens,
`chunk` chosen from the total so that no item is more than a small part of one worker's share
(and never below a floor that keeps the merge cheap). Item boundaries fall on multiples of
`chunk` counted from the start of the sequence, so every item but a request's last starts and
ends on a page boundary. The `paged_decode_balanced` kernel hands the items (x KV heads) out one
at a time to whichever worker is free, each writing one partial softmax state, then merges each
request's states in order. Handed out that way, the last worker finishes at most one item after
the average (greedy list scheduling), so a bound on the item bounds the imbalance.
A request with no tokens to visit gets no item; its output row is zero. Imports NumPy only
(loaded by path by the tests and benchmarks/attention.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DecodePlan:
    """Work items in request order, and each request's range of them."""

    work_request: np.ndarray   # (num_work,) int32: the request of each item
    work_start: np.ndarray     # (num_work,) int32: its first token (sequence position)
    work_end: np.ndarray       # (num_work,) int32: one past its last token
    merge_indptr: np.ndarray   # (batch + 1,) int32: request b's items are [b] .. [b + 1]
    chunk: int                 # the most tokens in one item

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The kernel's plan arguments, in its parameter order."""
        return self.work_request, self.work_start, self.work_end, self.merge_indptr


def visited_ranges(kv_indptr: np.ndarray, kv_last_page_len: np.ndarray, page_size: int,
                   window: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each request's first and one-past-last visited token: its whole sequence, or its last
    `window` tokens."""
    pages = np.diff(kv_indptr.astype(np.int64))
    if (pages < 0).any():
        raise ValueError("kv_indptr must not decrease")
    last = kv_last_page_len.astype(np.int64)
    if last.shape != pages.shape:
        raise ValueError(f"kv_last_page_len has {last.size} entries for {pages.size} requests")
    if ((pages > 0) & ((last < 1) | (last > page_size))).any():
        raise ValueError(f"kv_last_page_len must lie in 1..{page_size} for every request "
                         "with pages")
    ends = np.where(pages > 0, (pages - 1) * page_size + last, 0)
    starts = np.maximum(ends - window, 0) if window is not None else np.zeros_like(ends)
    return starts, ends


def plan_decode(kv_indptr: np.ndarray, kv_last_page_len: np.ndarray, page_size: int,
                workers: int, window: int | None = None, items_per_worker: int = 4,
                min_chunk_pages: int = 8) -> DecodePlan:
    """The plan for one decode step of the requests in the page table.

    `chunk` is the total visited tokens over `workers * items_per_worker`, at least
    `min_chunk_pages` pages, rounded up to whole pages: the largest item then holds at most
    1/`items_per_worker` of a worker's even share, which bounds how much later than the
    average the last worker finishes."""
    if workers < 1 or items_per_worker < 1 or min_chunk_pages < 1 or page_size < 1:
        raise ValueError("workers, items_per_worker, min_chunk_pages and page_size must be "
                         "positive")
    starts, ends = visited_ranges(kv_indptr, kv_last_page_len, page_size, window)
    total = int((ends - starts).sum())
    chunk = max(min_chunk_pages * page_size, -(-total // (workers * items_per_worker)))
    chunk = -(-chunk // page_size) * page_size
    requests, firsts, lasts, counts = [], [], [], []
    for b, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist())):
        cuts = [lo, *range((lo // chunk + 1) * chunk, hi, chunk), hi] if hi > lo else []
        counts.append(max(len(cuts) - 1, 0))
        requests += [b] * counts[-1]
        firsts += cuts[:-1]
        lasts += cuts[1:]
    merge = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int32)
    return DecodePlan(np.asarray(requests, np.int32), np.asarray(firsts, np.int32),
                      np.asarray(lasts, np.int32), merge, chunk)
