"""Row image readers compiled per column order, for the JSON formats whose images map column names to
values (Canal-JSON, Simple).

A stream repeats each table's columns in one order message after message, so a decoder compiles, per
order, one straight-line function that unpacks the image's values, reads each non-NULL one by its
column's statements, and builds the new image: no loop, lookup or call per column where a statement
does. Each format writes the statements that read variable ``v{i}`` in place, inline conversions and
checks that raise (anything) where the format's careful readers would not return the same value; the
decoder then reads the image again with the careful readers, which say what is wrong.

The code is made from the formats' fixed statements, integer literals and ``repr`` of strings only: a
column name, which comes from a message, appears as a string literal and never as code or a name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# values.is_tidb_datetime_text and values.is_time_of_day_text as expressions of the text in variable {v}
# (str.format templates), for statements that take those parsers' fast paths inline.
DATETIME_SHAPE = "(len({v}) == 19 or (21 <= len({v}) <= 26 and {v}[19] == '.')) and {v}[4:17:3] == '-- ::'"
TIME_SHAPE = "(len({v}) == 8 or (10 <= len({v}) <= 15 and {v}[8] == '.')) and {v}[2:6:3] == '::'"

# An image -> its values
ImageReader = Callable[[dict[str, Any]], dict[str, Any]]
# (old image, new image, the new image's values) -> the old image's values
OldImageReader = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]


def compile_reader(names: Sequence[str], reads: Sequence[list[str]], scope: dict[str, Any]) -> ImageReader:
    """The reader of images whose keys are ``names``, in order; ``reads[i]`` are the statements that
    read the non-NULL value of column ``names[i]`` in variable ``v{i}``, with the names of ``scope``."""
    body = ["def read(image):", f"    {_unpack('v', len(names))} = image.values()"]
    for i, read in enumerate(reads):
        body += [f"    if v{i} is not None:", *(f"        {line}" for line in read)]
    body += returned_image(names)
    reader: ImageReader = _function(body, "read", names, scope)
    return reader


def compile_old_reader(
    names: Sequence[str], reads: Sequence[list[str]], compared: Sequence[str | None], scope: dict[str, Any]
) -> OldImageReader:
    """As :func:`compile_reader`, for the old image of an update whose new image has the same keys and
    has been read already: where ``compared[i]`` names a type (``"str"``), a value of exactly that type
    equal to the new image's raw value takes the new image's value instead of being read.

    That is exact where the reads are pure functions of values of that type: equal input, equal value.
    Numbers must not be compared so: a JSON ``1`` equals ``true``, and ``0.0`` equals ``-0.0``, but
    neither pair reads the same. Columns whose reading is a type check are better read again."""
    count = len(names)
    body = [
        "def read_old(image, new, new_values):",
        f"    {_unpack('v', count)} = image.values()",
        f"    {_unpack('n', count)} = new.values()",
        f"    {_unpack('a', count)} = new_values.values()",
    ]
    for i, (read, kind) in enumerate(zip(reads, compared, strict=True)):
        body.append(f"    if v{i} is not None:")
        if kind not in _COMPARED:
            raise ValueError(f"values of {kind!r} cannot be compared for equal reads")
        if kind is None:
            body += [f"        {line}" for line in read]
        else:
            body += [f"        if type(v{i}) is {kind} and v{i} == n{i}:", f"            v{i} = a{i}", "        else:"]
            body += [f"            {line}" for line in read]
    body += returned_image(names)
    reader: OldImageReader = _function(body, "read_old", names, scope)
    return reader


# The types whose values compile_old_reader may compare (None: none), as they are named in its code.
_COMPARED = (None, "str", "dict")


def _unpack(prefix: str, count: int) -> str:
    """The target of unpacking ``count`` values into ``{prefix}0`` ...; ``()`` takes none."""
    return "".join(f"{prefix}{i}, " for i in range(count)) or "()"


# CPython builds a dict display of constant keys in one instruction up to this many items, and a longer
# one chunk by chunk, each chunk a dict merged into the first: dearer than storing the rest one by one
# (a third dearer at 40 columns).
_DISPLAYED_ITEMS = 16


def returned_image(names: Sequence[str]) -> list[str]:
    """The statements, in a function's body, that return the dict of ``names`` (in order) to the values
    in variables ``v0``, ``v1`` ...."""
    head = ", ".join(f"{name!r}: v{i}" for i, name in enumerate(names[:_DISPLAYED_ITEMS]))
    stores = [f"    decoded[{name!r}] = v{i}" for i, name in enumerate(names) if i >= _DISPLAYED_ITEMS]
    return [f"    decoded = {{{head}}}", *stores, "    return decoded"]


def _function(body: list[str], name: str, names: Sequence[str], scope: dict[str, Any]) -> Any:
    namespace = dict(scope)
    exec(compile("\n".join(body), f"<image reader {names[0] if names else ''}...>", "exec"), namespace)
    return namespace[name]
