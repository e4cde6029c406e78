"""A pure-Python port of NumPy's classic ``argsort(kind="quicksort")`` (introsort).

Why: LLaRA's MovieLens split sorts each user's ratings with pandas ``sort_values``, i.e.
NumPy's non-stable quicksort, and the published rows depend on the order it gives to equal
timestamps. Newer NumPy builds may dispatch to SIMD sorts with a different tie order, so the
reference order is reproduced here, independent of the installed NumPy.

Port of ``aquicksort_`` / ``aheapsort_`` in numpy's src/npysort (NumPy 1.24): median-of-3
quicksort that keeps the larger partition on a stack, insertion sort for small partitions,
and heapsort once the depth budget (2 * floor(log2(n))) is spent.
"""

from __future__ import annotations

from collections.abc import Sequence

# NumPy's SMALL_QUICKSORT: partitions with (right - left) > 15, i.e. more than 16 items, are
# split; smaller ones are insertion-sorted. (16 instead gives 6,154 different MovieLens rows.)
SMALL_QUICKSORT = 15


def _msb(n: int) -> int:
    """Index of the highest set bit (``npy_get_msb``): floor(log2(n)) for n >= 1."""
    return n.bit_length() - 1


def numpy_argsort(keys: Sequence[int]) -> list[int]:
    """Indices that sort ``keys`` ascending, ties in NumPy's classic quicksort order."""
    order = list(range(len(keys)))
    if len(order) > 1:
        _aquicksort(keys, order)
    return order


def _aquicksort(v: Sequence[int], a: list[int]) -> None:
    left, right = 0, len(a) - 1
    stack: list[tuple[int, int, int]] = []  # (left, right, depth budget) still to sort
    depth = _msb(len(a)) * 2
    while True:
        if depth < 0:
            _aheapsort(v, a, left, right - left + 1)
        else:
            while right - left > SMALL_QUICKSORT:
                pivot_pos = _partition(v, a, left, right)
                depth -= 1
                # Push the larger side, keep sorting the smaller one (bounds the stack).
                if pivot_pos - left < right - pivot_pos:
                    stack.append((pivot_pos + 1, right, depth))
                    right = pivot_pos - 1
                else:
                    stack.append((left, pivot_pos - 1, depth))
                    left = pivot_pos + 1
            _insertion_sort(v, a, left, right)
        if not stack:
            return
        left, right, depth = stack.pop()


def _partition(v: Sequence[int], a: list[int], left: int, right: int) -> int:
    """Median-of-3 partition of ``a[left..right]``; returns the pivot's final position."""
    mid = left + ((right - left) >> 1)
    if v[a[mid]] < v[a[left]]:
        a[mid], a[left] = a[left], a[mid]
    if v[a[right]] < v[a[mid]]:
        a[right], a[mid] = a[mid], a[right]
    if v[a[mid]] < v[a[left]]:
        a[mid], a[left] = a[left], a[mid]
    pivot = v[a[mid]]
    i, j = left, right - 1
    a[mid], a[j] = a[j], a[mid]
    while True:
        i += 1
        while v[a[i]] < pivot:
            i += 1
        j -= 1
        while pivot < v[a[j]]:
            j -= 1
        if i >= j:
            break
        a[i], a[j] = a[j], a[i]
    a[i], a[right - 1] = a[right - 1], a[i]
    return i


def _insertion_sort(v: Sequence[int], a: list[int], left: int, right: int) -> None:
    for i in range(left + 1, right + 1):
        index = a[i]
        key = v[index]
        j = i
        while j > left and key < v[a[j - 1]]:
            a[j] = a[j - 1]
            j -= 1
        a[j] = index


def _aheapsort(v: Sequence[int], a: list[int], start: int, n: int) -> None:
    """NumPy's ``aheapsort_`` on ``a[start:start+n]`` (1-based heap indexing as in C)."""
    base = start - 1  # heap position p lives at a[base + p]

    def sift_down(top: int, index: int, size: int) -> None:
        i, j = top, top << 1
        while j <= size:
            if j < size and v[a[base + j]] < v[a[base + j + 1]]:
                j += 1
            if v[index] < v[a[base + j]]:
                a[base + i] = a[base + j]
                i, j = j, j + j
            else:
                break
        a[base + i] = index

    for top in range(n >> 1, 0, -1):
        sift_down(top, a[base + top], n)
    while n > 1:
        last = a[base + n]
        a[base + n] = a[base + 1]
        n -= 1
        sift_down(1, last, n)
