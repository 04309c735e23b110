"""Planning a batch's offset ranges so that the partitions advance together in the order they carry."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cdclake.sources.ranges import OffsetRange, Pace, PaceTracker, PartitionExtent, plan_ranges

HELD = {("t", 0): PartitionExtent(0, 1000), ("t", 1): PartitionExtent(0, 1000)}


def test_the_budget_takes_partitions_of_different_traffic_to_one_mark() -> None:
    # p1 carries twice the records of p0 per unit of the order: T = 200 reaches 100 + 200 records.
    paces = {("t", 0): Pace(100, 1.0), ("t", 1): Pace(100, 2.0)}
    assert plan_ranges(HELD, {}, max_records=300, paces=paces) == [OffsetRange("t", 0, 0, 100),
                                                                   OffsetRange("t", 1, 0, 200)]


def test_a_partition_ahead_waits_until_the_others_reach_it() -> None:
    paces = {("t", 0): Pace(100, 1.0), ("t", 1): Pace(500, 1.0)}
    assert plan_ranges(HELD, {}, max_records=300, paces=paces) == [OffsetRange("t", 0, 0, 300)]
    # Past p1's mark, both read: T = 600 takes p0 500 and p1 100 of the 600.
    assert plan_ranges(HELD, {}, max_records=600, paces=paces) == [OffsetRange("t", 0, 0, 500),
                                                                   OffsetRange("t", 1, 0, 100)]


def test_what_the_partitions_hold_bounds_the_shares_and_the_rest_of_the_budget_goes_to_the_others() -> None:
    extents = {("t", 0): PartitionExtent(0, 50), ("t", 1): PartitionExtent(0, 1000)}
    paces = {("t", 0): Pace(100, 1.0), ("t", 1): Pace(100, 1.0)}
    assert plan_ranges(extents, {}, max_records=300, paces=paces) == [OffsetRange("t", 0, 0, 50),
                                                                      OffsetRange("t", 1, 0, 250)]
    assert plan_ranges(extents, {("t", 1): 990}, max_records=300, paces=paces) == [OffsetRange("t", 0, 0, 50),
                                                                                   OffsetRange("t", 1, 990, 1000)]


def test_without_the_pace_of_every_partition_with_records_left_the_budget_is_shared_evenly() -> None:
    paces = {("t", 0): Pace(100, 1.0)}
    assert plan_ranges(HELD, {}, max_records=300, paces=paces) == [OffsetRange("t", 0, 0, 150),
                                                                   OffsetRange("t", 1, 0, 150)]


def test_the_tracker_learns_records_per_unit_and_counts_a_batch_that_moved_no_mark_with_the_next() -> None:
    tracker = PaceTracker()
    tracker.observe(("t", 0), 0, None)
    tracker.observe(("t", 0), 0, 100)
    assert tracker.paces() == {}
    tracker.observe(("t", 0), 50, 150)
    assert tracker.paces() == {("t", 0): Pace(150, 1.0)}
    tracker.observe(("t", 0), 80, 150)
    assert tracker.paces() == {("t", 0): Pace(150, 1.0)}
    tracker.observe(("t", 0), 110, 170)
    assert tracker.paces() == {("t", 0): Pace(170, 3.0)}


def _waiting_after_batches(aligned: bool, batches: int = 40, budget: int = 1000) -> list[int]:
    """A backlog in which partition 3 carries twice the records per unit of time of the others, a
    watermark every unit (the last record of the unit): after each batch, the records read above the
    lowest partition's mark, which a consumer must keep until every partition has passed them. The
    tracker hears each batch's end, and the first watermark each partition's range holds, as the
    Replicator tells it."""
    density = {("t", p): 2 if p == 3 else 1 for p in range(4)}
    extents = {tp: PartitionExtent(0, 10**9) for tp in density}
    positions = dict.fromkeys(density, 0)
    tracker, waiting = PaceTracker(), []
    for _ in range(batches):
        for tp, offset in positions.items():
            tracker.observe(tp, offset, offset // density[tp] if offset else None)
        for planned in plan_ranges(extents, positions, budget, tracker.paces() if aligned else None):
            tp = (planned.topic, planned.partition)
            first_unit = planned.start // density[tp] + 1
            if first_unit * density[tp] <= planned.end:
                tracker.observe(tp, first_unit * density[tp], first_unit)
            positions[tp] = planned.end
        resolved = min(offset // density[tp] for tp, offset in positions.items())
        waiting.append(sum(offset - resolved * density[tp] for tp, offset in positions.items()))
    return waiting


def test_aligned_batches_keep_what_waits_within_a_batch_where_even_shares_let_it_grow_with_the_backlog() -> None:
    even, aligned = _waiting_after_batches(aligned=False), _waiting_after_batches(aligned=True)
    assert even[-1] > 10 * 1000 and even[-1] > even[len(even) // 2]
    assert max(aligned[1:]) <= 1000


def test_a_backlog_that_fits_the_budget_is_read_whole_whatever_the_rounding_of_large_marks() -> None:
    # TiCDC's ts are near 2**59, where a float steps by 64: a share computed as pace times marks
    # would leave the last record unread, and a plan of nothing would end a --once run before it.
    extents = {("t", 0): PartitionExtent(0, 8), ("t", 1): PartitionExtent(0, 10)}
    paces = {("t", 0): Pace(449460595983621128, 0.01), ("t", 1): Pace(449460595166543927, 1e-6)}
    assert plan_ranges(extents, {}, max_records=1000, paces=paces) == [OffsetRange("t", 0, 0, 8),
                                                                       OffsetRange("t", 1, 0, 10)]


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 2**62), st.floats(1e-9, 1e3)), min_size=1, max_size=8),
       st.integers(1, 20_000))
def test_an_aligned_plan_takes_the_whole_budget_or_the_whole_backlog_and_never_more_than_a_partition_holds(
        partitions: list[tuple[int, int, float]], budget: int) -> None:
    extents = {("t", p): PartitionExtent(0, held) for p, (held, _, _) in enumerate(partitions)}
    paces = {("t", p): Pace(mark, rate) for p, (_, mark, rate) in enumerate(partitions)}
    plan = plan_ranges(extents, {}, max_records=budget, paces=paces)
    assert sum(r.size for r in plan) == min(budget, sum(held for held, _, _ in partitions))
    assert all(r.size > 0 and r.end <= extents[(r.topic, r.partition)].high for r in plan)
