"""``cdclake replicate`` run as a machine runs it: in a process of its own, which may die at any moment.

:func:`run_replicate` starts ``cdclake replicate --config FILE --once`` in a new process group (Spark's
JVM is a child of it) and either lets it run, or has it die:

* at a named kill point (``CDCLAKE_KILL_AT=<point>[:<n>]``, :mod:`cdclake.spark.killpoints`): the
  Python driver SIGKILLs itself there, and its JVM must go by itself;
* at a moment of the harness's choosing (:class:`KillAfter`): SIGKILL to the whole process group, as
  when the machine dies.

Every process of a run carries a marker in its environment, so whatever of it outlives the run — a
JVM, a PySpark daemon (which puts itself in a group of its own) — is found, reported as a survivor,
and ended by its process id.

:func:`left_behind` reads what a death left in the Iceberg metadata (plain files in a Hadoop
catalog): whether a batch was planned and not committed, and whether any of its writes committed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.jvm import short_lived_jvm

MARKER = "CDCLAKE_TEST_RUN"
KILLED = -signal.SIGKILL
_GRACE_S = 20.0  # how long a run's JVM and Python daemon may take to notice their driver died


@dataclass(frozen=True)
class KillAfter:
    """SIGKILL the run's process group ``delay_s`` seconds after ``ready()`` first holds (polled)."""

    delay_s: float
    ready: Callable[[], bool] = lambda: True


@dataclass
class Run:
    """How one run of the job ended."""

    returncode: int
    seconds: float
    log: str
    survivors: list[str]
    kill: str | None

    @property
    def killed(self) -> bool:
        return self.returncode == KILLED


def run_replicate(config: Path, log: Path, kill_at: str | None = None, kill_after: KillAfter | None = None,
                  timeout_s: float = 900.0) -> Run:
    """Run ``cdclake replicate --config config --once`` to its end or its death; stderr goes to
    ``log`` (appended)."""
    marker = uuid.uuid4().hex
    env = short_lived_jvm({name: value for name, value in os.environ.items() if name != "CDCLAKE_KILL_AT"})
    env[MARKER] = marker
    if kill_at is not None:
        env["CDCLAKE_KILL_AT"] = kill_at
    command = [sys.executable, "-c", "from cdclake.cli import main; main()", "replicate", "--config", str(config),
               "--once"]
    started = time.monotonic()
    with log.open("ab") as err:
        err.write(f"\n--- run {marker} kill_at={kill_at} kill_after={kill_after}\n".encode())
        err.flush()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env,
                                   start_new_session=True)
        try:
            returncode = _wait(process, kill_after, timeout_s)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    seconds = time.monotonic() - started
    survivors = _survivors(marker)
    kill = kill_at if kill_at is not None else (f"{kill_after.delay_s:.2f}s" if kill_after is not None else None)
    return Run(returncode, seconds, log.read_text(errors="replace")[-4000:], survivors, kill)


def _wait(process: subprocess.Popen[bytes], kill_after: KillAfter | None, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    due: float | None = None
    while process.poll() is None:
        now = time.monotonic()
        if now > deadline:
            raise TimeoutError(f"cdclake replicate ran more than {timeout_s:.0f} s")
        if kill_after is not None:
            if due is None and kill_after.ready():
                due = now + kill_after.delay_s
            if due is not None and now >= due:
                os.killpg(process.pid, signal.SIGKILL)  # the driver, its JVM, and anything else in the group
                return process.wait()
        time.sleep(0.05)
    return process.returncode


def _survivors(marker: str) -> list[str]:
    """The processes of the run still alive once the grace period is over, each then ended."""
    deadline = time.monotonic() + _GRACE_S
    while True:
        alive = _marked(marker)
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    described = []
    for pid in alive:
        described.append(f"{pid} {_command_line(pid)}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return described


def _marked(marker: str) -> list[int]:
    wanted = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if wanted in environment.split(b"\0"):
            found.append(int(entry.name))
    return found


def _command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"


# --- what a death left behind -------------------------------------------------------------------------


def _current_snapshot(table_dir: Path) -> dict[str, str] | None:
    """The summary of a Hadoop-catalog table's current snapshot, None if it has none (or no table)."""
    versions = sorted(table_dir.glob("metadata/v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    if not versions:
        return None
    metadata = json.loads(versions[-1].read_text())
    current = metadata.get("current-snapshot-id")
    for snapshot in metadata.get("snapshots", []):
        if snapshot["snapshot-id"] == current:
            summary: dict[str, str] = snapshot.get("summary", {})
            return summary
    return None


def state_version(warehouse: Path, namespace: str) -> int:
    """How many metadata versions the job's state table has: it grows when a batch is planned or committed."""
    return len(list((warehouse / namespace / "state").glob("metadata/v*.metadata.json")))


def left_behind(warehouse: Path, namespace: str, prefix: str) -> str:
    """Where a death left the job: ``between batches`` (the last state commit is the last batch's
    end), ``planned`` (a batch's ranges recorded, nothing of it written), or ``applying`` (a batch
    planned, and its changelog or at least one of its tables committed)."""
    state = _current_snapshot(warehouse / namespace / "state")
    if state is None or state.get("operation") != "append":
        return "between batches"  # a plan is appended; a batch's end replaces the state whole
    planned = _last_committed_batch(warehouse / namespace / "state") + 1
    # The job's own tables and its mirrors: every namespace of the job starts with its prefix.
    for table_dir in (d for n in warehouse.glob(f"{prefix}_*") for d in n.iterdir()):
        summary = _current_snapshot(table_dir)
        if summary is not None and summary.get("cdclake.batch") == str(planned):
            return "applying"
    return "planned"


def _last_committed_batch(state_dir: Path) -> int:
    versions = sorted(state_dir.glob("metadata/v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    metadata = json.loads(versions[-1].read_text())
    batches = [int(s["summary"]["cdclake.batch"]) for s in metadata.get("snapshots", [])
               if "cdclake.batch" in s.get("summary", {})]
    return max(batches, default=0)
