"""The tests' own services (tests/catalogs.py): a machine without one is told what installs it."""

from __future__ import annotations

import glob
import shutil

import pytest

from tests.catalogs import ServiceMissing, mariadb_programs, postgres_bindir


def test_without_postgresql_the_error_names_ci_services(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    with pytest.raises(ServiceMissing, match=r"PostgreSQL is not installed .*: run \.ci/services"):
        postgres_bindir()


def test_the_newest_postgresql_is_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    found = ["/usr/lib/postgresql/9/bin/initdb", "/usr/lib/postgresql/16/bin/initdb"]
    monkeypatch.setattr(glob, "glob", lambda pattern: found)
    assert str(postgres_bindir()) == "/usr/lib/postgresql/16/bin"


def test_without_mariadb_the_error_names_ci_services(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    with pytest.raises(ServiceMissing, match=r"MariaDB is not installed .*: run \.ci/services"):
        mariadb_programs()
