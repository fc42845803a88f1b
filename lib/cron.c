/*
 * cron.c - periodic jobs: schedules kept in the database (jobq_cron),
 * added, changed, paused, resumed, removed and listed, and the run that
 * puts the jobs of the slots due.
 *
 * Every slot is put exactly once however many processes run at once and
 * whatever became of earlier jobs: the run reads the schedules due (held,
 * so that another run passes them over), and for each one moves the
 * schedule's next slot on with a compare-and-set (WHERE next_at = the slot
 * it read) in the same transaction as the put.  A run that lost the race
 * changes nothing; a job that finished and was pruned long ago does not
 * matter, as a unique key per slot would.  Slots are computed here
 * (lib/cronspec.c) from the database clock.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Schedules a run takes in one transaction; more wait for the next run. */
#define DUE_MAX 100

void jobq_cron_opts_init(jobq_cron_opts *o) {
  memset(o, 0, sizeof *o);
  jobq_put_opts_init(&o->job);
}

static int check_name(jobq *db, const char *name) {
  if (jobq_check_queue(NULL, name) == JOBQ_OK) return JOBQ_OK;
  return jobq__fail(db, JOBQ_EINVAL,
                    "invalid schedule name '%.100s': expected 1 to 63 characters of a-z, "
                    "0-9, _, ., - starting with a letter or digit",
                    name != NULL ? name : "");
}

static int not_found(jobq *db, const char *name) {
  return jobq__fail(db, JOBQ_ENOTFOUND, "no schedule named '%s'", name);
}

/* ---------------------------------------------------------------- add */

static int add(jobq *db, const jobq_cron_opts *o, const jobq__cron_spec *s, int64_t *next,
               int *replaced) {
  int64_t now;
  int rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  if (rc == JOBQ_OK) rc = jobq__cron_next(db, s, now, next);
  if (rc != JOBQ_OK) return rc;
  const jobq_put_opts *j = &o->job;
  const char *tz = o->tz != NULL ? o->tz : "UTC";
  const char *queue = j->queue != NULL ? j->queue : JOBQ_DEFAULT_QUEUE;
  const jobq_val v[] = {V_TEXT(o->name),         V_TEXT(queue),
                        V_TEXT(o->spec),         V_TEXT(tz),
                        V_BYTES(j->payload, j->payload_len),
                        V_INT(j->priority),      V_TEXT(j->key),
                        V_INT(j->barrier != 0),  V_TEXT(j->unique_key),
                        V_INT(j->max_attempts),  V_INT(j->timeout_ms),
                        V_INT(j->backoff_ms),    V_INT(o->skip_missed != 0),
                        V_INT(*next)};
  int64_t added = 0;
  rc = jobq__sql_change(db, JOBQ_Q_CRON_ADD, &added, v, sizeof v / sizeof v[0]);
  *replaced = rc == JOBQ_OK && added == 0;
  if (rc != JOBQ_OK || added == 1) return rc;
  if (!o->replace)
    return jobq__fail(db, JOBQ_ESTATE,
                      "schedule '%s' exists: expected a new name, or --replace (jobq_cron_opts' "
                      "replace) to change it",
                      o->name);
  return jobq__sql_run(db, JOBQ_Q_CRON_REPLACE, v, sizeof v / sizeof v[0]);
}

int jobq_cron_add(jobq *db, const jobq_cron_opts *o, int64_t *next_ms, int *replaced) {
  int64_t next = 0;
  int was = 0;
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (o == NULL) return jobq__fail(db, JOBQ_EINVAL, "invalid arguments: opts is required");
  int rc = check_name(db, o->name);
  if (rc == JOBQ_OK && (o->job.delay_ms != 0 || o->job.run_at_ms != 0))
    rc = jobq__fail(db, JOBQ_EINVAL,
                    "invalid job of schedule '%s': a delay or run-at time has no meaning, "
                    "its run-at time is its slot",
                    o->name);
  if (rc == JOBQ_OK) rc = jobq__check_put(db, &o->job, -1);
  jobq__cron_spec s;
  if (rc == JOBQ_OK) rc = jobq__cron_parse(db, o->spec, o->tz, &s);
  if (rc != JOBQ_OK) return rc;
  int attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
    rc = jobq__txn_end(db, add(db, o, &s, &next, &was));
  } while (jobq__txn_retry(db, rc, &attempt));
  jobq__cron_spec_release(&s);
  if (rc == JOBQ_OK) {
    if (next_ms != NULL) *next_ms = next;
    if (replaced != NULL) *replaced = was;
  }
  return rc;
}

/* ---------------------------------------------------------------- remove, pause, resume */

/* op: JOBQ_Q_CRON_DELETE, _PAUSE or _RESUME on the schedule name. */
static int change(jobq *db, const char *name, int op) {
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_CRON_GET, &r, SQL_ARGS(V_TEXT(name)));
  if (got < 0) return got;
  if (got == 0) return not_found(db, name);
  int failed = 0;
  char *spec = jobq__col_text(db, r, 0, &failed), *tz = jobq__col_text(db, r, 1, &failed);
  jobq__rows_done(db, r);
  int rc = failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  if (rc == JOBQ_OK && op == JOBQ_Q_CRON_RESUME) {
    /* From the next slot after now: the pause's slots are not put. */
    jobq__cron_spec s;
    int64_t now = 0, next = 0;
    rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
    if (rc == JOBQ_OK && (rc = jobq__cron_parse(db, spec, tz, &s)) == JOBQ_OK) {
      rc = jobq__cron_next(db, &s, now, &next);
      jobq__cron_spec_release(&s);
    }
    if (rc == JOBQ_OK)
      rc = jobq__sql_run(db, op, SQL_ARGS(V_TEXT(name), V_INT(next)));
  } else if (rc == JOBQ_OK) {
    rc = jobq__sql_run(db, op, SQL_ARGS(V_TEXT(name)));
  }
  free(spec);
  free(tz);
  return rc;
}

static int change_txn(jobq *db, const char *name, int op) {
  if (db == NULL) return JOBQ_EINVAL;
  jobq__need(db, JOBQ__ROLE_ADMIN);
  int rc = check_name(db, name), attempt = 0;
  if (rc != JOBQ_OK) return rc;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
    rc = jobq__txn_end(db, change(db, name, op));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

int jobq_cron_remove(jobq *db, const char *name) {
  return change_txn(db, name, JOBQ_Q_CRON_DELETE);
}
int jobq_cron_pause(jobq *db, const char *name) {
  return change_txn(db, name, JOBQ_Q_CRON_PAUSE);
}
int jobq_cron_resume(jobq *db, const char *name) {
  return change_txn(db, name, JOBQ_Q_CRON_RESUME);
}

/* ---------------------------------------------------------------- list */

/* The job's columns of a row of CRON_LIST or CRON_DUE, from col on:
 * queue, payload, priority, order_key, barrier, unique_key,
 * max_attempts, timeout_ms, backoff_ms.  The strings and payload are new
 * (job_release). */
static void read_job(jobq *db, jobq_rows *r, int col, jobq_put_opts *j, int *failed) {
  jobq_put_opts_init(j);
  j->queue = jobq__col_text(db, r, col, failed);
  j->payload = jobq__col_bytes(db, r, col + 1, &j->payload_len, failed);
  j->priority = (int)jobq__col_int(db, r, col + 2);
  j->key = jobq__col_text(db, r, col + 3, failed);
  j->barrier = (int)jobq__col_int(db, r, col + 4);
  j->unique_key = jobq__col_text(db, r, col + 5, failed);
  j->max_attempts = (int)jobq__col_int(db, r, col + 6);
  j->timeout_ms = jobq__col_int(db, r, col + 7);
  j->backoff_ms = jobq__col_int(db, r, col + 8);
}

static void job_release(jobq_put_opts *j) {
  free((char *)j->queue);
  free((void *)j->payload);
  free((char *)j->key);
  free((char *)j->unique_key);
}

int jobq_cron_list(jobq *db, jobq_cron_info **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_CRON_LIST, &r, SQL_ARGS())) != JOBQ_OK) return rc;
  jobq_cron_info *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    jobq_cron_info *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_cron_info *c = &v[nv++];
    memset(c, 0, sizeof *c);
    c->name = jobq__col_text(db, r, 0, &failed);
    c->spec = jobq__col_text(db, r, 1, &failed);
    c->tz = jobq__col_text(db, r, 2, &failed);
    c->skip_missed = (int)jobq__col_int(db, r, 3);
    c->paused = (int)jobq__col_int(db, r, 4);
    c->next_ms = jobq__col_int(db, r, 5);
    c->last_ms = jobq__col_int(db, r, 6);
    c->last_error = jobq__col_text(db, r, 7, &failed);
    c->created_at_ms = jobq__col_int(db, r, 8);
    c->updated_at_ms = jobq__col_int(db, r, 9);
    read_job(db, r, 10, &c->job, &failed);
  }
  jobq__rows_done(db, r);
  rc = got < 0 ? got : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  if (rc != JOBQ_OK) {
    jobq_cron_info_free(v, nv);
    return rc;
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

void jobq_cron_info_free(jobq_cron_info *infos, size_t n) {
  for (size_t i = 0; infos != NULL && i < n; i++) {
    free(infos[i].name);
    free(infos[i].spec);
    free(infos[i].tz);
    free(infos[i].last_error);
    job_release(&infos[i].job);
  }
  free(infos);
}

/* ---------------------------------------------------------------- run */

/* A schedule due, as CRON_DUE read it. */
typedef struct due {
  char *name, *spec, *tz;
  int skip_missed;
  int64_t next_at;
  jobq_put_opts job;
} due;

static void due_release(due *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(d[i].name);
    free(d[i].spec);
    free(d[i].tz);
    job_release(&d[i].job);
  }
  free(d);
}

static int read_due(jobq *db, int64_t now, due **out, size_t *n) {
  *out = NULL;
  *n = 0;
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_CRON_DUE, &r, SQL_ARGS(V_INT(now)));
  if (rc != JOBQ_OK) return rc;
  due *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    due *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    due *d = &v[nv++];
    memset(d, 0, sizeof *d);
    d->name = jobq__col_text(db, r, 0, &failed);
    d->spec = jobq__col_text(db, r, 1, &failed);
    d->tz = jobq__col_text(db, r, 2, &failed);
    d->skip_missed = (int)jobq__col_int(db, r, 3);
    d->next_at = jobq__col_int(db, r, 4);
    read_job(db, r, 5, &d->job, &failed);
  }
  jobq__rows_done(db, r);
  rc = got < 0 ? got : failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
  if (rc != JOBQ_OK) {
    due_release(v, nv);
    return rc;
  }
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

/* Whether an error of a put is the job's own (it will fail the same way
 * every time, so the slot is passed over) rather than the database's. */
static int job_error(int rc) { return rc == JOBQ_EINVAL || rc == JOBQ_ETOOBIG; }

/* One schedule due at now: its slot put (or skipped), its next slot set,
 * unless another run moved it first (then *slot is left empty). */
static int run_one(jobq *db, const due *d, int64_t now, jobq_cron_slot *slot) {
  jobq__cron_spec s;
  int64_t at = 0, next = 0;
  int rc = jobq__cron_parse(db, d->spec, d->tz, &s);
  if (rc == JOBQ_OK) {
    rc = jobq__cron_latest(db, &s, d->next_at, now, &at);
    if (rc == JOBQ_OK) rc = jobq__cron_next(db, &s, now, &next);
    jobq__cron_spec_release(&s);
  }
  /* A zone gone from the system's tzdata: the schedule stays as it is,
   * tried again by the next run, and the others go on. */
  if (rc != JOBQ_OK) return jobq__ok(db);
  int skip = at == 0 || (d->skip_missed && now - at > JOBQ_CRON_GRACE_MS);
  int64_t changed = 0;
  rc = jobq__sql_change(db, JOBQ_Q_CRON_ADVANCE, &changed,
                        SQL_ARGS(V_TEXT(d->name), V_INT(d->next_at), V_INT(next),
                                 skip ? V_NULL : V_INT(at), V_NULL));
  if (rc != JOBQ_OK || changed == 0) return rc;
  int failed = 0;
  slot->name = jobq__strdup(d->name, &failed);
  slot->slot_ms = at;
  slot->skipped = skip;
  if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (skip) return JOBQ_OK;
  jobq_put_opts job = d->job;
  job.run_at_ms = at;
  rc = jobq_put(db, &job, &slot->id, &slot->existed);
  if (rc == JOBQ_OK || !job_error(rc)) return rc;
  /* Its options do not fit this database: the slot is passed over, and
   * the schedule says why. */
  slot->id = 0;
  slot->error = jobq__strdup(jobq_errmsg(db), &failed);
  if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  jobq__ok(db);
  return jobq__sql_run(db, JOBQ_Q_CRON_ADVANCE,
                       SQL_ARGS(V_TEXT(d->name), V_INT(next), V_INT(next), V_NULL,
                                V_TEXT(slot->error)));
}

void jobq_cron_slots_free(jobq_cron_slot *slots, size_t n) {
  for (size_t i = 0; slots != NULL && i < n; i++) {
    free(slots[i].name);
    free(slots[i].error);
  }
  free(slots);
}

/* The schedules due at the database clock's now, each put or passed over,
 * into slots[0..*n). */
static int run_due(jobq *db, jobq_cron_slot **slots, size_t *n) {
  int64_t now;
  due *d = NULL;
  size_t nd = 0;
  int rc = jobq__sql_int(db, JOBQ_Q_NOW, 0, &now, SQL_ARGS());
  if (rc == JOBQ_OK) rc = read_due(db, now, &d, &nd);
  if (rc == JOBQ_OK && nd > 0 && (*slots = calloc(nd, sizeof **slots)) == NULL)
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < nd && rc == JOBQ_OK; i++) {
    rc = run_one(db, &d[i], now, &(*slots)[*n]);
    if ((*slots)[*n].name != NULL) (*n)++;
  }
  due_release(d, nd);
  return rc;
}

int jobq_cron_run(jobq *db, jobq_cron_slot **slots, size_t *n, int64_t *wait_ms) {
  jobq_cron_slot *got = NULL;
  size_t ngot = 0;
  if (slots != NULL) *slots = NULL;
  if (n != NULL) *n = 0;
  if (wait_ms != NULL) *wait_ms = -1;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_PRODUCER);
  /* The one read when nothing is due. */
  jobq_rows *r;
  int64_t first = -1, now = 0;
  int row = jobq__sql_row(db, JOBQ_Q_CRON_WAIT, &r, SQL_ARGS());
  if (row < 0) return row;
  if (row > 0) {
    first = jobq__col_null(db, r, 0) ? -1 : jobq__col_int(db, r, 0);
    now = jobq__col_int(db, r, 1);
    jobq__rows_done(db, r);
  }
  if (first >= 0 && first <= now) {
    int attempt = 0;
    do {
      jobq_cron_slots_free(got, ngot);
      got = NULL;
      ngot = 0;
      if ((rc = jobq__txn_begin(db)) != JOBQ_OK) break;
      rc = jobq__txn_end(db, run_due(db, &got, &ngot));
    } while (jobq__txn_retry(db, rc, &attempt));
    if (rc != JOBQ_OK) {
      jobq_cron_slots_free(got, ngot);
      return rc;
    }
    /* Where the schedules stand now. */
    row = jobq__sql_row(db, JOBQ_Q_CRON_WAIT, &r, SQL_ARGS());
    if (row > 0) {
      first = jobq__col_null(db, r, 0) ? -1 : jobq__col_int(db, r, 0);
      now = jobq__col_int(db, r, 1);
      jobq__rows_done(db, r);
    }
  }
  if (wait_ms != NULL && first >= 0) *wait_ms = first > now ? first - now : 0;
  if (slots != NULL)
    *slots = got;
  else
    jobq_cron_slots_free(got, ngot);
  if (n != NULL) *n = ngot;
  return JOBQ_OK;
}
