"""test_worker.py - handlers at work: in this process (jobq.Worker: done,
a handler that raises, Retry, Fail, async handlers, concurrency, ordering
keys, cancel requests, stop), and under a real `jobq work --persistent`
foreman through python3 -m jobq.worker (the line protocol, prints kept off
the protocol, a partial last line dropped, bad lines refused)."""

import os
import subprocess
import sys
import threading
import time
import unittest

import support

import jobq
from jobq.handlers import Registry, handler


def handlers():
    """A registry of the handlers these tests use."""
    r = Registry()
    state = {"running": 0, "most": 0, "order": []}
    lock = threading.Lock()

    @handler("echo", registry=r)
    def echo(job):
        return job.payload

    @handler("boom", registry=r)
    def boom(job):
        raise RuntimeError("boom on job %d" % job.id)

    @handler("exit", registry=r)
    def leave(job):
        sys.exit(4)

    @handler("flaky", registry=r)
    def flaky(job):
        if job.attempt == 1:
            raise jobq.Retry("not yet", delay=0.05)
        return {"attempt": job.attempt}

    @handler("refuse", registry=r)
    def refuse(job):
        raise jobq.Fail("refused " + job.text)

    @handler("async", registry=r)
    async def later(job):
        import asyncio
        await asyncio.sleep(0.01)
        return "awaited " + job.text

    @handler("slow", registry=r)
    def slow(job):
        with lock:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
            state["order"].append(("start", job.key, job.text))
        time.sleep(0.15)
        with lock:
            state["running"] -= 1
            state["order"].append(("end", job.key, job.text))
        return "slept"

    @handler("cancellable", registry=r)
    def cancellable(job):
        if not job.cancel_requested.wait(30):
            return "never cancelled"
        raise jobq.Fail("stopped on request")

    return r, state


class InProcessTests:
    def work(self, registry, queues=None, concurrency=1, until="empty", **kw):
        w = jobq.Worker(self.url, queues, concurrency, poll=0.05, registry=registry, **kw)
        return w.run(until=until)

    def test_outcomes(self):
        q = self.q
        r, _ = handlers()
        ids = {}
        ids["echo"] = q.put("echo", b"\x00hi\xff")
        ids["boom"] = q.put("boom", "x", max_attempts=1)
        ids["flaky"] = q.put("flaky", "x")
        ids["refuse"] = q.put("refuse", "it", max_attempts=2, backoff=0.05)
        ids["async"] = q.put("async", "this")
        ids["nobody"] = q.put("nobody", "x", max_attempts=1)
        ids["exit"] = q.put("exit", "x", max_attempts=1)
        counts = self.work(r, ["echo", "boom", "flaky", "refuse", "async", "nobody", "exit"])
        self.assertEqual(counts["done"], 3)
        self.assertEqual(counts["retry"], 1)
        self.assertEqual(counts["failed"], 5)
        self.assertIn("SystemExit: 4", q.show(ids["exit"]).last_error)
        self.assertEqual(q.show(ids["echo"]).result, b"\x00hi\xff")
        info = q.show(ids["boom"])
        self.assertEqual(info.state, "dead")
        self.assertIn("RuntimeError: boom on job %d" % ids["boom"], info.last_error)
        self.assertIn("Traceback", info.last_error)
        info = q.show(ids["flaky"])
        self.assertEqual((info.state, info.attempts, info.result, info.last_error),
                         ("done", 2, b'{"attempt":2}', "not yet"))
        info = q.show(ids["refuse"])
        self.assertEqual((info.state, info.attempts, info.last_error),
                         ("dead", 2, "refused it"))
        self.assertEqual(q.show(ids["async"]).result, b"awaited this")
        self.assertIn("no handler for queue 'nobody'", q.show(ids["nobody"]).last_error)
        self.assertEqual(q.sessions(), [])

    def test_concurrency_and_ordering_keys(self):
        q = self.q
        r, state = handlers()
        for i in range(3):
            for k in ("a", "b"):
                q.put("slow", "%s%d" % (k, i), key=k)
        self.work(r, ["slow"], concurrency=4)
        self.assertEqual(q.stats()[0].done, 6)
        self.assertEqual(state["most"], 2)  # one job per key at a time, both keys at once
        for k in ("a", "b"):
            mine = [(what, text) for what, key, text in state["order"] if key == k]
            self.assertEqual(mine, [(w, "%s%d" % (k, i)) for i in range(3)
                                    for w in ("start", "end")])

    def test_cancel_request_reaches_the_handler(self):
        q = self.q
        r, _ = handlers()
        job_id = q.put("cancellable", "x")
        w = jobq.Worker(self.url, ["cancellable"], poll=0.05, lease=0.6, registry=r)
        t = threading.Thread(target=w.run, kwargs={"until": "empty"})
        t.start()
        deadline = time.time() + 30
        while q.show(job_id).state != "running" and time.time() < deadline:
            time.sleep(0.02)
        self.assertFalse(q.cancel(job_id))
        t.join(60)
        self.assertFalse(t.is_alive())
        info = q.show(job_id)
        self.assertEqual((info.state, info.last_error), ("cancelled", "stopped on request"))

    def test_stop_finishes_the_running_jobs(self):
        q = self.q
        r, _ = handlers()
        for i in range(20):
            q.put("slow", "s%d" % i)
        w = jobq.Worker(self.url, ["slow"], 2, poll=0.05, registry=r)
        t = threading.Thread(target=w.run)
        t.start()
        time.sleep(0.4)
        w.stop()
        t.join(60)
        self.assertFalse(t.is_alive())
        stats = q.stats()[0]
        self.assertEqual(stats.running, 0)
        self.assertGreater(stats.done, 0)
        self.assertLess(stats.done, 20)
        self.assertEqual(stats.done + stats.ready, 20)
        self.assertEqual(q.sessions(), [])

    def test_a_second_stop_does_not_wait(self):
        q = self.q
        r = Registry()
        never = threading.Event()
        self.addCleanup(never.set)

        @handler("stuck", registry=r)
        def stuck(job):
            never.wait(120)
        job_id = q.put("stuck", "x")
        w = jobq.Worker(self.url, ["stuck"], poll=0.05, registry=r)
        t = threading.Thread(target=w.run)
        t.start()
        deadline = time.time() + 30
        while q.show(job_id).state != "running" and time.time() < deadline:
            time.sleep(0.02)
        w.stop()
        t.join(0.5)
        self.assertTrue(t.is_alive())  # the first stop waits for the job
        w.stop()
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(q.show(job_id).state, "ready")  # back to the queue
        self.assertEqual(q.sessions(), [])

    def test_no_handlers_is_refused(self):
        with self.assertRaises(ValueError) as cm:
            jobq.Worker(self.url, registry=Registry()).run()
        self.assertIn("no handlers are registered", str(cm.exception))
        with self.assertRaises(ValueError):
            jobq.Worker(self.url, concurrency=0)

    def test_a_result_over_the_limit_fails_its_job_alone(self):
        q = self.q
        r = Registry()

        @handler("big", registry=r)
        def big(job):
            return b"x" * (2 * 1024 * 1024) if job.text == "big" else b"small"
        a = q.put("big", "big", max_attempts=1)
        b = q.put("big", "fine")
        self.work(r, ["big"], concurrency=2)
        self.assertEqual(q.show(a).state, "dead")
        self.assertIn("over the limit", q.show(a).last_error)
        self.assertEqual(q.show(b).result, b"small")


class SQLiteInProcess(InProcessTests, support.SQLiteCase):
    pass


class PostgresInProcess(InProcessTests, support.PostgresCase):
    pass


APP = '''
import os, sys
import jobq

@jobq.handler("email")
def send(job):
    print("handler output goes to stderr", job.id)      # not to the protocol
    os.system("echo a child process writes here too")
    if job.payload == b"boom":
        raise ValueError("bad address " + job.text)
    if job.payload == b"refuse":
        raise jobq.Fail("refused")
    if job.payload == b"retry" and job.attempt == 1:
        raise jobq.Retry("later", delay=0.05)
    return {"id": job.id, "queue": job.queue, "attempt": job.attempt, "key": job.key,
            "claim": job.claim, "prev_lost": job.prev_lost, "payload": job.payload.hex()}

@jobq.handler()
async def anything(job):
    return b"any " + job.payload
'''


class PersistentTests:
    def write_app(self):
        with open(os.path.join(self.tmp, "app_tasks.py"), "w") as f:
            f.write(APP)

    def test_under_the_foreman(self):
        q = self.q
        self.write_app()
        ids = {}
        ids["bytes"] = q.put("email", b"\x00\n\xff", key="k\xe9y")
        ids["boom"] = q.put("email", "boom", max_attempts=1)
        ids["refuse"] = q.put("email", "refuse", max_attempts=1)
        ids["retry"] = q.put("email", "retry")
        ids["other"] = q.put("other", "x")
        r = self.jobq_cmd("work", "--persistent", "-c", "2", "--poll", "50ms", "--until-empty",
                          "--", sys.executable, "-m", "jobq.worker", "app_tasks", cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The handler printed, and so did a child of it: had that reached
        # the protocol, the foreman would have failed the job with a
        # protocol error.
        import json
        out = json.loads(q.show(ids["bytes"]).result)
        self.assertEqual((out["queue"], out["attempt"], out["key"], out["prev_lost"],
                          out["payload"]), ("email", 1, "k\xe9y", False, "000aff"))
        self.assertEqual(out["claim"], q.show(ids["bytes"]).claim)
        info = q.show(ids["boom"])
        self.assertEqual(info.state, "dead")
        self.assertIn("ValueError: bad address boom", info.last_error)
        self.assertEqual(q.show(ids["refuse"]).last_error, "refused")
        info = q.show(ids["retry"])
        self.assertEqual((info.state, info.attempts, info.last_error), ("done", 2, "later"))
        self.assertEqual(q.show(ids["other"]).result, b"any x")


class SQLitePersistent(PersistentTests, support.SQLiteCase):
    pass


class PostgresPersistent(PersistentTests, support.PostgresCase):
    pass


class Protocol(unittest.TestCase):
    """The worker's side of the protocol, fed by hand."""

    def setUp(self):
        self.tmp = support.tempfile.mkdtemp(prefix="jqcl-proto.")
        self.addCleanup(support.shutil.rmtree, self.tmp, True)
        with open(os.path.join(self.tmp, "app_tasks.py"), "w") as f:
            f.write(APP)

    def worker(self, stdin, *targets):
        return subprocess.run([sys.executable, "-m", "jobq.worker"] + list(targets or
                              ["app_tasks"]), input=stdin, capture_output=True, cwd=self.tmp,
                              env=support.env(), timeout=60)

    def test_a_partial_last_line_is_dropped(self):
        full = b"job 7 other 1 25 0 " + b"a" * 32 + b" - aGk=\n"
        r = self.worker(full + b"job 8 other 1 25 0 " + b"b" * 32 + b" - aG")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"ready\ndone 7 YW55IGhp\n")
        self.assertIn(b"dropped the last line", r.stderr)

    def test_later_fields_are_ignored(self):
        r = self.worker(b"job 7 other 1 25 1 " + b"a" * 32 + b" - - future fields\n")
        self.assertEqual(r.stdout, b"ready\ndone 7 YW55IA==\n")

    def test_what_is_not_a_job_line_stops_the_worker(self):
        for line in (b"hello\n", b"job 7 other 1 25 0\n", b"job x other 1 25 0 c - -\n",
                     b"job 7 other 1 25 0 c - !!!\n"):
            r = self.worker(line)
            self.assertEqual(r.returncode, 1, line)
            self.assertEqual(r.stdout, b"ready\n")
            self.assertIn(b"jobq.worker: ", r.stderr)

    def test_no_handlers_no_ready(self):
        with open(os.path.join(self.tmp, "empty.py"), "w") as f:
            f.write("x = 1\n")
        r = self.worker(b"", "empty")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, b"")
        self.assertIn(b"no handlers: empty registered none", r.stderr)
        r = self.worker(b"", "nosuchmodule")
        self.assertEqual(r.returncode, 1)
        self.assertIn(b"cannot load nosuchmodule: ModuleNotFoundError", r.stderr)

    def test_a_file_can_be_named(self):
        r = self.worker(b"job 3 other 1 25 0 " + b"c" * 32 + b" - eA==\n",
                        os.path.join(self.tmp, "app_tasks.py"))
        self.assertEqual(r.stdout, b"ready\ndone 3 YW55IHg=\n")


if __name__ == "__main__":
    unittest.main()
