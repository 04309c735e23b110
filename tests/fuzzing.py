"""Seeded message mutation for the decoders' fuzz tests: no decoder may let anything but
:class:`~cdclake.errors.DecodeError` escape, whatever bytes arrive."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

# Tokens that turn valid JSON into wrong-typed or boundary JSON when spliced in.
_JSON_TOKENS = [
    b"null", b"true", b"false", b"0", b"-1", b"1e309", b"18446744073709551616", b"-9223372036854775809",
    b'""', b'"x"', b"[]", b"{}", b"[null]", b'{"a":1}', b"NaN", b"\"\\u0000\"", b"\"\\ud800\"", b"1.5",
]


# The kinds of mutation, in the order ``mutate`` numbers them.
MUTATIONS = ("flip", "insert", "delete", "truncate", "duplicate", "splice", "retype")


def mutate(data: bytes, rng: random.Random, kind: str | None = None) -> bytes:
    """One mutation, of the kind named (one of :data:`MUTATIONS`) or of a random one: flip a bit, insert
    a byte, delete a span, truncate, duplicate a span, splice a JSON token, or retype a JSON value."""
    if not data:
        return bytes([rng.randrange(256)])
    number = rng.randrange(7) if kind is None else MUTATIONS.index(kind)
    at = rng.randrange(len(data))
    if number == 0:
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
    if number == 1:
        return data[:at] + bytes([rng.randrange(256)]) + data[at:]
    if number == 2:
        end = min(len(data), at + rng.randrange(1, 9))
        return data[:at] + data[end:]
    if number == 3:
        return data[:at]
    if number == 4:
        end = min(len(data), at + rng.randrange(1, 33))
        return data[:end] + data[at:end] + data[end:]
    token = rng.choice(_JSON_TOKENS)
    if number == 5:
        return data[:at] + token + data[at:]
    # Replace the JSON scalar that starts at a value position with a token of another type.
    colon = data.find(b":", at)
    if colon < 0:
        return data + token
    end = colon + 1
    while end < len(data) and data[end : end + 1] not in b",}]":
        end += 1
    return data[: colon + 1] + token + data[end:]


def mutations(seeds: list[bytes], count: int, seed: int = 0, hostile: float = 0.0) -> Iterator[bytes]:
    """``count`` mutants of the seed messages, one to three mutations each, reproducible by ``seed``;
    each mutation one of :data:`HOSTILE` with probability ``hostile``."""
    rng = random.Random(seed)
    for _ in range(count):
        data = rng.choice(seeds)
        for _ in range(rng.randrange(1, 4)):
            data = hostile_mutate(data, rng) if hostile and rng.random() < hostile else mutate(data, rng)
        yield data


# --- hostile mutations (issue 23): values that are well-formed JSON but absurd ------------------------

# The kinds, in the order ``hostile_mutate`` numbers them.
HOSTILE = ("huge-int", "type-width", "empty-image", "odd-zone", "huge-length", "many-columns")

_HUGE_WIDTHS = [b"65", b"20000", b"8000000000", b"1099511627776", b"9" * 40, b"66,31", b"65,31", b"7"]
_ODD_ZONES = [
    b"America", b"Etc", b"America/", b"A" * 100_000, b"../../etc/passwd", b"/etc/localtime", b"", b"Local",
    b"+99:99", b"Europe/Nowhere", b"\\u0000", b"posixrules", b"America//Lima", b"zone.tab",
]
_HUGE_NUMBERS = [str(n).encode() for n in (2**40, 2**62, 2**63 - 1, 2**64 - 1, 2**64, -(2**63), 10**30)]
_TYPE_ARGUMENTS = re.compile(rb"\(([0-9]+(?:,[0-9]+)?)\)|\"(?:length|decimal|f|t)\":([0-9]+)")
_LOCATION = re.compile(rb'"location":"[^"]*"')
_STRING_VALUE = re.compile(rb':"[^"]*"')
_OBJECT_VALUE = re.compile(rb':\{')
_MEMBER = re.compile(rb'\{"([^"]+)":("[^"]*"|[-0-9.eE]+|null|true|false|\{[^{}]*\})')


def hostile_mutate(data: bytes, rng: random.Random, kind: str | None = None) -> bytes:
    """One mutation of :data:`HOSTILE`: an integer of thousands of digits; a type's width or a
    ``length`` far past MySQL's; an object value emptied (``"p":{}``); a time-zone location that is a
    directory, a path, 100 KB or nothing; a huge number or Avro length; an object given thousands of
    members. Where the message has nothing to aim at, the value is spliced in at random."""
    number = rng.randrange(len(HOSTILE)) if kind is None else HOSTILE.index(kind)
    return _HOSTILE_MUTATORS[number](data, rng)


def _at_random(data: bytes, rng: random.Random, token: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + token + data[at:]


def _pick(pattern: re.Pattern[bytes], data: bytes, rng: random.Random) -> re.Match[bytes] | None:
    found = list(pattern.finditer(data))
    return rng.choice(found) if found else None


def _huge_int(data: bytes, rng: random.Random) -> bytes:
    digits = b"9" * rng.choice((4301, 5000, 20_000))
    token = rng.choice((digits, b"-" + digits, b'"' + digits + b'"'))
    value = rng.choice(list(re.finditer(rb":", data)) or [None])
    if value is None:
        return _at_random(data, rng, token)
    end = value.end()
    while end < len(data) and data[end : end + 1] not in b",}]":
        end += 1
    return data[: value.end()] + token + data[end:]


def _type_width(data: bytes, rng: random.Random) -> bytes:
    match = _pick(_TYPE_ARGUMENTS, data, rng)
    if match is None:
        return _at_random(data, rng, b'"mysqlType":{"b":"bit(' + rng.choice(_HUGE_WIDTHS) + b')"}')
    group = 1 if match.group(1) is not None else 2
    return data[: match.start(group)] + _width(rng, group) + data[match.end(group) :]


def _width(rng: random.Random, group: int) -> bytes:
    """A width for a type text's arguments (group 1, which may take two) or a JSON length (group 2)."""
    width = rng.choice(_HUGE_WIDTHS)
    return width.split(b",")[0] if group == 2 else width


def _empty_image(data: bytes, rng: random.Random) -> bytes:
    match = _pick(_OBJECT_VALUE, data, rng)
    if match is None:
        return _at_random(data, rng, b'"p":{}')
    end = _matching_brace(data, match.end() - 1)
    return data[: match.end() - 1] + b"{}" + data[end + 1 :]


def _odd_zone(data: bytes, rng: random.Random) -> bytes:
    zone = b'"' + rng.choice(_ODD_ZONES) + b'"'
    match = _pick(_LOCATION, data, rng)
    if match is not None:
        return data[: match.start()] + b'"location":' + zone + data[match.end() :]
    match = _pick(_STRING_VALUE, data, rng)
    if match is None:
        return _at_random(data, rng, b'{"location":' + zone + b',"value":"2020-01-01 00:00:00"}')
    return data[: match.start() + 1] + zone + data[match.end() :]


def _huge_length(data: bytes, rng: random.Random) -> bytes:
    if rng.randrange(2):  # binary: an Avro long (zigzag varint) or a big-endian uint64 frame length
        number = rng.choice((2**40, 2**62, 2**63 - 1))
        token = _varint(number << 1) if rng.randrange(2) else number.to_bytes(8, "big")
        at = rng.randrange(len(data) + 1)
        return data[:at] + token + data[at + len(token) :]
    return _at_random(data, rng, rng.choice(_HUGE_NUMBERS)) if b":" not in data else _number_at_value(data, rng)


def _number_at_value(data: bytes, rng: random.Random) -> bytes:
    colon = rng.choice([m.end() for m in re.finditer(rb":", data)])
    end = colon
    while end < len(data) and data[end : end + 1] not in b",}]":
        end += 1
    return data[:colon] + rng.choice(_HUGE_NUMBERS) + data[end:]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


def _many_columns(data: bytes, rng: random.Random) -> bytes:
    """An object's first member repeated under new names, or an array's first object repeated (a
    schema's column list): just under, at, or past 4096 columns."""
    count = rng.choice((1000, 1025, 4095, 4096, 4097, 20_000))
    if rng.randrange(2):
        return _many_elements(data, rng, count)
    match = _pick(_MEMBER, data, rng)
    if match is None:
        return _at_random(data, rng, b"{" + b",".join(b'"c%d":1' % i for i in range(count)) + b"}")
    name, value = match.group(1), match.group(2)
    count = min(count, _MAX_MUTANT // (len(name) + len(value) + 8))
    extra = b"".join(b'"%s_%d":%s,' % (name, i, value) for i in range(count))
    return data[: match.start() + 1] + extra + data[match.start() + 1 :]


def _many_elements(data: bytes, rng: random.Random, count: int) -> bytes:
    match = _pick(_ARRAY_OF_OBJECTS, data, rng)
    if match is None:
        return data
    start = match.end() - 1
    end = _matching_brace(data, start)
    element = data[start : end + 1]
    count = min(count, _MAX_MUTANT // len(element))  # a message of a few MB, as a producer might send
    return data[:start] + b",".join([element] * count) + data[end + 1 :]


def _matching_brace(data: bytes, start: int) -> int:
    """Where the object that opens at ``start`` closes (braces inside strings are rare enough)."""
    depth = 0
    for end in range(start, len(data)):
        depth += {ord("{"): 1, ord("}"): -1}.get(data[end], 0)
        if depth == 0:
            return end
    return len(data) - 1


_MAX_MUTANT = 5_000_000
_ARRAY_OF_OBJECTS = re.compile(rb"\[\{")
_HOSTILE_MUTATORS = (_huge_int, _type_width, _empty_image, _odd_zone, _huge_length, _many_columns)
