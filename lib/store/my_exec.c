/*
 * my_exec.c - the MariaDB / MySQL store's executor: its own statements,
 * the server's errors mapped onto jobq's (a deadlock and a lock wait run
 * the transaction again), statements prepared once per connection, and
 * rows read as text with their lengths.
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/my.h"

/* ---------------------------------------------------------------- statements */


/* What each statement does, in words, for messages. */
static const char *const own_whats[] = {
    "taking a queue's lock", "taking a queue's lock", "taking a queue's lock",
    "taking the keys' locks", "taking the keys' locks"};
_Static_assert(sizeof own_whats / sizeof own_whats[0] == MY__END - JOBQ_STMT_COUNT,
               "words for each statement");

static const char *stmt_what(int id) {
  return id < JOBQ_STMT_COUNT ? jobq__sql_what(id) : own_whats[id - JOBQ_STMT_COUNT];
}

/* A growing string; on ENOMEM it turns NULL and stays so. */
typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s) {
  if (b->p == NULL && b->cap != 0) return;
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2 + 64;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      free(b->p);
      *b = (sbuf){NULL, 0, 1};
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n + 1);
  b->len += n;
}

/* Appends count parameters from ?from on, each as "PRE?N", separated by
 * sep. */
static void sb_each(sbuf *b, int from, int count, const char *sep, const char *pre) {
  char p[16];
  for (int i = 0; i < count; i++) {
    if (i > 0) sb_add(b, sep);
    sb_add(b, pre);
    snprintf(p, sizeof p, "?%d", from + i);
    sb_add(b, p);
  }
}

/* Appends "?from, ?from+1, ..." (count of them). */
static void sb_params(sbuf *b, int from, int count) { sb_each(b, from, count, ", ", ""); }

/* The text of own statement id in the common notation of lib/sql.h: a
 * new string, or NULL when out of memory. */
static char *own_text(int id) {
  sbuf b = {0};
  switch (id) {
    case MY_LOCK_S:
      sb_add(&b, "SELECT 1 FROM jobq_locks WHERE name = ?1 LOCK IN SHARE MODE");
      break;
    case MY_LOCK_X:
      sb_add(&b, "SELECT 1 FROM jobq_locks WHERE name = ?1 FOR UPDATE");
      break;
    case MY_LOCK_ADD:
      sb_add(&b, "INSERT IGNORE INTO jobq_locks(name) VALUES (?1)");
      break;
    case MY_LOCK_KEYS:
      /* ?1..?32 the locks' names, in name order (NULL: none). */
      sb_add(&b, "SELECT name FROM jobq_locks FORCE INDEX (PRIMARY) WHERE name IN (");
      sb_params(&b, 1, CHUNK);
      sb_add(&b, ") ORDER BY name FOR UPDATE");
      break;
    case MY_LOCK_ADD_KEYS:
      /* ?1..?32 the names, in name order (the last repeated to fill). */
      sb_add(&b, "INSERT IGNORE INTO jobq_locks(name) VALUES ");
      sb_each(&b, 1, CHUNK, "), ", "(");
      sb_add(&b, ")");
      break;
    default:
      free(b.p);
      return NULL;
  }
  return b.p;
}

/* ---------------------------------------------------------------- errors */

static int is_conn_error(unsigned err) {
  switch (err) {
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_UNKNOWN_HOST:
    case CR_COMMANDS_OUT_OF_SYNC:
    case ER_SERVER_SHUTDOWN:
    case ER_CONNECTION_KILLED:
    case ER_NET_PACKET_TOO_LARGE:
    case 4031: /* MySQL: disconnected for inactivity */
      return 1;
  }
  return 0;
}

/* After the server ended the transaction (a deadlock), or before we end it
 * (explicit: a lock wait timeout, which undid only the statement).  Inside
 * a caller's transaction, a new one takes its place, so that the caller's
 * further statements are not committed one by one: the handle refuses
 * everything but a rollback until then. */
static void transaction_lost(jobq *db, int explicit) {
  my *c = my_conn(db);
  if (explicit) mysql_real_query(c->conn, "ROLLBACK", 8);
  if (db->txn_depth > 1) {
    mysql_real_query(c->conn, "START TRANSACTION", 17);
    c->aborted = 1;
  }
}

/* Refusals that will not heal by trying again: a wrong password or user,
 * a database that does not exist, a missing privilege. */
int my_is_denied(unsigned err) {
  switch (err) {
    case ER_DBACCESS_DENIED_ERROR:
    case ER_ACCESS_DENIED_ERROR:
    case ER_BAD_DB_ERROR:
    case ER_HOST_NOT_PRIVILEGED:
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_SPECIFIC_ACCESS_DENIED_ERROR:
    case ER_PROCACCESS_DENIED_ERROR:
    case ER_ACCESS_DENIED_NO_PASSWORD_ERROR:
    case 1820: /* ER_MUST_CHANGE_PASSWORD */
    case 3118: /* MySQL: ER_ACCOUNT_HAS_BEEN_LOCKED */
    case 4151: /* MariaDB: ER_ACCOUNT_HAS_BEEN_LOCKED */
      return 1;
  }
  return 0;
}

/* Records a failed statement as a jobq error, with retry set where running
 * the whole transaction again may succeed. */
int my_error(jobq *db, unsigned err, const char *msg, const char *what) {
  my *c = my_conn(db);
  if (msg == NULL || *msg == '\0') msg = "no message";
  if (is_conn_error(err)) {
    c->broken = 1;
    if (err == ER_NET_PACKET_TOO_LARGE)
      return jobq__fail(db, JOBQ_ETOOBIG,
                        "%s: a value is larger than max_allowed_packet of '%s' "
                        "(%lu bytes): expected a smaller payload, or a larger "
                        "max_allowed_packet on the server",
                        what, c->redacted, c->max_packet);
    return jobq__fail(db, JOBQ_ECONN, "%s: lost the connection to '%s': %s", what,
                      c->redacted, msg);
  }
  switch (err) {
    case ER_LOCK_DEADLOCK:
      db->retry = 1;
      transaction_lost(db, 0);
      return jobq__fail(db, JOBQ_EBUSY,
                        "%s: deadlock with another transaction, which the server "
                        "ended by rolling this one back: try again",
                        what);
    case ER_LOCK_WAIT_TIMEOUT:
      db->retry = 1;
      transaction_lost(db, 1);
      return jobq__fail(db, JOBQ_EBUSY,
                        "%s: waited longer than lock_wait_timeout (%us) for a lock "
                        "that another transaction holds: try again",
                        what, c->lock_wait_s);
    case 1969: /* MariaDB: max_statement_time exceeded */
    case 3024: /* MySQL: max_execution_time exceeded */
    case ER_QUERY_INTERRUPTED:
      return jobq__fail(db, JOBQ_EBUSY, "%s: %s: try again", what, msg);
    case ER_OPTION_PREVENTS_STATEMENT:
    case ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION:
    case 1836: /* ER_READ_ONLY_MODE */
      /* A primary turned read-only for a switchover: with a host list,
       * the next transaction connects again to the host that now takes
       * writes (my_connect_any() skips read-only ones). */
      if (c->nhosts > 1) c->broken = 1;
      return jobq__fail(db, JOBQ_EREADONLY, "%s: '%s' is read-only: %s", what,
                        c->redacted, msg);
    case ER_CON_COUNT_ERROR:
      return jobq__fail(db, JOBQ_ECONN, "%s: '%s' has too many connections: %s", what,
                        c->redacted, msg);
    case ER_DISK_FULL:
    case ER_RECORD_FILE_FULL:
      return jobq__fail(db, JOBQ_EDB, "%s: the disk of '%s' is full: %s", what,
                        c->redacted, msg);
    case ER_DBACCESS_DENIED_ERROR:
    case ER_TABLEACCESS_DENIED_ERROR:
    case ER_COLUMNACCESS_DENIED_ERROR:
    case ER_SPECIFIC_ACCESS_DENIED_ERROR:
    case ER_PROCACCESS_DENIED_ERROR: {
      /* The roles of my_roles(): jobq_DATABASE_reader and so on. */
      char prefix[96];
      snprintf(prefix, sizeof prefix, "jobq_%s_", c->dbname);
      return jobq__denied(db, what, msg, prefix);
    }
  }
  if (my_is_denied(err)) return jobq__fail(db, JOBQ_EDENIED, "%s: %s (error %u)", what, msg, err);
  return jobq__fail(db, JOBQ_EDB, "%s: %s (error %u)", what, msg, err);
}

static int conn_fail(jobq *db, const char *what) {
  my *c = my_conn(db);
  return my_error(db, mysql_errno(c->conn), mysql_error(c->conn), what);
}

static int stmt_fail(jobq *db, MYSQL_STMT *st, const char *what) {
  return my_error(db, mysql_stmt_errno(st), mysql_stmt_error(st), what);
}

/* Runs SQL without parameters or rows (transaction control, settings). */
int my_run_plain(jobq *db, const char *sql, const char *what) {
  my *c = my_conn(db);
  if (mysql_real_query(c->conn, sql, strlen(sql)) != 0) return conn_fail(db, what);
  MYSQL_RES *res = mysql_store_result(c->conn);
  if (res != NULL) mysql_free_result(res);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- executor */

static void stmt_release(stmt *s) {
  if (s->st != NULL) mysql_stmt_close(s->st);
  free(s->order);
  memset(s, 0, sizeof *s);
}

void my_stmts_release(my *c) {
  for (int i = 0; i < MY__END; i++) stmt_release(&c->stmts[i]);
}

/* Prepares statement id into *s. */
static int prepare(jobq *db, int id, stmt *s) {
  my *c = my_conn(db);
  char *text;
  if (id < JOBQ_STMT_COUNT) {
    text = jobq__sql_text(JOBQ_DIALECT_MYSQL, id, &s->order, &s->norder);
  } else {
    char *common = own_text(id);
    text = common ? jobq__sql_spell(JOBQ_DIALECT_MYSQL, common, &s->order, &s->norder)
                  : NULL;
    free(common);
  }
  if (text == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  /* MariaDB checks privileges here: the message says what it was for. */
  const char *what = stmt_what(id);
  s->st = mysql_stmt_init(c->conn);
  int rc = JOBQ_OK;
  if (s->st == NULL) {
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  } else if (mysql_stmt_prepare(s->st, text, strlen(text)) != 0) {
    rc = stmt_fail(db, s->st, what);
  } else if (mysql_stmt_param_count(s->st) != s->norder) {
    rc = jobq__fail(db, JOBQ_EDB, "%s: the server counts %lu parameters, expected %zu",
                    what, mysql_stmt_param_count(s->st), s->norder);
  }
  free(text);
  if (rc != JOBQ_OK) stmt_release(s);
  return rc;
}

static void rows_free(jobq_rows *r) {
  if (r == NULL) return;
  for (unsigned i = 0; i < r->ncols; i++) free(r->buf[i]);
  free(r->bind);
  free(r->len);
  free(r->cap);
  free(r->null);
  free(r->err);
  free(r->buf);
  free(r);
}

/* A cursor over the stored rows of st, every column read as bytes. */
static jobq_rows *rows_new(stmt *s, MYSQL_STMT *st) {
  jobq_rows *r = calloc(1, sizeof *r);
  if (r == NULL) return NULL;
  r->s = s;
  r->st = st;
  r->ncols = mysql_stmt_field_count(st);
  size_t n = r->ncols ? r->ncols : 1;
  r->bind = calloc(n, sizeof *r->bind);
  r->len = calloc(n, sizeof *r->len);
  r->cap = calloc(n, sizeof *r->cap);
  r->null = calloc(n, sizeof *r->null);
  r->err = calloc(n, sizeof *r->err);
  r->buf = calloc(n, sizeof *r->buf);
  int failed = !r->bind || !r->len || !r->cap || !r->null || !r->err || !r->buf;
  for (unsigned i = 0; !failed && i < r->ncols; i++) {
    r->cap[i] = 64;
    if ((r->buf[i] = malloc(r->cap[i])) == NULL) failed = 1;
    r->bind[i].buffer_type = MYSQL_TYPE_STRING;
    r->bind[i].buffer = r->buf[i];
    r->bind[i].buffer_length = r->cap[i];
    r->bind[i].length = &r->len[i];
    r->bind[i].is_null = &r->null[i];
    r->bind[i].error = &r->err[i];
  }
  if (failed || (r->ncols > 0 && mysql_stmt_bind_result(st, r->bind) != 0)) {
    rows_free(r);
    return NULL;
  }
  return r;
}

#define MAX_INLINE_PARAMS 80



int my_query(jobq *db, int id, const jobq_val *a, size_t n, jobq_rows **rows,
                    const jobq_how *how) {
  my *c = my_conn(db);
  if (rows != NULL) *rows = NULL;
  if (c->aborted)
    return jobq__fail(db, JOBQ_EBUSY,
                      "the transaction was rolled back after a deadlock or lock wait "
                      "timeout: roll back, then run it again");
  stmt *s = &c->stmts[id], own = {0};
  int rc;
  if (s->st == NULL && (rc = prepare(db, id, s)) != JOBQ_OK) return rc;
  if (s->busy) {
    /* Its rows are still being read: run a copy of its own. */
    if ((rc = prepare(db, id, &own)) != JOBQ_OK) return rc;
    s = &own;
  }
  MYSQL_BIND inline_bind[MAX_INLINE_PARAMS];
  MYSQL_BIND *bind = s->norder <= MAX_INLINE_PARAMS ? inline_bind
                                                     : calloc(s->norder, sizeof *bind);
  if (bind == NULL) {
    stmt_release(&own);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  memset(bind, 0, (s->norder ? s->norder : 1) * sizeof *bind);
  rc = JOBQ_OK;
  for (size_t k = 0; k < s->norder && rc == JOBQ_OK; k++) {
    size_t i = (size_t)s->order[k];
    if (i >= n) {
      rc = jobq__fail(db, JOBQ_EINVAL, "%s: parameter %zu of %zu is missing",
                      stmt_what(id), i + 1, n);
      break;
    }
    MYSQL_BIND *b = &bind[k];
    switch (a[i].type) {
      case 'i':
        b->buffer_type = MYSQL_TYPE_LONGLONG;
        b->buffer = (void *)&a[i].i;
        break;
      case 'n': b->buffer_type = MYSQL_TYPE_NULL; break;
      case 't':
        b->buffer_type = MYSQL_TYPE_STRING;
        b->buffer = (void *)a[i].p;
        b->buffer_length = a[i].len;
        break;
      default:
        b->buffer_type = MYSQL_TYPE_BLOB;
        b->buffer = (void *)a[i].p;
        b->buffer_length = a[i].len;
        break;
    }
  }
  MYSQL_STMT *st = s->st;
  if (rc == JOBQ_OK && s->norder > 0 && mysql_stmt_bind_param(st, bind) != 0)
    rc = stmt_fail(db, st, stmt_what(id));
  int dup = 0;
  if (rc == JOBQ_OK && mysql_stmt_execute(st) != 0) {
    /* A job whose unique key is taken inserts nothing: the server undid
     * just this statement, and the transaction goes on. */
    if (id == JOBQ_Q_INSERT_JOB && mysql_stmt_errno(st) == ER_DUP_ENTRY)
      dup = 1;
    else
      rc = stmt_fail(db, st, stmt_what(id));
  }
  if (bind != inline_bind) free(bind);
  if (rc != JOBQ_OK) {
    stmt_release(&own);
    return rc;
  }
  c->changes = dup ? 0 : (int64_t)mysql_stmt_affected_rows(st);
  c->insert_id = dup ? 0 : (int64_t)mysql_stmt_insert_id(st);
  if (mysql_stmt_field_count(st) > 0 && mysql_stmt_store_result(st) != 0) {
    rc = stmt_fail(db, st, stmt_what(id));
    stmt_release(&own);
    return rc;
  }
  if (rows == NULL && how != NULL && how->ids != NULL) {
    /* Statements run at once: the ids are there now. */
    jobq_rows *r = rows_new(NULL, st);
    size_t got = 0;
    while (r != NULL && got < how->nids && my_next(db, r) == 1) how->ids[got++] = my_col_int(r, 0);
    if (r != NULL) rows_free(r);
  }
  if (rows == NULL) {
    mysql_stmt_free_result(st);
    stmt_release(&own);
    return JOBQ_OK;
  }
  jobq_rows *r = rows_new(s == &own ? NULL : s, st);
  if (r == NULL) {
    mysql_stmt_free_result(st);
    stmt_release(&own);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  if (s == &own) {
    /* The cursor owns the copy now. */
    free(own.order);
  } else {
    s->busy = 1;
  }
  *rows = r;
  return JOBQ_OK;
}

int my_next(jobq *db, jobq_rows *r) {
  if (r->ncols == 0) return 0;
  int got = mysql_stmt_fetch(r->st);
  if (got == MYSQL_NO_DATA) return 0;
  if (got == 1) return stmt_fail(db, r->st, "reading rows");
  if (got == MYSQL_DATA_TRUNCATED) {
    for (unsigned i = 0; i < r->ncols; i++) {
      if (!r->err[i] || r->null[i]) continue;
      char *p = realloc(r->buf[i], r->len[i] + 1);
      if (p == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      r->buf[i] = p;
      r->cap[i] = r->len[i] + 1;
      r->bind[i].buffer = p;
      r->bind[i].buffer_length = r->cap[i];
      if (mysql_stmt_fetch_column(r->st, &r->bind[i], i, 0) != 0)
        return stmt_fail(db, r->st, "reading a long value");
    }
    /* The new buffers serve the next rows.  Some versions of the client
     * library (Debian 12's libmariadb3 10.11.18) reset every column's
     * length and null flag here: this row's are kept. */
    unsigned long *keep_len = malloc(r->ncols * sizeof *keep_len);
    my_bool *keep_null = malloc(r->ncols * sizeof *keep_null);
    int ok = keep_len != NULL && keep_null != NULL;
    if (ok) {
      memcpy(keep_len, r->len, r->ncols * sizeof *keep_len);
      memcpy(keep_null, r->null, r->ncols * sizeof *keep_null);
    }
    int bound = ok && mysql_stmt_bind_result(r->st, r->bind) == 0;
    if (bound) {
      memcpy(r->len, keep_len, r->ncols * sizeof *keep_len);
      memcpy(r->null, keep_null, r->ncols * sizeof *keep_null);
    }
    free(keep_len);
    free(keep_null);
    if (!ok) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    if (!bound) return stmt_fail(db, r->st, "reading rows");
  }
  for (unsigned i = 0; i < r->ncols; i++) {
    if (r->null[i]) r->len[i] = 0;
    if (r->len[i] >= r->cap[i]) r->len[i] = r->cap[i] - 1;
    r->buf[i][r->len[i]] = '\0';
  }
  return 1;
}

void my_done(jobq *db, jobq_rows *r) {
  (void)db;
  mysql_stmt_free_result(r->st);
  if (r->s != NULL)
    r->s->busy = 0;
  else
    mysql_stmt_close(r->st);
  rows_free(r);
}

int my_is_null(jobq_rows *r, int col) { return r->null[col] != 0; }

int64_t my_col_int(jobq_rows *r, int col) {
  if (r->null[col]) return 0;
  return strtoll(r->buf[col], NULL, 10);
}

const void *my_col_bytes(jobq_rows *r, int col, size_t *len) {
  *len = r->null[col] ? 0 : r->len[col];
  return r->null[col] ? "" : r->buf[col];
}

int64_t my_changes(jobq *db) { return my_conn(db)->changes; }
int64_t my_insert_id(jobq *db) { return my_conn(db)->insert_id; }
