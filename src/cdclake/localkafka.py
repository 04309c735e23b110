"""A single-node Apache Kafka broker on loopback, from the Apache Kafka jars on Maven Central.

For the demo (``cdclake demo --kafka``), the benchmarks and the tests: one KRaft process that is both
broker and controller, on free ports of 127.0.0.1, with its log directory in a folder of its own, and
stopped (its folder removed) when the ``with`` block ends::

    with LocalKafka() as kafka:
        kafka.create_topic("tidb-cdc", partitions=4)
        replicate(bootstrap=kafka.bootstrap, ...)

The jars are resolved once by :mod:`cdclake.maven` and cached; a JDK 17 ``java`` is needed
(``$JAVA_HOME/bin/java``, else the one on PATH).
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from cdclake.errors import CdclakeError
from cdclake.maven import resolve
from cdclake.sources.kafka import create_topic

KAFKA_BROKER = "org.apache.kafka:kafka_2.13:4.1.2"
START_TIMEOUT_S = 60.0
_HEAP = "-Xmx768m"


class LocalKafkaError(CdclakeError):
    """The broker could not be started."""


class LocalKafka:
    """A KRaft broker on loopback for as long as the ``with`` block; ``bootstrap`` is its address.

    ``settings`` are added to the broker's ``server.properties`` (``num.partitions`` is 1 as in any
    new cluster; topics that do not exist are created on first use, as Kafka's default says).
    """

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self._settings = settings or {}
        self._directory = Path(tempfile.mkdtemp(prefix="cdclake-kafka-"))
        self._process: subprocess.Popen[bytes] | None = None
        self.bootstrap = ""

    def __enter__(self) -> LocalKafka:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def log_file(self) -> Path:
        return self._directory / "broker.log"

    def create_topic(self, name: str, partitions: int) -> None:
        """A new topic of ``partitions`` partitions, there for every client once this returns."""
        create_topic({"bootstrap.servers": self.bootstrap}, name, partitions)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        shutil.rmtree(self._directory, ignore_errors=True)

    def _start(self) -> None:
        broker_port, controller_port = free_ports(2)
        properties = self._directory / "server.properties"
        properties.write_text(_server_properties(self._directory / "data", broker_port, controller_port,
                                                 self._settings))
        classpath = os.pathsep.join(str(jar) for jar in resolve([KAFKA_BROKER]))
        java = _java()
        cluster_id = new_cluster_id()
        formatted = subprocess.run(
            [java, "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(properties)],
            capture_output=True, text=True, check=False,
        )
        if formatted.returncode != 0:
            raise LocalKafkaError(f"Kafka's storage tool failed: {formatted.stdout}{formatted.stderr}")
        with self.log_file.open("wb") as log:
            self._process = subprocess.Popen(
                [java, _HEAP, "-cp", classpath, "kafka.Kafka", str(properties)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        self.bootstrap = f"127.0.0.1:{broker_port}"
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + START_TIMEOUT_S
        # Until the port listens, a Kafka client would log every refused connection: knock first.
        while not _listening(self.bootstrap):
            assert self._process is not None
            if self._process.poll() is not None:
                raise LocalKafkaError(f"the Kafka broker exited at start: {self._log_tail()}")
            if time.monotonic() > deadline:
                raise LocalKafkaError(f"the Kafka broker did not listen within {START_TIMEOUT_S:.0f} s: "
                                      f"{self._log_tail()}")
            time.sleep(0.1)
        AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=max(1.0, deadline - time.monotonic()))

    def _log_tail(self) -> str:
        lines = self.log_file.read_text(errors="replace").splitlines() if self.log_file.exists() else []
        return "\n".join(lines[-20:]) or "(its log is empty)"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not Path(java).exists():
        raise LocalKafkaError("a local Kafka broker needs Java 17 or newer: set JAVA_HOME or put java on PATH")
    return java


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def new_cluster_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64, drawn again while it starts with ``-``.

    The storage tool's argument parser reads an id starting with ``-`` as an option and fails (one start
    in 64 did, in CI); Kafka's own ``Uuid.randomUuid`` draws again for the same reason.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(random_uuid().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def free_ports(count: int) -> list[int]:
    """``count`` ports free on loopback now, all different: each probe stays bound until all are chosen,
    for one closed first could be handed out again to the next."""
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def _server_properties(data: Path, broker_port: int, controller_port: int, extra: dict[str, str]) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data),
        # One node: the internal topics cannot have more replicas than that.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Keep every record while the broker runs: simulated streams carry commit times long past, and
        # retention by time would delete them half a minute after start.
        "log.retention.ms": "-1",
        **extra,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())
