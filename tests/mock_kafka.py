"""librdkafka's built-in mock cluster as a real Kafka endpoint for tests.

The cluster lives inside the producer that created it and speaks the Kafka protocol over TCP, so code
under test connects to it exactly as to a real broker, by ``bootstrap.servers``. Topics are created on
first use with 4 partitions.
"""

from __future__ import annotations

import logging
import re
import time

from confluent_kafka import Producer

_ADDRESS = re.compile(r"(\d+\.\d+\.\d+\.\d+:\d+(?:,\d+\.\d+\.\d+\.\d+:\d+)*)")


class _BootstrapGrabber(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.address: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        match = _ADDRESS.search(message)
        if self.address is None and "mock" in message.lower() and match:
            self.address = match.group(1)


class MockKafka:
    """A mock cluster and a producer to fill it; ``bootstrap`` is its address."""

    def __init__(self, brokers: int = 1) -> None:
        grabber = _BootstrapGrabber()
        logger = logging.getLogger(f"mock-kafka-{id(self)}")
        logger.addHandler(grabber)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        self.producer = Producer({"test.mock.num.brokers": brokers, "debug": "mock", "logger": logger})
        deadline = time.monotonic() + 10
        while grabber.address is None and time.monotonic() < deadline:
            self.producer.poll(0.1)
        if grabber.address is None:
            raise RuntimeError("the mock Kafka cluster did not log its bootstrap address")
        self.bootstrap = grabber.address

    def produce(self, topic: str, partition: int, value: bytes | None, key: bytes | None = None) -> None:
        self.producer.produce(topic, value=value, key=key, partition=partition)

    def flush(self) -> None:
        self.producer.flush(10)
