"""Seeded message mutation for the decoders' fuzz tests: no decoder may let anything but
:class:`~cdclake.errors.DecodeError` escape, whatever bytes arrive."""

from __future__ import annotations

import random
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


def mutations(seeds: list[bytes], count: int, seed: int = 0) -> Iterator[bytes]:
    """``count`` mutants of the seed messages, one to three mutations each, reproducible by ``seed``."""
    rng = random.Random(seed)
    for _ in range(count):
        data = rng.choice(seeds)
        for _ in range(rng.randrange(1, 4)):
            data = mutate(data, rng)
        yield data
