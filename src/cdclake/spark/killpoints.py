"""Named points of a batch where a crash test can kill the job outright, to prove that a restart loses
nothing and applies nothing twice.

``CDCLAKE_KILL_AT=<point>[:<n>]`` sends the process SIGKILL the ``n``-th time (default: the first) it
reaches ``<point>``: no ``finally``, no flush, no commit, exactly as a machine that dies. Unset, a point
costs one dictionary lookup. The points, in the order a batch reaches them:

================= ====================================================================
planned           the batch's ranges are recorded in the state table; nothing read yet
decoded           the ranges are decoded and the batch's facts collected
changelog         the changelog append is committed; no table changed yet
table-merged      one MERGE (or TRUNCATE) of one table, or of its history table, is committed
ddl-applied       one DDL's statements on one table are done
tables-applied    every table is applied; the state (positions) not committed yet
committed         the state after the batch is committed
================= ====================================================================
"""

from __future__ import annotations

import os
import signal
import threading

KILL_AT_VARIABLE = "CDCLAKE_KILL_AT"
POINTS = ("planned", "decoded", "changelog", "table-merged", "ddl-applied", "tables-applied", "committed")

_reached: dict[str, int] = {}
_lock = threading.Lock()


def _target() -> tuple[str, int] | None:
    setting = os.environ.get(KILL_AT_VARIABLE)
    if not setting:
        return None
    point, _, count = setting.partition(":")
    if point not in POINTS:
        raise ValueError(f"{KILL_AT_VARIABLE}={setting!r}: the point is one of {', '.join(POINTS)}")
    return point, int(count or 1)


def reached(point: str) -> None:
    """Kill the process here if ``CDCLAKE_KILL_AT`` names this point and its count is reached."""
    target = _target()
    if target is None or target[0] != point:
        return
    with _lock:
        _reached[point] = _reached.get(point, 0) + 1
        if _reached[point] == target[1]:
            os.kill(os.getpid(), signal.SIGKILL)
