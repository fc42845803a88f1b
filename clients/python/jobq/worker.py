"""worker.py - the persistent worker of `jobq work --persistent`:

    jobq work --persistent -c 4 -q email -- python3 -m jobq.worker app.tasks

imports the named modules (or runs the named .py files), whose
@jobq.handler functions register themselves, then speaks the line protocol
of docs/worker-protocol.md on stdin and stdout: "ready" once, then one
reply per "job" line.  The foreman keeps the session, the heartbeats,
timeouts and batching; this process only runs handlers, so it needs no
libjobq.  Whatever a handler prints goes to stderr (whose tail the foreman
keeps as the error of a job whose worker dies): stdout is the protocol's
alone.  It exits when stdin ends, dropping a last line that has no end (its
foreman stopped in the middle of writing it).
"""

import base64
import binascii
import importlib
import os
import runpy
import sys

from .handlers import registry, run
from .job import Job

USAGE = "usage: python3 -m jobq.worker MODULE_OR_FILE.py [...]"


def _b64(data):
    return base64.b64encode(data).decode() if data else "-"


def _bytes(field):
    return b"" if field == b"-" else base64.b64decode(field, validate=True)


def parse(line):
    """The Job of one job line (without its newline); ValueError when it is
    not one."""
    # job ID QUEUE ATTEMPT MAX_ATTEMPTS PREV_LOST CLAIM KEY PAYLOAD [more later]
    f = line.split(b" ")
    if f[0] != b"job" or len(f) < 9:
        raise ValueError("expected a job line from the foreman, got %r" % line[:80])
    try:
        key = None if f[7] == b"-" else _bytes(f[7]).decode("utf-8", "surrogateescape")
        return Job(int(f[1]), f[2].decode("ascii"), _bytes(f[8]), attempt=int(f[3]),
                   max_attempts=int(f[4]), prev_lost=f[5] == b"1", claim=f[6].decode("ascii"),
                   key=key)
    except (ValueError, binascii.Error, UnicodeDecodeError) as e:
        raise ValueError("invalid job line %r: %s" % (line[:80], e)) from None


def reply(job, outcome):
    """The reply line (with its newline) for job's outcome."""
    if outcome.state == "done":
        return "done %d %s\n" % (job.id, _b64(outcome.result))
    if outcome.state == "retry":
        delay = "-" if outcome.delay_ms is None else str(outcome.delay_ms)
        return "retry %d %s %s\n" % (job.id, delay, _b64(outcome.reason.encode("utf-8", "replace")))
    return "fail %d %s\n" % (job.id, _b64(outcome.error.encode("utf-8", "replace")))


def load(targets):
    """Imports each module, or runs each .py file, so that their handlers
    register."""
    for t in targets:
        if t.endswith(".py") or os.sep in t:
            runpy.run_path(t, run_name="__jobq_worker__")
        else:
            importlib.import_module(t)


def serve(stdin, out, registry=registry):
    """The conversation: "ready", then a reply for every job line.  out is
    a binary stream.  Returns the exit status."""
    out.write(b"ready\n")
    out.flush()
    for line in stdin:
        if not line.endswith(b"\n"):
            print("jobq.worker: dropped the last line: it has no end, the foreman stopped "
                  "while writing it", file=sys.stderr)
            break
        try:
            job = parse(line[:-1])
        except ValueError as e:
            print("jobq.worker: %s" % e, file=sys.stderr)
            return 1
        out.write(reply(job, run(job, registry)).encode("ascii"))
        out.flush()
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    # The protocol keeps the real stdout; everything else written to it
    # (print(), a library, a child process) goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        load(argv)
    except SystemExit:
        raise
    except BaseException as e:
        print("jobq.worker: cannot load %s: %s: %s" % (" ".join(argv), type(e).__name__, e),
              file=sys.stderr)
        return 1
    if not registry:
        print("jobq.worker: no handlers: %s registered none (decorate a function with "
              "@jobq.handler(\"QUEUE\"))\n%s" % (" ".join(argv) or "nothing was named", USAGE),
              file=sys.stderr)
        return 2
    return serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    sys.exit(main())
