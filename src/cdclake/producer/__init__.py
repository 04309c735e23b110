"""Producing a topic: the producer rules that lay change events out on a topic's partitions as each
format's producer does (:mod:`.rules`), and the writers of a topic, captured or Kafka (:mod:`.output`).

The transcoder writes its target topic with them, and the upstream simulator (:mod:`cdclake.workload`)
its streams. What differs by format is the format's codec's to say (:class:`~cdclake.formats.base.Codec`):
this package names no format.
"""

from cdclake.producer.output import produce_to_kafka, write_captured
from cdclake.producer.rules import BOOTSTRAP_OPTIONS, DISPATCHERS, Placed, ProducerError, ProducerSpec, Router

__all__ = [
    "BOOTSTRAP_OPTIONS",
    "DISPATCHERS",
    "Placed",
    "ProducerError",
    "ProducerSpec",
    "Router",
    "produce_to_kafka",
    "write_captured",
]
