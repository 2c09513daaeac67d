"""Sets of time intervals as sorted, disjoint numpy arrays: union, intersection, difference.

Every operation is a sort plus `searchsorted`, never a Python loop over intervals, so merging the
millions of kernel and operator intervals of a gigabyte trace takes a fraction of a second.
Touching intervals merge, as torch-tb-profiler merges them.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.signedinteger[Any]]
Bools = npt.NDArray[np.bool_]

BLOCK = 1 << 20
"""Intervals merged at a time by `IntervalSet.of` (8 MB an array)."""


class IntervalSet(msgspec.Struct, frozen=True):
    """Disjoint, sorted [start, end) intervals."""

    start: Floats
    end: Floats

    @staticmethod
    def empty() -> IntervalSet:
        return IntervalSet(np.zeros(0), np.zeros(0))

    @staticmethod
    def of(start: Floats, end: Floats, where: Bools | None = None) -> IntervalSet:
        """The union of arbitrary (overlapping, unsorted) intervals; with `where`, of those it
        selects. Over `BLOCK` intervals, each block is merged alone and then the blocks' sets
        together: the same set to the last bit (its bounds are input values, never computed,
        and the union does not depend on the order of merging), with the temporaries of one
        block, not of the input (every operator of a big trace: 7.8M of them, 62 MB an array,
        was the analysis's peak)."""
        if len(start) <= BLOCK:
            if where is not None:
                start, end = start[where], end[where]
            return IntervalSet._merged([start, end])
        starts: list[Floats] = []
        ends: list[Floats] = []
        for first in range(0, len(start), BLOCK):
            block = slice(first, first + BLOCK)
            part = IntervalSet.of(start[block], end[block], None if where is None else where[block])
            starts.append(part.start)
            ends.append(part.end)
            del part
        joined = [np.concatenate(starts)]
        del starts
        joined.append(np.concatenate(ends))
        del ends
        return IntervalSet._merged(joined)

    @staticmethod
    def _merged(bounds: list[Floats]) -> IntervalSet:
        """The union of `bounds` = [starts, ends], which are read, never written; the list is
        emptied, so that arrays held only by it are let go once sorted."""
        start, end = bounds
        bounds.clear()
        keep = end > start
        copied = not keep.all()
        if copied:
            start, end = start[keep], end[keep]
        del keep
        if len(start) == 0:
            return IntervalSet.empty()
        # One array at a time, and the reach in place of the ends. Spans a trace lists in time
        # order (or blocks merged in order) need no sort: a stable sort of them changes nothing.
        if np.all(start[1:] >= start[:-1]):
            if not copied:  # the reach is written in place; the callers' arrays never are
                end = end.copy()
        else:
            order = np.argsort(start, kind="stable")
            start = start[order]
            end = end[order]
            del order
        reach = np.maximum.accumulate(end, out=end)
        # A new group begins where an interval starts after everything before it has ended.
        # Masks, not index arrays: a byte an interval where positions took eight.
        new_group = np.empty(len(start), dtype=np.bool_)
        new_group[0] = True
        np.greater(start[1:], reach[:-1], out=new_group[1:])
        group_start = start[new_group]
        del start
        ends_group = new_group  # the interval before each group's first ends a group
        ends_group[:-1] = new_group[1:]
        ends_group[-1] = True
        return IntervalSet(group_start, reach[ends_group])

    def __len__(self) -> int:
        return len(self.start)

    def total(self) -> float:
        return float((self.end - self.start).sum())

    def contains(self, points: Floats) -> Bools:
        index = np.searchsorted(self.start, points, side="right") - 1
        inside = index >= 0
        inside[inside] = points[inside] < self.end[index[inside]]
        return inside

    def intersect(self, other: IntervalSet) -> IntervalSet:
        a, b = self.canonical(), other.canonical()
        if len(a) == 0 or len(b) == 0:
            return IntervalSet.empty()
        if len(b) < len(a):
            # The pieces are the same either way round, and come out in the same order: the
            # positions below are as long as the smaller set (a few steps against millions of
            # kernels, as the step costs meet them).
            a, b = b, a
        # For each interval of a, the intervals of b that overlap it are b[first:stop]: both
        # sets are sorted and disjoint, so two searchsorted calls find them all.
        # Positions as int32 where every count fits (pieces are fewer than the two sets'
        # intervals together): three arrays as long as a, which may have millions.
        index = np.int32 if len(a) + len(b) < 2**31 else np.int64
        first: Ints = np.searchsorted(b.end, a.start, side="right").astype(index)
        counts: Ints = np.searchsorted(b.start, a.end, side="left").astype(index)
        counts -= first
        np.maximum(counts, 0, out=counts)
        before: Ints = np.cumsum(counts, dtype=index)  # pieces up to each of a, itself included
        total = int(before[-1])
        # `BLOCK` pieces at a time, written in place: the positions each piece needs (8 bytes
        # each) are a block's, not all the pieces' (the step costs intersect one run of steps
        # with millions of kernels). Piece p lies in the interval i of a with
        # before[i - 1] <= p < before[i]. The same pieces, in the same order.
        start, end = np.empty(total), np.empty(total)
        kept = 0
        for first_piece in range(0, total, BLOCK):
            piece = np.arange(first_piece, min(first_piece + BLOCK, total))
            mine = np.searchsorted(before, piece, side="right")
            piece -= before[mine] - counts[mine]  # its place among its interval's pieces
            piece += first[mine]  # the interval of b it lies in
            piece_start = np.maximum(a.start[mine], b.start[piece])
            piece_end = np.minimum(a.end[mine], b.end[piece])
            del mine, piece
            keep = piece_end > piece_start
            if not keep.all():
                piece_start, piece_end = piece_start[keep], piece_end[keep]
            start[kept : kept + len(piece_start)] = piece_start
            end[kept : kept + len(piece_end)] = piece_end
            kept += len(piece_start)
        # The pieces come out sorted, and neither overlap nor touch: two pieces from the same
        # interval of a lie in intervals of b that do not touch, and the other way round.
        return IntervalSet(start[:kept], end[:kept])

    def subtract(self, other: IntervalSet) -> IntervalSet:
        return self.intersect(other.canonical().complement())

    def complement(self) -> IntervalSet:
        """Everything this (canonical) set does not cover, out to infinity on both sides."""
        infinity = np.array([np.inf])
        return IntervalSet(
            np.concatenate([-infinity, self.end]), np.concatenate([self.start, infinity])
        )

    def canonical(self) -> IntervalSet:
        """This set if it is already sorted, disjoint, non-empty and not touching, else `of`."""
        start, end = self.start, self.end
        if np.all(end > start) and np.all(start[1:] > end[:-1]):
            return self
        return IntervalSet.of(start, end)

    def union(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.of(
            np.concatenate([self.start, other.start]), np.concatenate([self.end, other.end])
        )

    def covered_within(self, lo: Floats, hi: Floats) -> Floats:
        """For each window [lo[i], hi[i]], how much of it this set covers."""
        if len(self) == 0:
            return np.zeros(len(lo))
        # The running total of lengths, one array as long as the set, made once for both ends.
        cumulative = np.empty(len(self) + 1)
        cumulative[0] = 0.0
        np.subtract(self.end, self.start, out=cumulative[1:])
        np.cumsum(cumulative[1:], out=cumulative[1:])
        return self._covered_before(hi, cumulative) - self._covered_before(lo, cumulative)

    def _covered_before(self, t: Floats, cumulative: Floats) -> Floats:
        index = np.searchsorted(self.start, t, side="right") - 1
        result = np.zeros(len(t))
        valid = index >= 0
        i = index[valid]
        partial = np.minimum(t[valid], self.end[i]) - self.start[i]
        result[valid] = cumulative[i] + partial
        return result
