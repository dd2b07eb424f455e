"""The orders TensorFlow's CPU TopKV2 produces when a row holds NaN.

TopKV2 orders indices with comparators (`greater`: value b < value a; `stable greater`: the
same, equal values by lower index) that are no strict weak order once NaN compares false with
everything. The result then depends on the exact steps of the algorithms TensorFlow runs:
libstdc++'s std::sort (introsort, then insertion sort) when k equals the row length,
tensorflow::gtl::TopN (a binary heap of libstdc++'s heap algorithms) when k is smaller, and
Eigen's maximum reduction when k is 1. This module replays those steps on one row, on the host;
rows without NaN never come here (a stable sort gives the same, faster).

Every function takes `greater(a, b)`, the comparator on the items being ordered (column indices),
and works in place.
"""
from __future__ import annotations

import math
from typing import Callable

Greater = Callable[[int, int], bool]

_INSERTION_LIMIT = 16   # libstdc++'s _S_threshold: shorter ranges are insertion-sorted


def top_k_row(row: list[float], k: int, sorted_: bool, lanes: int = 8) -> list[int]:
    """The indices TensorFlow's CPU kernel returns for one row (a list of Python floats).
    `lanes`: the values in one of Eigen's SIMD packets for the row's dtype (32-byte AVX
    registers, as TensorFlow's x86 builds use: 8 float32, 4 float64, 8 half)."""
    if k == 1:
        return [_eigen_max_index(row, lanes)]

    def greater(a: int, b: int) -> bool:
        return row[b] < row[a]

    def stable_greater(a: int, b: int) -> bool:
        if row[b] < row[a]:
            return True
        if row[b] > row[a]:
            return False
        return a < b

    if k == len(row):
        order = list(range(k))
        sort(order, greater)
        return _indices_by_run(order, row)
    heap = _top_n(len(row), k, stable_greater)
    if sorted_:
        sort_heap(heap, 0, len(heap), stable_greater)
    return heap


def _indices_by_run(order: list[int], row: list[float]) -> list[int]:
    """TensorFlow's fix-up after std::sort: each run of equal adjacent values (NaN equals
    nothing) is put in increasing index order."""
    start = 0
    while start < len(order) - 1:
        end = start + 1
        if row[order[start]] == row[order[end]]:
            while end < len(order) and row[order[start]] == row[order[end]]:
                end += 1
            order[start:end] = sorted(order[start:end])
        start = end
    return order


def _eigen_max_index(row: list[float], lanes: int) -> int:
    """k == 1: Eigen's maximum reduction, then the first column equal to it (none for NaN: 0).
    Eigen reduces whole SIMD packets of `lanes` values first, lane by lane, where a NaN never
    wins; the remaining columns one by one, where each value replaces the running maximum
    unless it is smaller (so a NaN resets it); the remainder's result wins over the packets'
    unless it is smaller."""
    vectorized = len(row) // lanes * lanes
    packets = -math.inf
    for value in row[:vectorized]:
        if value > packets:
            packets = value
    rest = -math.inf
    for value in row[vectorized:]:
        if not value < rest:
            rest = value
    best = packets if rest < packets else rest
    for column, value in enumerate(row):
        if value == best:
            return column
    return 0


# --- gtl::TopN --------------------------------------------------------------------------------

def _top_n(count: int, limit: int, greater: Greater) -> list[int]:
    """Push 0 .. count-1 into a TopN of `limit` (< count) with `greater`: the heap it holds."""
    items: list[int] = []
    heap_sorted = False
    for value in range(count):
        if not heap_sorted:
            items.append(value)
            if len(items) == limit + 1:   # from an unordered vector to a heap, minus the least
                make_heap(items, greater)
                pop_heap(items, 0, len(items), greater)
                items.pop()
                heap_sorted = True
        elif greater(value, items[0]):
            pop_heap(items, 0, len(items), greater)
            items[-1] = value
            push_heap(items, 0, len(items), greater)
    return items


# --- libstdc++'s heap algorithms (a max-heap under `greater`: its front is the least) -----------

def _push_up(items: list, first: int, hole: int, top: int, value, greater: Greater) -> None:
    """Move the hole at `hole` up while its parent is greater than `value`; put `value` there."""
    parent = (hole - 1) // 2
    while hole > top and greater(items[first + parent], value):
        items[first + hole] = items[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    items[first + hole] = value


def _adjust(items: list, first: int, hole: int, length: int, value, greater: Greater) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if greater(items[first + child], items[first + child - 1]):
            child -= 1
        items[first + hole] = items[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        items[first + hole] = items[first + child - 1]
        hole = child - 1
    _push_up(items, first, hole, top, value, greater)


def make_heap(items: list, greater: Greater) -> None:
    length = len(items)
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust(items, 0, parent, length, items[parent], greater)
        if parent == 0:
            return
        parent -= 1


def pop_heap(items: list, first: int, last: int, greater: Greater) -> None:
    """Move the front to position last-1 and restore the heap on [first, last-1)."""
    if last - first > 1:
        last -= 1
        value = items[last]
        items[last] = items[first]
        _adjust(items, first, 0, last - first, value, greater)


def push_heap(items: list, first: int, last: int, greater: Greater) -> None:
    _push_up(items, first, last - first - 1, 0, items[last - 1], greater)


def sort_heap(items: list, first: int, last: int, greater: Greater) -> None:
    while last - first > 1:
        pop_heap(items, first, last, greater)
        last -= 1


# --- libstdc++'s std::sort ----------------------------------------------------------------------

def sort(items: list, greater: Greater) -> None:
    """std::sort(items, greater): introsort to runs of 16, then insertion sort."""
    if len(items) > 1:
        _introsort(items, 0, len(items), 2 * (len(items).bit_length() - 1), greater)
        _final_insertion_sort(items, 0, len(items), greater)


def _introsort(items: list, first: int, last: int, depth: int, greater: Greater) -> None:
    while last - first > _INSERTION_LIMIT:
        if depth == 0:   # heap sort of the range
            view = items[first:last]
            make_heap(view, greater)
            sort_heap(view, 0, len(view), greater)
            items[first:last] = view
            return
        depth -= 1
        cut = _partition_pivot(items, first, last, greater)
        _introsort(items, cut, last, depth, greater)
        last = cut


def _partition_pivot(items: list, first: int, last: int, greater: Greater) -> int:
    middle = first + (last - first) // 2
    _median_to_first(items, first, first + 1, middle, last - 1, greater)
    return _unguarded_partition(items, first + 1, last, first, greater)


def _median_to_first(items: list, result: int, a: int, b: int, c: int, greater: Greater) -> None:
    def less(i: int, j: int) -> bool:
        return greater(items[i], items[j])

    if less(a, b):
        chosen = b if less(b, c) else (c if less(a, c) else a)
    elif less(a, c):
        chosen = a
    elif less(b, c):
        chosen = c
    else:
        chosen = b
    items[result], items[chosen] = items[chosen], items[result]


def _unguarded_partition(items: list, first: int, last: int, pivot: int, greater: Greater) -> int:
    # The C++ loops are unguarded (the pivot stops them); the bounds here only keep a comparator
    # that is no order from running off the range.
    while True:
        while first < last and greater(items[first], items[pivot]):
            first += 1
        last -= 1
        while last > pivot and greater(items[pivot], items[last]):
            last -= 1
        if not first < last:
            return first
        items[first], items[last] = items[last], items[first]
        first += 1


def _final_insertion_sort(items: list, first: int, last: int, greater: Greater) -> None:
    if last - first > _INSERTION_LIMIT:
        _insertion_sort(items, first, first + _INSERTION_LIMIT, greater)
        for position in range(first + _INSERTION_LIMIT, last):
            _linear_insert(items, position, greater, first)
    else:
        _insertion_sort(items, first, last, greater)


def _insertion_sort(items: list, first: int, last: int, greater: Greater) -> None:
    for position in range(first + 1, last):
        if greater(items[position], items[first]):
            value = items[position]
            items[first + 1:position + 1] = items[first:position]
            items[first] = value
        else:
            _linear_insert(items, position, greater, first)


def _linear_insert(items: list, position: int, greater: Greater, lowest: int) -> None:
    value = items[position]
    previous = position - 1
    while previous >= lowest and greater(value, items[previous]):
        items[position] = items[previous]
        position = previous
        previous -= 1
    items[position] = value
