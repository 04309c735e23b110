"""Iceberg catalog services for the catalog tests, each on loopback for as long as a ``with`` block, in a
folder of its own that goes with it (in the style of :mod:`cdclake.localkafka`):

* :class:`RestCatalogServer`: Iceberg's REST catalog test fixture (``RESTCatalogServer``, the server of
  the ``apache/iceberg-rest-fixture`` image), run from the jars Iceberg publishes on Maven Central. Its
  own catalog is a JDBC catalog on an in-memory SQLite database, its files in the folder's warehouse.
* :class:`LocalPostgres`: a PostgreSQL cluster of Debian's ``postgresql`` package, made by ``initdb``
  in the folder and run by ``pg_ctl``, as user ``postgres`` when the tests run as root (PostgreSQL
  refuses to run as root). ``.ci/services`` installs the package.
* :class:`LocalMariaDB`: a MariaDB server of Debian's ``mariadb-server`` package, its data directory made
  by ``mariadb-install-db`` in the folder and run by ``mariadbd`` on loopback (as user ``mysql`` when
  the tests run as root). ``.ci/services`` installs the package.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Self

from cdclake.localkafka import _java, free_ports
from cdclake.maven import resolve

# Iceberg publishes the REST fixture's classes (iceberg-open-api's test-fixtures jar) up to 1.11.0, not
# the runnable jar the image is built from: the classes, with iceberg-core's test jar (the servlet) and
# what they need at run time. The REST protocol is the same for Spark's Iceberg 1.12 client.
REST_FIXTURE_VERSION = "1.11.0"
REST_SERVER_JARS = [
    f"org.apache.iceberg:iceberg-open-api:{REST_FIXTURE_VERSION}:test-fixtures",
    f"org.apache.iceberg:iceberg-core:{REST_FIXTURE_VERSION}:tests",
    f"org.apache.iceberg:iceberg-core:{REST_FIXTURE_VERSION}",
    "org.apache.hadoop:hadoop-client-api:3.4.1",
    "org.apache.hadoop:hadoop-client-runtime:3.4.1",
    "org.eclipse.jetty.ee10:jetty-ee10-servlet:12.1.14",
    "org.eclipse.jetty.compression:jetty-compression-server:12.1.14",
    "org.eclipse.jetty.compression:jetty-compression-gzip:12.1.14",
    "org.xerial:sqlite-jdbc:3.50.3.0",
    "org.slf4j:slf4j-simple:2.0.17",
]
REST_SERVER_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
POSTGRES_DRIVER = "org.postgresql:postgresql:42.7.7"
START_TIMEOUT_S = 60.0


class ServiceMissing(RuntimeError):
    """A service the tests need is not installed on this machine."""


class _Service:
    """A process of the tests' own in a temporary folder: started on ``with``, stopped after."""

    def __init__(self, prefix: str) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix=prefix))
        self.port = 0

    def __enter__(self) -> Self:
        try:
            self.port = free_ports(1)[0]
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self, log: Path) -> str:
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        return "\n".join(lines[-20:]) or "(its log is empty)"


class RestCatalogServer(_Service):
    """``uri`` is the catalog's address for ``spark.sql.catalog.<name>.uri``. The fixture binds its port on
    every interface (it takes no host setting); the port is a free one of the moment."""

    def __init__(self) -> None:
        super().__init__("cdclake-rest-")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.directory / "warehouse"

    def start(self) -> None:
        classpath = os.pathsep.join(str(jar) for jar in resolve(REST_SERVER_JARS))
        # The fixture reads its catalog's properties from CATALOG_* variables: CATALOG_REST_PORT is rest.port.
        # Its JDBC catalog keeps tables in SQLite, in memory unless told otherwise, where a request made while
        # another writes fails at once ("Failed to get table"), and a job applies tables side by side; a
        # file waits for the lock, as a catalog's own database does.
        env = {**os.environ, "CATALOG_WAREHOUSE": str(self.warehouse), "CATALOG_REST_PORT": str(self.port),
               "CATALOG_URI": f"jdbc:sqlite:{self.directory / 'catalog.db'}"}
        log = self.directory / "server.log"
        with log.open("wb") as out:
            self._process = subprocess.Popen([_java(), "-Xmx256m", "-cp", classpath, REST_SERVER_MAIN], env=env,
                                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the REST catalog server did not start: {self.log_tail(log)}")
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/v1/config", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        super().stop()


class LocalPostgres(_Service):
    """``jdbc_url`` and ``user`` (password-less: the cluster trusts loopback) for a JDBC catalog."""

    user = "cdclake"
    database = "postgres"

    def __init__(self) -> None:
        super().__init__("cdclake-postgres-")
        self._started = False

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    @property
    def _data(self) -> Path:
        return self.directory / "data"

    def start(self) -> None:
        bindir = postgres_bindir()
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        self._run([str(bindir / "initdb"), "-D", str(self._data), "-U", self.user, "--auth=trust", "-E", "UTF8",
                   "--no-sync"])
        # Its socket in its own folder, not /var/run/postgresql; no fsync: the cluster lives for a test.
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -F"
        self._run([str(bindir / "pg_ctl"), "-D", str(self._data), "-l", str(self.directory / "server.log"),
                   "-o", options, "-w", "-t", str(int(START_TIMEOUT_S)), "start"])
        self._started = True

    def stop(self) -> None:
        if self._started:
            self._run([str(postgres_bindir() / "pg_ctl"), "-D", str(self._data), "-m", "immediate", "-w", "stop"])
            self._started = False
        super().stop()

    def _run(self, command: list[str]) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run(as_postgres + command, capture_output=True, text=True, check=False,
                              cwd=self.directory)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(command[0]).name} failed: {done.stdout}{done.stderr}"
                               f"{self.log_tail(self.directory / 'server.log')}")


def postgres_bindir() -> Path:
    """The newest installed PostgreSQL's programs (Debian keeps initdb and pg_ctl off PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise ServiceMissing("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run .ci/services, "
                             "which installs Debian's postgresql package")
    return Path(found[-1]).parent


class LocalMariaDB(_Service):
    """``jdbc_url`` with ``user`` root, password-less, on loopback: a server for the MariaDB sink's tests."""

    user = "root"
    database = "mirror"

    def __init__(self) -> None:
        super().__init__("cdclake-mariadb-")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:mariadb://127.0.0.1:{self.port}/{self.database}?user={self.user}"

    def start(self) -> None:
        server, install = mariadb_programs()
        as_user = ["--user=mysql"] if os.geteuid() == 0 else []
        if os.geteuid() == 0:
            shutil.chown(self.directory, "mysql", "mysql")
        data, log = self.directory / "data", self.directory / "server.log"
        done = subprocess.run([str(install), "--no-defaults", f"--datadir={data}", "--skip-test-db",
                               "--auth-root-authentication-method=normal", *as_user],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {done.stdout}{done.stderr}")
        # No fsync and a small buffer pool: the server lives for a test run.
        with log.open("wb") as out:
            self._process = subprocess.Popen(
                [str(server), "--no-defaults", f"--datadir={data}", f"--port={self.port}", "--bind-address=127.0.0.1",
                 f"--socket={self.directory / 'server.sock'}", f"--pid-file={self.directory / 'server.pid'}",
                 "--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=64M", "--skip-name-resolve",
                 "--local-infile=1", *as_user], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mariadbd did not start: {self.log_tail(log)}")
            time.sleep(0.2)

    def _answers(self) -> bool:
        import pymysql

        try:
            with pymysql.connect(host="127.0.0.1", port=self.port, user=self.user, autocommit=True) as connection:
                connection.cursor().execute(f"CREATE DATABASE IF NOT EXISTS {self.database}")
            return True
        except pymysql.err.OperationalError:
            return False

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None
        super().stop()


def mariadb_programs() -> tuple[Path, Path]:
    """The MariaDB server and ``mariadb-install-db`` of Debian's package."""
    server, install = shutil.which("mariadbd", path="/usr/sbin:/usr/bin"), shutil.which("mariadb-install-db")
    if server is None or install is None:
        raise ServiceMissing("MariaDB is not installed (no mariadbd or mariadb-install-db): run .ci/services, which "
                             "installs Debian's mariadb-server package")
    return Path(server), Path(install)
