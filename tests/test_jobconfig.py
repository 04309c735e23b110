"""Job files (cdclake.jobconfig): every value checked against what its key holds, before Spark starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclake.errors import OptionError
from cdclake.jobconfig import job_settings, merged, read_toml
from cdclake.sources import open_source


def _job(tmp_path: Path, source: str, batch: str = "") -> Path:
    path = tmp_path / "job.toml"
    path.write_text(f'[source]\n{source}\n[format]\nname = "canal-json"\n[batch]\n{batch}\n')
    return path


@pytest.mark.parametrize(("source", "batch", "refusal"), [
    ('captured = "."\ntopics = "shop"', "",
     r'\[source\] topics = "shop" is not a list of strings \(one is a list too: topics = \["shop"\]\)'),
    ('captured = "."\ntopics = ["shop", 1]', "", r"\[source\] topics = \['shop', 1\] is not a list of strings"),
    ('captured = ["."]', "", r"\[source\] captured = \['.'\] is not a string"),
    ('kafka = "broker:9092"\ntopics = ["shop"]', "", r'\[source\] kafka = "broker:9092" is not a table'),
    ('captured = "."', 'fill-added-columns = "false"', r'\[batch\] fill-added-columns = "false" is not true or false'),
    ('captured = "."', "max-records = 1.5", r"\[batch\] max-records = 1.5 is not an integer"),
    ('captured = "."', "parallel-tables = true", r"\[batch\] parallel-tables = true is not an integer"),
    ('captured = "."', 'interval-s = "5"', r'\[batch\] interval-s = "5" is not a number'),
])
def test_a_value_of_the_wrong_kind_is_refused_naming_file_and_key(tmp_path: Path, source: str, batch: str,
                                                                   refusal: str) -> None:
    path = _job(tmp_path, source, batch)
    with pytest.raises(OptionError, match=rf"^{path}: {refusal}"):
        job_settings(merged(read_toml(path), {}))


def test_values_of_the_right_kind_are_read(tmp_path: Path) -> None:
    path = _job(tmp_path, f'captured = "{tmp_path}"\ntopics = ["shop"]', "interval-s = 2\nmax-records = 10")
    settings = job_settings(merged(read_toml(path), {}))
    assert settings.source.names == ["shop"]  # type: ignore[attr-defined]
    assert (settings.interval_s, settings.replicate.max_batch_records) == (2.0, 10)


def test_topics_given_as_one_string_are_refused_by_the_api_too(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"topics is a list of topic names, not one string: topics=\['shop'\]"):
        open_source(captured=tmp_path, topics="shop")


@pytest.mark.parametrize(("setting", "reason"), [
    ('"security.protocol" = "SASL_PLAINTEXTT"',
     'Invalid value "SASL_PLAINTEXTT" for configuration property "security.protocol"'),
    ('"sasl.mechanismz" = "PLAIN"', 'No such configuration property: "sasl.mechanismz"'),
])
def test_a_setting_librdkafka_refuses_is_an_option_error(tmp_path: Path, setting: str, reason: str) -> None:
    path = _job(tmp_path, f'kafka = {{ "bootstrap.servers" = "127.0.0.1:1", {setting} }}\ntopics = ["shop"]')
    with pytest.raises(OptionError) as refused:
        job_settings(merged(read_toml(path), {}))
    assert str(refused.value) == f"[source]: a Kafka setting librdkafka refuses: {reason}"


def test_a_warehouse_uri_stays_a_uri_and_jars_are_a_list(tmp_path: Path) -> None:
    path = _job(tmp_path, f'captured = "{tmp_path}"')
    path.write_text(path.read_text() + '[lake]\nwarehouse = "s3a://bucket/lake"\njars = ["a:b:1", "/x/y.jar"]\n')
    settings = job_settings(merged(read_toml(path), {}))
    assert (settings.warehouse, settings.jars) == ("s3a://bucket/lake", ("a:b:1", "/x/y.jar"))
    path.write_text(path.read_text().replace('jars = ["a:b:1", "/x/y.jar"]', 'jars = "a:b:1"'))
    with pytest.raises(OptionError, match=r'\[lake\] jars = "a:b:1" is not a list of strings'):
        read_toml(path)


def test_the_readme_examples_are_job_files(tmp_path: Path) -> None:
    """The catalog examples set a catalog; the layout example lays out shop's tables."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    examples = [block.split("```", 1)[0] for block in readme.split("```toml\n")[1:]]
    catalogs = [example for example in examples if "[lake]" in example]
    assert len(catalogs) >= 2 and len(examples) == len(catalogs) + 1
    for number, example in enumerate(examples):
        path = tmp_path / f"example{number}.toml"
        path.write_text(f'[source]\ncaptured = "{tmp_path}"\n[format]\nname = "open"\n{example}')
        settings = job_settings(merged(read_toml(path), {}))
        if example in catalogs:
            assert settings.spark_conf["spark.sql.catalog.lake.type"] in ("rest", "jdbc")
        else:
            orders = settings.replicate.layout_for("shop", "orders")
            assert orders is not None and orders.partition_by is not None and len(orders.partition_by) == 3
            assert orders.properties and settings.replicate.layout_for("shopping", "orders") is None


def test_unsupported_ddl_is_read_from_the_file_and_a_flag_wins(tmp_path: Path) -> None:
    path = _job(tmp_path, f'captured = "{tmp_path}"', 'unsupported-ddl = "skip"')
    assert job_settings(merged(read_toml(path), {})).replicate.evolution.unsupported_ddl == "skip"
    flag = {"batch": {"unsupported-ddl": "apply-supported"}}
    assert job_settings(merged(read_toml(path), flag)).replicate.evolution.unsupported_ddl == "apply-supported"
    path.write_text(path.read_text().replace('"skip"', '"ignore"'))
    with pytest.raises(OptionError, match="unsupported-ddl must be one of stop, skip, apply-supported, got 'ignore'"):
        job_settings(merged(read_toml(path), {}))


def test_the_compaction_cadence_is_read_and_a_negative_one_refused(tmp_path: Path) -> None:
    path = _job(tmp_path, f'captured = "{tmp_path}"', "compact-every-s = 600")
    assert job_settings(merged(read_toml(path), {})).replicate.compact_every_s == 600.0
    default = _job(tmp_path, f'captured = "{tmp_path}"')
    assert job_settings(merged(read_toml(default), {})).replicate.compact_every_s == 3600.0
    path = _job(tmp_path, f'captured = "{tmp_path}"', "compact-every-s = -1")
    with pytest.raises(OptionError, match=r"compact-every-s=-1.0: must not be negative \(0: never\)"):
        job_settings(merged(read_toml(path), {}))
