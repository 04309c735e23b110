"""The simulator's large messages (TiCDC's large-message-handle-option): a claim-check stream of every
format that has one, read with its files, is the oracle; a handle-key-only stream cannot be, and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdclake.claimcheck import HandleKeyOnlyError
from cdclake.model import LargeMessageKind, LargeMessageRef
from cdclake.workload import Stream, Workload, WorkloadError, WorkloadSpec, produce, shrink_large_messages
from tests.workload.consumer import apply, changes, decoded

# name -> (format, producer options, claim-check-raw-value). Open Protocol stores one event per file, as
# TiCDC does: batches of one make every row message one the simulator can shrink.
CASES: dict[str, tuple[str, dict[str, Any], bool]] = {
    "open": ("open", {"max-batch-size": 1, "large-message-handle-compression": "snappy"}, False),
    "canal-json": ("canal-json", {"enable-tidb-extension": True}, False),
    "simple": ("simple", {"large-message-handle-compression": "lz4"}, True),
    "simple-avro": ("simple-avro", {}, False),
}
LARGER_THAN = 300


@pytest.fixture(scope="module")
def workload() -> Workload:
    return Workload(WorkloadSpec(seed=21, transactions=120, rename_table=True, drop_table=True))


def _tables(stream: Stream) -> dict[Any, Any]:
    events = [event for partition in decoded(stream).values() for event in partition]
    return {name: rows for name, rows in apply(changes(events)).items() if rows}


def _shrunk(original: Stream, shrunk: Stream) -> int:
    return sum(a.value != b.value for a, b in zip(original, shrunk, strict=True))


@pytest.mark.parametrize("name", CASES)
def test_a_claim_check_stream_read_with_its_files_is_the_oracle(name: str, workload: Workload,
                                                                 tmp_path: Path) -> None:
    format_name, options, raw_value = CASES[name]
    stream = produce(workload, format_name, options, duplicates=1)
    claimed = shrink_large_messages(stream, LargeMessageKind.CLAIM_CHECK, LARGER_THAN, f"file://{tmp_path}",
                                    raw_value=raw_value)

    shrunk = _shrunk(stream, claimed)
    assert shrunk > len(stream) // 10
    assert len(list(tmp_path.iterdir())) == shrunk
    carried = workload.oracle().carried(format_name, claimed.codec_options).tables
    assert _tables(claimed) == {name: dict(state.rows) for name, state in carried.items() if state.rows}


def test_a_handle_key_only_stream_stops_its_reader_unless_it_may_go_on(workload: Workload) -> None:
    stream = produce(workload, "simple", {})
    shrunk = shrink_large_messages(stream, LargeMessageKind.HANDLE_KEY_ONLY, LARGER_THAN)
    with pytest.raises(HandleKeyOnlyError):
        decoded(shrunk)

    going_on = shrink_large_messages(produce(workload, "simple", {"on-handle-key-only": "dead-letter"}),
                                     LargeMessageKind.HANDLE_KEY_ONLY, LARGER_THAN)
    references = [e for p in decoded(going_on).values() for e in p if isinstance(e, LargeMessageRef)]
    assert len(references) == _shrunk(stream, shrunk) > 0
    assert all(set(e.row.after or e.row.before or {}) == set(e.row.key_columns) for e in references)


def test_claim_check_and_only_claim_check_needs_a_storage(workload: Workload) -> None:
    stream = produce(workload, "simple", {})
    with pytest.raises(WorkloadError, match="claim-check needs one"):
        shrink_large_messages(stream, LargeMessageKind.CLAIM_CHECK)
    with pytest.raises(WorkloadError, match="claim-check needs one"):
        shrink_large_messages(stream, LargeMessageKind.HANDLE_KEY_ONLY, storage_uri="/tmp")
