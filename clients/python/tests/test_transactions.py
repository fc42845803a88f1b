"""test_transactions.py - enqueueing together with the application's own
writes: on SQLite in the client's transaction with execute(), on
PostgreSQL through jobq_put() on the application's psycopg2 connection;
each committed and rolled back."""

import unittest

import support

import jobq

try:
    import psycopg2
except ImportError:  # pragma: no cover - said by the skip
    psycopg2 = None


class SQLiteTransactions(support.SQLiteCase):
    def setUp(self):
        super().setUp()
        self.q.execute("CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT, price REAL, "
                       "note BLOB)")

    def test_committed_with_the_applications_rows(self):
        q = self.q
        with q.transaction():
            q.execute("INSERT INTO orders(item, price, note) VALUES (?, ?, ?)",
                      ("book", 12.5, b"\x00\x01"))
            job_id = q.put("email", {"order": 1})
            ack_id = q.put("email", "second")
        self.assertEqual(q.execute("SELECT id, item, price, note FROM orders"),
                         [(1, "book", 12.5, b"\x00\x01")])
        self.assertEqual([j.id for j in q.ls()], [job_id, ack_id])

    def test_rolled_back_with_the_applications_rows(self):
        q = self.q
        with self.assertRaises(ZeroDivisionError):
            with q.transaction():
                q.execute("INSERT INTO orders(item) VALUES (:item)", {"item": "pen"})
                q.put("email", "never")
                1 / 0
        self.assertEqual(q.execute("SELECT count(*) FROM orders"), [(0,)])
        self.assertEqual(q.ls(), [])
        self.assertEqual(q.stats(), [])

    def test_a_failed_put_leaves_the_transaction_usable(self):
        q = self.q
        with q.transaction():
            q.execute("INSERT INTO orders(item) VALUES ('kept')")
            with self.assertRaises(jobq.Invalid):
                q.put("Bad Queue", "x")
            q.put("email", "kept too")
        self.assertEqual(q.execute("SELECT item FROM orders"), [("kept",)])
        self.assertEqual(len(q.ls()), 1)

    def test_acknowledge_with_the_applications_rows(self):
        q = self.q
        job_id = q.put("email", "ada")
        with q.session(lease=30) as s:
            (job,) = s.claim("email")
            with q.transaction():
                q.execute("INSERT INTO orders(item) VALUES (?)", ("sent " + job.text,))
                s.complete(job, "sent")
        self.assertEqual(q.show(job_id).state, "done")
        self.assertEqual(q.execute("SELECT item FROM orders"), [("sent ada",)])

    def test_execute_refuses_what_it_cannot_run(self):
        q = self.q
        with self.assertRaises(jobq.DatabaseError) as cm:
            q.execute("INSERT INTO nosuch VALUES (1)")
        self.assertIn("no such table: nosuch", str(cm.exception))
        with self.assertRaises(jobq.Invalid):
            q.execute("SELECT 1; SELECT 2")
        with self.assertRaises(jobq.Invalid):
            q.execute("SELECT ?", ())
        with self.assertRaises(TypeError):
            q.execute("SELECT ?", (object(),))


class PostgresTransactions(support.PostgresCase):
    def setUp(self):
        super().setUp()
        if psycopg2 is None:
            self.skipTest("psycopg2 is not installed for %s (scripts/deps.txt lists "
                          "python3-psycopg2)" % support.sys.executable)
        self.conn = psycopg2.connect(support.pg_dsn(self.schema))
        self.addCleanup(self.conn.close)
        with self.conn, self.conn.cursor() as cur:
            cur.execute("CREATE TABLE orders(id serial PRIMARY KEY, item text)")

    def test_committed_with_the_applications_rows(self):
        with self.conn, self.conn.cursor() as cur:
            cur.execute("INSERT INTO orders(item) VALUES (%s)", ("book",))
            a = jobq.pg.put(cur, "email", {"order": 1}, key="ada", priority=5, max_attempts=3,
                            timeout=2, backoff=0.5)
            b = jobq.pg.put(self.conn, "email", b"\x00bytes", delay=3600, unique="u-1")
            c = jobq.pg.put(cur, "email", "again", unique="u-1")
            d = jobq.pg.put(cur, "reports", "bar", barrier=True)
        self.assertEqual(c, b)
        info = self.q.show(a)
        self.assertEqual((info.payload, info.key, info.priority, info.max_attempts, info.timeout,
                          info.backoff), (b'{"order":1}', "ada", 5, 3, 2.0, 0.5))
        self.assertEqual(self.q.show(b).payload, b"\x00bytes")
        self.assertEqual([j.id for j in self.q.ls(state="scheduled")], [b])
        self.assertTrue(self.q.show(d).barrier)
        with self.q.session(lease=30) as s:
            (job,) = s.claim("email")
            self.assertEqual(job.json(), {"order": 1})
            s.complete(job)

    def test_rolled_back_with_the_applications_rows(self):
        with self.assertRaises(ZeroDivisionError):
            with self.conn, self.conn.cursor() as cur:
                cur.execute("INSERT INTO orders(item) VALUES (%s)", ("pen",))
                jobq.pg.put(cur, "email", "never")
                1 / 0
        with self.conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM orders")
            self.assertEqual(cur.fetchone()[0], 0)
        self.assertEqual(self.q.ls(), [])

    def test_at_runs_on_the_database_clock(self):
        import datetime
        when = self.q.identity().now + datetime.timedelta(minutes=10)
        with self.conn, self.conn.cursor() as cur:
            job_id = jobq.pg.put(cur, "email", "later", at=when)
        self.assertLess(abs((self.q.show(job_id).run_at - when).total_seconds()), 1)

    def test_bad_arguments_are_the_servers_errors(self):
        with self.assertRaises(psycopg2.Error) as cm:
            with self.conn, self.conn.cursor() as cur:
                jobq.pg.put(cur, "Bad Queue", "x")
        self.assertEqual(cm.exception.pgcode, "22023")
        self.assertIn("invalid queue name", str(cm.exception))
        with self.assertRaises(ValueError):
            jobq.pg.put_sql("email", delay=1, at=2)

    def test_execute_is_sqlite_only(self):
        with self.assertRaises(jobq.NotSupported) as cm:
            self.q.execute("SELECT 1")
        self.assertIn("jobq.pg.put", str(cm.exception))
        self.assertNotIn(support.PG_URL.split(":")[2].split("@")[0], str(cm.exception))

    def test_client_transactions_hold_jobqs_own_calls(self):
        q = self.q
        with self.assertRaises(RuntimeError):
            with q.transaction():
                q.put("email", "one")
                q.put("email", "two")
                raise RuntimeError("no")
        self.assertEqual(q.ls(), [])
        with q.transaction():
            q.put("email", "one")
        self.assertEqual(len(q.ls()), 1)


if __name__ == "__main__":
    unittest.main()
