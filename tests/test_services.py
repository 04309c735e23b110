"""The tests' own services (tests/catalogs.py): a machine without one is told what installs it."""

from __future__ import annotations

import glob

import pytest

from tests.catalogs import ServiceMissing, postgres_bindir


def test_without_postgresql_the_error_names_ci_services(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    with pytest.raises(ServiceMissing, match=r"PostgreSQL is not installed .*: run \.ci/services"):
        postgres_bindir()


def test_the_newest_postgresql_is_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    found = ["/usr/lib/postgresql/9/bin/initdb", "/usr/lib/postgresql/16/bin/initdb"]
    monkeypatch.setattr(glob, "glob", lambda pattern: found)
    assert str(postgres_bindir()) == "/usr/lib/postgresql/16/bin"
