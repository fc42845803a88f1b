'use strict';
// errors.js - jobq's one error vocabulary (JOBQ_ERRNO_MAP in
// include/jobq.h) as error classes, one per error code, all extending
// JobqError.  A test holds this table against the header, so the two cannot
// drift apart; a code this table does not know (a newer library) still
// throws a JobqError, with the library's own name for it.

class JobqError extends Error {
  // message: what was wrong and what was expected; errno: the library's
  // negative code; code: its name ("JOBQ_ELOST").
  constructor(message, errno, code) {
    super(message);
    this.name = this.constructor.name;
    if (errno !== undefined) this.errno = errno;
    if (code !== undefined) this.code = code;
  }
}

// libjobq (or koffi) could not be loaded.
class LibraryError extends JobqError {}

// [class name, code, name]: the header's table, less JOBQ_OK.
const TABLE = [
  ['Invalid', -1, 'JOBQ_EINVAL'],
  ['InvalidURL', -2, 'JOBQ_EURL'],
  ['OutOfMemory', -3, 'JOBQ_ENOMEM'],
  ['NotFound', -4, 'JOBQ_ENOTFOUND'],
  ['Lost', -5, 'JOBQ_ELOST'],
  ['Expired', -6, 'JOBQ_EEXPIRED'],
  ['WrongState', -7, 'JOBQ_ESTATE'],
  ['Busy', -8, 'JOBQ_EBUSY'],
  ['Unreachable', -9, 'JOBQ_ECONN'],
  ['DatabaseError', -10, 'JOBQ_EDB'],
  ['UnsupportedSchema', -11, 'JOBQ_ESCHEMA'],
  ['Identity', -12, 'JOBQ_EIDENTITY'],
  ['TooBig', -13, 'JOBQ_ETOOBIG'],
  ['NotSupported', -14, 'JOBQ_ENOTSUP'],
  ['Cancelled', -15, 'JOBQ_ECANCELLED'],
  ['ReadOnly', -16, 'JOBQ_EREADONLY'],
  ['Denied', -17, 'JOBQ_EDENIED'],
];

const classes = { JobqError, LibraryError };
const byCode = new Map();
for (const [className, errno, code] of TABLE) {
  // A named class per error, so that stack traces and `instanceof` read well.
  const cls = {
    [className]: class extends JobqError {
      constructor(message) {
        super(message, errno, code);
      }
    },
  }[className];
  cls.errno = errno;
  cls.code = code;
  classes[className] = cls;
  byCode.set(errno, cls);
}

// The error for a library error code, with its message.
function fromCode(errno, message, code) {
  const cls = byCode.get(errno);
  return cls ? new cls(message) : new JobqError(message, errno, code);
}

module.exports = { ...classes, TABLE, byCode, fromCode };
