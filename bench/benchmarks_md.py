"""BENCHMARKS.md holds one section per benchmark script, each between its own start and end markers."""

from __future__ import annotations

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
