"""BENCHMARKS.md holds one section per benchmark script, each between its own start and end markers;
each section says on what machine it ran and how busy it was; what a run cost in CPU is counted here too."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path


def write_section(path: Path, section: str, start: str, end: str) -> None:
    """Put ``section`` (which begins with ``start`` and ends with ``end``) into ``path``, replacing an
    earlier run's and leaving the rest of the file alone."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """How the script was run, for its section: ``argv``, or the process's own arguments."""
    return f"python3 bench/{script}" + "".join(f" {a}" for a in (argv or sys.argv[1:]))


def publish(section: str, path: Path, start: str, end: str, write: bool) -> None:
    """Print ``section`` and, with ``write``, put it into ``path`` between its markers."""
    print(section)
    if write:
        write_section(path, section, start, end)
        print(f"\nwritten to {path}")


def machine() -> str:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kilobytes = int(meminfo.read_text().split()[1])
        memory = f", {kilobytes / 2**20:.0f} GiB"
    return f"{model}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}"


def load_average() -> str:
    """The 1-minute load average: other processes on the machine compete with the run."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "unknown"


_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds() -> float:
    """CPU seconds (user and system, children waited for included) of this process and every descendant."""
    parents: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            stats[int(entry)] = fields
            parents.setdefault(int(fields[1]), []).append(int(entry))
    total, stack = 0.0, [os.getpid()]
    while stack:
        pid = stack.pop()
        if pid in stats:
            total += sum(int(value) for value in stats[pid][11:15]) / _TICK
        stack.extend(parents.get(pid, []))
    return total
