"""Jars from Maven Central: resolved once into the cache, read from it afterwards, and a clear error
where there is no Maven client."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cdclake.maven
from cdclake.localkafka import KAFKA_BROKER
from cdclake.maven import JarsUnavailable, resolve


def test_a_second_resolve_reads_the_cache_without_maven(monkeypatch: pytest.MonkeyPatch) -> None:
    jars = resolve([KAFKA_BROKER])  # by mvn, unless an earlier run (the tests' broker) cached them
    assert any(jar.name.startswith("kafka_2.13-") for jar in jars) and all(jar.is_file() for jar in jars)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert resolve([KAFKA_BROKER]) == jars


def test_without_maven_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CDCLAKE_JARS_CACHE", str(tmp_path))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(JarsUnavailable, match=r"needs org\.example:nothing:1 from Maven Central and found no Maven "
                                              r"client \(mvn\).*apt-get install maven"):
        resolve(["org.example:nothing:1"])
    assert cdclake.maven.cache_root() == tmp_path


def test_an_artifact_maven_cannot_find_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDCLAKE_JARS_CACHE", str(tmp_path))
    with pytest.raises(JarsUnavailable, match=r"mvn could not resolve org\.apache\.kafka:kafka_2\.13:0\.0\.0-none"):
        resolve(["org.apache.kafka:kafka_2.13:0.0.0-none"])
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]  # nothing half-made left in the cache


def test_a_classifier_names_the_jar_published_beside_the_main_one() -> None:
    pom = cdclake.maven._pom(["org.apache.iceberg:iceberg-core:1.11.0:tests", "org.slf4j:slf4j-api:2.0.17"])
    assert ("<artifactId>iceberg-core</artifactId><version>1.11.0</version><classifier>tests</classifier>"
            "</dependency>") in pom
    assert "<artifactId>slf4j-api</artifactId><version>2.0.17</version></dependency>" in pom
