"""values.parse_time and values.parse_datetime read TiDB's usual shapes with datetime.fromisoformat, which
also reads other layouts: on every text they must agree with their plain patterns."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cdclake.errors import TypeParseError
from cdclake.values import _DATETIME_RE, _TIME_RE, ZeroTemporal, parse_datetime, parse_time

# Digits of other scripts, separators and zone suffixes that fromisoformat or the patterns may take.
NOISE = st.sampled_from(["0", "5", "9", ":", ".", ",", "-", "+", "Z", "T", " ", "_", "\u0663", "\uff15", "W"])


def _time_by_pattern(text: str) -> dt.timedelta:
    match = _TIME_RE.fullmatch(text)
    if match is None:
        raise TypeParseError(text)
    sign, hours, minutes, seconds, fraction = match.groups()
    micros = int((fraction or "").ljust(6, "0")[:6])
    magnitude = dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds), microseconds=micros)
    return -magnitude if sign else magnitude


def _datetime_by_pattern(text: str) -> dt.datetime | ZeroTemporal:
    match = _DATETIME_RE.fullmatch(text)
    if match is None:
        raise TypeParseError(text)
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    if year == 0 or month == 0 or day == 0:
        return ZeroTemporal(text)
    micros = int((match[7] or "").ljust(6, "0")[:6])
    try:
        return dt.datetime(year, month, day, hour, minute, second, micros)
    except ValueError as exc:
        raise TypeParseError(text) from exc


def _outcome(parse: Any, text: str) -> Any:
    try:
        value = parse(text)
    except TypeParseError:
        return "refused"
    return type(value), repr(value)


@st.composite
def _mutated(draw: st.DrawFn, template: str) -> str:
    """``template`` with a few characters replaced, cut or added."""
    text = list(template[: draw(st.integers(len(template) - 8, len(template)))])
    for _ in range(draw(st.integers(0, 3))):
        if text:
            text[draw(st.integers(0, len(text) - 1))] = draw(NOISE)
    return "".join(text) + "".join(draw(st.lists(NOISE, max_size=6)))


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_mutated("23:59:59.123456"), _mutated("838:59:59.5"), st.from_regex(r"-?\d{1,3}:\d\d:\d\d(\.\d+)?")))
@example("08:00:00.5Z")
@example("08:00:00.5+01")
@example("08:00:00,5")
@example("24:00:00")
@example("08:60:00")
def test_parse_time_agrees_with_its_pattern(text: str) -> None:
    assert _outcome(parse_time, text) == _outcome(_time_by_pattern, text)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_mutated("2024-02-29 23:59:59.123456"), _mutated("0000-00-00 00:00:00")))
@example("2024-01-15 08:00:00.12+01")
@example("2024-01-15T08:00:00")
@example("2024-W03-1 08:00:00")
@example("2024-02-30 08:00:00")
def test_parse_datetime_agrees_with_its_pattern(text: str) -> None:
    assert _outcome(parse_datetime, text) == _outcome(_datetime_by_pattern, text)
