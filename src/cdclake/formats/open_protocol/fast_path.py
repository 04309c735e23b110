"""The decoder's fast path: per row shape, straight-line code compiled once that reads an image (and an
update's old image) with the converters' own fast paths inline, returning None wherever the careful
column-by-column path must decide.
"""

from __future__ import annotations

import binascii
import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdclake.formats.compiled import DATETIME_SHAPE, TIME_SHAPE, returned_image
from cdclake.formats.limits import MAX_COMPILED_COLUMNS
from cdclake.formats.open_protocol.text import _UNICODE_ESCAPE
from cdclake.formats.open_protocol.values import (
    _DECIMAL_RE,
    _base64_bytes,
    _base64_text,
    _ColumnDecoding,
    _date,
    _datetime,
    _decimal,
    _quoted_bytes,
    _text,
    _time,
)
from cdclake.formats.open_protocol.wire import _FLOAT32, _U64_MAX, _YEAR_MAX, _Invalid
from cdclake.types import Family
from cdclake.values import TIME_OF_DAY_DATE, TIME_OF_DAY_MIDNIGHT


def _compile_shape(
    names: tuple[str, ...],
    codes: list[int],
    flags: list[int | None],
    decodings: list[_ColumnDecoding],
    tz: dt.tzinfo,
) -> tuple[Callable[[dict[str, Any]], dict[str, Any] | None] | None, Any]:
    """A function from an image with these column names to its values, or to None where a column does
    not fit the shape (another type code or flags, a malformed column or value) or a value needs the
    careful converters (a zero date): the caller then decodes column by column, which says what is
    wrong. Generated once per shape as straight-line code, so that no loop, tuple unpacking or
    converter call is paid per column where a type check does.

    Every value it returns is the one the column's converter returns: the inline checks are the
    converters' own fast paths, and anything they do not accept returns None.

    The second function is the shape's ``old_values`` (see _Shape); both are None where no image can
    take the fast path.
    """
    if any(flag is None for flag in flags):  # a legacy column without "f": the careful path decodes
        return None, None
    if not names or len(names) > MAX_COMPILED_COLUMNS:
        # Too wide an image would take seconds to compile; the careful path reads it in linear time.
        # An empty image ("p":{} when no column changed, with only-output-updated-columns): the code
        # below needs a column to unpack and check, and the careful path reads none at no cost.
        return None, None
    namespace: dict[str, Any] = {
        "_Invalid": _Invalid,
        "Decimal": Decimal,
        "DECIMAL": _DECIMAL_RE.fullmatch,
        "date_iso": dt.date.fromisoformat,
        "datetime_iso": dt.datetime.fromisoformat,
        "TIME_OF_DAY_DATE": TIME_OF_DAY_DATE,
        "MIDNIGHT": TIME_OF_DAY_MIDNIGHT,
        "f32_pack": _FLOAT32.pack,
        "f32_unpack": _FLOAT32.unpack,
        "a2b_base64": binascii.a2b_base64,
        "unicode_escape": _UNICODE_ESCAPE,
        "QUOTE": '"',
        "NEWLINE": "\n",
        "BACKSLASH": "\\",
        "HEX_ESCAPE": "\\x",
    }
    checks, lines, old_lines = [], [], []
    for i, (code, flag, decoding) in enumerate(zip(codes, flags, decodings, strict=True)):
        # Identity, not equality: orjson returns CPython's shared small ints, which type codes and
        # common flags are, and a JSON true must not pass for the 1 it equals. Anything else, an
        # uncommon large flag included, takes the careful path.
        namespace[f"T{i}"], namespace[f"F{i}"] = code, flag
        checks.append(f'c{i}["t"] is not T{i} or c{i}["f"] is not F{i}')
        conversion = _inline_conversion(i, decoding, tz, namespace)
        lines += [f'v{i} = c{i}["v"]', *conversion]
        if _reusable(decoding):
            # Equal text converts to an equal value (the converters are pure), and to the same type:
            # only strings are compared, so that no JSON true passes for a 1 or 0.0 for a -0.0.
            old_lines += [
                f'v{i} = c{i}["v"]',
                f'if type(v{i}) is str and v{i} == n{i}["v"]:',
                f"    v{i} = new_values[{names[i]!r}]",
                "else:",
                *(f"    {line}" for line in conversion),
            ]
        else:
            old_lines += [f'v{i} = c{i}["v"]', *conversion]
    columns = "".join(f"c{i}, " for i in range(len(names)))
    check = [f"        if {' or '.join(checks)}:", "            return None"]
    catch = ["    except (KeyError, TypeError, ValueError, ArithmeticError, _Invalid):", "        return None"]
    result = returned_image(names)
    body = [
        "def values(image):",
        "    try:",
        f"        {columns}= image.values()",
        *check,
        *(f"        {line}" for line in lines),
        *catch,
        *result,
        "def old_values(image, new, new_values):",
        "    try:",
        f"        {columns}= image.values()",
        f"        {columns.replace('c', 'n')}= new.values()",
        *check,
        *(f"        {line}" for line in old_lines),
        *catch,
        *result,
    ]
    # The text is ours: column names appear in it only as repr literals.
    exec(compile("\n".join(body), f"<open protocol shape {names[:3]}...>", "exec"), namespace)
    return namespace["values"], namespace["old_values"]


# Families whose JSON values are numbers, or strings passed on as they are: checked, not converted.
_CHECKED_FAMILIES = frozenset(
    (Family.INTEGER, Family.BIT, Family.YEAR, Family.ENUM, Family.SET, Family.FLOAT, Family.DOUBLE)
)


def _reusable(decoding: _ColumnDecoding) -> bool:
    """Whether "p" takes a column's value from "u" where the text is the same: where converting costs."""
    mysql_type = decoding.mysql_type
    return mysql_type is not None and mysql_type.family not in _CHECKED_FAMILIES and decoding.convert is not _text


def _inline_conversion(i: int, decoding: _ColumnDecoding, tz: dt.tzinfo, namespace: dict[str, Any]) -> list[str]:
    """The lines that turn a non-null ``v{i}`` into its value as ``decoding.convert`` does."""
    mysql_type, convert = decoding.mysql_type, decoding.convert
    namespace[f"C{i}"] = convert
    call = [f"if v{i} is not None:", f"    v{i} = C{i}(v{i})"]
    if mysql_type is None:
        return call
    family = mysql_type.family
    bounds = None
    if family is Family.INTEGER:
        bounds = mysql_type.integer_range()
    elif family in (Family.BIT, Family.ENUM, Family.SET):
        bounds = (0, _U64_MAX)
    elif family is Family.YEAR:
        bounds = (0, _YEAR_MAX)
    if bounds is not None:
        namespace[f"L{i}"], namespace[f"H{i}"] = bounds
        return [f"if v{i} is not None and (type(v{i}) is not int or not L{i} <= v{i} <= H{i}):", "    return None"]
    if convert is _text:
        return [f"if v{i} is not None and type(v{i}) is not str:", "    return None"]
    if family is Family.DOUBLE:
        return [f"if v{i} is not None and type(v{i}) is not float:", f"    v{i} = C{i}(v{i})"]
    if convert is _decimal:
        # Text that Decimal writes back unchanged, finite and without an exponent, is what _DECIMAL_RE
        # admits (str writes "-"?digits with digits on both sides of any "."); cheaper than the pattern.
        # Decimal refuses other text with InvalidOperation, an ArithmeticError: the careful path says why.
        return [
            f"if v{i} is not None:",
            f"    d = Decimal(v{i})",
            f'    if str(d) != v{i} or not d.is_finite() or "E" in v{i} or "e" in v{i}:',
            "        return None",
            f"    v{i} = d",
        ]
    if family is Family.FLOAT:
        return [
            f"if v{i} is not None:",
            # to_float32, inline; OverflowError (an ArithmeticError) past the float32 range
            f"    v{i} = f32_unpack(f32_pack(v{i}))[0] if type(v{i}) is float or type(v{i}) is int else C{i}(v{i})",
        ]
    if convert is _quoted_bytes:
        # go_unquote's first two cases: nothing to unescape, or only \xNN escapes (every backslash
        # starts one), which unicode_escape reads as _ONE_BYTE_ESCAPES_RE's text; it raises
        # UnicodeDecodeError, a ValueError, where two hex digits do not follow.
        return [
            f"if v{i} is not None:",
            f"    if type(v{i}) is not str or QUOTE in v{i} or NEWLINE in v{i}:",
            f"        v{i} = C{i}(v{i})",
            f"    elif BACKSLASH not in v{i}:",
            f"        v{i} = v{i}.encode()",
            f"    elif v{i}.count(BACKSLASH) == v{i}.count(HEX_ESCAPE):",
            f'        v{i} = unicode_escape(v{i}.encode())[0].encode("latin-1")',
            "    else:",
            f"        v{i} = C{i}(v{i})",
        ]
    if convert is _base64_bytes or convert is _base64_text:
        decode = ".decode()" if convert is _base64_text else ""
        return [
            f"if v{i} is not None:",
            f"    v{i} = a2b_base64(v{i}, strict_mode=True){decode} if type(v{i}) is str else C{i}(v{i})",
        ]
    if convert is _time:
        # parse_time's fast path (the shape of types.is_time_of_day_text), which _time agrees with;
        # hours past 23 or a field past 59 raise ValueError, a sign or three-digit hours fail the
        # shape: all go to _time.
        parse, read = f"datetime_iso(TIME_OF_DAY_DATE + v{i})", f"_x - MIDNIGHT if _x.tzinfo is None else C{i}(v{i})"
        return _iso_or_careful(i, TIME_SHAPE.format(v=f"v{i}"), parse, read)
    if convert is _date:
        return _iso_or_careful(i, f"len(v{i}) == 10 and v{i}[4:8:3] == '--'", f"date_iso(v{i})")
    datetime_shape = DATETIME_SHAPE.format(v=f"v{i}")
    if convert is _datetime:
        return _iso_or_careful(i, datetime_shape, f"datetime_iso(v{i})", f"_x if _x.tzinfo is None else C{i}(v{i})")
    if family is Family.TIMESTAMP and tz is dt.UTC:  # see _timestamp_converter's convert_utc
        return _iso_or_careful(i, datetime_shape, f'datetime_iso(v{i} + "+00:00")')
    return call


def _iso_or_careful(i: int, admitted: str, parse: str, read: str = "_x") -> list[str]:
    """Text of a shape the column's converter reads with fromisoformat, parsed so into ``_x`` and taken
    as ``read``; text fromisoformat refuses (a zero date, hours past 23) and any other text go to the
    converter, as in _date."""
    return [
        f"if v{i} is not None:",
        f"    if type(v{i}) is str and {admitted}:",
        "        try:",
        f"            _x = {parse}",
        "        except ValueError:",
        f"            v{i} = C{i}(v{i})",
        "        else:",
        f"            v{i} = {read}",
        "    else:",
        f"        v{i} = C{i}(v{i})",
    ]
