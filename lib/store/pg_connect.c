/*
 * pg_connect.c - the PostgreSQL store's connections: each host of the
 * URL tried in turn within connect_timeout, a refusal that lasts told
 * from one that may pass (the SQLSTATE of libpq's verbose messages), what
 * a new connection is set up with, and a server refused (too old, a
 * standby, read-only).
 */
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "store/pg.h"
/* The SQLSTATE in a message of libpq's verbose form ("FATAL:  28P01:
 * password ..."), copied into state; the line it is on, or NULL. */
static const char *sqlstate_of(const char *msg, char state[6], const char **code) {
  for (const char *p = msg; (p = strstr(p, ":  ")) != NULL; p++) {
    const char *s = p + 3;
    if (strspn(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 5 && s[5] == ':' && s[6] == ' ') {
      memcpy(state, s, 5);
      state[5] = '\0';
      *code = s;
      const char *line = p;
      while (line > msg && line[-1] != '\n') line--;
      return line;
    }
  }
  return NULL;
}

/* Refusals that will not heal by trying again: a password or a role
 * that is wrong, a database that does not exist, a missing privilege. */
static int denied_state(const char *state) {
  return strncmp(state, "28", 2) == 0 || strcmp(state, "3D000") == 0 ||
         strcmp(state, "42501") == 0;
}

/* The server's notices and warnings (an analyze skipped because a vacuum
 * holds the table) are not errors; the library prints nothing. */
static void ignore_notice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* One attempt at the host that keys and values name, for at most the
 * URL's connect_timeout (at least 2 s, as libpq's own).  The server's
 * messages come in libpq's verbose form, whose SQLSTATE tells a refusal
 * for good from one that may pass.  NULL on failure, with *code
 * (JOBQ_EDENIED or JOBQ_ECONN) and msg. */
static PGconn *try_host(pg *c, const char *const *keys, const char *const *values, int *code,
                        char *msg, size_t len) {
  PGconn *pc = PQconnectStartParams(keys, values, 0);
  if (pc == NULL) {
    *code = JOBQ_ENOMEM;
    snprintf(msg, len, "out of memory");
    return NULL;
  }
  PQsetErrorVerbosity(pc, PQERRORS_VERBOSE);
  int64_t limit = c->connect_timeout_s <= 0 ? -1
                  : c->connect_timeout_s < 2 ? 2000
                                             : c->connect_timeout_s * 1000;
  int64_t deadline = limit > 0 ? jobq__mono_ms() + limit : -1;
  PostgresPollingStatusType st =
      PQstatus(pc) == CONNECTION_BAD ? PGRES_POLLING_FAILED : PGRES_POLLING_WRITING;
  int timed_out = 0, poll_errno = 0;
  while (st == PGRES_POLLING_READING || st == PGRES_POLLING_WRITING) {
    int wait = -1;
    if (deadline >= 0) {
      int64_t left = deadline - jobq__mono_ms();
      if (left <= 0) {
        timed_out = 1;
        break;
      }
      wait = left > INT_MAX ? INT_MAX : (int)left;
    }
    struct pollfd p = {PQsocket(pc), st == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
    int r = poll(&p, 1, wait);
    if (r < 0 && errno != EINTR) {
      poll_errno = errno;
      break;
    }
    if (r > 0) st = PQconnectPoll(pc);
  }
  if (st == PGRES_POLLING_OK) {
    PQsetErrorVerbosity(pc, PQERRORS_DEFAULT);
    return pc;
  }
  const char *all = PQerrorMessage(pc), *at = NULL;
  char state[6] = "";
  const char *line = sqlstate_of(all, state, &at);
  if (line == NULL) line = all;
  size_t n = strcspn(line, "\n");
  /* The line, without the SQLSTATE the verbose form added. */
  if (at != NULL && at < line + n)
    snprintf(msg, len, "%.*s%.*s", (int)(at - line), line, (int)(line + n - at - 7), at + 7);
  else
    snprintf(msg, len, "%.*s", (int)n, line);
  if (timed_out)
    snprintf(msg, len, "connection to server at \"%s\", port %s failed: no answer within %llds "
             "(connect_timeout)",
             PQhost(pc), PQport(pc), (long long)(limit / 1000));
  else if (poll_errno != 0)
    snprintf(msg, len, "waiting for the server: %s", strerror(poll_errno));
  *code = JOBQ_ECONN;
  if (PQconnectionNeedsPassword(pc)) {
    *code = JOBQ_EDENIED;
    size_t used = strlen(msg);
    snprintf(msg + used, len - used, ": expected a password in the url, PGPASSWORD or a "
             "password file (~/.pgpass)");
  } else if (state[0] != '\0' && denied_state(state)) {
    *code = JOBQ_EDENIED;
  }
  PQfinish(pc);
  return NULL;
}

/* What a new connection needs before jobq uses it: the schema on the
 * search path, timeouts, durable commits, generic plans, no compiled
 * plans, and a primary that accepts writes.  A generic plan does not know
 * its LIMIT and expects a tenth of the table: with a million jobs
 * analyzed, the claim's cost passed jit_above_cost, and the server spent
 * about 10 ms compiling each claim of 10 jobs (test_postgres.c).  Through
 * a pooler in transaction mode the settings would stay on a server
 * connection that other clients get next, and not come with jobq's next
 * transaction: each transaction makes them for itself (PG_SETTINGS), and
 * this only looks at the server. */
static int setup(jobq *db, PGconn *pc) {
  pg *c = pg_conn(db);
  char line[400];
  if (PQserverVersion(pc) < PG_MIN_VERSION)
    return jobq__fail(db, JOBQ_ENOTSUP,
                      "'%s' runs PostgreSQL %d.%d: expected 13 or newer", c->redacted,
                      PQserverVersion(pc) / 10000, PQserverVersion(pc) % 10000);
  const char *values[2] = {c->set_path, c->set_timeout};
  const int at = c->pooled ? 0 : 7; /* the looks' columns */
  PGresult *res = PQexecParams(
      pc,
      c->pooled ? "SELECT pg_is_in_recovery(), "
                  "current_setting('default_transaction_read_only')"
                : "SELECT set_config('search_path', $1, false), "
                  "set_config('statement_timeout', $2, false), "
                  "set_config('idle_in_transaction_session_timeout', '60s', false), "
                  "set_config('synchronous_commit', 'on', false), "
                  "set_config('lock_timeout', $2, false), "
                  "set_config('plan_cache_mode', 'force_generic_plan', false), "
                  "set_config('jit', 'off', false), "
                  "pg_is_in_recovery(), current_setting('default_transaction_read_only')",
      c->pooled ? 0 : 2, NULL, values, NULL, NULL, 0);
  int rc = JOBQ_OK;
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    rc = jobq__fail(db, JOBQ_ECONN, "setting up the connection to '%s': %s", c->redacted,
                    pg_first_line(PQresultErrorMessage(res), line, sizeof line));
  } else if (db->readonly) {
    /* A handle that only reads takes a standby or a read-only database,
     * and makes sure of writing nothing (pooled: each transaction,
     * PG_SETTINGS). */
    if (!c->pooled) {
      PQclear(res);
      res = PQexec(pc, "SET default_transaction_read_only = on");
      if (PQresultStatus(res) != PGRES_COMMAND_OK)
        rc = jobq__fail(db, JOBQ_ECONN, "setting up the connection to '%s': %s",
                        c->redacted,
                        pg_first_line(PQresultErrorMessage(res), line, sizeof line));
    }
  } else if (strcmp(PQgetvalue(res, 0, at), "t") == 0) {
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' is a standby in recovery: expected the primary (list every "
                    "host and add target_session_attrs=read-write to fail over)",
                    c->redacted);
  } else if (strcmp(PQgetvalue(res, 0, at + 1), "on") == 0) {
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' is read-only (default_transaction_read_only is on): "
                    "expected a database that accepts writes",
                    c->redacted);
  }
  PQclear(res);
  return rc;
}

/* A new connection, set up: to the first host of the URL's list that
 * answers, lets us in and accepts writes, each tried for at most the
 * URL's connect_timeout.  On failure db's error says what each host
 * said; JOBQ_EDENIED when one refused us for good (a wrong password, an
 * unknown role or database, a missing privilege), JOBQ_EREADONLY when
 * every host was a standby or read-only, else JOBQ_ECONN, a failure
 * that may pass. */
PGconn *pg_connect_to(jobq *db) {
  pg *c = pg_conn(db);
  if (jobq__libpq_load(db) != JOBQ_OK) return NULL;
  const char **keys = calloc((size_t)c->nparams + 4, sizeof *keys);
  const char **values = calloc((size_t)c->nparams + 4, sizeof *values);
  if (keys == NULL || values == NULL) {
    free(keys);
    free(values);
    jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    return NULL;
  }
  for (int i = 0; i < c->nparams; i++) keys[i] = c->pkeys[i], values[i] = c->pvals[i];
  char why[JOBQ_ERRMSG_MAX] = "";
  size_t used = 0;
  int tries = c->nhosts > 0 ? c->nhosts : 1, denied = 0, readonly = 0, set_up = 0;
  int code = JOBQ_ECONN;
  PGconn *pc = NULL;
  for (int i = 0; i < tries && pc == NULL; i++) {
    int k = c->nparams;
    if (i < c->nhosts && c->host != NULL && c->host[i][0] != '\0')
      keys[k] = "host", values[k++] = c->host[i];
    if (i < c->nhosts && c->hostaddr != NULL && c->hostaddr[i][0] != '\0')
      keys[k] = "hostaddr", values[k++] = c->hostaddr[i];
    const char *port = c->nports == 1 ? c->port[0] : c->nports > i ? c->port[i] : "";
    if (port[0] != '\0') keys[k] = "port", values[k++] = port;
    keys[k] = values[k] = NULL;
    char msg[JOBQ_ERRMSG_MAX];
    int rc;
    pc = try_host(c, keys, values, &rc, msg, sizeof msg);
    if (pc != NULL) {
      PQsetNoticeProcessor(pc, ignore_notice, NULL);
      rc = setup(db, pc);
      if (rc == JOBQ_OK) break;
      PQfinish(pc);
      pc = NULL;
      memcpy(msg, db->errmsg, sizeof msg);
      set_up++;
      if (rc != JOBQ_EREADONLY && rc != JOBQ_ECONN) {
        /* An old server, or no memory: no other host helps. */
        code = rc;
        snprintf(why, sizeof why, "%s", msg);
        used = strlen(why);
        tries = 0;
        break;
      }
    }
    denied |= rc == JOBQ_EDENIED;
    readonly += rc == JOBQ_EREADONLY;
    if (rc == JOBQ_ENOMEM) code = rc;
    if (used < sizeof why)
      used += (size_t)snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", msg);
  }
  free(keys);
  free(values);
  if (pc != NULL) return pc;
  if (tries > 0)
    code = code == JOBQ_ENOMEM ? code
           : denied            ? JOBQ_EDENIED
           : readonly == tries ? JOBQ_EREADONLY
                               : JOBQ_ECONN;
  /* setup's messages name the URL already. */
  if (tries > 1 || (tries == 1 && set_up == 0))
    jobq__fail(db, code, "cannot connect to '%s': %s", c->redacted, why);
  else
    jobq__fail(db, code, "%s", why);
  return NULL;
}

int pg_open(jobq *db, const jobq_url *u) {
  pg *c = calloc(1, sizeof *c);
  if (c == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  db->conn = c;
  c->redacted = db->url_redacted;
  c->watch_fd = -1;
  int rc = jobq__libpq_load(db);
  if (rc == JOBQ_OK) rc = pg_params(db, u);
  if (rc != JOBQ_OK) return rc;
  if ((c->conn = pg_connect_to(db)) == NULL) return db->err;
  return JOBQ_OK;
}


void pg_close(jobq *db) {
  pg *c = pg_conn(db);
  if (c == NULL) return;
  if (c->conn != NULL) PQfinish(c->conn);
  pg_listener_drop(c);
  if (c->watch_fd >= 0) close(c->watch_fd);
  if (c->vacuum != NULL) PQfinish(c->vacuum);
  for (int i = 0; i < c->nparams; i++) {
    if (strcmp(c->pkeys[i], "password") == 0 || strcmp(c->pkeys[i], "sslpassword") == 0)
      pg_wipe(c->pvals[i]);
    free(c->pkeys[i]);
    free(c->pvals[i]);
  }
  free(c->pkeys);
  free(c->pvals);
  pg_strings_free(c->host);
  pg_strings_free(c->hostaddr);
  pg_strings_free(c->port);
  pg_names_clear(&c->wake);
  free(c->wake.v);
  pg_later_clear(c);
  for (int i = 0; i < PG__END; i++) free(c->text[i]);
  free(c->schema);
  free(c);
  db->conn = NULL;
}

void *pg_native(jobq *db) { return pg_conn(db)->conn; }
