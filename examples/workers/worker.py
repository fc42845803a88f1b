#!/usr/bin/env python3
"""worker.py - a persistent jobq worker in Python 3 (standard library only).

    jobq work --persistent -c 4 -- python3 examples/workers/worker.py

It speaks the line protocol of docs/worker-protocol.md: it writes "ready"
once, then reads one "job" line at a time on stdin and answers each with one
"done", "fail" or "retry" line on stdout, flushed at once.  Bytes (keys, payloads, results, errors)
travel as base64, so they may be anything.  An exception in handle() fails
the job with its traceback as the error.  It exits when stdin ends,
dropping a last line that has no newline (docs/worker-protocol.md).

handle() is the part to replace.  What it does here is an example, and
what the tests check:
    fail...     fails, with the payload in the error
    retry       asks to be retried in 100 ms on attempt 1, done on attempt 2
    sleep:MS    sleeps MS milliseconds, then done
    crash       exits with status 3 in the middle of the job
    anything    done, with the payload as the result (an echo)
"""
import base64
import sys
import time
import traceback


class Job:
    """One job as the foreman handed it over."""

    def __init__(self, fields):
        # job ID QUEUE ATTEMPT MAX_ATTEMPTS PREV_LOST CLAIM KEY PAYLOAD [...]
        self.id = int(fields[1])
        self.queue = fields[2].decode()
        self.attempt = int(fields[3])
        self.max_attempts = int(fields[4])
        self.prev_lost = fields[5] == b"1"
        self.claim = fields[6].decode()  # for idempotent side effects
        self.key = None if fields[7] == b"-" else base64.b64decode(fields[7])
        self.payload = b"" if fields[8] == b"-" else base64.b64decode(fields[8])


class Retry(Exception):
    """Raise to have the job run again later (not counted as a failure)."""

    def __init__(self, reason, delay_ms=None):
        super().__init__(reason)
        self.delay_ms = delay_ms


def handle(job):
    """Does the job; returns the result as bytes, or raises."""
    p = job.payload
    if p.startswith(b"fail"):
        raise RuntimeError("failed on purpose: " + p[:100].decode(errors="replace"))
    if p == b"retry":
        if job.attempt == 1:
            raise Retry("not yet", delay_ms=100)
        return b"retried"
    if p.startswith(b"sleep:"):
        ms = int(p[6:])
        time.sleep(ms / 1000)
        return b"slept %d ms" % ms
    if p == b"crash":
        print("worker.py: crashing on job %d on purpose" % job.id, file=sys.stderr)
        sys.exit(3)
    return p


def b64(data):
    return base64.b64encode(data).decode() if data else "-"


def main():
    out = sys.stdout
    # Expensive set-up (connections, models) goes before this line: no job
    # comes before it.
    out.write("ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        if not line.endswith(b"\n"):
            # The foreman died while writing this line: it is not a whole
            # job (docs/worker-protocol.md).  Drop it; stdin has ended.
            print("worker.py: dropped a partial job line at the end of input",
                  file=sys.stderr)
            break
        fields = line.rstrip(b"\n").split(b" ")
        if fields[0] != b"job" or len(fields) < 9:
            print("worker.py: expected a job line from the foreman, got %r" % line[:80],
                  file=sys.stderr)
            return 1
        job = Job(fields)
        try:
            reply = "done %d %s" % (job.id, b64(handle(job)))
        except Retry as r:
            delay = "-" if r.delay_ms is None else str(int(r.delay_ms))
            reply = "retry %d %s %s" % (job.id, delay, b64(str(r).encode()))
        except Exception:
            reply = "fail %d %s" % (job.id, b64(traceback.format_exc().encode()))
        out.write(reply + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
