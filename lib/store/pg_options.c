/*
 * pg_options.c - the PostgreSQL store's URL: the table of its options
 * (jobq's own, and libpq's whose bad values would only show when
 * connecting), which lib/url.c checks; libpq reads the URL
 * (PQconninfoParse: URLs, Unix socket folders, its keyword/value form),
 * jobq's own options are taken out, durations passed on as the numbers
 * libpq takes, TCP keepalives set where the URL says nothing, and the
 * host, hostaddr and port lists split into the hosts a connection tries
 * in turn.
 */
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

/* ---------------------------------------------------------------- connection */

/* The options of its URLs (lib/url.c checks them): jobq's own, then
 * those of libpq's that jobq checks, where a bad value would only show
 * when connecting; every other option is libpq's (PQconninfoParse knows
 * them all), passed on as it is. */
const jobq_option pg_options[] = {
    {"schema", 'n', 0, 0, "1 to 63 characters of a-z, 0-9 and '_', not starting with a digit"},
    {"notify", 'c', 0, 0, "on or off"},
    /* What stands between jobq and the server: a pooler in transaction
     * mode hands the server connection to other clients between
     * transactions (pgbouncer's pool_mode=transaction); one in session
     * mode, or none, leaves it to jobq.  Statement mode cannot run
     * jobq's transactions. */
    {"pooler", 'c', 0, 0, "transaction, session or none"},
    {"statement_timeout", 'd', 1, 86400000, "a duration from 1ms to 1d, like 30s"},
    {"replication", 'x', 0, 0, "jobq needs an ordinary connection, not a replication one"},
    {"sslmode", 'c', 0, 0, "disable, allow, prefer, require, verify-ca or verify-full"},
    /* jobq refuses a standby: only the sessions that may be a primary. */
    {"target_session_attrs", 'c', 0, 0, "read-write, primary or any (jobq needs a primary)"},
    /* Passed on as numbers: seconds, or integers. */
    {"connect_timeout", 's', 0, 86400, NULL},
    {"keepalives", 'i', 0, 1, NULL},
    {"keepalives_idle", 's', 0, 86400, NULL},
    {"keepalives_interval", 's', 0, 86400, NULL},
    {"keepalives_count", 'i', 0, 1000, NULL},
    {"tcp_user_timeout", 'i', 0, 86400000, NULL},
    {NULL, '*', 0, 0, "a libpq connection option such as sslmode, host or connect_timeout"},
    {NULL, 0, 0, 0, NULL},
};

/* jobq's own options, not libpq's. */
static int is_own_option(const char *k) {
  return strcmp(k, "schema") == 0 || strcmp(k, "notify") == 0 ||
         strcmp(k, "pooler") == 0 ||
         strcmp(k, "statement_timeout") == 0 || strcmp(k, "max_payload") == 0;
}

/* What jobq sets where the URL does not: TCP keepalives and a limit on
 * unacknowledged data, so that a connection to a server that went away
 * without a word (a network cut, a machine powered off) is found broken
 * within about half a minute, and made again, instead of when the
 * kernel gives up on it (two hours for an idle LISTEN connection). */
static const char *const tcp_defaults[][2] = {
    {"keepalives_idle", "10"}, {"keepalives_interval", "5"}, {"keepalives_count", "3"},
    {"tcp_user_timeout", "30000"}};

static const char *param(const pg *c, const char *key) {
  for (int i = 0; i < c->nparams; i++)
    if (strcmp(c->pkeys[i], key) == 0) return c->pvals[i];
  return NULL;
}

/* Sets libpq parameter key to value (both copied), in place of an
 * earlier value: JOBQ_OK or JOBQ_ENOMEM. */
static int param_set(pg *c, const char *key, const char *value) {
  char *v = strdup(value);
  if (v == NULL) return JOBQ_ENOMEM;
  for (int i = 0; i < c->nparams; i++) {
    if (strcmp(c->pkeys[i], key) == 0) {
      free(c->pvals[i]);
      c->pvals[i] = v;
      return JOBQ_OK;
    }
  }
  char *k = strdup(key);
  char **ks = k ? realloc(c->pkeys, (size_t)(c->nparams + 1) * sizeof *ks) : NULL;
  if (ks != NULL) c->pkeys = ks;
  char **vs = ks ? realloc(c->pvals, (size_t)(c->nparams + 1) * sizeof *vs) : NULL;
  if (vs == NULL) {
    free(k);
    free(v);
    return JOBQ_ENOMEM;
  }
  c->pvals = vs;
  c->pkeys[c->nparams] = k;
  c->pvals[c->nparams] = v;
  c->nparams++;
  return JOBQ_OK;
}

/* Takes key out of the parameters: its value, for the caller to free
 * (NULL when it was not there). */
static char *param_take(pg *c, const char *key) {
  for (int i = 0; i < c->nparams; i++) {
    if (strcmp(c->pkeys[i], key) == 0) {
      char *v = c->pvals[i];
      free(c->pkeys[i]);
      c->nparams--;
      c->pkeys[i] = c->pkeys[c->nparams];
      c->pvals[i] = c->pvals[c->nparams];
      return v;
    }
  }
  return NULL;
}

void pg_wipe(char *s) {
  if (s != NULL) memset(s, 0, strlen(s));
}

/* Frees a NULL-terminated array of strings (NULL: nothing). */
void pg_strings_free(char **v) {
  for (size_t i = 0; v != NULL && v[i] != NULL; i++) free(v[i]);
  free(v);
}

/* Splits a comma-separated list into *n strings, NULL-terminated (an
 * absent list: none, and *out NULL). */
static int split_list(const char *list, char ***out, int *n) {
  *out = NULL;
  *n = 0;
  if (list == NULL) return JOBQ_OK;
  int count = 1;
  for (const char *p = list; *p; p++) count += *p == ',';
  char **v = calloc((size_t)count + 1, sizeof *v);
  if (v == NULL) return JOBQ_ENOMEM;
  const char *p = list;
  for (int i = 0; i < count; i++) {
    size_t len = strcspn(p, ",");
    if ((v[i] = strndup(p, len)) == NULL) {
      pg_strings_free(v);
      return JOBQ_ENOMEM;
    }
    p += len + (p[len] == ',');
  }
  *out = v;
  *n = count;
  return JOBQ_OK;
}

/* PQconninfoParse could not read the URL: its message, which quotes the
 * URL it was given, with the URL redacted. */
static int libpq_refused(jobq *db, const jobq_url *u, const char *err) {
  char line[400], shown[400];
  pg_first_line(err, line, sizeof line);
  char *red = u->base ? jobq_url_redact(u->base) : NULL;
  const char *hit = u->base && *u->base ? strstr(line, u->base) : NULL;
  if (hit != NULL && red != NULL)
    snprintf(shown, sizeof shown, "%.*s%s%s", (int)(hit - line), line, red,
             hit + strlen(u->base));
  else
    snprintf(shown, sizeof shown, "%s", line);
  free(red);
  if (u->password != NULL && *u->password != '\0' && strstr(shown, u->password) != NULL)
    snprintf(shown, sizeof shown, "libpq cannot read it");
  return jobq__fail(db, JOBQ_EURL, "invalid database url '%s': %s", pg_conn(db)->redacted, shown);
}

/* The hosts to try in turn, from the host, hostaddr and port lists. */
static int split_hosts(jobq *db) {
  pg *c = pg_conn(db);
  char *host = param_take(c, "host"), *addr = param_take(c, "hostaddr");
  char *port = param_take(c, "port");
  int nh, na, rc = split_list(host, &c->host, &nh);
  if (rc == JOBQ_OK) rc = split_list(addr, &c->hostaddr, &na);
  if (rc == JOBQ_OK) rc = split_list(port, &c->port, &c->nports);
  free(host);
  free(addr);
  free(port);
  if (rc != JOBQ_OK) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  c->nhosts = nh > na ? nh : na;
  if (nh > 0 && na > 0 && nh != na)
    return jobq__fail(db, JOBQ_EURL,
                      "database url '%s' gives %d host addresses for %d hosts: expected "
                      "one per host",
                      c->redacted, na, nh);
  if (c->nports > 1 && c->nports != c->nhosts)
    return jobq__fail(db, JOBQ_EURL,
                      "database url '%s' gives %d ports for %d hosts: expected one port, "
                      "or one per host",
                      c->redacted, c->nports, c->nhosts);
  for (int i = 0; i < c->nports; i++) {
    int64_t n;
    if (c->port[i][0] != '\0' && jobq__url_int(db, "port", c->port[i], 1, 65535, &n) != JOBQ_OK)
      return JOBQ_EURL;
  }
  return JOBQ_OK;
}

/* The connection parameters: what libpq reads from the URL, then its
 * options, jobq's own taken out and checked. */
int pg_params(jobq *db, const jobq_url *u) {
  pg *c = pg_conn(db);
  char *err = NULL;
  PQconninfoOption *opts = PQconninfoParse(u->conninfo ? "" : u->base, &err);
  if (opts == NULL) {
    int rc = err ? libpq_refused(db, u, err) : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    PQfreemem(err);
    return rc;
  }
  int rc = JOBQ_OK;
  for (PQconninfoOption *o = opts; o->keyword != NULL && rc == JOBQ_OK; o++)
    if (o->val != NULL && param_set(c, o->keyword, o->val) != JOBQ_OK)
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < u->nopts && rc == JOBQ_OK; i++) {
    const char *k = u->keys[i], *v = u->values[i];
    if (is_own_option(k)) continue;
    const PQconninfoOption *o = opts;
    while (o->keyword != NULL && strcmp(o->keyword, k) != 0) o++;
    if (o->keyword == NULL) {
      rc = jobq__url_unknown(db, u, pg_options, i);
      break;
    }
    /* A number of seconds or an integer as libpq takes it. */
    char buf[32];
    int64_t n = jobq__url_number(u, pg_options, k, -1);
    if (n >= 0) snprintf(buf, sizeof buf, "%lld", (long long)n);
    if (param_set(c, k, n >= 0 ? buf : v) != JOBQ_OK)
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  const char *notify = jobq__url_opt(u, "notify"), *schema = jobq__url_opt(u, "schema");
  const char *pooler = jobq__url_opt(u, "pooler");
  c->notify = notify == NULL || strcmp(notify, "on") == 0;
  c->pooled = pooler != NULL && strcmp(pooler, "transaction") == 0;
  c->statement_timeout_ms = jobq__url_number(u, pg_options, "statement_timeout", 30000);
  if (rc == JOBQ_OK && (c->schema = strdup(schema ? schema : "public")) == NULL)
    rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  PQconninfoFree(opts);
  if (rc != JOBQ_OK) return rc;
  /* The settings' values (pg_connect.c's setup, PG_SETTINGS). */
  snprintf(c->set_path, sizeof c->set_path, "\"%s\"", c->schema);
  snprintf(c->set_timeout, sizeof c->set_timeout, "%lldms",
           (long long)c->statement_timeout_ms);
  const char *t = param(c, "connect_timeout"); /* checked above: a number */
  if (t != NULL) c->connect_timeout_s = strtoll(t, NULL, 10);
  if (param(c, "application_name") == NULL && param_set(c, "application_name", "jobq") != JOBQ_OK)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < sizeof tcp_defaults / sizeof tcp_defaults[0]; i++)
    if (param(c, tcp_defaults[i][0]) == NULL &&
        param_set(c, tcp_defaults[i][0], tcp_defaults[i][1]) != JOBQ_OK)
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  return split_hosts(db);
}

