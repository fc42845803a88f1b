/*
 * pg_options.c - the PostgreSQL store's URL: libpq reads it
 * (PQconninfoParse: URLs, Unix socket folders, its keyword/value form),
 * jobq's own options are taken out and checked, libpq's numeric ones
 * checked where a bad value would only show when connecting, TCP
 * keepalives set where the URL says nothing, and the host, hostaddr and
 * port lists split into the hosts a connection tries in turn.
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

/* ---------------------------------------------------------------- connection */

/* jobq's own options; every other option is libpq's (PQconninfoParse
 * knows them all), passed on as it is. */
static const char *const own_options[] = {"schema", "notify", "statement_timeout",
                                          "max_payload", NULL};

/* libpq's numeric options, checked here so that a bad one is a bad URL
 * rather than a connection that fails: seconds (passed on as a number)
 * or integers. */
static const struct {
  const char *key;
  int seconds;
  int64_t min, max;
} numeric_options[] = {
    {"connect_timeout", 1, 0, 86400},   {"keepalives", 0, 0, 1},
    {"keepalives_idle", 1, 0, 86400},   {"keepalives_interval", 1, 0, 86400},
    {"keepalives_count", 0, 0, 1000},   {"tcp_user_timeout", 0, 0, 86400000},
};

/* What jobq sets where the URL does not: TCP keepalives and a limit on
 * unacknowledged data, so that a connection to a server that went away
 * without a word (a network cut, a machine powered off) is found broken
 * within about half a minute, and made again, instead of when the
 * kernel gives up on it (two hours for an idle LISTEN connection). */
static const char *const tcp_defaults[][2] = {
    {"keepalives_idle", "10"}, {"keepalives_interval", "5"}, {"keepalives_count", "3"},
    {"tcp_user_timeout", "30000"}};

static int is_own_option(const char *k) {
  for (int i = 0; own_options[i]; i++)
    if (strcmp(k, own_options[i]) == 0) return 1;
  return 0;
}

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

/* Checks an identifier of ours: [a-z_][a-z0-9_]{0,62}. */
static int identifier_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 63 || !(islower((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
      return 0;
  return 1;
}

/* jobq's own option k = v. */
static int own_option(jobq *db, const char *k, const char *v) {
  pg *c = pg_conn(db);
  if (strcmp(k, "schema") == 0) {
    if (!identifier_ok(v))
      return jobq__fail(db, JOBQ_EURL,
                        "invalid schema '%s' in the database url: expected 1 to 63 "
                        "characters of a-z, 0-9 and '_', not starting with a digit",
                        v);
    free(c->schema);
    if ((c->schema = strdup(v)) == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  } else if (strcmp(k, "notify") == 0) {
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
      return jobq__fail(db, JOBQ_EURL,
                        "invalid notify '%s' in the database url: expected on or off", v);
    c->notify = strcmp(v, "on") == 0;
  } else if (strcmp(k, "statement_timeout") == 0) {
    if (jobq_parse_duration(v, &c->statement_timeout_ms) != JOBQ_OK ||
        c->statement_timeout_ms < 1 || c->statement_timeout_ms > 86400000LL)
      return jobq__fail(db, JOBQ_EURL,
                        "invalid statement_timeout '%s' in the database url: expected a "
                        "duration from 1ms to 1d, like 30s",
                        v);
  }
  return JOBQ_OK; /* max_payload is the library's */
}

/* libpq's option k = v, checked where a bad value would only show when
 * connecting; *value is what to pass on (v, or a number in place of a
 * duration, in buf). */
static int libpq_option(jobq *db, const char *k, const char *v, char *buf, size_t len,
                        const char **value) {
  *value = v;
  if (strcmp(k, "replication") == 0)
    return jobq__fail(db, JOBQ_EURL,
                      "option 'replication' in the database url: jobq needs an ordinary "
                      "connection, not a replication one");
  if (strcmp(k, "sslmode") == 0 && strcmp(v, "disable") != 0 && strcmp(v, "allow") != 0 &&
      strcmp(v, "prefer") != 0 && strcmp(v, "require") != 0 && strcmp(v, "verify-ca") != 0 &&
      strcmp(v, "verify-full") != 0)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid sslmode '%s' in the database url: expected disable, allow, "
                      "prefer, require, verify-ca or verify-full",
                      v);
  /* jobq refuses a standby: only the sessions that may be a primary. */
  if (strcmp(k, "target_session_attrs") == 0 && strcmp(v, "any") != 0 &&
      strcmp(v, "read-write") != 0 && strcmp(v, "primary") != 0)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid target_session_attrs '%s' in the database url: expected "
                      "read-write, primary or any (jobq needs a primary)",
                      v);
  for (size_t i = 0; i < sizeof numeric_options / sizeof numeric_options[0]; i++) {
    if (strcmp(k, numeric_options[i].key) != 0) continue;
    int64_t n;
    int rc = numeric_options[i].seconds
                 ? jobq__url_seconds(db, k, v, numeric_options[i].min, numeric_options[i].max, &n)
                 : jobq__url_int(db, k, v, numeric_options[i].min, numeric_options[i].max, &n);
    if (rc != JOBQ_OK) return rc;
    snprintf(buf, len, "%lld", (long long)n);
    *value = buf;
  }
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
    const PQconninfoOption *o = opts;
    while (o->keyword != NULL && strcmp(o->keyword, k) != 0) o++;
    char buf[32];
    const char *value;
    if (is_own_option(k))
      rc = own_option(db, k, v);
    else if (o->keyword == NULL)
      rc = jobq__fail(db, JOBQ_EURL,
                      "unknown option '%s' in the database url: expected schema, notify, "
                      "statement_timeout, max_payload, or a libpq connection option such as "
                      "sslmode, host or connect_timeout",
                      k);
    else if ((rc = libpq_option(db, k, v, buf, sizeof buf, &value)) == JOBQ_OK &&
             param_set(c, k, value) != JOBQ_OK)
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    if (rc == JOBQ_EURL && jobq__url_after_secret(u, i))
      rc = jobq__fail(db, JOBQ_EURL,
                      "invalid database url '%s': an option after the password is unknown "
                      "or has a bad value (write '&' in a password as %%26)",
                      c->redacted);
  }
  PQconninfoFree(opts);
  if (rc != JOBQ_OK) return rc;
  const char *t = param(c, "connect_timeout"); /* checked above: a number */
  if (t != NULL) c->connect_timeout_s = strtoll(t, NULL, 10);
  if (param(c, "application_name") == NULL && param_set(c, "application_name", "jobq") != JOBQ_OK)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (size_t i = 0; i < sizeof tcp_defaults / sizeof tcp_defaults[0]; i++)
    if (param(c, tcp_defaults[i][0]) == NULL &&
        param_set(c, tcp_defaults[i][0], tcp_defaults[i][1]) != JOBQ_OK)
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (c->schema == NULL && (c->schema = strdup("public")) == NULL)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  return split_hosts(db);
}

