"""Work over a whole catalog's rows, split across a few threads: a serving worker's latency at 10^6 items.

One product of a user state with a 10^6-item table reads 256 MB (H = 64, float32). That is bound by
memory, not arithmetic: one core reads it in ~22 ms here, two in ~12 (issue 45). torch's own
intra-op threads are kept at one in a worker (they spin at barriers beside other busy processes,
app/services/runtime.py), so a catalog-sized scan is split by rows over a small pool of plain
threads instead, which wait without spinning.

The split keeps the floats: every part starts at a multiple of :data:`PART_ROWS` rows and the last
part ends where the whole does, so BLAS walks each row in the same position of its blocks (and the
last rows in the same tail) as in one call; exact integer sums are the same in any order. Tests
check both. Below :data:`MIN_ROWS` rows, or with one thread (the default outside a worker: training
and evaluation have their own threads), a scan is one call, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import torch

T = TypeVar("T")

PART_ROWS = 1 << 16
"""Parts start at multiples of this many rows (a power of two: any BLAS block divides it)."""
MIN_ROWS = 1 << 17
"""Fewer rows than this are one call: a thread's hand-off costs more than it saves."""

_threads = 1
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def set_scan_threads(n: int) -> None:
    """How many threads a catalog-sized scan uses from now on (a worker's ``Settings.scan_threads``)."""
    global _threads, _pool
    if n < 1:
        raise ValueError(f"scan threads must be >= 1, got {n}")
    with _lock:
        if n != _threads and _pool is not None:
            _pool.shutdown(wait=False)
            _pool = None
        _threads = n


def scan_threads() -> int:
    return _threads


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # One intra-op thread in each: a new thread's BLAS would otherwise split its part over
            # the machine's cores (its own default), at points of its choosing: other last bits.
            _pool = ThreadPoolExecutor(
                max_workers=_threads,
                thread_name_prefix="catalog-scan",
                initializer=torch.set_num_threads,
                initargs=(1,),
            )
        return _pool


def row_parts(n_rows: int, parts: int | None = None) -> list[slice]:
    """``n_rows`` rows as at most ``parts`` (default: the scan threads) contiguous slices, each
    starting at a multiple of :data:`PART_ROWS`; one slice when the rows are few."""
    parts = _threads if parts is None else parts
    if parts <= 1 or n_rows < MIN_ROWS:
        return [slice(0, n_rows)]
    blocks = -(-n_rows // PART_ROWS)
    per_part = -(-blocks // parts) * PART_ROWS
    return [slice(start, min(start + per_part, n_rows)) for start in range(0, n_rows, per_part)]


def map_rows(n_rows: int, work: Callable[[slice], T]) -> list[T]:
    """``work`` over :func:`row_parts` of ``n_rows`` rows, in row order; the parts run on the scan
    threads (torch and numpy release the GIL while they compute), one part in this thread."""
    return _map_parts(row_parts(n_rows), work)


def map_slices(n_rows: int, length: int, work: Callable[[slice], T]) -> list[T]:
    """``work`` over consecutive slices of ``length`` rows (the last may be shorter), in row order;
    as :func:`map_rows`, they run on the scan threads and one in this thread."""
    return _map_parts([slice(start, min(start + length, n_rows)) for start in range(0, n_rows, length)], work)


def _map_parts(parts: list[slice], work: Callable[[slice], T]) -> list[T]:
    if len(parts) == 1:
        return [work(parts[0])]
    pool = _executor()
    futures = [pool.submit(work, part) for part in parts[1:]]
    first = work(parts[0])
    return [first, *(future.result() for future in futures)]


def catalog_product(table: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """A catalog's table [N, H] times a query, in the form its callers always wrote: user states
    [B, H] give ``query @ table.T`` [B, N]; one vector [H] gives ``table @ query`` [N]. Each part
    writes its columns of one output (no copy to join them); under autograd it is one call."""

    @torch.no_grad()  # grad mode is per thread: a scan thread's would be on
    def product(rows: slice, out: torch.Tensor) -> torch.Tensor:
        if query.dim() == 1:
            return torch.matmul(table[rows], query, out=out)
        return torch.matmul(query, table[rows].T, out=out)

    parts = row_parts(len(table))
    if len(parts) == 1 or (torch.is_grad_enabled() and (table.requires_grad or query.requires_grad)):
        return query @ table.T if query.dim() > 1 else table @ query
    out = query.new_empty(*query.shape[:-1], len(table))
    _map_parts(parts, lambda rows: product(rows, out=out[..., rows]))
    return out


def top_k(values: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(values, k)`` (values [N], best first) as (values, indices): each part's own top k
    on the scan threads, then the top k of those. The same items in the same order, but for exact
    ties at the k-th place, which either call may break its own way."""
    parts = row_parts(len(values))
    if len(parts) == 1:
        top = torch.topk(values, k)
        return top.values, top.indices

    def part_top(rows: slice) -> tuple[torch.Tensor, torch.Tensor]:
        top = torch.topk(values[rows], min(k, rows.stop - rows.start))
        return top.values, top.indices + rows.start

    found = _map_parts(parts, part_top)
    candidates = torch.cat([v for v, _ in found])
    best = torch.topk(candidates, k)
    return best.values, torch.cat([i for _, i in found])[best.indices]


KEPT_SCRATCH_BYTES = 16 << 20
"""A scratch block this size or smaller goes back to :func:`scratch_rows`' free list after use."""
KEPT_SCRATCH_BLOCKS = 2
"""How many scratch blocks the free list keeps: one per request scoring at once, on two cores."""

_scratch: list[torch.Tensor] = []
_scratch_lock = threading.Lock()


@contextmanager
def scratch_rows(like: torch.Tensor, rows: int) -> Iterator[torch.Tensor]:
    """An uninitialised block [rows, like.shape[1]] of ``like``'s dtype, kept for the next call.

    A fresh block of several MB pays a page fault per 4 KB page each time it is touched (~2 µs
    each on a VM), where a block kept from the last call is already mapped. Blocks up to
    :data:`KEPT_SCRATCH_BYTES` are kept, at most :data:`KEPT_SCRATCH_BLOCKS` of them; whoever holds
    a block has it alone until the block ends.
    """
    width, dtype = like.shape[1], like.dtype
    with _scratch_lock:
        found = next((i for i, b in enumerate(_scratch) if _fits(b, dtype, width, rows)), None)
        block = _scratch.pop(found) if found is not None else None
    if block is None:
        block = torch.empty(rows, width, dtype=dtype)
    try:
        yield block[:rows]
    finally:
        if block.numel() * block.element_size() <= KEPT_SCRATCH_BYTES:
            with _scratch_lock:
                if len(_scratch) < KEPT_SCRATCH_BLOCKS:
                    _scratch.append(block)


def _fits(block: torch.Tensor, dtype: torch.dtype, width: int, rows: int) -> bool:
    return block.dtype == dtype and block.shape[1] == width and len(block) >= rows
