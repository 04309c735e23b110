"""A row message's ``data`` and ``old`` as (before, after) images: through the compiled readers where
they fit, else column by column with the converters, which say which column is wrong and why.
"""

from __future__ import annotations

from typing import Any

from cdclake.formats.canal_json.fast_path import _Columns, _RowReader
from cdclake.formats.canal_json.values import _CONVERSION_ERRORS, Converter
from cdclake.formats.canal_json.wire import _Invalid, _json_kind, _Untyped
from cdclake.model import Op


def _images(
    op: Op, data: list[Any], old: list[Any] | None, columns: _Columns
) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """(before, after) of each row of ``data``."""
    images: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    for index, row in enumerate(data):
        reader = columns.reader_of(row) if row.__class__ is dict else None
        image = _read_row(row, reader, columns.converters, index)
        if op is Op.INSERT:
            images.append((None, image))
        elif op is Op.DELETE:
            # Since v5.4.0 TiCDC sends old=null; before, old repeated data: either way data is the row.
            images.append((image, None))
        else:
            old_row = old[index] if old is not None and index < len(old) else None
            images.append((_before_image(old_row, row, image, columns.converters, reader, index), image))
    return images


def _read_row(row: Any, reader: _RowReader | None, converters: dict[str, Converter], index: int) -> dict[str, Any]:
    if reader is None:
        return _convert_row(row, converters, index)
    try:
        return reader.read(row)
    except Exception:  # whatever it is, the careful conversion says which column and why
        return _convert_row(row, converters, index)


def _convert_row(row: Any, converters: dict[str, Converter], index: int) -> dict[str, Any]:
    if row.__class__ is not dict:
        raise _Invalid(f"data[{index}] must be an object of column values, got {_json_kind(row)}")
    image: dict[str, Any] = {}
    name = ""
    try:
        for name, raw in row.items():
            image[name] = None if raw is None else converters[name](raw)
    except (KeyError, *_CONVERSION_ERRORS) as exc:
        raise _row_error(exc, converters, "data", index, name) from exc
    return image


def _before_image(
    old_row: Any,
    row: dict[str, Any],
    image: dict[str, Any],
    converters: dict[str, Converter],
    reader: _RowReader | None,
    index: int,
) -> dict[str, Any]:
    """An UPDATE's before image: the row ``data`` gives, overlaid with its ``old``. A partial ``old``
    lists the columns that changed, a null in it an old NULL; the columns it leaves out kept their
    value. ``"old":[null]`` (tiflow#4597) and a missing ``old`` say no more than that."""
    if old_row is None:
        return dict(image)
    if old_row.__class__ is not dict:
        raise _Invalid(f"old[{index}] must be an object of column values, got {_json_kind(old_row)}")
    if reader is not None and tuple(old_row) == reader.keys:  # a whole old image, as TiCDC sends by default
        try:
            return reader.read_old(old_row, row, image)
        except Exception:  # whatever it is, the careful loop says which column and why
            return _before_image_carefully(old_row, row, image, converters, index)
    try:
        # The loop below, as one comprehension; whatever it raises (a column missing from data too),
        # the loop says which column and why, or reads the row as it does.
        before = {
            name: None
            if raw is None
            else image[name]
            if raw.__class__ is str and raw == row[name]
            else converters[name](raw)
            for name, raw in old_row.items()
        }
    except Exception:
        before = _before_image_carefully(old_row, row, image, converters, index)
    return before if before.keys() == image.keys() else {**image, **before}


def _before_image_carefully(
    old_row: dict[str, Any], row: dict[str, Any], image: dict[str, Any], converters: dict[str, Converter], index: int
) -> dict[str, Any]:
    before: dict[str, Any] = {}
    name = ""
    try:
        for name, raw in old_row.items():
            if raw is None:
                before[name] = None
            elif raw.__class__ is str and raw == row.get(name):
                before[name] = image[name]  # unchanged (TiCDC sends every column): data's value, converted once
            else:
                before[name] = converters[name](raw)
    except (KeyError, *_CONVERSION_ERRORS) as exc:
        raise _row_error(exc, converters, "old", index, name) from exc
    return before


def _row_error(exc: Exception, converters: dict[str, Converter], field: str, index: int, name: str) -> Exception:
    if isinstance(exc, KeyError) and name not in converters:
        return _Untyped(name)
    return _Invalid(f"{field}[{index}] column {name!r}: {exc}")
