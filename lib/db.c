/*
 * db.c - the handle: jobq_open() picks a store by the URL's scheme and
 * connects, jobq_close() frees; the transaction wrapper every public call
 * goes through (a real transaction, or a savepoint inside the caller's own
 * one); and the identity rules that stop a worker claiming from a database
 * that was swapped or restored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* The stores by URL scheme; NULL: known, but not part of this build. */
static const struct {
  const char *scheme;
  const jobq_store *store;
} schemes[] = {
    {"sqlite", &jobq__store_sqlite},     {"sqlite3", &jobq__store_sqlite},
    {"postgres", &jobq__store_postgres}, {"postgresql", &jobq__store_postgres},
    {"mysql", &jobq__store_mysql},       {"mariadb", &jobq__store_mysql},
};
#define NSCHEMES (sizeof schemes / sizeof schemes[0])

static const char expected[] =
    "expected sqlite:PATH, postgres://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE or "
    "mysql://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE";

static int open_url(const char *url, int readonly, jobq **out) {
  jobq *db = calloc(1, sizeof *db);
  *out = db;
  if (db == NULL) return JOBQ_ENOMEM;
  db->readonly = readonly;
  db->max_payload = JOBQ_DEFAULT_MAX_PAYLOAD;
  db->url_redacted = jobq_url_redact(url);
  if (db->url_redacted == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  const char *red = db->url_redacted;
  /* An unknown scheme is named as such before the rest is parsed. */
  size_t slen = url ? strcspn(url, ":") : 0;
  int known = 0;
  for (size_t i = 0; i < NSCHEMES && slen > 0; i++)
    known |= strlen(schemes[i].scheme) == slen && strncmp(schemes[i].scheme, url, slen) == 0;
  if (url != NULL && url[slen] == ':' && slen > 0 && !known &&
      strspn(url, "abcdefghijklmnopqrstuvwxyz0123456789+.-") >= slen)
    return jobq__fail(db, JOBQ_EURL, "database url '%s': unknown scheme '%.*s': %s", red,
                      (int)slen, url, expected);
  jobq_url u;
  int rc = jobq__url_parse(db, url, &u);
  if (rc != JOBQ_OK) return rc;
  for (size_t i = 0; i < NSCHEMES; i++) {
    if (strcmp(schemes[i].scheme, u.scheme) != 0) continue;
    if (schemes[i].store == NULL)
      rc = jobq__fail(db, JOBQ_EURL,
                      "database url '%s': the %s store is not part of this build: %s",
                      red, u.scheme, expected);
    db->store = schemes[i].store;
  }
  const char *mp = jobq__url_opt(&u, "max_payload");
  if (rc == JOBQ_OK && mp != NULL) {
    int64_t bytes;
    if (jobq_parse_size(mp, &bytes) != JOBQ_OK || bytes < 1 || bytes > (1 << 30))
      rc = jobq__fail(db, JOBQ_EURL,
                      "invalid max_payload '%s' in the database url: expected a size "
                      "from 1 byte to 1GiB, like 1MiB",
                      mp);
    else
      db->max_payload = (size_t)bytes;
  }
  if (rc == JOBQ_OK) rc = jobq__url_check(db, &u, db->store->options);
  if (rc == JOBQ_OK) rc = db->store->open(db, &u);
  jobq__url_release(&u);
  if (rc == JOBQ_OK) rc = jobq__schema_check(db);
  if (rc != JOBQ_OK) {
    if (db->store != NULL && db->conn != NULL) db->store->close(db);
    db->conn = NULL;
    db->store = NULL;
  }
  return rc;
}

int jobq_open(const char *url, jobq **out) { return open_url(url, 0, out); }

int jobq_open_readonly(const char *url, jobq **out) { return open_url(url, 1, out); }

void jobq_close(jobq *db) {
  if (db == NULL) return;
  if (db->store != NULL && db->conn != NULL) db->store->close(db);
  jobq__watch_release(db);
  jobq__marks_forget(db);
  db->txn_depth = 0;
  jobq__counts_settle(db, 0);
  free(db->counts);
  free(db->limited);
  free(db->parted);
  free(db->url_redacted);
  free(db);
}

const char *jobq_warning(const jobq *db) {
  return db != NULL && db->warning[0] != '\0' ? db->warning : NULL;
}

int jobq__usable(jobq *db) {
  if (db == NULL) return JOBQ_EINVAL;
  if (db->store == NULL || db->conn == NULL)
    return jobq__fail(db, JOBQ_EINVAL, "the handle is not connected: jobq_open failed");
  return JOBQ_OK;
}

int jobq__ready(jobq *db) {
  int rc = jobq__usable(db);
  if (rc == JOBQ_OK && db->schema_missing == JOBQ__SCHEMA_FOREIGN)
    rc = jobq__fail(db, JOBQ_ESCHEMA,
                    "'%s' is not a jobq database: it holds other tables, and jobq "
                    "adds its own only when asked: run 'jobq init' (or jobq_init()) "
                    "to add them",
                    db->url_redacted);
  else if (rc == JOBQ_OK && db->schema_missing)
    rc = jobq__fail(db, JOBQ_ESCHEMA,
                    "'%s' has no jobq schema yet%s: run 'jobq init' (or jobq_init()) "
                    "first",
                    db->url_redacted, db->readonly ? ", or an older one" : "");
  return rc;
}

/* Refuses a write on a handle of jobq_open_readonly(). */
static int writable(jobq *db) {
  if (!db->readonly) return JOBQ_OK;
  return jobq__fail(db, JOBQ_EREADONLY,
                    "the handle of '%s' only reads (jobq_open_readonly): expected one "
                    "of jobq_open() to write",
                    db->url_redacted);
}

int jobq_init(jobq *db) {
  int rc = jobq__usable(db);
  if (rc == JOBQ_OK) rc = writable(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_OWNER);
  return jobq__migrate(db);
}

int jobq_roles_sql(jobq *db, char **sql) {
  *sql = NULL;
  int rc = jobq__usable(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  return db->store->roles(db, sql);
}

int jobq_set_max_payload(jobq *db, size_t bytes) {
  if (db == NULL) return JOBQ_EINVAL;
  if (bytes == 0 || bytes > (size_t)1 << 30)
    return jobq__fail(db, JOBQ_EINVAL,
                      "invalid max payload '%zu': expected 1 byte to 1 GiB", bytes);
  db->max_payload = bytes;
  return jobq__ok(db);
}

void *jobq_native(jobq *db) {
  if (jobq__usable(db) != JOBQ_OK) return NULL;
  return db->store->native(db);
}

static int txn_begin(jobq *db, int lazy) {
  int rc = jobq__ready(db);
  if (rc == JOBQ_OK) rc = writable(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  db->retry = 0;
  rc = db->store->begin(db, db->txn_depth, lazy);
  if (rc == JOBQ_OK && db->txn_depth == 0) db->txn_connects = db->connects;
  if (rc == JOBQ_OK) db->txn_depth++;
  return rc;
}

int jobq__txn_begin(jobq *db) { return txn_begin(db, 1); }

int jobq__txn_end(jobq *db, int rc) {
  /* Nothing commits on a connection made again after the transaction
   * began: its checks (lib/mark.c, lib/session.c) ran on the old one.  A
   * store that made it again tells with db->connects; the transaction
   * runs again, and its checks with it. */
  if (rc == JOBQ_OK && db->txn_depth == 1 && db->connects != db->txn_connects) {
    db->retry = 1;
    rc = jobq__fail(db, JOBQ_ECONN,
                    "the connection to '%s' was made again during the transaction: run it "
                    "again",
                    db->url_redacted);
  }
  if (rc == JOBQ_OK && db->txn_depth == 1) rc = jobq__counts_write(db);
  db->txn_depth--;
  if (rc == JOBQ_OK) {
    rc = db->store->commit(db, db->txn_depth);
    if (rc == JOBQ_OK) {
      jobq__counts_settle(db, 1);
      jobq__wake_settle(db, 1);
      return JOBQ_OK;
    }
  }
  /* Keep the message of the failure, not of the rollback. */
  jobq__error kept;
  jobq__error_keep(db, &kept);
  db->store->rollback(db, db->txn_depth);
  jobq__error_restore(db, &kept);
  jobq__counts_settle(db, 0);
  jobq__wake_settle(db, 0);
  return rc;
}

int jobq__txn_retry(jobq *db, int rc, int *attempt) {
  int again = rc != JOBQ_OK && db->retry && db->txn_depth == 0 && ++*attempt < 10;
  db->retry = 0;
  if (!again) return 0;
  /* 1, 2, 4 ... 64 ms, each with jitter in [0.5, 1.5). */
  int64_t base_us = 1000LL << (*attempt < 7 ? *attempt - 1 : 6);
  int64_t us = base_us / 2 + (int64_t)(jobq__rand(db) % (uint64_t)base_us);
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
  return 1;
}

int jobq_begin(jobq *db) {
  int rc = jobq__usable(db);
  if (rc != JOBQ_OK) return rc;
  if (db->txn_depth > 0)
    return jobq__fail(db, JOBQ_ESTATE, "a transaction is already open: commit or roll it back first");
  /* Begun now: the caller's own statements on jobq_native() come next. */
  return txn_begin(db, 0);
}

int jobq_commit(jobq *db) {
  int rc = jobq__usable(db);
  if (rc != JOBQ_OK) return rc;
  if (db->txn_depth != 1)
    return jobq__fail(db, JOBQ_ESTATE, "no transaction is open: call jobq_begin first");
  jobq__ok(db);
  return jobq__txn_end(db, JOBQ_OK);
}

int jobq_rollback(jobq *db) {
  int rc = jobq__usable(db);
  if (rc != JOBQ_OK) return rc;
  if (db->txn_depth != 1)
    return jobq__fail(db, JOBQ_ESTATE, "no transaction is open: call jobq_begin first");
  jobq__ok(db);
  db->txn_depth = 0;
  jobq__counts_settle(db, 0);
  jobq__wake_settle(db, 0);
  return db->store->rollback(db, 0);
}

/* The identity in the first five columns of a row of IDENT or
 * CLAIM_ENTER. */
static void identity_cols(jobq *db, jobq_rows *r, jobq_identity *out) {
  size_t len;
  const char *qid = db->store->col_bytes(r, 0, &len);
  snprintf(out->queue_id, sizeof out->queue_id, "%.*s", (int)len, qid);
  out->epoch = jobq__col_int(db, r, 1);
  out->schema_version = (int)jobq__col_int(db, r, 2);
  out->now_ms = jobq__col_int(db, r, 3);
  out->seq = jobq__col_int(db, r, 4);
}

static int no_identity(jobq *db) {
  return jobq__fail(db, JOBQ_EDB, "jobq_meta has no row: run jobq init");
}

/* The database's identity: queue id, epoch, schema version, its clock,
 * and the highest job id it ever gave. */
static int identity(jobq *db, jobq_identity *out) {
  memset(out, 0, sizeof *out);
  jobq_rows *r;
  int got = jobq__sql_row(db, JOBQ_Q_IDENT, &r, SQL_ARGS());
  if (got < 0) return got;
  if (got == 0) return no_identity(db);
  identity_cols(db, r, out);
  jobq__rows_done(db, r);
  return JOBQ_OK;
}

/* Checks identity id, just read, against what db has seen. */
static int identity_compare(jobq *db, const jobq_identity *id) {
  if (!db->identity_known) {
    memcpy(db->queue_id, id->queue_id, sizeof db->queue_id);
    db->epoch = id->epoch;
    db->max_seq = id->seq;
    db->identity_known = 1;
    return JOBQ_OK;
  }
  if (strcmp(db->queue_id, id->queue_id) != 0)
    return jobq__fail(db, JOBQ_EIDENTITY,
                      "the database's queue id is '%s' but this worker started on "
                      "'%s': a different database was swapped in; stopping claims",
                      id->queue_id, db->queue_id);
  if (id->epoch < db->epoch)
    return jobq__fail(db, JOBQ_EIDENTITY,
                      "the database's epoch went back from %lld to %lld: it was "
                      "restored from an older backup; run 'jobq epoch bump' once "
                      "it is the database to use",
                      (long long)db->epoch, (long long)id->epoch);
  if (id->epoch > db->epoch) {
    /* An operator bumped the epoch: every earlier session was ended, and
     * the job sequence may legitimately have gone back, and the writes
     * of the old epoch were given up. */
    db->epoch = id->epoch;
    db->max_seq = id->seq;
    jobq__marks_forget(db);
    return JOBQ_OK;
  }
  if (id->seq < db->max_seq)
    return jobq__fail(db, JOBQ_EIDENTITY,
                      "the job sequence went back from %lld to %lld without an "
                      "epoch change: the database was restored from a backup or "
                      "failed over to a stale replica; run 'jobq epoch bump' once "
                      "it is the database to use",
                      (long long)db->max_seq, (long long)id->seq);
  db->max_seq = id->seq;
  return JOBQ_OK;
}

int jobq__identity_check(jobq *db) {
  jobq_identity id;
  int rc = identity(db, &id);
  return rc == JOBQ_OK ? identity_compare(db, &id) : rc;
}

int jobq__identity_check_row(jobq *db, jobq_rows *r) {
  if (r == NULL) return no_identity(db);
  jobq_identity id;
  identity_cols(db, r, &id);
  return identity_compare(db, &id);
}

int jobq_identity_get(jobq *db, jobq_identity *out) {
  int rc = jobq__ready(db);
  if (rc != JOBQ_OK) return rc;
  jobq__ok(db);
  jobq__need(db, JOBQ__ROLE_READER);
  return identity(db, out);
}
