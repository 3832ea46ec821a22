"""The split-KV load-balancing plan (samples/attention/decode_plan.py): its items cover each
request's visited tokens exactly, in order, none longer than the chunk, the chunk bounded by
the workers' share; bad page tables are errors that say what is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.script_modules import load_script

HERE = Path(__file__).resolve().parents[2] / "samples" / "attention"
PLAN = load_script("paged_attention_plan", HERE / "decode_plan.py")


def _table(lens: list[int], page_size: int) -> tuple[np.ndarray, np.ndarray]:
    pages = [-(-n // page_size) for n in lens]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    last = np.array([n - (p - 1) * page_size if p else 1 for n, p in zip(lens, pages)],
                    np.int32)
    return indptr, last


@settings(max_examples=150, deadline=None)
@given(lens=st.lists(st.integers(0, 3000), min_size=1, max_size=12),
       page_size=st.sampled_from([1, 4, 16]), workers=st.integers(1, 8),
       window=st.one_of(st.none(), st.integers(1, 500)), min_pages=st.integers(1, 16))
def test_items_cover_every_request_in_order(lens: list[int], page_size: int, workers: int,
                                            window: int | None, min_pages: int) -> None:
    indptr, last = _table(lens, page_size)
    plan = PLAN.plan_decode(indptr, last, page_size, workers, window=window,
                            min_chunk_pages=min_pages)
    assert plan.chunk % page_size == 0 and plan.chunk >= min_pages * page_size
    visited = [n - max(n - window, 0) if window else n for n in lens]
    share = -(-sum(visited) // (workers * 4))
    assert plan.chunk < max(share, min_pages * page_size) + page_size
    assert plan.merge_indptr[0] == 0 and plan.merge_indptr[-1] == plan.work_request.size
    for b, n in enumerate(lens):
        lo, hi = plan.merge_indptr[b], plan.merge_indptr[b + 1]
        assert (plan.work_request[lo:hi] == b).all()
        starts, ends = plan.work_start[lo:hi], plan.work_end[lo:hi]
        first = max(n - window, 0) if window else 0
        if n == first:
            assert hi == lo
            continue
        assert starts[0] == first and ends[-1] == n
        assert (starts[1:] == ends[:-1]).all() and (ends > starts).all()
        assert (ends - starts <= plan.chunk).all() and (starts[1:] % plan.chunk == 0).all()


def test_a_long_request_is_cut_and_short_ones_are_not() -> None:
    indptr, last = _table([4096, 100, 100, 0, 37], 16)
    plan = PLAN.plan_decode(indptr, last, 16, workers=2)
    assert plan.chunk == 544  # 4333 tokens over 8 items (542), rounded up to pages of 16
    assert list(np.diff(plan.merge_indptr)) == [8, 1, 1, 0, 1]
    assert plan.work_start[:3].tolist() == [0, 544, 1088]


@pytest.mark.parametrize("indptr,last,message", [
    ([0, 2, 1], [3, 3], "kv_indptr must not decrease"),
    ([0, 2, 3], [3], "kv_last_page_len has 1 entries for 2 requests"),
    ([0, 2, 3], [17, 3], "kv_last_page_len must lie in 1..16"),
    ([0, 2, 3], [0, 3], "kv_last_page_len must lie in 1..16"),
])
def test_bad_page_tables_are_errors(indptr: list[int], last: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PLAN.plan_decode(np.array(indptr, np.int32), np.array(last, np.int32), 16, 2)
