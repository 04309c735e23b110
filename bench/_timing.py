"""Where a replication's time goes: its phases timed by wrapping the pipeline's functions while it runs,
and Spark's event log read for the jobs and tasks each phase ran."""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from cdclake.sinks.iceberg import tables
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.spark.ordering import Facts, Ordering
from cdclake.spark.planning import TablePlanner
from cdclake.spark.replicate import BatchReport, Replicator


@dataclass(frozen=True)
class Interval:
    phase: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


# (phase, owner, attribute): the functions a batch spends its time in, in the order a batch calls them.
# Each is called once per batch except MERGE (once per table and segment, inside "apply tables").
PHASES: tuple[tuple[str, Any, str], ...] = (
    ("load state", IcebergSink, "load_state"),
    ("record plan", IcebergSink, "record_plan"),
    ("decode + facts", Facts, "of"),
    ("dedupe", Ordering, "deduplicated"),
    ("plan tables", TablePlanner, "plan_tables"),  # the first use of the deduplicated changes
    ("changelog", IcebergSink, "append_changelog"),
    ("net changes", Replicator, "_net_changes"),
    ("apply tables", Replicator, "_apply_tables"),
    ("state commit", IcebergSink, "commit"),
)
MERGE = ("MERGE", tables, "merge_changes")
STEP = ("step", Replicator, "step")


class Timeline:
    """Wall-clock intervals of the pipeline's functions, recorded by wrapping them while it runs."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self._lock = threading.Lock()

    def _timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.time()  # the epoch, as Spark's event log and Iceberg's snapshots have it
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.intervals.append(Interval(phase, start, time.time()))

        return timed

    @contextlib.contextmanager
    def recording(self, phases: Sequence[tuple[str, Any, str]] = (*PHASES, MERGE, STEP)) -> Iterator[Timeline]:
        """The functions ``phases`` names timed meanwhile (default: the Iceberg sink's run, each step too)."""
        with contextlib.ExitStack() as stack:
            for phase, owner, name in phases:
                original = getattr(owner, name)
                wrapper = self._timed(phase, original)
                # Facts.of is a classmethod: the bound original stays bound, the wrapper must not bind again.
                replacement = staticmethod(wrapper) if isinstance(owner.__dict__[name], classmethod) else wrapper
                stack.enter_context(mock.patch.object(owner, name, replacement))
            yield self

    def of(self, phase: str, within: Interval | None = None) -> list[Interval]:
        return [i for i in self.intervals if i.phase == phase
                and (within is None or (within.start <= i.start and i.end <= within.end))]


@dataclass
class StepTimes:
    """One step of a run: its report (None for the last, which found nothing to read) and phases."""

    report: BatchReport | None
    seconds: float
    phases: dict[str, float]
    merges: int
    merge_seconds: float  # wall time with a MERGE under way


def step_times(timeline: Timeline, reports: Sequence[BatchReport]) -> list[StepTimes]:
    """The run's steps in order, each with its report: a step that decoded ran a batch and reported it (the
    last step of a run finds nothing to read and reports nothing)."""
    remaining = iter(reports)
    found = []
    for step in sorted(timeline.of("step"), key=lambda i: i.start):
        phases = {phase: sum(i.seconds for i in timeline.of(phase, step)) for phase, _, _ in PHASES}
        report = next(remaining) if timeline.of("decode + facts", step) else None
        merges = timeline.of("MERGE", step)
        found.append(StepTimes(report, step.seconds, phases, len(merges), union_seconds(merges)))
    return found


@dataclass
class SparkActivity:
    """What Spark's event log says the session did: its jobs (submitted to completed) and its tasks
    (launched to finished, with the executor's run time)."""

    jobs: list[Interval] = field(default_factory=list)
    tasks: list[tuple[Interval, float]] = field(default_factory=list)


def spark_activity(log_dir: Path) -> SparkActivity:
    activity = SparkActivity()
    submitted: dict[int, float] = {}
    for log in log_dir.iterdir():
        with log.open(encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                kind = event["Event"]
                if kind == "SparkListenerJobStart":
                    submitted[event["Job ID"]] = event["Submission Time"] / 1000
                elif kind == "SparkListenerJobEnd" and event["Job ID"] in submitted:
                    activity.jobs.append(Interval("job", submitted[event["Job ID"]], event["Completion Time"] / 1000))
                elif kind == "SparkListenerTaskEnd":
                    info, metrics = event["Task Info"], event.get("Task Metrics") or {}
                    task = Interval("task", info["Launch Time"] / 1000, info["Finish Time"] / 1000)
                    activity.tasks.append((task, metrics.get("Executor Run Time", 0) / 1000))
    return activity


def _segments(intervals: Iterable[Interval]) -> list[tuple[float, float]]:
    """The intervals merged into disjoint segments."""
    merged: list[tuple[float, float]] = []
    for interval in sorted(intervals, key=lambda i: i.start):
        if merged and interval.start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], interval.end))
        else:
            merged.append((interval.start, interval.end))
    return merged


def union_seconds(intervals: Iterable[Interval]) -> float:
    """Time during which at least one of the intervals was under way."""
    return sum(end - start for start, end in _segments(intervals))


def _overlap(first: list[tuple[float, float]], second: list[tuple[float, float]]) -> float:
    total = 0.0
    for start, end in first:
        for other_start, other_end in second:
            total += max(0.0, min(end, other_end) - max(start, other_start))
    return total


def _within(moment: float, segments: list[tuple[float, float]], slack: float = 0.001) -> bool:
    return any(start - slack <= moment <= end + slack for start, end in segments)


def overhead_table(timeline: Timeline, activity: SparkActivity, commits: Sequence[float]) -> str:
    """Per phase of the run: its Spark jobs, its tasks' run time, its Iceberg commits, and the time when no
    job ran (the driver planning queries, committing, or waiting on Py4J)."""
    lines = ["| phase | calls | seconds | Spark jobs | s with a job running | task s (run time) | Iceberg commits | "
             "s with no job running |", "| --- |" + " ---: |" * 7]
    phases = [name for name, _, _ in PHASES]
    phases.insert(phases.index("apply tables") + 1, "MERGE")
    for phase in phases:
        intervals = timeline.of(phase)
        segments = _segments(intervals)
        seconds = sum(end - start for start, end in segments)
        jobs = [job for job in activity.jobs if _within(job.start, segments, slack=0)]
        running = _overlap(segments, _segments(jobs))
        task_seconds = sum(run_time for task, run_time in activity.tasks if _within(task.start, segments, slack=0))
        made = sum(_within(moment, segments) for moment in commits)
        label = "of which MERGE (`merge_changes`)" if phase == "MERGE" else phase
        lines.append(f"| {label} | {len(intervals)} | {seconds:,.1f} | {len(jobs)} | {running:,.1f} | "
                     f"{task_seconds:,.1f} | {made} | {seconds - running:,.1f} |")
    return "\n".join(lines)
