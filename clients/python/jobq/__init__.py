"""jobq - Python client of jobq, a durable job queue whose only coordinator
is an SQL database: a thin layer over libjobq (ctypes, standard library
only), so that its rules stay the library's.

Produce:

    import jobq
    q = jobq.connect("sqlite:jobq.db")
    q.put("email", {"to": "ada@example.com"}, key="ada", max_attempts=5)

Work, under `jobq work --persistent -- python3 -m jobq.worker app` or in
this process with jobq.Worker(url, ["email"]).run():

    @jobq.handler("email")
    def send(job):
        if not smtp_up():
            raise jobq.Retry("smtp down", delay=30)
        return {"sent": job.json()["to"]}

Errors are jobq.Error and its subclasses, one per error code of the library
(jobq.Lost, jobq.Identity, jobq.Invalid, ...).  The library is loaded on
first use from $JOBQ_LIBRARY, else by the loader from libjobq.so.0 or
libjobq.so; the persistent worker needs none.  See docs/clients/python.md.
"""

from . import _native, pg
from .client import (Client, IdentityInfo, JobId, JobInfo, Put, QueueLimits, QueueStats, Session,
                     SessionInfo, connect)
from .errors import (Busy, Cancelled, DatabaseError, Denied, Error, Expired, Identity,
                     Invalid, InvalidURL, LibraryError, Lost, NotFound, NotSupported,
                     OutOfMemory, ReadOnly, TooBig, Unreachable, UnsupportedSchema,
                     WrongState)
from .handlers import Outcome, handler
from .inprocess import Worker
from .job import Fail, Job, Retry
from . import testing  # noqa: F401,E402  (jobq.testing)

__version__ = _native.HEADER_VERSION  # the libjobq version it is written for


def serve():
    """Serves the protocol of `jobq work --persistent` with the handlers
    registered so far, in a script of its own (`python3 app.py` as the
    foreman's command), and exits when stdin ends; python3 -m jobq.worker
    does the same for modules it imports."""
    import sys
    from .worker import main
    sys.exit(main([]))


def library_version():
    """The version of the libjobq that is loaded (loading it if needed)."""
    from . import _native
    return _native.version()


__all__ = [
    "connect", "Client", "Session", "Put", "JobId", "JobInfo", "QueueStats", "QueueLimits",
    "SessionInfo", "IdentityInfo", "handler", "serve", "testing", "Job", "Retry", "Fail",
    "Outcome", "Worker", "pg",
    "library_version", "Error", "LibraryError", "Invalid", "InvalidURL", "OutOfMemory",
    "NotFound", "Lost", "Expired", "WrongState", "Busy", "Unreachable", "DatabaseError",
    "UnsupportedSchema", "Identity", "TooBig", "NotSupported", "Cancelled", "ReadOnly",
    "Denied",
]
