"""The sample streams that ``cdclake decode --format F --sample`` decodes, one per format.

They are made by ``bench/make_samples.py`` from one set of events of our own (a small shop: several
tables, most MySQL types, inserts, updates and deletes, a DDL, watermarks), each encoded by its format's
codec with its codec's ``sample_options``. JSON formats are one file, ``<format>.jsonl``, one message a
line; binary formats are message files (see :mod:`cdclake.message_files`) named ``<format>-000001.value``
(and ``.key``) in this directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from cdclake.message_files import read_lines, read_message_directory
from cdclake.model import RawMessage

DIRECTORY = Path(__file__).resolve().parent


def lines_file(format_name: str) -> Path:
    return DIRECTORY / f"{format_name}.jsonl"


def message_file_prefix(format_name: str) -> str:
    return f"{format_name}-"


def sample_messages(format_name: str) -> Iterator[RawMessage]:
    """The messages of the format's sample stream, in order (none if the format has no sample yet)."""
    lines = lines_file(format_name)
    if lines.is_file():
        return read_lines(lines, name=lines.name)
    return read_message_directory(DIRECTORY, message_file_prefix(format_name))
