/*
 * part.c - a queue's parts, leased by the sessions that claim from it
 * with no leader.  A queue in P parts has P rows in jobq_parts, each
 * with its owner (a session, or none); a job's part is set when it is
 * put: a hash of its ordering key (jobq_part_of), so that a key's jobs
 * share a part, or, without a key, the next part after the handle's last
 * such job, from a random start.  A session that claims from a queue in
 * parts joins its claimers (jobq_claimers) and balances the parts then,
 * at each heartbeat and as it ends, in one short transaction on the
 * database clock with the parts' rows locked (one balance of a queue at
 * a time): the live claimers, the oldest first, each have a fair share
 * (P / n, the first P % n one more); each keeps what it holds up to its
 * share (sticky), a part over its owner's share moves only when its owner
 * runs nothing of it, and every part with no live owner goes to the
 * first claimers under their shares.  The hand-over is fenced: a claim
 * reads its session's parts with their rows locked (MariaDB; SQLite has
 * one writer), or under the session's part lock, which a balance takes
 * before it moves one of the session's parts (PostgreSQL, whose claim
 * is one statement), and takes only from them (lib/claim.c).  Whatever
 * the parts do, a key's jobs run one at a time and in order: only a
 * key's head is ever ready (lib/order.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- the hash */

/* FNV-1a, 32 bits, of key[0..len): the same on every store and machine
 * (PostgreSQL's jobq_put() function computes it too). */
static uint32_t fnv1a(const char *key, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)key[i];
    h *= 16777619u;
  }
  return h;
}

int jobq_part_of(const char *key, size_t len, int parts) {
  if (parts <= 1 || key == NULL) return 0;
  return (int)(fnv1a(key, len) % (uint32_t)parts);
}

int64_t jobq__part_round(jobq *db, size_t n) {
  /* The handle's keyless jobs go round the parts from a random start:
   * parts of even sizes, whatever their count. */
  if (db->part_next == 0) db->part_next = (jobq__rand(db) & 0x3fffffff) + 1;
  int64_t at = db->part_next;
  db->part_next = (db->part_next + (int64_t)(n & 0x3fffffff)) & 0x3fffffff;
  if (db->part_next == 0) db->part_next = 1;
  return at;
}

int64_t jobq__part_hash(jobq *db, const char *key) {
  if (key == NULL) return jobq__part_round(db, 1);
  return (int64_t)fnv1a(key, strlen(key));
}

int64_t jobq__part_run(int64_t parts, int64_t j, int64_t m) {
  return parts > 1 && m > 0 ? j * parts / m : 0;
}

/* ---------------------------------------------------------------- which queues */

int jobq__names_has(const char *list, const char *const *queues, size_t nq) {
  if (list == NULL || list[0] == '\0') return 0;
  if (nq == 0) return 1;
  for (size_t i = 0; i < nq; i++) {
    size_t len = strlen(queues[i]);
    for (const char *p = list; (p = strstr(p, queues[i])) != NULL; p += len)
      if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return 1;
  }
  return 0;
}

int jobq__names_keep(jobq *db, jobq_rows *r, int col, char **list, size_t *cap) {
  size_t len = 0;
  const char *names = jobq__col_null(db, r, col) ? "" : db->store->col_bytes(r, col, &len);
  if (len + 1 > *cap) {
    char *p = realloc(*list, len + 1);
    if (p == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    *list = p;
    *cap = len + 1;
  }
  memcpy(*list, names, len);
  (*list)[len] = '\0';
  return JOBQ_OK;
}

int jobq__parted_keep(jobq *db, jobq_rows *r, int col) {
  return jobq__names_keep(db, r, col, &db->parted, &db->parted_cap);
}

int jobq__parted(const jobq *db, const char *const *queues, size_t nq) {
  return jobq__names_has(db->parted, queues, nq);
}

/* s joins queue (unless it did), then takes its part lock on it. */
static int join_and_lock(jobq *db, jobq_session *s, const char *queue) {
  int rc = jobq__parts_join(db, s, queue);
  return rc == JOBQ_OK ? db->store->lock(db, &(const jobq_lock){'p', 0, queue, s->id}, 1) : rc;
}

int jobq__parts_claim_lock(jobq *db, jobq_session *s, const char *const *queues, size_t nq) {
  int rc = JOBQ_OK;
  for (size_t i = 0; i < nq && rc == JOBQ_OK; i++)
    if (jobq__parted(db, &queues[i], 1)) rc = join_and_lock(db, s, queues[i]);
  /* Every queue: those in parts, from the claim's look. */
  for (const char *p = nq == 0 ? db->parted : ""; rc == JOBQ_OK && p != NULL && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char queue[JOBQ_QUEUE_MAX + 1];
    snprintf(queue, sizeof queue, "%.*s", (int)len, p);
    rc = join_and_lock(db, s, queue);
    p = end ? end + 1 : NULL;
  }
  return rc;
}

/* ---------------------------------------------------------------- balancing */

/* Queue's parts shared out among its live claimers, as the header says.
 * Every part that gets an owner wakes the queue's workers. */
static int balance(jobq *db, const char *queue) {
  char **owner = NULL, **members = NULL;
  size_t np = 0, nm = 0;
  size_t *share = NULL, *held = NULL, *who = NULL;
  int64_t *busy = NULL;
  unsigned char *moved = NULL;
  jobq_rows *r;
  int got;
  /* Parts are numbered 0 .. np - 1 and come in order: their owners. */
  int rc = jobq__sql_texts(db, JOBQ_Q_PARTS_LOCK, &owner, &np, SQL_ARGS(V_TEXT(queue)));
  if (rc == JOBQ_OK)
    rc = jobq__sql_texts(db, JOBQ_Q_CLAIMERS_LIVE, &members, &nm, SQL_ARGS(V_TEXT(queue)));
  if (rc != JOBQ_OK || nm == 0 || np == 0) goto out;
  share = calloc(nm, sizeof *share);
  held = calloc(nm, sizeof *held);
  who = calloc(np, sizeof *who);
  busy = calloc(np, sizeof *busy);
  moved = calloc(np, 1);
  if (share == NULL || held == NULL || who == NULL || busy == NULL || moved == NULL) {
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    goto out;
  }
  for (size_t m = 0; m < nm; m++) share[m] = np / nm + (m < np % nm ? 1 : 0);
  /* Each part's live owner, as a place in members (nm: none). */
  for (size_t p = 0; p < np; p++) {
    who[p] = nm;
    for (size_t m = 0; owner[p] != NULL && m < nm && who[p] == nm; m++)
      if (strcmp(owner[p], members[m]) == 0) who[p] = m;
    if (who[p] < nm) held[who[p]]++;
  }
  /* A session over its share loses the parts it runs nothing of, the
   * highest first, down to its share: the hand-over is fenced by the
   * parts' locks, which its claims take too. */
  for (size_t m = 0; m < nm && rc == JOBQ_OK; m++) {
    if (held[m] <= share[m]) continue;
    /* Where claims do not lock the parts' rows, the owner's part lock:
     * its claims under way end first, and its next ones see the move. */
    if (!jobq__sql_none(db->store->dialect, JOBQ_Q_CLAIM_PARTS))
      rc = db->store->lock(db, &(const jobq_lock){'p', 1, queue, members[m]}, 1);
    if (rc == JOBQ_OK)
      rc = jobq__sql_query(db, JOBQ_Q_PARTS_RUNNING, &r,
                           SQL_ARGS(V_TEXT(members[m]), V_TEXT(queue)));
    if (rc != JOBQ_OK) break;
    while ((got = jobq__rows_next(db, r)) == 1) {
      int64_t p = jobq__col_int(db, r, 0);
      if (p >= 0 && (size_t)p < np) busy[p] = jobq__col_int(db, r, 1);
    }
    jobq__rows_done(db, r);
    if (got < 0) rc = got;
    for (size_t p = np; rc == JOBQ_OK && p-- > 0 && held[m] > share[m];)
      if (who[p] == m && busy[p] == 0) {
        who[p] = nm;
        held[m]--;
        moved[p] = 1;
      }
  }
  /* The parts with no live owner to the first claimers under their
   * shares. */
  for (size_t p = 0, m = 0; rc == JOBQ_OK && p < np; p++) {
    if (who[p] < nm) continue;
    while (m < nm && held[m] >= share[m]) m++;
    const char *to = m < nm ? members[m] : NULL;
    if (m < nm) held[m]++;
    /* A part with a dead owner and no claimer under its share keeps its
     * row as it is (it reads as owned by no one). */
    if (to == NULL && !moved[p]) continue;
    rc = jobq__sql_run(db, JOBQ_Q_PART_OWN,
                       SQL_ARGS(V_TEXT(queue), V_INT((int64_t)p), V_TEXT(to)));
    if (rc == JOBQ_OK && to != NULL) jobq__wake(db, queue);
  }
out:
  jobq__texts_free(owner, np);
  jobq__texts_free(members, nm);
  free(share);
  free(held);
  free(who);
  free(busy);
  free(moved);
  return rc;
}

int jobq__parts_joined(const jobq_session *s, const char *queue) {
  for (size_t i = 0; i < s->njoined; i++)
    if (strcmp(s->joined[i], queue) == 0) return 1;
  return 0;
}

int jobq__parts_join(jobq *db, jobq_session *s, const char *queue) {
  if (jobq__parts_joined(s, queue)) return JOBQ_OK;
  char *copy = strdup(queue);
  char **v = copy ? realloc(s->joined, (s->njoined + 1) * sizeof *v) : NULL;
  if (v == NULL) {
    free(copy);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  s->joined = v;
  s->joined[s->njoined++] = copy;
  int rc = jobq__sql_run(db, JOBQ_Q_CLAIMERS_JOIN, SQL_ARGS(V_TEXT(queue), V_TEXT(s->id)));
  return rc == JOBQ_OK ? balance(db, queue) : rc;
}

int jobq__parts_mine(jobq *db, jobq_session *s, const char *queue, int64_t **parts, size_t *n) {
  *parts = NULL;
  *n = 0;
  int rc = jobq__parts_join(db, s, queue);
  if (rc == JOBQ_OK)
    rc = jobq__sql_ids(db, JOBQ_Q_PARTS_MINE, SIZE_MAX, parts, n,
                       SQL_ARGS(V_TEXT(queue), V_TEXT(s->id)));
  return rc;
}

int jobq_parts_join(jobq_session *s, const char *const *queues, size_t nq) {
  if (s == NULL || (nq > 0 && queues == NULL)) return JOBQ_EINVAL;
  jobq *db = s->db;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_WORKER);
  for (size_t i = 0; i < nq; i++)
    if (jobq_check_queue(db, queues[i]) != JOBQ_OK) return JOBQ_EINVAL;
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE, "joining a queue inside a caller's transaction: "
                                       "expected it outside jobq_begin/jobq_commit");
  int rc, attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    for (size_t i = 0; i < nq && rc == JOBQ_OK; i++) {
      int64_t parts = 1;
      rc = jobq__sql_int(db, JOBQ_Q_PARTS_GET, 1, &parts, SQL_ARGS(V_TEXT(queues[i])));
      if (rc == JOBQ_OK && parts > 1) rc = jobq__parts_join(db, s, queues[i]);
    }
    rc = jobq__txn_end(db, rc);
    if (rc != JOBQ_OK) jobq__parts_forget(s);
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

void jobq__parts_forget(jobq_session *s) {
  jobq__texts_free(s->joined, s->njoined);
  s->joined = NULL;
  s->njoined = 0;
}

int jobq__parts_heartbeat(jobq *db, jobq_session *s) {
  if (s->njoined == 0) return JOBQ_OK;
  char **queues;
  size_t n;
  int rc = jobq__sql_texts(db, JOBQ_Q_PARTS_JOINED, &queues, &n, SQL_ARGS(V_TEXT(s->id)));
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) rc = balance(db, queues[i]);
  if (n > 0) jobq__texts_free(queues, n);
  return rc;
}

int jobq__parts_leave(jobq *db, const char *sid) {
  char **queues;
  size_t n;
  int rc = jobq__sql_texts(db, JOBQ_Q_PARTS_JOINED, &queues, &n, SQL_ARGS(V_TEXT(sid)));
  if (rc != JOBQ_OK) return rc;
  rc = jobq__sql_run(db, JOBQ_Q_CLAIMERS_LEAVE, SQL_ARGS(V_TEXT(sid)));
  /* Queue by queue, in the order of their names: every part's row
   * locked, in the order a balance locks them, before the session's own
   * are given up (sessions that end at once then wait for each other
   * instead of each holding its own rows while it waits for the
   * others'), and its parts to the others at once, rather than at their
   * heartbeats. */
  for (size_t i = 0; i < n && rc == JOBQ_OK; i++) {
    char **owner;
    size_t np;
    rc = jobq__sql_texts(db, JOBQ_Q_PARTS_LOCK, &owner, &np, SQL_ARGS(V_TEXT(queues[i])));
    if (rc != JOBQ_OK) break;
    jobq__texts_free(owner, np);
    rc = jobq__sql_run(db, JOBQ_Q_PARTS_LEAVE, SQL_ARGS(V_TEXT(queues[i]), V_TEXT(sid)));
    if (rc == JOBQ_OK) rc = balance(db, queues[i]);
  }
  if (n > 0) jobq__texts_free(queues, n);
  return rc;
}

/* ---------------------------------------------------------------- setting */

/* Queue's unfinished jobs of key into their part of n. */
static int rekey(jobq *db, const char *queue, const char *key, int n) {
  return jobq__sql_run(db, JOBQ_Q_PARTS_REKEY,
                       SQL_ARGS(V_TEXT(queue), V_TEXT(key),
                                V_INT(jobq_part_of(key, strlen(key), n))));
}

int jobq__parts_rekey(jobq *db, const char *queue, const char *key) {
  int64_t n = 1;
  int rc = jobq__sql_int(db, JOBQ_Q_PARTS_GET, 1, &n, SQL_ARGS(V_TEXT(queue)));
  return rc == JOBQ_OK && n > 1 ? rekey(db, queue, key, (int)n) : rc;
}

/* Queue's unfinished jobs into their parts of n. */
static int repart(jobq *db, const char *queue, int n) {
  int rc = jobq__sql_run(db, JOBQ_Q_PARTS_UNKEYED,
                         SQL_ARGS(V_TEXT(queue), V_INT(n), V_INT(n > 1 ? 0 : 1)));
  if (rc != JOBQ_OK || n <= 1) return rc;
  char **keys;
  size_t nk;
  if ((rc = jobq__sql_texts(db, JOBQ_Q_PARTS_KEYS, &keys, &nk, SQL_ARGS(V_TEXT(queue)))) != JOBQ_OK)
    return rc;
  for (size_t i = 0; i < nk && rc == JOBQ_OK; i++) rc = rekey(db, queue, keys[i], n);
  jobq__texts_free(keys, nk);
  return rc;
}

static int set_parts(jobq *db, const char *queue, int n) {
  int64_t was = 1;
  int rc = jobq__sql_defer(db, JOBQ_Q_QUEUE_ENSURE, SQL_ARGS(V_TEXT(queue)));
  if (rc == JOBQ_OK) rc = jobq__sql_int(db, JOBQ_Q_PARTS_GET, 1, &was, SQL_ARGS(V_TEXT(queue)));
  if (rc != JOBQ_OK || was == n) return rc;
  rc = jobq__sql_run(db, JOBQ_Q_PARTS_SET, SQL_ARGS(V_TEXT(queue), V_INT(n)));
  if (rc == JOBQ_OK) rc = jobq__sql_run(db, JOBQ_Q_PARTS_DROP, SQL_ARGS(V_TEXT(queue)));
  if (rc == JOBQ_OK) rc = repart(db, queue, n);
  if (rc != JOBQ_OK || n <= 1) return rc;
  jobq_val *v = malloc(2 * (size_t)n * sizeof *v);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (int p = 0; p < n; p++) {
    v[p] = V_TEXT(queue);
    v[n + p] = V_INT(p);
  }
  rc = jobq__sql_set(db, JOBQ_Q_PARTS_ADD, SQL_ARGS(V_COL('t', v, (size_t)n), V_COL('i', v + n, (size_t)n)),
                     0, NULL, NULL, NULL, NULL);
  free(v);
  return rc == JOBQ_OK ? balance(db, queue) : rc;
}

int jobq_set_parts(jobq *db, const char *queue, int parts) {
  if (db == NULL) return JOBQ_EINVAL;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_ADMIN);
  if (jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  if (parts < 1 || parts > JOBQ_PARTS_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "invalid count of parts '%d': expected 1 to %d", parts,
                      JOBQ_PARTS_MAX);
  int attempt = 0;
  do {
    if ((rc = jobq__txn_begin(db)) != JOBQ_OK) return rc;
    rc = jobq__txn_end(db, set_parts(db, queue, parts));
  } while (jobq__txn_retry(db, rc, &attempt));
  return rc;
}

/* ---------------------------------------------------------------- reading */

void jobq_parts_free(jobq_part *parts, size_t n) {
  if (parts == NULL) return;
  for (size_t i = 0; i < n; i++) free(parts[i].session);
  free(parts);
}

int jobq_parts(jobq *db, const char *queue, int *parts, jobq_part **out, size_t *n) {
  if (out != NULL) *out = NULL;
  if (n != NULL) *n = 0;
  *parts = 1;
  if (db == NULL) return JOBQ_EINVAL;
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  if (jobq_check_queue(db, queue) != JOBQ_OK) return JOBQ_EINVAL;
  int64_t count = 1;
  rc = jobq__sql_int(db, JOBQ_Q_PARTS_GET, 1, &count, SQL_ARGS(V_TEXT(queue)));
  if (rc != JOBQ_OK || out == NULL || count <= 1) {
    *parts = (int)count;
    return rc;
  }
  jobq_rows *r;
  if ((rc = jobq__sql_query(db, JOBQ_Q_PARTS_SHOW, &r, SQL_ARGS(V_TEXT(queue)))) != JOBQ_OK)
    return rc;
  jobq_part *v = NULL;
  size_t nv = 0;
  int got, failed = 0;
  while ((got = jobq__rows_next(db, r)) == 1) {
    jobq_part *w = realloc(v, (nv + 1) * sizeof *w);
    if (w == NULL) {
      failed = 1;
      break;
    }
    v = w;
    jobq_part *p = &v[nv++];
    p->part = (int)jobq__col_int(db, r, 0);
    p->session = jobq__col_text(db, r, 1, &failed);
    p->since_ms = jobq__col_int(db, r, 2);
    p->live = p->session != NULL && jobq__col_int(db, r, 3) != 0;
    p->ready = jobq__col_int(db, r, 4);
  }
  jobq__rows_done(db, r);
  if (got < 0 || failed) {
    jobq_parts_free(v, nv);
    return got < 0 ? got : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  *parts = (int)count;
  *out = v;
  *n = nv;
  return JOBQ_OK;
}

/* Adds part p of queue to x's parts. */
static int session_part(jobq_session_info *x, const char *queue, int p) {
  jobq_session_parts *q = x->nparts ? &x->parts[x->nparts - 1] : NULL;
  if (q == NULL || strcmp(q->queue, queue) != 0) {
    jobq_session_parts *v = realloc(x->parts, (x->nparts + 1) * sizeof *v);
    if (v == NULL) return JOBQ_ENOMEM;
    x->parts = v;
    q = &v[x->nparts];
    *q = (jobq_session_parts){strdup(queue), NULL, 0};
    if (q->queue == NULL) return JOBQ_ENOMEM;
    x->nparts++;
  }
  int *v = realloc(q->parts, (q->n + 1) * sizeof *v);
  if (v == NULL) return JOBQ_ENOMEM;
  q->parts = v;
  q->parts[q->n++] = p;
  return JOBQ_OK;
}

int jobq__parts_of_sessions(jobq *db, jobq_session_info *v, size_t n) {
  jobq_rows *r;
  int rc = jobq__sql_query(db, JOBQ_Q_SESSIONS_PARTS, &r, SQL_ARGS());
  if (rc != JOBQ_OK) return rc;
  int got;
  while ((got = jobq__rows_next(db, r)) == 1 && rc == JOBQ_OK) {
    size_t len, qlen;
    const char *sid = db->store->col_bytes(r, 0, &len);
    const char *q = db->store->col_bytes(r, 1, &qlen);
    char queue[JOBQ_QUEUE_MAX + 1];
    snprintf(queue, sizeof queue, "%.*s", (int)qlen, q);
    for (size_t i = 0; i < n; i++)
      if (strlen(v[i].id) == len && memcmp(v[i].id, sid, len) == 0 &&
          session_part(&v[i], queue, (int)jobq__col_int(db, r, 2)) != JOBQ_OK)
        rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  jobq__rows_done(db, r);
  return got < 0 ? got : rc;
}

void jobq__session_parts_free(jobq_session_info *x) {
  for (size_t i = 0; i < x->nparts; i++) {
    free(x->parts[i].queue);
    free(x->parts[i].parts);
  }
  free(x->parts);
}
