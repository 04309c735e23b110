"""Values for every MySQL column type the simulator uses: mostly ordinary ones, sometimes an edge.

:func:`value_maker` builds, once per column type, a function from a ``random.Random`` to one non-NULL
value of that type, exactly as TiDB would hand it to TiCDC (the Python forms of :mod:`cdclake.types`).
Edges come with probability ``edge_ratio``: the ends of every integer range (bigint unsigned
18446744073709551615), decimal(65,30) at its widest, every byte value 0-255, zero dates, TIME at
±838:59:59 and with fractions, the TIMESTAMP range's ends, enum index 0 (``''``), the empty set, JSON
``null`` text, the strings ``"null"`` and ``""``, control characters and astral-plane characters.

What a value must be for MySQL to give it back unchanged, and so what is generated:

* CHAR values have no trailing spaces (MySQL strips them on read); BINARY(n) values are n bytes (MySQL
  pads them with zero bytes); VARCHAR, TEXT and BLOB values fit their length.
* DECIMAL(p,s) values have exactly s fraction digits, as MySQL stores them.
* FLOAT values are float32 values; no FLOAT or DOUBLE is NaN, an infinity or -0 (MySQL has none, and
  JSON formats read ``-0`` back as 0).
* DATETIME, TIMESTAMP and TIME values have no digits past their column's fsp.

Not generated: GEOMETRY (TiDB has none, and no TiCDC format carries it) and VECTOR (TiDB's own type,
not MySQL's); zero TIMESTAMPs (MySQL's ``0000-00-00 00:00:00`` TIMESTAMP is NULL-like and TiCDC's
formats treat it differently from a zero DATETIME).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, to_float32

ValueMaker = Callable[[random.Random], Any]


def below(rng: random.Random, n: int) -> int:
    """A whole number in [0, n), for n up to 2**53: ``rng.randrange`` costs five times as much, and
    the simulator draws several numbers per value."""
    return int(rng.random() * n)

_WORDS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "Zoë", "Ångström", "王小明", "東京", "Łódź", "naïve", "façade", "Ελλάδα", "Москва", "🙂",
)
_EDGE_TEXTS = (
    "",
    "null",
    "NULL",
    "it's \"quoted\" \\ back",
    "line\nbreak\ttab\rreturn",
    "nul\x00byte",
    "<script>&amp;</script>",
    "\u2028\u2029 separators",
    "𝄞 astral 😀",
    " leading space",
)
_JSON_EDGES = (
    "null",
    "[]",
    "{}",
    '"a string"',
    "0",
    "-1.5e300",
    "18446744073709551615",
    '{"nested":{"list":[1,true,null,"x"]},"unicode":"Zoë 王"}',
    '[{"k":"v"},[],{}]',
)
_BIG_BYTES = bytes(range(256))

_TIME_LIMIT_S = 838 * 3600 + 59 * 60 + 59
_EPOCH = dt.datetime(1970, 1, 1)
# The TIMESTAMP range: '1970-01-01 00:00:01' to '2038-01-19 03:14:07' UTC.
_TIMESTAMP_FIRST_S = 1
_TIMESTAMP_LAST_S = 2**31 - 1
_DATE_FIRST = dt.date(1000, 1, 1).toordinal()
_DATE_LAST = dt.date(9999, 12, 31).toordinal()
# Ordinary temporal values fall in these years; the edges cover the whole range.
_USUAL_FIRST = dt.date(1950, 1, 1).toordinal()
_USUAL_DAYS = dt.date(2049, 12, 31).toordinal() - _USUAL_FIRST + 1


def value_maker(mtype: MySQLType, edge_ratio: float, text_nul: bool = True) -> ValueMaker:
    """A function drawing one non-NULL value of ``mtype``: an edge with probability ``edge_ratio``,
    else an ordinary value; without ``text_nul``, no string holding the NUL character."""
    edges, usual = _makers(mtype)
    if not text_nul:
        edges = [edge for edge in edges if not (isinstance(edge, str) and "\0" in edge)]
    if not edges:
        return usual

    count = len(edges)

    def make(rng: random.Random) -> Any:
        if rng.random() < edge_ratio:
            return edges[below(rng, count)]
        return usual(rng)

    return make


def _makers(mtype: MySQLType) -> tuple[Sequence[Any], ValueMaker]:
    """The edge values of ``mtype`` and a maker of its ordinary values."""
    family = mtype.family
    if family is Family.INTEGER:
        low, high = mtype.integer_range()
        usual_low = max(low, -1_000_000)
        usual_span = min(high, 1_000_000) - usual_low + 1
        return (low, high, 0, 1), lambda rng: usual_low + below(rng, usual_span)
    if family is Family.BIT:
        top = (1 << (mtype.length or 1)) - 1
        return (0, top), lambda rng: rng.randint(0, top)
    if family is Family.YEAR:
        return (0, 1901, 2155), lambda rng: 1901 + below(rng, 255)
    if family is Family.FLOAT:
        return _float_edges(single=True), lambda rng: to_float32(round(rng.uniform(-1e5, 1e5), 3))
    if family is Family.DOUBLE:
        return _float_edges(single=False), lambda rng: rng.uniform(-1e9, 1e9)
    if family is Family.DECIMAL:
        return _decimal_makers(mtype)
    if family is Family.STRING:
        return _text_makers(mtype)
    if family is Family.BINARY:
        return _binary_makers(mtype)
    if family is Family.ENUM:
        members = mtype.elements or ()
        return ("",), lambda rng: rng.choice(members)
    if family is Family.SET:
        return _set_makers(mtype)
    if family is Family.JSON:
        return _JSON_EDGES, _usual_json
    if family is Family.DATE:
        return _date_makers()
    if family is Family.DATETIME:
        return _datetime_makers(mtype.decimals)
    if family is Family.TIMESTAMP:
        return _timestamp_makers(mtype.decimals)
    if family is Family.TIME:
        return _time_makers(mtype.decimals)
    raise ValueError(f"the workload generates no {mtype} values (GEOMETRY and VECTOR are left out)")


def _float_edges(single: bool) -> tuple[float, ...]:
    if single:
        largest, smallest = 3.4028234663852886e38, 1.401298464324817e-45  # float32 max, least subnormal
        return (0.0, 1.5, -1.5, largest, -largest, smallest, to_float32(0.1), to_float32(1e-7))
    return (0.0, 0.1, -2.5, 1e-7, 1e21, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324)


def _decimal_makers(mtype: MySQLType) -> tuple[Sequence[Any], ValueMaker]:
    precision, scale = mtype.length or 10, mtype.decimals or 0
    whole_digits = precision - scale
    largest = "9" * whole_digits + ("." + "9" * scale if scale else "")
    edges = [Decimal(largest), Decimal("0." + "0" * scale) if scale else Decimal(0)]
    if scale:
        edges.append(Decimal("0." + "0" * (scale - 1) + "1"))
    if not mtype.unsigned:
        edges.append(Decimal("-" + largest))
    whole_limit = 10 ** min(whole_digits, 9)
    fraction_limit = 10 ** min(scale, 15)  # the digits past the 15th are zero: below() draws 53 bits
    fraction_shift = scale - min(scale, 15)

    def usual(rng: random.Random) -> Decimal:
        text = str(below(rng, whole_limit))
        if scale:
            text += f".{below(rng, fraction_limit) * 10**fraction_shift:0{scale}d}"
        value = Decimal(text)
        # copy_negate is exact (unary minus rounds to the context's 28 digits); MySQL has no -0.
        return value.copy_negate() if value and not mtype.unsigned and rng.random() < 0.5 else value

    return edges, usual


def _text_makers(mtype: MySQLType) -> tuple[Sequence[Any], ValueMaker]:
    # A CHAR(n)/VARCHAR(n) holds n characters; TINYTEXT 255 bytes, so at most 63 four-byte characters.
    limit = mtype.length if mtype.length is not None else 63 if mtype.name == "tinytext" else 400
    is_char = mtype.name == "char"

    def fit(text: str) -> str:
        text = text[:limit]
        return text.rstrip(" ") if is_char else text

    edges = sorted({fit(text) for text in _EDGE_TEXTS})

    def usual(rng: random.Random) -> str:
        return fit(" ".join(rng.choices(_WORDS, k=1 + below(rng, 4))))

    return edges, usual


def _binary_makers(mtype: MySQLType) -> tuple[Sequence[Any], ValueMaker]:
    if mtype.name == "binary":  # fixed length: MySQL pads with zero bytes
        size = mtype.length or 1
        edges = [_BIG_BYTES[:size], bytes(size), b"\xff" * size, _BIG_BYTES[-size:]]
        return edges, lambda rng: rng.randbytes(size)
    limit = mtype.length if mtype.length is not None else 255 if mtype.name == "tinyblob" else 1024
    edges = [b"", b"\x00", b"\xff", _BIG_BYTES[:limit], _BIG_BYTES[::-1][:limit]]
    longest = min(limit, 40)
    return edges, lambda rng: rng.randbytes(1 + below(rng, longest))


def _set_makers(mtype: MySQLType) -> tuple[Sequence[Any], ValueMaker]:
    members = mtype.elements or ()

    def usual(rng: random.Random) -> str:
        return ",".join(m for m in members if rng.random() < 0.5)

    return ("", ",".join(members)), usual


def _usual_json(rng: random.Random) -> str:
    document = {"n": rng.randint(-1000, 1000), "tags": rng.sample(_WORDS, 2), "ok": rng.random() < 0.5}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _fraction(rng: random.Random, fsp: int | None) -> int:
    """Microseconds with no digit past ``fsp``."""
    digits = fsp or 0
    return below(rng, 10**digits) * 10 ** (6 - digits) if digits else 0


def _date_makers() -> tuple[Sequence[Any], ValueMaker]:
    edges = (
        dt.date(1000, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29), ZeroTemporal("0000-00-00"),
    )
    return edges, lambda rng: dt.date.fromordinal(_USUAL_FIRST + below(rng, _USUAL_DAYS))


def _datetime_makers(fsp: int | None) -> tuple[Sequence[Any], ValueMaker]:
    last_micros = 999_999 - 999_999 % 10 ** (6 - (fsp or 0))
    edges = (
        dt.datetime(1000, 1, 1),
        dt.datetime(9999, 12, 31, 23, 59, 59, last_micros),
        ZeroTemporal("0000-00-00 00:00:00"),
    )

    def usual(rng: random.Random) -> dt.datetime:
        day = dt.date.fromordinal(_USUAL_FIRST + below(rng, _USUAL_DAYS))
        seconds = below(rng, 86_400)
        return dt.datetime(day.year, day.month, day.day, seconds // 3600, seconds // 60 % 60, seconds % 60,
                           _fraction(rng, fsp))

    return edges, usual


def _timestamp_makers(fsp: int | None) -> tuple[Sequence[Any], ValueMaker]:
    def at(seconds: int, micros: int = 0) -> dt.datetime:
        return (_EPOCH + dt.timedelta(0, seconds, micros)).replace(tzinfo=dt.UTC)

    edges = (at(_TIMESTAMP_FIRST_S), at(_TIMESTAMP_LAST_S), at(951_782_400))  # 2000-02-29

    def usual(rng: random.Random) -> dt.datetime:
        return at(_TIMESTAMP_FIRST_S + below(rng, _TIMESTAMP_LAST_S - _TIMESTAMP_FIRST_S + 1), _fraction(rng, fsp))

    return edges, usual


def _time_makers(fsp: int | None) -> tuple[Sequence[Any], ValueMaker]:
    limit = dt.timedelta(seconds=_TIME_LIMIT_S)
    edges: list[dt.timedelta] = [limit, -limit, dt.timedelta(0), dt.timedelta(seconds=-1)]
    if fsp:
        step = 10 ** (6 - fsp)
        edges += [-dt.timedelta(microseconds=500_000 - 500_000 % step), dt.timedelta(microseconds=step)]

    def usual(rng: random.Random) -> dt.timedelta:
        magnitude = dt.timedelta(0, below(rng, 100 * 3600), _fraction(rng, fsp))
        return -magnitude if rng.random() < 0.2 else magnitude

    return edges, usual
