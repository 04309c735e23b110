"""The loop of a batch job (replication, transcoding): batch after batch, until caught up or stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

Report = TypeVar("Report")


def run_batches(step: Callable[[], Report | None], once: bool, interval_s: float,
                stop: threading.Event | None, on_batch: Callable[[Report], None] | None) -> list[Report]:
    """Call ``step`` until it finds nothing to do (``once``) or until ``stop`` is set, waiting
    ``interval_s`` between calls that found nothing; the reports of the batches run. A stop request
    waits for the batch under way to commit."""
    reports = []
    stop = stop or threading.Event()
    while not stop.is_set():
        report = step()
        if report is not None:
            reports.append(report)
            if on_batch is not None:
                on_batch(report)
            continue
        if once:
            break
        stop.wait(interval_s)
    return reports
