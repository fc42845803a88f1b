#!/usr/bin/env python3
"""chaos.py - a chaos run in the style of Jepsen against one queue database.

Producers put jobs with `jobq put --ndjson` while several `jobq work`
foremen run them (tests/chaos/job.sh), and a fault thread hurts them:
SIGKILL of foremen, of job processes and of producers mid-put; SIGSTOP of a
foreman for longer than its lease, then SIGCONT; on PostgreSQL, restarts of
the server, SIGSTOP of every server process for two leases, and connections
dropped under the foremen (possibly while a COMMIT is in flight); on
MariaDB, dropped connections; on SQLite, a full disk under the producers
for a second or two (the url's max_size caps the file where it stands, so
every put that needs a new page is refused); and on the server stores,
foremen whose clock
is five minutes off (faketime), which must change nothing, since every
decision uses the database's clock.

On a high-availability bed (tests/ha/) the foremen and producers run on
hosts of their own (network namespaces, --host), reach the servers through
a URL that lists the primary and its standby, and two more faults come in:
a foreman's host cut off from the network for longer than its lease (its
link set down: nothing is stopped), and failovers (--standby, --failovers):
the primary killed with `pg_ctl stop -m immediate`, the standby promoted,
and the old primary made the new standby (pg_basebackup).  With
--sync the standby is synchronous (as Patroni's synchronous_mode: the new
primary waits for no standby until the new one streams, and the primary
is killed only while its standby is synchronous and caught up), so no
acknowledged job may be lost; and every foreman must be back at work (a
claim that counted) within the lease and a few seconds of each failover.

Everything is recorded: each put batch with its payloads and its outcome
(ok, or unknown when the command failed or was killed), each run of a job
(tests/chaos/job.sh logs its start and end, its attempt, its claim token
and its foreman), each fault with its time.  When the faults stop, the
foremen drain the queue, and the checker reads the archive with the
store's own SQL client and verifies:

  - every acknowledged put ended once: done (its result the claim token of
    a run that finished), or dead for the jobs meant to fail; a batch of
    unknown outcome (killed, or refused by a full disk) is there whole or
    not at all (nothing lost, nothing half-written);
  - nothing is there that no producer put, and every payload is byte for
    byte what was put;
  - one completion per job, and the one recorded is a finished run's; the
    stale acknowledgements refused are counted from the foremen's logs;
  - no two runs of a job overlapped unless a fault (a killed or stopped
    foreman, a restarted or stopped server) ended the first one's claim;
  - attempts never went down, and no job ran again after it finished
    (but for a run whose foreman was stopped between starting the job and
    handing it its payload, which is killed on resume and never counts);
  - after the last fault (a foreman killed on a quiet queue while it runs
    long jobs), its jobs were claimed again within the lease, a heartbeat,
    the poll interval and a small margin.

With --parts P the queue is split into P parts (jobq parts) and every job
has an ordering key (of --keys, the queue's key policy skip, so that a
dead head lets its key go on); the faults also make foremen leave (SIGTERM,
a graceful stop) and join again, so that parts change owners, besides the
kills and pauses.  The checker then also verifies, over the runs that
counted (the run whose claim the archive holds):

  - each key's jobs ran one at a time and in the order they were put;
  - no two foremen ran jobs of one part at once: a part changes owner
    only after its owner has nothing of it running, or has lost its
    session (whose runs then cannot count).

It prints one summary line and exits 0 when every check held, 1 otherwise
(the first violations are listed), 2 on bad usage.

  chaos.py --jobq BUILD/jobq --store sqlite|postgres|mysql --url URL
           [--seconds N] [--foremen N] [--producers N] [--jobs N]
           [--pg-dir DIR] [--mysql-dir DIR] [--keep] [--lease S]
           [--host NETNS:LINK ...] [--standby DIR --failovers N [--sync]]
           [--parts P [--keys K]]
"""
import argparse
import calendar
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
LEASE_S = 1.0
POLL_S = 0.2


def now_ns():
    return time.time_ns()


def part_of(key, parts):
    """A key's part, as jobq_part_of() computes it: FNV-1a (32 bits) of its
    bytes, modulo the parts."""
    h = 2166136261
    for b in key.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h % parts


class Chaos:
    def __init__(self, a):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="jobq-chaos-")
        self.exec_log = os.path.join(self.dir, "exec.log")
        open(self.exec_log, "w").close()
        self.lock = threading.Lock()
        self.batches = []          # {"payloads": [...], "outcome": ...}
        self.events = []           # (t_ns, kind, detail)
        self.foremen = {}          # slot -> Popen
        self.stop = threading.Event()
        self.counts = {"foreman kills": 0, "job kills": 0, "pauses": 0,
                       "producer kills": 0, "restarts": 0, "stalls": 0,
                       "dropped connections": 0, "full disks": 0,
                       "puts refused as full": 0}
        if a.parts:
            self.counts["leaves"] = 0
            self.counts["joins"] = 0
        if a.host:
            self.counts["host cuts"] = 0
        if a.standby:
            self.counts["failovers"] = 0
        # Hosts (network namespaces): foreman slot i runs on host i, the
        # producers on the hosts after the foremen's.
        self.hosts = [h.split(":", 1) for h in a.host]
        # Foreman pid -> [(start, slot)]: a pid comes back in a long run
        # (pid_max is often 32768), so a pid names a foreman only with a
        # time (slot_at).
        self.starts = {}
        # Held by a fault while it hurts, and by a failover from its kill
        # until every foreman is back, so that the time back to work is the
        # failover's alone.
        self.fault_lock = threading.Lock()
        self.full_until = 0.0      # time.time() until which the disk is full
        self.put_target = a.jobs
        self.put_count = 0
        self.producers = {}        # index -> Popen of the put under way
        # libfaketime preloaded by hand rather than through the faketime
        # program, which forks (the pid would not be the foreman's).  Either
        # way it shares a semaphore among the processes that inherit it,
        # which deadlocks them once one is killed while it holds it (see
        # is_job), and leaves it in /dev/shm when the foreman is killed
        # (forget_faketime).
        self.faketime = None
        self.faked = []            # pids of the foremen started under it
        if a.store != "sqlite":
            for lib in ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                        "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1"):
                if os.path.exists(lib):
                    self.faketime = lib

    # ------------------------------------------------------------ processes

    def env(self, offset=None):
        e = dict(os.environ)
        e["CHAOS_LOG"] = self.exec_log
        e.pop("JOBQ_DB", None)
        if offset is not None:
            e["LD_PRELOAD"] = self.faketime
            e["FAKETIME"] = offset
            e["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            # A sanitizer build's runtime refuses to come after a preloaded
            # library unless told that the order is fine.
            asan = e.get("ASAN_OPTIONS")
            e["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        return e

    def on_host(self, index, cmd):
        """cmd run on host index (a network namespace), when there are hosts."""
        if not self.hosts:
            return cmd
        return ["ip", "netns", "exec", self.hosts[index][0]] + cmd

    def start_foreman(self, slot):
        cmd = [self.a.jobq, "--db", self.a.url, "work", "--log-times", "-q", "chaos", "-c", "4",
               "--lease", "%dms" % int(LEASE_S * 1000), "--poll", "%dms" % int(POLL_S * 1000),
               "--grace", "2s", "--", os.path.join(HERE, "job.sh")]
        offset = self.clock_offset(slot)
        offset = None if offset == 0 else "%+ds" % offset
        err = open(os.path.join(self.dir, "foreman-%d.log" % slot), "a")
        cmd = self.on_host(slot, cmd)
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=err, env=self.env(offset), start_new_session=True)
        err.close()
        self.foremen[slot] = p
        self.starts.setdefault(p.pid, []).append((now_ns(), slot))
        if offset is not None:
            self.faked.append(p.pid)
        return p

    def forget_faketime(self):
        """libfaketime's shared memory and semaphore of each foreman that ran
        under it, named after its pid, which a killed one leaves behind."""
        for pid in self.faked:
            for name in ("faketime_shm_%d" % pid, "sem.faketime_sem_%d" % pid):
                try:
                    os.unlink(os.path.join("/dev/shm", name))
                except OSError:
                    pass
        self.faked = []

    def clock_offset(self, slot):
        """Seconds the clock of the foreman in slot is off: two foremen of
        the server stores live five minutes off."""
        if self.faketime and slot in (1, 2):
            return 300 if slot == 1 else -300
        return 0

    def children(self, pid):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def event(self, kind, detail):
        t = now_ns()
        with self.lock:
            self.events.append((t, kind, detail))
            with open(os.path.join(self.dir, "events.log"), "a") as f:
                f.write("%d %s %s\n" % (t, kind, detail))
        return t

    # ------------------------------------------------------------ producers

    def producer(self, index):
        """Puts batches of 20 at the run's rate: below what the foremen can
        do even with one of them down, so that how fast a job runs again
        after a fault is not hidden behind a backlog."""
        rnd = random.Random(index)
        n = 0
        pause = 20.0 * self.a.producers / self.a.rate
        while not self.stop.is_set():
            began = time.time()
            with self.lock:
                if self.put_count >= self.put_target:
                    break
                self.put_count += 20
            payloads = []
            lines = []
            for _ in range(20):
                n += 1
                r = rnd.random()
                kind = "fail" if r < 0.03 else "slow" if r < 0.13 else "ok"
                pl = "%s-%d-%d" % (kind, index, n)
                payloads.append(pl)
                job = {"queue": "chaos", "payload": pl, "backoff": "100ms",
                       "max_attempts": 2 if kind == "fail" else 50}
                if self.a.parts:
                    job["key"] = "k%d" % rnd.randrange(self.a.keys)
                lines.append(json.dumps(job))
            batch = {"payloads": payloads, "outcome": "unknown"}
            with self.lock:
                self.batches.append(batch)
            url = self.a.url
            if time.time() < self.full_until:
                # The smallest cap: the file cannot grow from where it is.
                url += ("&" if "?" in url else "?") + "max_size=64KiB"
            p = subprocess.Popen(self.on_host(self.a.foremen + index,
                                              [self.a.jobq, "--db", url, "put", "--ndjson", "-"]),
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, env=self.env())
            with self.lock:
                self.producers[index] = p
            err = b""
            try:
                _, err = p.communicate(("\n".join(lines) + "\n").encode(), timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            with self.lock:
                self.producers.pop(index, None)
                if p.returncode != 0 and b"is full" in (err or b""):
                    self.counts["puts refused as full"] += 1
            if p.returncode == 0:
                batch["outcome"] = "ok"
            self.stop.wait(max(0.0, began + rnd.uniform(0.5, 1.5) * pause - time.time()))

    # ------------------------------------------------------------ faults

    def pg_pids(self):
        pidfile = os.path.join(self.a.pg_dir, "data", "postmaster.pid")
        try:
            with open(pidfile) as f:
                root = int(f.readline())
        except (OSError, ValueError):
            return []
        out, todo = [], [root]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo.extend(self.children(pid))
        return out

    def sql(self, query):
        """Runs query as the server's superuser (for faults and checks)."""
        if self.a.store == "postgres":
            url = self.a.url.split("?")[0]
            if "," in url.split("@")[-1].split("/")[0]:
                url += "?target_session_attrs=read-write"
            return subprocess.run(["psql", "-X", "-q", "-At", "-F", "|", url,
                                   "-c", query], capture_output=True, text=True, timeout=60)
        return subprocess.run([os.path.join(TESTS, "mysqlserver.sh"), "sql", self.a.mysql_dir,
                               "-N", "-B", "-e", query], capture_output=True, text=True,
                              timeout=60)

    def fault(self, rnd):
        kinds = [("kill_foreman", 3), ("kill_job", 4), ("pause_foreman", 2),
                 ("kill_producer", 1)]
        if self.a.store in ("postgres", "mysql"):
            kinds.append(("drop_connection", 2))
        else:
            kinds.append(("full_disk", 1))
        if self.hosts:
            kinds.append(("cut_host", 2))
        if self.a.parts:
            kinds.append(("leave_foreman", 3))
        if self.a.store == "postgres" and self.a.pg_dir:
            if self.counts["restarts"] < self.a.restarts:
                kinds.append(("restart_db", 1))
            if self.counts["stalls"] < self.a.restarts:
                kinds.append(("stall_db", 1))
        # Every kind of fault once, in a random order, then by weight.
        if not hasattr(self, "first_kinds"):
            self.first_kinds = [k for k, _ in kinds]
            rnd.shuffle(self.first_kinds)
        kind = (self.first_kinds.pop() if self.first_kinds else
                rnd.choices([k for k, _ in kinds], [w for _, w in kinds])[0])
        slot = rnd.choice(sorted(self.foremen))
        p = self.foremen[slot]
        if kind == "kill_foreman":
            self.event("kill_foreman", p.pid)
            p.send_signal(signal.SIGKILL)
            p.wait()
            self.counts["foreman kills"] += 1
            self.start_foreman(slot)
        elif kind == "kill_job":
            kids = [c for c in self.children(p.pid) if self.is_job(c)]
            if kids:
                victim = rnd.choice(kids)
                self.event("kill_job", victim)
                try:
                    os.kill(victim, signal.SIGKILL)
                    self.counts["job kills"] += 1
                except ProcessLookupError:
                    pass
        elif kind == "leave_foreman":
            # A graceful stop (its running jobs finish, its parts go to
            # the others), then the same slot joins again.
            self.event("leave_foreman", p.pid)
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            self.counts["leaves"] += 1
            time.sleep(rnd.uniform(0.2, 1.5) * LEASE_S)
            q = self.start_foreman(slot)
            self.event("join_foreman", q.pid)
            self.counts["joins"] += 1
        elif kind == "pause_foreman":
            self.event("pause_foreman", p.pid)
            p.send_signal(signal.SIGSTOP)
            time.sleep(rnd.uniform(1.5, 2.0) * LEASE_S)
            p.send_signal(signal.SIGCONT)
            self.counts["pauses"] += 1
        elif kind == "kill_producer":
            with self.lock:
                busy = list(self.producers.values())
            if busy:
                victim = rnd.choice(busy)
                try:
                    victim.send_signal(signal.SIGKILL)
                    self.counts["producer kills"] += 1
                except ProcessLookupError:
                    pass
        elif kind == "cut_host":
            link = self.hosts[slot][1]
            self.event("cut_host", p.pid)
            subprocess.run(["ip", "link", "set", link, "down"], check=True)
            time.sleep(rnd.uniform(1.5, 2.5) * LEASE_S)
            subprocess.run(["ip", "link", "set", link, "up"], check=True)
            self.event("heal_host", p.pid)
            self.counts["host cuts"] += 1
        elif kind == "full_disk":
            self.event("full_disk", None)
            self.full_until = time.time() + rnd.uniform(1.0, 2.0)
            self.counts["full disks"] += 1
        elif kind == "drop_connection":
            if self.a.store == "postgres":
                r = self.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             "application_name = 'jobq' AND pid <> pg_backend_pid() "
                             "ORDER BY random() LIMIT 1")
            else:
                r = self.sql("SELECT id FROM information_schema.PROCESSLIST WHERE user = "
                             "'jobq' AND command <> 'Daemon' ORDER BY RAND() LIMIT 1")
                ids = r.stdout.split()
                if ids:
                    r = self.sql("KILL CONNECTION %s" % ids[0])
            self.event("drop_connection", None)
            self.counts["dropped connections"] += 1
        elif kind == "restart_db":
            self.event("restart_db", None)
            subprocess.run([os.path.join(TESTS, "pgserver.sh"), "restart", self.a.pg_dir],
                           capture_output=True, timeout=120)
            self.counts["restarts"] += 1
            self.event("restart_db_done", None)
        elif kind == "stall_db":
            pids = self.pg_pids()
            self.event("stall_db", None)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
            time.sleep(2 * LEASE_S)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            self.counts["stalls"] += 1
            self.event("stall_db_done", None)

    def is_job(self, pid):
        """A job process that may be killed.  Not one that still runs under
        libfaketime (the exec helper, or job.sh before it runs itself again
        without it): libfaketime shares a semaphore among all the processes
        of the foreman that loaded it, even preloaded by hand, and one
        killed while it holds it leaves every later job of that foreman
        stuck before it starts."""
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"job.sh" not in f.read():
                    return False
            with open("/proc/%d/environ" % pid, "rb") as f:
                return not any(v.startswith(b"LD_PRELOAD=") and b"faketime" in v
                               for v in f.read().split(b"\0"))
        except OSError:
            return False

    def faults(self):
        rnd = random.Random(self.a.seed)
        while not self.stop.is_set():
            time.sleep(rnd.uniform(0.3, 1.0) * self.a.fault_interval)
            if self.stop.is_set():
                break
            with self.fault_lock:
                self.fault(rnd)

    # ------------------------------------------------------------ failovers

    def pg(self, *args, check=True):
        r = subprocess.run([os.path.join(TESTS, "pgserver.sh")] + list(args),
                           capture_output=True, text=True, timeout=300)
        if check and r.returncode != 0:
            raise RuntimeError("pgserver.sh %s: %s" % (args[0], r.stderr.strip()))
        return r.stdout.strip()

    def wait_standby(self, primary):
        """Until the standby streams from primary, is synchronous when it
        should be, and has flushed everything primary has written."""
        want = "sync" if self.a.sync else "async"
        until = time.time() + 120
        while time.time() < until:
            r = self.pg("psql", primary, "-qAt", "-c",
                        "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' "
                        "AND sync_state = '%s' AND flush_lsn >= pg_current_wal_lsn()" % want,
                        check=False)
            if r == "1":
                return
            time.sleep(0.2)
        raise RuntimeError("the standby of %s did not catch up in 120s" % primary)

    def failover(self):
        """Kills the primary, promotes the standby, makes the old primary
        the new standby; returns once every foreman ran a job again (or
        the lease and 20 s went by)."""
        primary, standby = self.a.pg_dir, self.a.standby
        self.wait_standby(primary)
        t_kill = self.event("failover", primary)
        self.pg("crash", primary)
        self.pg("promote", standby)
        if self.a.sync:
            # No synchronous standby to wait for until the new one streams.
            self.pg("psql", standby, "-qAt", "-c",
                    "ALTER SYSTEM SET synchronous_standby_names = ''")
            self.pg("psql", standby, "-qAt", "-c", "SELECT pg_reload_conf()")
        self.event("promoted", standby)
        self.counts["failovers"] += 1
        self.a.pg_dir, self.a.standby = standby, primary
        self.pg("rebuild", standby, primary)
        if self.a.sync:
            self.pg("psql", standby, "-qAt", "-c",
                    "ALTER SYSTEM SET synchronous_standby_names = '*'")
            self.pg("psql", standby, "-qAt", "-c", "SELECT pg_reload_conf()")
        self.wait_standby(standby)
        self.event("standby_ready", primary)
        until = time.time() + LEASE_S + 20
        while time.time() < until:
            back = set()
            with open(self.exec_log) as f:
                for line in f:
                    f_ = line.split()
                    if f_[0] == "S" and int(f_[4]) > t_kill and len(f_) > 5:
                        back.add(int(f_[5]))
            if all(p.pid in back for p in self.foremen.values()):
                break
            time.sleep(0.2)

    def failovers(self):
        """a.failovers failovers, spread over the run."""
        gap = self.a.seconds / (self.a.failovers + 1)
        while self.counts["failovers"] < self.a.failovers:
            time.sleep(gap)
            with self.fault_lock:
                try:
                    self.failover()
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    self.event("failover_failed", str(e).replace("\n", " "))
                    self.failover_error = str(e)
                    return

    # ------------------------------------------------------------ the run

    def stats(self):
        r = subprocess.run([self.a.jobq, "--db", self.a.url, "stats", "--json"],
                           capture_output=True, text=True, timeout=30, env=self.env())
        if r.returncode != 0:
            return None
        for q in json.loads(r.stdout)["queues"]:
            if q["name"] == "chaos":
                return q
        return {"ready": 0, "scheduled": 0, "waiting": 0, "running": 0}

    def run(self):
        r = subprocess.run([self.a.jobq, "--db", self.a.url, "init"], capture_output=True,
                           env=self.env())
        if r.returncode != 0:
            raise SystemExit("chaos: jobq init: " + r.stderr.decode(errors="replace").strip())
        if self.a.parts:
            for cmd in (["parts", "chaos", str(self.a.parts)], ["policy", "chaos", "skip"]):
                r = subprocess.run([self.a.jobq, "--db", self.a.url] + cmd, capture_output=True,
                                   env=self.env())
                if r.returncode != 0:
                    raise SystemExit("chaos: jobq %s: %s" % (
                        " ".join(cmd), r.stderr.decode(errors="replace").strip()))
        for slot in range(self.a.foremen):
            self.start_foreman(slot)
        prods = [threading.Thread(target=self.producer, args=(i,))
                 for i in range(self.a.producers)]
        for t in prods:
            t.start()
        faults = threading.Thread(target=self.faults)
        faults.start()
        fo = None
        if self.a.standby:
            fo = threading.Thread(target=self.failovers)
            fo.start()
        deadline = time.time() + self.a.seconds
        while time.time() < deadline and any(t.is_alive() for t in prods):
            time.sleep(0.2)
        # The failovers not done yet are done under load all the same.
        if fo is not None:
            self.put_target = max(self.put_target, self.put_count + 10**6)
            fo.join()
        self.stop.set()
        for t in prods:
            t.join()
        faults.join()
        if getattr(self, "failover_error", None):
            raise SystemExit("chaos: a failover failed: " + self.failover_error)
        # Every foreman runs again, and they drain the queue.
        for slot, p in list(self.foremen.items()):
            if p.poll() is not None:
                self.start_foreman(slot)
            else:
                p.send_signal(signal.SIGCONT)
        self.drain(60)
        self.last_fault()
        left = self.drain(60)
        self.stop_foremen()
        return left

    def drain(self, stall_s):
        """Waits until the queue has nothing left to run, for as long as it
        keeps shrinking (a run that fell behind its rate has a backlog to
        work off), giving up after stall_s seconds without progress; its
        stats."""
        q = None
        best, best_at = None, time.time()
        while time.time() < best_at + stall_s:
            q = self.stats()
            if q is not None:
                left = q["ready"] + q["scheduled"] + q["waiting"] + q["running"]
                if left == 0:
                    break
                if best is None or left < best:
                    best, best_at = left, time.time()
            time.sleep(0.3)
        return q

    def last_fault(self):
        """The last fault, on a quiet queue: a foreman running long jobs is
        killed, and the checker times how soon they start again elsewhere
        (nothing else is in their way)."""
        batch = {"payloads": ["long-last-%d" % i for i in range(2 * self.a.foremen)],
                 "outcome": "unknown"}
        self.batches.append(batch)
        lines = "".join(json.dumps(dict({"queue": "chaos", "payload": pl, "backoff": "100ms"},
                                        **({"key": "last-%d" % i} if self.a.parts else {})))
                        + "\n" for i, pl in enumerate(batch["payloads"]))
        r = subprocess.run([self.a.jobq, "--db", self.a.url, "put", "--ndjson", "-"],
                           input=lines.encode(), capture_output=True, env=self.env())
        if r.returncode == 0:
            batch["outcome"] = "ok"
        until = time.time() + 30
        while time.time() < until:
            with open(self.exec_log) as f:
                running = [int(line.split()[5]) for line in f
                           if line.startswith("S ") and line.split()[-1] == "long"]
            for slot, p in self.foremen.items():
                if p.pid in running:
                    self.event("last_fault", p.pid)
                    p.send_signal(signal.SIGKILL)
                    p.wait()
                    self.counts["foreman kills"] += 1
                    self.start_foreman(slot)
                    return
            time.sleep(0.05)
        raise SystemExit("chaos: the long jobs of the last fault never started")

    def stop_foremen(self):
        for p in self.foremen.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.send_signal(signal.SIGTERM)
        for p in self.foremen.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.forget_faketime()

    def kill_all(self):
        """Whatever is still running when the run ends early."""
        self.stop.set()
        for p in list(self.foremen.values()) + list(self.producers.values()):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        self.forget_faketime()

    # ------------------------------------------------------------ checks

    def archive(self):
        """(id, outcome, claim, result, payload, attempts, finished_at,
        claimed_at) rows: claimed_at is when the claim that counted was made."""
        q = ("SELECT id, outcome, claim, %s, %s, attempts, finished_at, claimed_at, "
             "coalesce(order_key, '') FROM %sjobq_done")
        if self.a.store == "sqlite":
            path = self.a.url.split(":", 1)[1].split("?")[0]
            if path.startswith("//"):
                path = path[2:]
            r = subprocess.run(["sqlite3", "-separator", "|", path,
                                q % ("hex(result)", "hex(payload)", "")],
                               capture_output=True, text=True)
            hot = subprocess.run(["sqlite3", path, "SELECT count(*) FROM jobq_jobs"],
                                 capture_output=True, text=True)
        elif self.a.store == "postgres":
            schema = self.a.url.split("schema=")[1].split("&")[0] + "." if "schema=" in self.a.url else ""
            r = self.sql(q % ("encode(result, 'hex')", "encode(payload, 'hex')", schema))
            hot = self.sql("SELECT count(*) FROM %sjobq_jobs" % schema)
        else:
            db = self.a.url.split("/")[-1].split("?")[0]
            r = self.sql(q % ("IFNULL(HEX(result), '')", "HEX(payload)", db + "."))
            hot = self.sql("SELECT count(*) FROM %s.jobq_jobs" % db)
        if r.returncode != 0:
            raise SystemExit("chaos: cannot read the archive: " + r.stderr.strip())
        rows = []
        for line in r.stdout.splitlines():
            f = line.split("\t" if self.a.store == "mysql" else "|")
            rows.append((int(f[0]), f[1], f[2], bytes.fromhex(f[3]).decode("latin-1"),
                         bytes.fromhex(f[4]).decode("latin-1"), int(f[5]), int(f[6]),
                         int(f[7]), f[8] if len(f) > 8 else ""))
        return rows, int(hot.stdout.strip() or "0")

    def slot_at(self, pid, t_ns):
        """The slot of the foreman that had pid at t_ns (-1: none)."""
        slot = -1
        for t, sl in self.starts.get(pid, []):
            if t <= t_ns or slot < 0:
                slot = sl
        return slot

    def sessions_lost(self, suspended=False):
        """pid -> times (ns) its foreman gave up its session (and, with
        suspended, also when it suspended it for want of a heartbeat),
        killing its jobs at once either way (from the foremen's
        --log-times logs, whose times are on their own clocks)."""
        out = {}
        for name in os.listdir(self.dir):
            if not name.startswith("foreman-"):
                continue
            offset_ns = self.clock_offset(int(name[len("foreman-"):-len(".log")])) * 10**9
            with open(os.path.join(self.dir, name), errors="replace") as f:
                for line in f:
                    if not line[:4].isdigit() or ("session lost" not in line and not (
                            suspended and "no heartbeat succeeded for" in line)):
                        continue
                    stamp, rest = line.split(" ", 1)
                    pid = int(rest.split("[", 1)[1].split("]", 1)[0])
                    t = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
                    t_ns = t * 10**9 + int(stamp[20:23]) * 10**6 - offset_ns
                    out.setdefault(pid, []).append(t_ns)
        return out

    def runs(self):
        """Per job: the runs, each {attempt, claim, start, end, foreman}."""
        lost = self.sessions_lost(suspended=True)
        out = {}
        open_runs = {}
        with open(self.exec_log) as f:
            for line in f:
                f_ = line.split()
                if len(f_) < 5:
                    continue
                jid, attempt, claim, t = int(f_[1]), int(f_[2]), f_[3], int(f_[4])
                if f_[0] == "S":
                    r = {"attempt": attempt, "claim": claim, "start": t, "end": None,
                         "foreman": int(f_[5]) if len(f_) > 5 else 0,
                         "pid": int(f_[6]) if len(f_) > 6 else 0}
                    out.setdefault(jid, []).append(r)
                    open_runs[(jid, claim)] = r
                elif f_[0] == "E" and (jid, claim) in open_runs:
                    open_runs[(jid, claim)]["end"] = t
        # A run that never logged its end was killed: with its process
        # (SIGKILL, sent just after the event's time: it runs no more), or
        # with its foreman, whose guard kills its jobs at once, or by its
        # foreman when it lost or suspended its session (both within
        # 100 ms).  A kill names its process: its event may come just
        # before the run's start line, which the process writes as it
        # starts (a pid comes back only long after).
        for rs in out.values():
            rs.sort(key=lambda r: r["start"])
            for r in rs:
                if r["end"] is not None:
                    continue
                since = r["start"] - 10**9
                ends = [t + 10 * 10**6 for t, k, d in self.events if t > since and
                        k == "kill_job" and d == r["pid"]]
                ends += [t + 100 * 10**6 for t, k, d in self.events if t > since and
                         k in ("kill_foreman", "last_fault") and d == r["foreman"]]
                ends += [t + 100 * 10**6 for t in lost.get(r["foreman"], []) if t > r["start"]]
                if ends:
                    r["killed"] = min(ends)
        return out

    def check(self, left):
        bad = []
        rows, hot = self.archive()
        runs = self.runs()
        by_payload = {}
        for row in rows:
            by_payload.setdefault(row[4], []).append(row)
        intended = {}
        for b in self.batches:
            for pl in b["payloads"]:
                intended[pl] = b
        # Puts: nothing lost, nothing half-written, nothing from nowhere.
        acked = 0
        for b in self.batches:
            there = [pl for pl in b["payloads"] if pl in by_payload]
            if b["outcome"] == "ok":
                acked += len(b["payloads"])
                for pl in b["payloads"]:
                    if pl not in by_payload:
                        bad.append("lost: job '%s' was put (acknowledged) but never finished" % pl)
            elif there and len(there) != len(b["payloads"]):
                bad.append("half a batch: %d of %d jobs of a put of unknown outcome are there"
                           % (len(there), len(b["payloads"])))
        for pl, rs in by_payload.items():
            if pl not in intended:
                bad.append("job %d has payload %r that no producer put" % (rs[0][0], pl[:40]))
            if len(rs) > 1:
                bad.append("payload %r finished %d times" % (pl[:40], len(rs)))
        if hot != 0 or left is None or left["ready"] + left["scheduled"] + left["waiting"] + left["running"] != 0:
            bad.append("the queue did not drain: %d unfinished jobs" % hot)
        # Outcomes: the completion that counted is a finished run's.
        lost_runs = 0
        for row in rows:
            jid, outcome, claim, result, pl, attempts, finished, _, _ = row
            want = "dead" if pl.startswith("fail-") else "done"
            if outcome != want:
                bad.append("job %d (%s) ended %s, expected %s" % (jid, pl, outcome, want))
                continue
            rs = runs.get(jid, [])
            if outcome == "done":
                if result != claim:
                    bad.append("job %d: result %r is not its claim %s" % (jid, result[:40], claim))
                if not any(r["claim"] == claim and r["end"] is not None for r in rs):
                    bad.append("job %d: done by claim %s, which no finished run had" % (jid, claim))
            # Attempts never go down; nothing runs after the job finished.
            # Except one way: a foreman stopped between starting a job's
            # process and handing it its payload (the run's logged start)
            # resumes past its lease, so the job's payload arrives after
            # the next attempt ran; the foreman kills it at once and its
            # outcome never counts.
            def paused(r):
                return r["claim"] != claim and any(
                    k == "pause_foreman" and d == r["foreman"] and
                    r["start"] - 3 * LEASE_S * 1e9 <= t <= r["start"]
                    for t, k, d in self.events)
            for x, y in zip(rs, rs[1:]):
                if y["attempt"] < x["attempt"] and not paused(y):
                    bad.append("job %d: attempt %d ran after attempt %d"
                               % (jid, y["attempt"], x["attempt"]))
            for r in rs:
                if r["start"] > finished * 1000000 + 100000000 and not paused(r):
                    bad.append("job %d ran again %.3fs after it finished"
                               % (jid, (r["start"] - finished * 1000000) / 1e9))
            lost_runs += sum(1 for r in rs if r["claim"] != claim)
        # Overlaps: only where a fault ended the first run's claim.
        faults = [(t, k, d) for t, k, d in self.events
                  if k in ("kill_foreman", "pause_foreman", "restart_db", "stall_db",
                           "drop_connection", "last_fault", "cut_host", "failover")]
        overlaps = 0
        for jid, rs in runs.items():
            for i, x in enumerate(rs):
                for y in rs[i + 1:]:
                    x_end = x["end"] or x.get("killed") or x["start"] + 10 * 10**9
                    if y["start"] >= x_end or y["claim"] == x["claim"]:
                        continue
                    overlaps += 1
                    explained = any(
                        x["start"] - LEASE_S * 1e9 <= t <= y["start"]
                        and (d == x["foreman"] or k in ("restart_db", "stall_db",
                                                        "drop_connection", "failover"))
                        for t, k, d in faults)
                    if not explained:
                        bad.append("job %d: runs with claims %s and %s overlapped with no "
                                   "fault to explain it" % (jid, x["claim"], y["claim"]))
        ordered = self.check_parts(rows, runs, bad) if self.a.parts else ""
        # Recovery after the last fault: how soon the jobs it cut off were
        # claimed again (on the database clock; when they then started
        # depends on whether a slot was free).
        worst, worst_at = 0.0, None
        done_claims = {row[0]: row[2] for row in rows}
        claimed_ns = {row[0]: row[7] * 10**6 for row in rows}
        for t, k, pid in self.events:
            if k != "last_fault":
                continue
            for jid, rs in runs.items():
                for r in rs:
                    # A run the fault cut off, whose claim did not count.
                    if (r["foreman"] == pid and r["start"] < t and
                            (r["end"] is None or r["end"] > t) and
                            r["claim"] != done_claims.get(jid) and jid in claimed_ns):
                        took = (claimed_ns[jid] - t) / 1e9
                        if took > worst:
                            worst, worst_at = took, (jid, k, pid)
        limit = LEASE_S + LEASE_S / 3 + POLL_S + 1.5
        if worst > limit:
            bad.append("job %d was claimed again %.2fs after the last fault killed its foreman "
                       "(pid %d): expected within %.2fs (lease, a heartbeat, the poll, a "
                       "margin)" % (worst_at[0], worst, worst_at[2], limit))
        stale = 0
        for name in os.listdir(self.dir):
            if name.startswith("foreman-"):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    stale += sum(1 for line in f if "claim was lost" in line)
        ha = self.ha_figures(rows, runs, left, bad, acked) if self.a.standby else ""
        ha = ordered + ha
        summary = ("chaos %s: %d jobs put in %d batches (%d acknowledged), %d finished; "
                   "%s; %d lost, %d double completions, %d stale acks refused, "
                   "%d runs that did not count, %d overlaps explained by faults, "
                   "worst recovery %.2fs"
                   % (self.a.store, sum(len(b["payloads"]) for b in self.batches),
                      len(self.batches), acked, len(rows),
                      ", ".join("%d %s" % (v, k) for k, v in self.counts.items()),
                      sum(1 for x in bad if x.startswith("lost")),
                      sum(1 for x in bad if "finished" in x and "times" in x),
                      stale, lost_runs, overlaps, worst))
        return summary + ha, bad

    def check_parts(self, rows, runs, bad):
        """Over the runs that counted: each key's jobs one at a time and in
        the order put, and each part's jobs run by one foreman at a time."""
        counted = []  # (start, end, id, key, part, foreman)
        for row in rows:
            jid, claim, key = row[0], row[2], row[8]
            for r in runs.get(jid, []):
                if r["claim"] == claim and r["end"] is not None:
                    counted.append((r["start"], r["end"], jid, key,
                                    part_of(key, self.a.parts) if key else None, r["foreman"]))
        counted.sort()
        out_of_order = two_at_once = two_owners = 0
        last = {}   # key -> (start, end, id)
        for start, end, jid, key, _, _ in counted:
            if not key:
                continue
            if key in last:
                p_start, p_end, p_id = last[key]
                if p_id > jid:
                    out_of_order += 1
                    bad.append("key %s: job %d ran after job %d, put after it" % (key, p_id, jid))
                if start < p_end:
                    two_at_once += 1
                    bad.append("key %s: jobs %d and %d ran at once" % (key, p_id, jid))
            last[key] = (start, end, jid)
        busy = {}   # part -> [(end, foreman, id)] of runs not yet over
        for start, end, jid, key, part, foreman in counted:
            if part is None:
                continue
            now = [x for x in busy.get(part, []) if x[0] > start]
            for p_end, p_foreman, p_id in now:
                if p_foreman != foreman:
                    two_owners += 1
                    bad.append("part %d: foremen %d and %d ran its jobs %d and %d at once"
                               % (part, p_foreman, foreman, p_id, jid))
            busy[part] = now + [(end, foreman, jid)]
        return ("; %d parts, %d keys: %d counted runs checked, %d out of order, %d of one key "
                "at once, %d of one part by two foremen at once"
                % (self.a.parts, self.a.keys, len(counted), out_of_order, two_at_once, two_owners))

    def ha_figures(self, rows, runs, left, bad, acked):
        """The failovers' figures (a line that follows the summary), and a
        violation for each foreman that was not back at work within the
        lease and a few seconds of a failover: back at work is its first
        claim made after the kill that counted (claimed_at, on the
        database clock, which is this machine's)."""
        limit = LEASE_S + 5
        owner = {}
        for rs in runs.values():
            for r in rs:
                owner[r["claim"]] = r["foreman"]
        claims = sorted((row[7] * 10**6, self.slot_at(owner.get(row[2]), row[7] * 10**6))
                        for row in rows if row[7])
        worst = {}
        kills = [t for t, k, _ in self.events if k == "failover"]
        for i, t_kill in enumerate(kills):
            upto = kills[i + 1] if i + 1 < len(kills) else float("inf")
            for slot in range(self.a.foremen):
                back = next((c - t_kill for c, s in claims
                             if s == slot and t_kill <= c < upto), None)
                if back is None:
                    bad.append("foreman %d made no claim that counted after failover %d"
                               % (slot, i + 1))
                    worst[slot] = float("inf")
                    continue
                back /= 1e9
                worst[slot] = max(worst.get(slot, 0.0), back)
                if back > limit:
                    bad.append("foreman %d was back at work %.2fs after failover %d: expected "
                               "within %.1fs (the lease and 5s)" % (slot, back, i + 1, limit))
        # A failover shorter than the lease costs no session: the foremen's
        # sessions are on the new primary (synchronous replication), and
        # so are the outcomes they could not write meanwhile.
        lost = self.sessions_lost()
        promoted = [t for t, k, _ in self.events if k == "promoted"]
        sessions_lost = 0
        for i, (t_kill, t_up) in enumerate(zip(kills, promoted)):
            if (t_up - t_kill) / 1e9 >= LEASE_S / 2:
                continue
            for pid, ts in lost.items():
                # Not a loss that a fault of its own (a cut, a pause) explains:
                # one that began before it, by at most the longest such fault
                # (2.5 leases) and the lease, since before the failover too
                # (the faults come from a thread of their own).
                n = sum(1 for t in ts if t_kill <= t <= t_kill + limit * 1e9 and not any(
                    t - 4 * LEASE_S * 1e9 <= te <= t and d == pid for te, k, d in self.events
                    if k in ("cut_host", "pause_foreman")))
                if n:
                    sessions_lost += n
                    bad.append("foreman %d (pid %d) lost its session in failover %d, which "
                               "took %.2fs (the lease is %.1fs): its outcomes not yet written "
                               "were dropped and its jobs run again"
                               % (self.slot_at(pid, t_kill), pid, i + 1, (t_up - t_kill) / 1e9,
                                  LEASE_S))
        dropped = 0
        for name in os.listdir(self.dir):
            if name.startswith("foreman-"):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    for line in f:
                        m = re.search(r"session lost: .* and (\d+) outcomes not yet recorded",
                                      line)
                        if m:
                            dropped += int(m.group(1))
        stuck = left["running"] if left else -1
        if stuck > 0:
            bad.append("%d jobs stuck running after the drain" % stuck)
        kill_count = (self.counts["foreman kills"] + self.counts["job kills"] +
                      self.counts["producer kills"] + len(kills))
        took = " ".join("%.2f" % ((u - k) / 1e9) for k, u in zip(kills, promoted))
        return ("\nha %s replication: %d failovers (kill to promoted, s: %s), %d jobs put (%d "
                "acknowledged), %d kills (%d of the primary), %d host cuts; %d lost, %d doubled, "
                "%d stuck; %d sessions lost in failovers, %d finished outcomes dropped in all; "
                "worst time back to work per foreman: %s (limit %.1fs)"
                % ("synchronous" if self.a.sync else "asynchronous", len(kills), took or "-",
                   sum(len(b["payloads"]) for b in self.batches), acked, kill_count, len(kills),
                   self.counts.get("host cuts", 0),
                   sum(1 for x in bad if x.startswith("lost")),
                   sum(1 for x in bad if "finished" in x and "times" in x), max(stuck, 0),
                   sessions_lost, dropped,
                   " ".join("f%d %.2fs" % (k, v) for k, v in sorted(worst.items())) or "none",
                   limit))


def main():
    global LEASE_S
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobq", required=True)
    ap.add_argument("--store", required=True, choices=["sqlite", "postgres", "mysql"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--foremen", type=int, default=3)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--rate", type=float, default=40, help="jobs put per second, in all")
    ap.add_argument("--fault-interval", type=float, default=1.0,
                    help="mean seconds between faults")
    ap.add_argument("--restarts", type=int, default=1,
                    help="server restarts (and stalls) at most, PostgreSQL")
    ap.add_argument("--pg-dir")
    ap.add_argument("--mysql-dir")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the logs")
    ap.add_argument("--lease", type=float, default=LEASE_S, help="the foremen's lease, seconds")
    ap.add_argument("--host", action="append", default=[], metavar="NETNS:LINK",
                    help="a host (network namespace, and the link that cuts it off) for "
                    "each foreman, then for each producer")
    ap.add_argument("--standby", help="the standby's folder (tests/pgserver.sh): failovers")
    ap.add_argument("--failovers", type=int, default=0)
    ap.add_argument("--parts", type=int, default=0,
                    help="split the queue into P parts; every job gets a key")
    ap.add_argument("--keys", type=int, default=0, help="ordering keys (default 4 x parts)")
    ap.add_argument("--sync", action="store_true",
                    help="the standby is synchronous: no acknowledged job may be lost")
    a = ap.parse_args()
    LEASE_S = a.lease
    if a.host and len(a.host) < a.foremen + a.producers:
        ap.error("--host: expected one for each foreman and producer (%d), got %d"
                 % (a.foremen + a.producers, len(a.host)))
    if a.standby and not a.pg_dir:
        ap.error("--standby: expected --pg-dir, the primary's folder, too")
    if a.parts and not 1 <= a.parts <= 1024:
        ap.error("--parts: expected 1 to 1024")
    if a.parts and a.keys <= 0:
        a.keys = 4 * a.parts
    if a.seed is None:
        a.seed = int(time.time())
    if a.foremen < 2:
        ap.error("--foremen: expected at least 2, so that one can take over")
    c = Chaos(a)
    try:
        left = c.run()
    except SystemExit as e:
        print(e)
        print("logs in " + c.dir)
        return 1
    finally:
        c.kill_all()
    summary, bad = c.check(left)
    print(summary + " (seed %d)" % a.seed)
    for b in bad[:20]:
        print("  " + b)
    if bad and len(bad) > 20:
        print("  ... and %d more" % (len(bad) - 20))
    if bad or a.keep:
        print("logs in " + c.dir)
    else:
        shutil.rmtree(c.dir, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
