"""Fuzz every decoder outside pytest, with the hostile mutations of issue 23 mixed into the ordinary
ones (tests/fuzzing.py), and check what the fuzz tests check and more: that nothing but DecodeError
escapes, that no message takes more than a second of CPU, and that the process never grows past
500 MB. RELIABILITY.md quotes its output. Run from the repository root::

    nice -n 19 python3 bench/fuzz.py --count 50000 [--format canal-json ...] [--seed 23]

Each format's seeds are its fuzz test's. Open Protocol mutants are mutated inside one event's key or
value JSON and framed again (half of them), or mutated as framed bytes; Simple decoders are primed with
the seeds' schemas and made afresh every 200 mutants, as in the test.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' seeds and mutations

from cdclake.errors import DecodeError
from cdclake.formats import get_codec
from cdclake.formats.base import Decoder
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import Origin, RawMessage
from tests.conftest import VECTORS
from tests.fuzzing import hostile_mutate, mutate

ORIGIN = Origin(topic="fuzz", partition=0, offset=0)
FORMATS = ("canal-json", "open", "simple", "simple-avro", "dataworks")
HOSTILE_SHARE = 0.5  # of the mutations, the rest being tests/fuzzing.py's ordinary ones
CPU_LIMIT_S = 1.0
MEMORY_LIMIT_MB = 500.0  # allocated at the peak of one message's decoding (tracemalloc)


@dataclass
class Tally:
    decoded: int = 0
    refused: int = 0
    escaped: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)
    slowest_s: float = 0.0
    peak_mb: float = 0.0


def _mutant(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randrange(1, 4)):
        data = hostile_mutate(data, rng) if rng.random() < HOSTILE_SHARE else mutate(data, rng)
    return data


def _open_mutants(count: int, rng: random.Random) -> Iterator[RawMessage]:
    from tests.formats.open_protocol.helpers import frame
    from tests.formats.open_protocol.test_decoding import fuzz_seeds

    seeds = fuzz_seeds()
    for number in range(count):
        seed = rng.choice(seeds)
        key, value = seed.key or b"", seed.value or b""
        if number % 2:
            yield RawMessage(_mutant(key, rng) if rng.randrange(2) else key, _mutant(value, rng), ORIGIN)
            continue
        frames = [list(pair) for pair in split_batch(key, value)]
        event = rng.choice(frames)
        side = rng.randrange(2)
        event[side] = _mutant(event[side], rng)
        keys = b"\0\0\0\0\0\0\0\1" + b"".join(frame(k) for k, _ in frames)
        yield RawMessage(keys, b"".join(frame(v) for _, v in frames), ORIGIN)


def _value_mutants(seeds: list[bytes], count: int, rng: random.Random) -> Iterator[RawMessage]:
    for _ in range(count):
        yield RawMessage(None, _mutant(rng.choice(seeds), rng), ORIGIN)


def _setup(name: str, count: int, rng: random.Random) -> tuple[Iterator[RawMessage], Callable[[], Decoder]]:
    """The mutants of a format and a maker of its decoders (primed with the seeds' schemas)."""
    codec = get_codec(name)
    if name == "open":
        return _open_mutants(count, rng), codec.decoder
    if name == "canal-json":
        from tests.formats.canal_json.test_properties import fuzz_seeds as canal_seeds

        return _value_mutants(canal_seeds(), count, rng), codec.decoder
    if name == "dataworks":
        from tests.formats.dataworks.test_bad_input import fuzz_seeds as dataworks_seeds

        return _value_mutants(dataworks_seeds(VECTORS), count, rng), codec.decoder
    from tests.formats.simple.test_round_trips import fuzz_seeds as simple_seeds

    seeds = simple_seeds(codec)

    def primed() -> Decoder:
        decoder = codec.decoder()
        for seed in seeds:
            decoder.decode(RawMessage(None, seed, ORIGIN))
        return decoder

    return _value_mutants(seeds, count, rng), primed


def fuzz(name: str, count: int, seed: int) -> Tally:
    mutants, make = _setup(name, count, random.Random(seed))
    tally = Tally()
    decoder = make()
    for number, message in enumerate(mutants):
        if number % 200 == 0:  # a fresh decoder now and then, as the tests do, so held rows do not pile up
            decoder = make()
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        started = time.process_time()
        try:
            decoder.decode(message)
            tally.decoded += 1
        except DecodeError:
            tally.refused += 1
        except Exception as exc:  # what this looks for: anything else escaping
            tally.escaped.append(f"#{number}: {type(exc).__name__}: {str(exc)[:200]} <- {message.value[:200]!r}")
        spent = time.process_time() - started
        peak = (tracemalloc.get_traced_memory()[1] - before) / 2**20
        tally.slowest_s, tally.peak_mb = max(tally.slowest_s, spent), max(tally.peak_mb, peak)
        if spent > CPU_LIMIT_S or peak > MEMORY_LIMIT_MB:
            tally.slow.append(f"#{number}: {spent:.2f} s, {peak:.0f} MB <- {len(message.value or b'')} bytes")
    gc.collect()
    return tally


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=50_000, help="mutants per format")
    parser.add_argument("--format", action="append", choices=FORMATS, help="a format (repeatable); default all")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    failed = False
    print(f"{'format':12} {'mutants':>8} {'decoded':>8} {'refused':>8} {'escaped':>8} {'over limit':>10} "
          f"{'slowest CPU s':>13} {'peak MB':>8}")
    tracemalloc.start(1)
    for name in args.format or FORMATS:
        wall = time.perf_counter()
        tally = fuzz(name, args.count, args.seed)
        print(f"{name:12} {args.count:8} {tally.decoded:8} {tally.refused:8} {len(tally.escaped):8} "
              f"{len(tally.slow):10} {tally.slowest_s:13.3f} {tally.peak_mb:8.1f}   "
              f"({time.perf_counter() - wall:.0f} s wall)", flush=True)
        for line in [*tally.escaped[:10], *tally.slow[:10]]:
            print("   ", line)
        failed |= bool(tally.escaped or tally.slow)
    print(f"process peak RSS: {peak_rss_mb():.0f} MB (mutants included)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
