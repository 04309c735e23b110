"""What the reliability tests put into their streams, counted: the at-least-once disorder of
tests/spark/test_at_least_once.py and the malformed messages of tests/spark/test_bad_input.py.

The tests assert that the job copes; this says how much it coped with, from the very same streams
(same workloads, seeds and helpers), without Spark. RELIABILITY.md quotes it. Run from the repository
root::

    python3 bench/injected.py
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' streams

from cdclake.workload import Workload, produce
from tests.spark import test_at_least_once as at_least_once
from tests.spark import test_bad_input as bad_input
from tests.spark.jobs import CASES
from tests.spark.streams import mix_malformed, random_slots


def disorder() -> int:
    print("tests/spark/test_at_least_once.py")
    injected = 0
    for case in at_least_once.FORMATS:
        _, clean, disordered = at_least_once.disordered_stream(case)
        done = disordered.disorder
        injected += (done.redelivered_messages + done.duplicated_messages + done.delayed_watermarks
                     + done.repeated_watermarks)
        delivered = sum(map(len, disordered.partitions.values()))
        print(f"  {case}: {len(clean)} messages delivered as {delivered}; " + "; ".join(done.lines()))
    for case in at_least_once.FORMATS:
        format_name, options = CASES[case]
        clean = produce(Workload(at_least_once.SPEC), format_name, options, watermark_interval_ms=50)
        behind = max(clean.partitions, key=lambda p: len(clean.partitions[p]))
        kept = at_least_once._past_watermarks(clean, behind, 2)
        print(f"  {case}: partition {behind} far behind, {len(clean.partitions[behind]) - kept} of its "
              f"{len(clean.partitions[behind])} messages held back until the other partitions were replicated")
    print(f"  {injected} messages re-delivered, duplicated or moved in all")
    return injected


def malformed() -> int:
    print("tests/spark/test_bad_input.py")
    total = 0
    kinds: collections.Counter[str] = collections.Counter()
    for case in CASES:
        format_name, options = CASES[case]
        stream = produce(Workload(bad_input.SPEC), format_name, options, duplicates=1, watermark_interval_ms=50)
        _, found = mix_malformed(stream, random_slots(stream, per_kind=2, seed=1), seed=2)
        kinds.update(m.kind for m in found)
        total += len(found)
        print(f"  {case}: {len(found)} malformed messages among {len(stream)} good ones")
    print(f"  by kind: {', '.join(f'{kind} {count}' for kind, count in sorted(kinds.items()))}")
    print(f"  {total} malformed messages dead-lettered; fail-fast: 1 stopped at, and 2 in the test that the first "
          "is named")
    return total


if __name__ == "__main__":
    disorder()
    malformed()
