"""One Spark session for the whole test run: Spark takes seconds to start."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tests.catalogs import LocalMariaDB, LocalPostgres, ServiceMissing

pytest.importorskip("pyspark")

Service = TypeVar("Service", LocalPostgres, LocalMariaDB)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from cdclake.spark.session import build_session

    warehouse: Path = tmp_path_factory.mktemp("warehouse")
    # Two shuffle partitions for two cores: the tests' batches are small, and each task costs its start.
    session = build_session(master="local[2]", warehouse=warehouse, conf={"spark.sql.shuffle.partitions": "2"})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[LocalPostgres]:
    """A PostgreSQL server of Debian's package on loopback, for the tests that use one (the JDBC catalog,
    the PostgreSQL sink); a missing package fails them, naming the install step."""
    yield from _running(LocalPostgres)


@pytest.fixture(scope="session")
def mariadb() -> Iterator[LocalMariaDB]:
    """A MariaDB server of Debian's package on loopback, for the MariaDB sink's tests; a missing package
    fails them, naming the install step."""
    yield from _running(LocalMariaDB)


def _running(kind: Callable[[], Service]) -> Iterator[Service]:
    try:
        with kind() as service:
            yield service
    except ServiceMissing as missing:
        pytest.fail(str(missing), pytrace=False)
