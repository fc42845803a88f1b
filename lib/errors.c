/*
 * errors.c - the one error vocabulary (JOBQ_ERRNO_MAP in jobq.h) turned
 * into messages and names, and the message kept on each handle.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *jobq_strerror(int err) {
  switch (err) {
#define JOBQ_ERR_MSG(name, value, msg) \
  case JOBQ_##name:                    \
    return msg;
    JOBQ_ERRNO_MAP(JOBQ_ERR_MSG)
#undef JOBQ_ERR_MSG
  }
  return "unknown error";
}

const char *jobq_err_name(int err) {
  switch (err) {
#define JOBQ_ERR_NAME(name, value, msg) \
  case JOBQ_##name:                     \
    return "JOBQ_" #name;
    JOBQ_ERRNO_MAP(JOBQ_ERR_NAME)
#undef JOBQ_ERR_NAME
  }
  return "JOBQ_EUNKNOWN";
}

int jobq_err_temporary(int err) { return err == JOBQ_EBUSY || err == JOBQ_ECONN; }

int jobq__fail(jobq *db, int err, const char *fmt, ...) {
  if (db == NULL) return err;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(db->errmsg, sizeof db->errmsg, fmt, ap);
  va_end(ap);
  db->err = err;
  return err;
}

void jobq__error_keep(const jobq *db, jobq__error *e) {
  e->err = db->err;
  memcpy(e->msg, db->errmsg, sizeof e->msg);
}

void jobq__error_restore(jobq *db, const jobq__error *e) {
  db->err = e->err;
  memcpy(db->errmsg, e->msg, sizeof db->errmsg);
}

int jobq__ok(jobq *db) {
  if (db != NULL) {
    db->err = JOBQ_OK;
    db->errmsg[0] = '\0';
  }
  return JOBQ_OK;
}

int jobq__denied(jobq *db, const char *what, const char *msg, const char *prefix) {
  /* A role, and the roles that hold its rights: the admin holds the
   * producer's and the worker's, the worker the reader's. */
  char roles[200];
  switch (db->need) {
    case JOBQ__ROLE_READER:
      snprintf(roles, sizeof roles, "%sreader, %sworker or %sadmin", prefix, prefix, prefix);
      break;
    case JOBQ__ROLE_PRODUCER:
      snprintf(roles, sizeof roles, "%sproducer or %sadmin", prefix, prefix);
      break;
    case JOBQ__ROLE_WORKER:
      snprintf(roles, sizeof roles, "%sworker or %sadmin", prefix, prefix);
      break;
    case JOBQ__ROLE_ADMIN:
      snprintf(roles, sizeof roles, "%sadmin", prefix);
      break;
    case JOBQ__ROLE_OWNER:
      return jobq__fail(db, JOBQ_EDENIED,
                        "%s: %s: 'jobq init' makes tables, which only the owner of "
                        "the database (or schema) may; the roles of 'jobq init "
                        "--print-roles' may not",
                        what, msg);
    default:
      return jobq__fail(db, JOBQ_EDENIED,
                        "%s: %s: the login needs one of the roles of 'jobq init "
                        "--print-roles'",
                        what, msg);
  }
  return jobq__fail(db, JOBQ_EDENIED,
                    "%s: %s: the login needs the role %s (see 'jobq init "
                    "--print-roles')",
                    what, msg, roles);
}

const char *jobq_errmsg(const jobq *db) {
  if (db == NULL) return "out of memory";
  if (db->errmsg[0] == '\0' && db->err != JOBQ_OK) return jobq_strerror(db->err);
  return db->errmsg;
}

char *jobq__strdup(const char *s, int *failed) {
  if (s == NULL) return NULL;
  char *c = strdup(s);
  if (c == NULL) *failed = 1;
  return c;
}

void *jobq__memdup(const void *p, size_t len, int *failed) {
  if (p == NULL) return NULL;
  char *c = malloc(len + 1);
  if (c == NULL) {
    *failed = 1;
    return NULL;
  }
  if (len > 0) memcpy(c, p, len);
  c[len] = '\0';
  return c;
}
