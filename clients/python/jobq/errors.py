"""errors.py - jobq's one error vocabulary (JOBQ_ERRNO_MAP in
include/jobq.h) as exception classes, one per error code, all under
jobq.Error.  A test holds this table against the header, so the two cannot
drift apart; a code this table does not know (a newer library) still
raises jobq.Error, with the library's own name for it.
"""


class Error(Exception):
    """Every error of jobq.  .code is the library's (negative) error code,
    .name its symbolic name ("JOBQ_ELOST"); the message says what was
    wrong and what was expected."""

    code = None
    name = None

    def __init__(self, message, code=None, name=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        if name is not None:
            self.name = name


class LibraryError(Error):
    """libjobq could not be loaded (see JOBQ_LIBRARY), or is too old."""


class Invalid(Error, ValueError):
    code, name = -1, "JOBQ_EINVAL"


class InvalidURL(Error, ValueError):
    code, name = -2, "JOBQ_EURL"


class OutOfMemory(Error):
    code, name = -3, "JOBQ_ENOMEM"


class NotFound(Error, LookupError):
    code, name = -4, "JOBQ_ENOTFOUND"


class Lost(Error):
    """The claim is gone (the session expired and was reaped, the job was
    released or acknowledged under another claim): nothing was changed."""

    code, name = -5, "JOBQ_ELOST"


class Expired(Error):
    """The session is gone: stop its jobs and open a new session."""

    code, name = -6, "JOBQ_EEXPIRED"


class WrongState(Error):
    code, name = -7, "JOBQ_ESTATE"


class Busy(Error):
    """Temporary: the same call may succeed later."""

    code, name = -8, "JOBQ_EBUSY"


class Unreachable(Error):
    """Temporary: the database cannot be reached now."""

    code, name = -9, "JOBQ_ECONN"


class DatabaseError(Error):
    code, name = -10, "JOBQ_EDB"


class UnsupportedSchema(Error):
    code, name = -11, "JOBQ_ESCHEMA"


class Identity(Error):
    """The database is not the one this handle saw (another queue id, or a
    restore from an older backup): refused until `jobq epoch bump`."""

    code, name = -12, "JOBQ_EIDENTITY"


class TooBig(Error, ValueError):
    code, name = -13, "JOBQ_ETOOBIG"


class NotSupported(Error):
    code, name = -14, "JOBQ_ENOTSUP"


class Cancelled(Error):
    """An operator asked to cancel the job."""

    code, name = -15, "JOBQ_ECANCELLED"


class ReadOnly(Error):
    code, name = -16, "JOBQ_EREADONLY"


class Denied(Error, PermissionError):
    """Access refused for good (a wrong password, an unknown user or
    database, a missing privilege): trying again will not help."""

    code, name = -17, "JOBQ_EDENIED"


BY_CODE = {cls.code: cls for cls in (
    Invalid, InvalidURL, OutOfMemory, NotFound, Lost, Expired, WrongState, Busy,
    Unreachable, DatabaseError, UnsupportedSchema, Identity, TooBig, NotSupported,
    Cancelled, ReadOnly, Denied)}


def from_code(code, message, name=None):
    """The exception for a library error code, with its message."""
    cls = BY_CODE.get(code)
    if cls is None:
        return Error(message, code, name)
    return cls(message)
