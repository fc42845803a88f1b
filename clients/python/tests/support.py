"""support.py - what the Python client's tests share: where the source tree,
the jobq command and the library are, a fresh queue database per test on
SQLite (a temporary file), on the PostgreSQL server that tests/run.sh
started (a schema of its own, named jqcl_*, dropped afterwards) and on its
MariaDB server (a database of its own, jqcl_*, dropped afterwards), and
SQL run as the servers' owner through psql and mariadb.

Environment: JOBQ_LIBRARY (the library under test), JOBQ (the jobq
command), JOBQ_TEST_PG_URL and JOBQ_TEST_MYSQL_URL (the servers; their
cases are skipped without them).
"""

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(PACKAGE))
sys.path.insert(0, PACKAGE)

import jobq  # noqa: E402

JOBQ = os.environ.get("JOBQ") or os.path.join(ROOT, "build", "jobq")
PG_URL = os.environ.get("JOBQ_TEST_PG_URL", "")
MY_URL = os.environ.get("JOBQ_TEST_MYSQL_URL", "")
_names = itertools.count(1)


def env(**more):
    """The environment for a child Python process that imports this jobq."""
    e = dict(os.environ)
    e["PYTHONPATH"] = PACKAGE + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.update(more)
    return e


def tool_env(**more):
    """The environment for a tool (psql, sqlite3): without the sanitizer
    runtime that tests/cli_clients.sh preloads for a sanitizer build."""
    e = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    e.update(more)
    return e


def psql(sql):
    """Runs sql on the test server as its owner; returns stdout."""
    u = urllib.parse.urlsplit(PG_URL.split("?")[0])
    e = tool_env(PGPASSWORD=urllib.parse.unquote(u.password or ""),
                 PGOPTIONS="-c client_min_messages=warning")
    out = subprocess.run(
        ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", u.hostname, "-p",
         str(u.port), "-U", urllib.parse.unquote(u.username), "-d", u.path.lstrip("/"),
         "-c", sql], env=e, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError("psql %r: %s" % (sql, out.stderr.strip()))
    return out.stdout


def mariadb(sql):
    """Runs sql on the test MariaDB server as its jobq user; returns stdout."""
    u = urllib.parse.urlsplit(MY_URL.split("?")[0])
    out = subprocess.run(
        ["mariadb", "--no-defaults", "-h", u.hostname, "-P", str(u.port), "-u",
         urllib.parse.unquote(u.username), "-N", "-B", "-e", sql],
        env=tool_env(MYSQL_PWD=urllib.parse.unquote(u.password or "")), capture_output=True,
        text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError("mariadb %r: %s" % (sql, out.stderr.strip()))
    return out.stdout


def pg_dsn(schema):
    """A libpq connection string for the test server, its search_path on
    schema (for psycopg2)."""
    u = urllib.parse.urlsplit(PG_URL.split("?")[0])
    return ("host=%s port=%d user=%s password=%s dbname=%s options='-c search_path=%s'"
            % (u.hostname, u.port, urllib.parse.unquote(u.username),
               urllib.parse.unquote(u.password or ""), u.path.lstrip("/"), schema))


class StoreCase(unittest.TestCase):
    """A test with a fresh queue database: self.url, self.q (a Client)."""

    store = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="jqcl-py.")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.url = self.new_url()
        self.q = jobq.connect(self.url)
        self.addCleanup(self.q.close)
        if self.store in ("postgres", "mysql"):
            self.q.init()

    def new_url(self):
        if self.store == "sqlite":
            return "sqlite:" + os.path.join(self.tmp, "queue-%d.db" % next(_names))
        if self.store == "mysql":
            if not MY_URL:
                self.skipTest("JOBQ_TEST_MYSQL_URL is not set (tests/run.sh starts a server)")
            name = "jqcl_%d_%d" % (os.getpid(), next(_names))
            mariadb("CREATE DATABASE %s" % name)
            self.addCleanup(mariadb, "DROP DATABASE IF EXISTS %s" % name)
            u = urllib.parse.urlsplit(MY_URL)
            return urllib.parse.urlunsplit(u._replace(path="/" + name))
        if not PG_URL:
            self.skipTest("JOBQ_TEST_PG_URL is not set (tests/run.sh starts a server)")
        schema = "jqcl_%d_%d" % (os.getpid(), next(_names))
        self.addCleanup(psql, "DROP SCHEMA IF EXISTS %s CASCADE" % schema)
        self.schema = schema
        return PG_URL + ("&" if "?" in PG_URL else "?") + "schema=" + schema

    def jobq_cmd(self, *args, **kw):
        """Runs the jobq command on this test's database (named by JOBQ_DB,
        so that no password shows in a failure's message)."""
        return subprocess.run([JOBQ] + list(args), capture_output=True,
                              timeout=kw.pop("timeout", 60), env=env(JOBQ_DB=self.url), **kw)


class SQLiteCase(StoreCase):
    store = "sqlite"


class PostgresCase(StoreCase):
    store = "postgres"


class MariaDBCase(StoreCase):
    store = "mysql"
