/*
 * mark.c - the writes acknowledged to a handle that its database must
 * still have.
 *
 * A database can go back in time without its identity saying so: restored
 * from an older backup, swapped for an older copy of its file, or failed
 * over to a replica that had not seen the latest commits.  Its job
 * sequence need not go back either (PostgreSQL logs sequence values up to
 * 32 ahead, so a promoted replica may show a higher one).  So each handle
 * remembers its last acknowledged write, its mark, with what proves that
 * it is that write and not another that took its id since: a completion
 * by its claim token, which must be on the job's archived row; a put by
 * its queue and payload, wherever the job is now.  The handle reads its
 * mark back at every session open and heartbeat, and before it writes on
 * a connection made again; a mark that is missing stops every write of
 * the handle with JOBQ_EIDENTITY, saying what is missing, until an
 * operator bumps the epoch (jobq__marks_forget).
 *
 * Every claim also reads back the handle's last completion, and the
 * first one since the last check when there were several, in the
 * statement that checks its session (no round trip of its own): a job
 * whose completion a restore lost is not handed out again, even when a
 * heartbeat found the completion there just before the restore, and a
 * completion made after the restore (of a job claimed before the backup)
 * cannot hide the loss of those before it.
 *
 * A completion that was pruned since is not missing: every prune records
 * before which finish time it may have deleted archived jobs
 * (jobq_meta.pruned_before), and a write made before that horizon, or not
 * known to be after it, cannot be told from a lost one: it is let go.
 *
 * A worker started fresh after the loss has no mark of its own:
 * jobq_expect() hands it the completions acknowledged to the workers
 * before it (jobq work keeps them in a state file), checked the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How far the database clock may run from this host's monotonic clock
 * between a write and its check, for the bound below a write's time. */
#define CLOCK_SLACK_MS 2000

static uint64_t digest(const void *p, size_t len) {
  const unsigned char *b = p;
  uint64_t h = 14695981039346656037u; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211u;
  return h;
}

/* A write that went to a connection made again and not checked yet (the
 * store sent it there with the transaction's first round trip) proves
 * nothing of the database it was checked on: the mark that was stays,
 * for the next write to check. */
static int checked(const jobq *db) { return db->connects == db->checked; }

void jobq__mark_put(jobq *db, const jobq_put_opts *opts, const int64_t *ids,
                    const unsigned char *existed, size_t n, int64_t mono_ms) {
  for (size_t i = n; i-- > 0 && checked(db);) {
    if (existed != NULL && existed[i]) continue;
    struct jobq__mark *m = &db->mark;
    memset(m, 0, sizeof *m);
    m->id = ids[i];
    snprintf(m->queue, sizeof m->queue, "%s",
             opts[i].queue != NULL ? opts[i].queue : JOBQ_DEFAULT_QUEUE);
    m->digest = digest(opts[i].payload, opts[i].payload_len);
    m->mono_ms = mono_ms;
    return;
  }
}

void jobq__mark_acks(jobq *db, const jobq_ack *acks, size_t n, int64_t mono_ms) {
  for (size_t i = n; i-- > 0 && checked(db);) {
    if (acks[i].status != JOBQ_OK || acks[i].outcome != JOBQ_STATE_DONE) continue;
    struct jobq__mark *m = &db->mark;
    memset(m, 0, sizeof *m);
    m->id = acks[i].id;
    memcpy(m->claim, acks[i].claim, sizeof m->claim);
    m->mono_ms = mono_ms;
    db->done = *m;
    if (!db->unchecked) db->first = *m;
    db->unchecked = 1;
    return;
  }
}

void jobq__marks_forget(jobq *db) {
  memset(&db->mark, 0, sizeof db->mark);
  free(db->expected);
  db->expected = NULL;
  db->nexpected = 0;
  db->lost = 0;
  db->unchecked = 0;
  memset(&db->done, 0, sizeof db->done);
  memset(&db->first, 0, sizeof db->first);
}

/* Whether the database has m: 1, 0, or an error. */
static int mark_found(jobq *db, const struct jobq__mark *m) {
  int yes = 0;
  if (m->claim[0] != '\0') {
    int rc = jobq__sql_exists(db, JOBQ_Q_MARK_DONE, &yes, SQL_ARGS(V_INT(m->id), V_TEXT(m->claim)));
    return rc != JOBQ_OK ? rc : yes;
  }
  jobq_rows *r;
  int rc = JOBQ_EDENIED;
  if (!db->mark_blind) {
    /* In a savepoint: a login that may not read payloads (the producer
     * role) is refused, and the transaction must go on without it. */
    rc = jobq__txn_begin(db);
    if (rc == JOBQ_OK) rc = jobq__sql_query(db, JOBQ_Q_MARK_PUT, &r, SQL_ARGS(V_INT(m->id)));
    int got = 0;
    if (rc == JOBQ_OK) {
      while (!yes && (got = jobq__rows_next(db, r)) == 1) {
        size_t len;
        const void *payload = db->store->col_bytes(r, 1, &len);
        yes = jobq__col_is(db, r, 0, m->queue) && digest(payload, len) == m->digest;
      }
      jobq__rows_done(db, r);
      if (!yes && got < 0) rc = got;
    }
    rc = jobq__txn_end(db, rc);
    if (rc != JOBQ_EDENIED) return rc != JOBQ_OK ? rc : yes;
    db->mark_blind = 1;
  }
  /* The id and the queue: a job of the same queue that took the id after
   * a loss would pass for it. */
  int got = jobq__sql_row(db, JOBQ_Q_MARK_PUT_QUEUE, &r, SQL_ARGS(V_INT(m->id)));
  if (got < 0) return got;
  if (got == 1) {
    yes = jobq__col_is(db, r, 0, m->queue);
    jobq__rows_done(db, r);
  }
  return yes;
}

/* The horizon of prunes and the database clock, read once per check. */
typedef struct horizon {
  int read;
  int64_t pruned_before, now;
} horizon;

/* Whether m, missing, may have been pruned: it was written before the
 * horizon, or when is not known. */
static int maybe_pruned(jobq *db, const struct jobq__mark *m, horizon *h) {
  if (!h->read) {
    jobq_rows *r;
    int got = jobq__sql_row(db, JOBQ_Q_MARK_META, &r, SQL_ARGS());
    if (got < 0) return got;
    if (got == 1) {
      h->pruned_before = jobq__col_int(db, r, 0);
      h->now = jobq__col_int(db, r, 1);
      jobq__rows_done(db, r);
    }
    h->read = 1;
  }
  if (h->pruned_before <= 0) return 0;
  int64_t at = m->at_ms;
  if (at <= 0 && m->mono_ms > 0) at = h->now - (jobq__mono_ms() - m->mono_ms) - CLOCK_SLACK_MS;
  return at <= 0 || at < h->pruned_before;
}

/* The message for m, missing; own: the handle's own write. */
static int missing(jobq *db, const struct jobq__mark *m, int own) {
  char what[200];
  if (m->claim[0] != '\0')
    snprintf(what, sizeof what, "job %lld%s%s%s, completed by %s under claim '%.12s...',",
             (long long)m->id, m->queue[0] ? " (queue '" : "", m->queue,
             m->queue[0] ? "')" : "", own ? "this worker" : "a worker on this machine",
             m->claim);
  else
    snprintf(what, sizeof what, "job %lld, put into queue '%s' by this producer,",
             (long long)m->id, m->queue);
  db->lost = 1;
  return jobq__fail(db, JOBQ_EIDENTITY,
                    "the database lost acknowledged writes: %s is not in it: it was "
                    "restored from an older backup or failed over to a replica that "
                    "had not seen the latest commits; check that it is the database to "
                    "use, then run 'jobq epoch bump'",
                    what);
}

/* The newest of the expected marks, the one to keep checking once they
 * were all found. */
static void keep_newest(jobq *db) {
  size_t best = 0;
  for (size_t i = 1; i < db->nexpected; i++) {
    const struct jobq__mark *a = &db->expected[i], *b = &db->expected[best];
    if (a->at_ms > b->at_ms || (a->at_ms == b->at_ms && a->id > b->id)) best = i;
  }
  if (db->nexpected > 1) {
    db->expected[0] = db->expected[best];
    db->nexpected = 1;
  }
}

static int same(const struct jobq__mark *a, const struct jobq__mark *b) {
  return a->id == b->id && strcmp(a->claim, b->claim) == 0;
}

int jobq__marks_check(jobq *db) {
  int own = db->mark.id != 0;
  /* Its own: the first completion since the last check, the last
   * completion, and the last write (often the same ones). */
  struct jobq__mark v3[3];
  size_t n = 0;
  if (own && db->unchecked && db->first.id != 0) v3[n++] = db->first;
  if (own && db->done.id != 0 && (n == 0 || !same(&db->done, &v3[0]))) v3[n++] = db->done;
  if (own && (n == 0 || !same(&db->mark, &v3[n - 1]))) v3[n++] = db->mark;
  const struct jobq__mark *v = own ? v3 : db->expected;
  if (!own) n = db->nexpected;
  horizon h = {0, 0, 0};
  int done_pruned = 0;
  for (size_t i = 0; i < n; i++) {
    int found = mark_found(db, &v[i]);
    if (found < 0) return found;
    if (found) continue;
    int pruned = maybe_pruned(db, &v[i], &h);
    if (pruned < 0) return pruned;
    if (!pruned) return missing(db, &v[i], own);
    done_pruned |= own && same(&v[i], &db->done);
  }
  if (!own) keep_newest(db);
  /* A last completion pruned since proves nothing any more: claims stop
   * looking for it. */
  if (done_pruned) memset(&db->done, 0, sizeof db->done);
  db->lost = 0;
  db->unchecked = 0;
  db->checked = db->connects;
  return JOBQ_OK;
}

void jobq__marks_args(const jobq *db, int64_t *first, const char **first_claim,
                      int64_t *last, const char **last_claim) {
  *first = *last = 0;
  *first_claim = *last_claim = "";
  if (db->done.id == 0) return;
  const struct jobq__mark *f = db->unchecked && db->first.id != 0 ? &db->first : &db->done;
  *first = f->id;
  *first_claim = f->claim;
  *last = db->done.id;
  *last_claim = db->done.claim;
}

int jobq__marks_seen(jobq *db, int64_t first_found, int64_t last_found) {
  if (db->done.id == 0) return JOBQ_OK;
  if (first_found > 0 && last_found > 0) {
    db->unchecked = 0;
    return JOBQ_OK;
  }
  return jobq__marks_check(db);
}

int jobq__write_check_due(const jobq *db) {
  return !db->identity_known || db->connects != db->checked || db->lost;
}

int jobq__write_check(jobq *db) {
  if (!jobq__write_check_due(db)) return JOBQ_OK;
  int rc = jobq__identity_check(db);
  return rc == JOBQ_OK ? jobq__marks_check(db) : rc;
}

int jobq_expect(jobq *db, const jobq_identity *seen, const jobq_receipt *r, size_t n) {
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  if (seen == NULL || (r == NULL && n > 0))
    return jobq__fail(db, JOBQ_EINVAL, "invalid arguments: seen is required, and receipts "
                                       "when their count is not 0");
  for (size_t i = 0; i < n; i++)
    if (r[i].id <= 0 || strlen(r[i].claim) != JOBQ_CLAIM_LEN ||
        strspn(r[i].claim, "0123456789abcdef") != JOBQ_CLAIM_LEN)
      return jobq__fail(db, JOBQ_EINVAL,
                        "receipt %zu: invalid job %lld or claim token '%.40s': expected an "
                        "id and %d hex characters",
                        i, (long long)r[i].id, r[i].claim, JOBQ_CLAIM_LEN);
  struct jobq__mark *v = n ? calloc(n, sizeof *v) : NULL;
  if (n && v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    v[i].id = r[i].id;
    snprintf(v[i].queue, sizeof v[i].queue, "%s", r[i].queue);
    memcpy(v[i].claim, r[i].claim, sizeof v[i].claim);
    v[i].at_ms = r[i].claimed_at_ms;
  }
  /* Only reads: a handle of jobq_open_readonly() (jobq doctor) runs the
   * statements one by one, as its other reads do. */
  int txn = !db->readonly;
  if (txn && (rc = jobq__txn_begin(db)) != JOBQ_OK) {
    free(v);
    return rc;
  }
  jobq_identity now;
  rc = jobq_identity_get(db, &now);
  /* Another database's, or given up by an epoch bump since: no bearing. */
  int bears = rc == JOBQ_OK && strcmp(now.queue_id, seen->queue_id) == 0 &&
              now.epoch <= seen->epoch;
  if (bears) {
    if (!db->identity_known || strcmp(db->queue_id, seen->queue_id) != 0 ||
        db->epoch < seen->epoch) {
      memcpy(db->queue_id, seen->queue_id, sizeof db->queue_id);
      db->epoch = seen->epoch;
      db->max_seq = seen->seq;
      db->identity_known = 1;
    } else if (db->epoch == seen->epoch && db->max_seq < seen->seq) {
      db->max_seq = seen->seq;
    }
    free(db->expected);
    db->expected = v;
    db->nexpected = n;
    v = NULL;
    rc = jobq__identity_check(db);
    if (rc == JOBQ_OK) rc = jobq__marks_check(db);
  }
  free(v);
  return txn ? jobq__txn_end(db, rc) : rc;
}

/* "121-126, 130" into out: the ids (sorted) as ranges, cut at size. */
static void ranges(char *out, size_t size, const int64_t *ids, size_t n) {
  size_t o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && o + 40 < size;) {
    size_t j = i;
    while (j + 1 < n && ids[j + 1] == ids[j] + 1) j++;
    if (j > i)
      o += (size_t)snprintf(out + o, size - o, "%s%lld-%lld", i ? ", " : "", (long long)ids[i],
                            (long long)ids[j]);
    else
      o += (size_t)snprintf(out + o, size - o, "%s%lld", i ? ", " : "", (long long)ids[i]);
    i = j + 1;
    if (i < n && o + 40 >= size) snprintf(out + o, size - o, " and more");
  }
}

static int id_order(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int jobq__marks_doctor(jobq *db, jobq__checks *c) {
  size_t n = db->nexpected + (db->mark.id != 0);
  if (n == 0) return JOBQ_OK;
  int64_t *lost = malloc(n * sizeof *lost);
  if (lost == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  size_t nlost = 0, unsure = 0;
  horizon h = {0, 0, 0};
  int rc = JOBQ_OK;
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    const struct jobq__mark *m = i < db->nexpected ? &db->expected[i] : &db->mark;
    int found = mark_found(db, m);
    int pruned = found == 0 ? maybe_pruned(db, m, &h) : 0;
    if (found < 0 || pruned < 0) rc = found < 0 ? found : pruned;
    else if (!found && pruned) unsure++;
    else if (!found) lost[nlost++] = m->id;
  }
  if (rc == JOBQ_OK && nlost > 0) {
    char list[320];
    qsort(lost, nlost, sizeof *lost, id_order);
    ranges(list, sizeof list, lost, nlost);
    jobq__check_add(c, JOBQ_CHECK_FAIL, "lost writes",
                    "the database was restored from an older backup or failed over to a "
                    "replica that had not seen the latest commits: those jobs had finished, "
                    "and may run again.  Check that it is the database to use, then run "
                    "'jobq epoch bump'; workers refuse it until then",
                    "%zu of the last %zu acknowledged writes known here are not in the "
                    "database: jobs %s",
                    nlost, n, list);
  } else if (rc == JOBQ_OK) {
    jobq__check_add(c, JOBQ_CHECK_OK, "lost writes", NULL,
                    "the last %zu acknowledged writes known here are there%s", n - unsure,
                    unsure ? " (others may have been pruned since)" : "");
  }
  free(lost);
  return rc;
}
