"""Shared fixtures: where the third-party test vectors live, and the tests' Kafka broker."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdclake.localkafka import LocalKafka
from tests.kafka import BROKER_SETTINGS, Kafka

# The vectors sit in ../shared/vectors beside the repository (CI clones main with shared/ beside it).
VECTORS = Path(os.environ.get("CDCLAKE_VECTORS", Path(__file__).resolve().parents[2] / "shared" / "vectors"))
SPECS = VECTORS.parent / "specs"


@pytest.fixture(scope="session")
def vectors() -> Path:
    if not VECTORS.is_dir():
        pytest.fail(f"test vectors not found at {VECTORS}; set CDCLAKE_VECTORS")
    return VECTORS


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafka]:
    """One Apache Kafka broker for the run: it takes seconds to start."""
    with LocalKafka(BROKER_SETTINGS) as broker:
        yield broker


@pytest.fixture
def kafka(kafka_broker: LocalKafka) -> Iterator[Kafka]:
    """The run's broker with a producer; the test's topics are deleted after it."""
    client = Kafka(kafka_broker)
    yield client
    client.delete_topics()


# Markers by place, so a new test file is marked without anyone remembering to (pyproject.toml says
# what each means). The fast loop is `python3 -m pytest -q -m "not spark"`.
_SPARK_FILES = ("tests/spark/", "tests/test_examples.py")
_SLOW_FILES = ("tests/spark/test_crash.py", "tests/spark/test_cluster.py", "tests/spark/test_catalogs.py",
               "tests/test_examples.py")
# What CI runs on Spark 3.5 as well: replication end to end from files in each way the pipeline's Spark
# side orders a batch (watermarks and the compiled Canal-JSON reader; schemas from BOOTSTRAPs, rows read
# by the compiled Simple reader; sequences, without watermarks) and from Kafka, the API's reading,
# decoding, views and applier, the session, one example (streaming), and the demo on separate executors
# from an interpreter nobody named to Spark. Node ids, so that one case of a file can be core. Not the
# other formats (their codecs are Python that never meets Spark: the same under both), nor what is proved
# by Iceberg's commits and the job's state, the same under both Sparks too: the crash chain, replaying,
# snapshot expiry, retried and half-done batches.
_CORE_TESTS = ("tests/spark/test_replicate.py::test_a_captured_stream_replicates_to_the_upstream_tables[canal-json]",
               "tests/spark/test_replicate.py::test_a_captured_stream_replicates_to_the_upstream_tables[simple]",
               "tests/spark/test_replicate.py::test_a_captured_stream_replicates_to_the_upstream_tables[dataworks]",
               "tests/spark/test_replicate.py::test_a_kafka_stream_replicates_to_the_upstream_tables[simple]",
               "tests/spark/test_replicate.py::test_merges_side_by_side_share_the_sessions_shuffle_partitions",
               "tests/spark/test_api.py::test_read_records", "tests/spark/test_api.py::test_decode_changes",
               "tests/spark/test_api.py::test_wrong_options", "tests/spark/test_api.py::test_table_views",
               "tests/spark/test_api.py::test_the_applier_takes_changes_decoded_batch_by_batch",
               "tests/spark/test_session.py", "tests/spark/test_cluster.py",
               "tests/test_examples.py::test_the_example_runs_and_its_tables_equal_the_upstream[streaming_job.py]")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parents[1]
    for item in items:
        place = item.path.resolve().relative_to(root).as_posix()
        test = place + item.nodeid[len(item.nodeid.split("::")[0]):]
        for marker, prefixes in (("spark", _SPARK_FILES), ("slow", _SLOW_FILES), ("core", _CORE_TESTS)):
            if test.startswith(prefixes):
                item.add_marker(marker)
