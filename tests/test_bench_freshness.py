"""bench/freshness.py's own logic, without Kafka or Spark: the producer's pacing and the matching of each
change to the batch that made it visible."""

from __future__ import annotations

import datetime as dt
import importlib
import threading
from pathlib import Path
from types import ModuleType

import pytest

from cdclake.model import RowChange
from cdclake.producer import ProducerSpec
from cdclake.workload import Workload, WorkloadSpec, messages, physical_ms, tso

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture
def freshness(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("freshness")


def test_paced_sends_in_commit_order_keeping_each_partition_in_order(freshness: ModuleType) -> None:
    # Committed a day ago: every message is due already, so nothing waits.
    start = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    workload = WorkloadSpec(seed=5, tables=4, transactions=300, start=start, max_gap_ms=40)
    spec = ProducerSpec("canal-json", {"enable-tidb-extension": True}, partitions=3, topic="t")
    produced = freshness.Produced()
    stream = messages(Workload(workload), spec.format_name, spec.options, partitions=3, topic="t")
    sent = list(freshness.paced(stream, spec, produced, threading.Event()))

    assert len(sent) == len(list(messages(Workload(workload), spec.format_name, spec.options, partitions=3,
                                          topic="t")))
    for partition in range(3):
        offsets = [m.origin.offset for m in sent if m.origin.partition == partition]
        assert offsets == sorted(offsets) and offsets
    decoder = spec.codec.make_decoder(spec.codec_options())
    commit_times = [e.commit_ts for m in sent for e in decoder.decode(m) if isinstance(e, RowChange)]
    # Across partitions the messages go by commit time: the round's layout (partition after partition) is undone.
    assert commit_times == sorted(commit_times)
    assert [ts for _, ts in produced.changes] == commit_times
    assert len(produced.lags) == len(sent)


def test_a_stop_request_ends_the_paced_stream(freshness: ModuleType) -> None:
    start = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)  # nothing is due yet
    workload = WorkloadSpec(seed=5, tables=2, transactions=10, start=start)
    spec = ProducerSpec("canal-json", {"enable-tidb-extension": True}, partitions=2, topic="t")
    stop = threading.Event()
    stop.set()
    produced = freshness.Produced()
    stream = messages(Workload(workload), spec.format_name, spec.options, partitions=2, topic="t")
    assert list(freshness.paced(stream, spec, produced, stop)) == []
    assert produced.changes == []


def test_a_change_is_visible_at_the_first_batch_whose_resolved_ts_reaches_it(freshness: ModuleType) -> None:
    base = 1_800_000_000_000  # ms
    commits = {"shop.a": [(tso(base + 1000), 1_800_000_002.5), (tso(base + 3000), 1_800_000_005.0)]}
    changes = [("shop.a", tso(base + 500)), ("shop.a", tso(base + 1000)), ("shop.a", tso(base + 1000, 7)),
               ("shop.a", tso(base + 4000)), ("shop.b", tso(base))]
    visible, missing = freshness.delays(changes, commits)
    assert [round(delay, 3) for _, delay in visible] == [2.0, 1.5, 4.0]
    assert [committed for committed, _ in visible] == [physical_ms(ts) / 1000 for _, ts in changes[:3]]
    assert missing == 2  # past the last resolved ts, and a table with no batch


def test_percentile_is_the_nearest_rank(freshness: ModuleType) -> None:
    values = [float(v) for v in range(1, 101)]
    assert [freshness.percentile(values, share) for share in (0.5, 0.9, 0.99)] == [50.0, 90.0, 99.0]
    assert freshness.percentile([3.0], 0.99) == 3.0
