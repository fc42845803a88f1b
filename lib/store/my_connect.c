/*
 * my_connect.c - the MariaDB / MySQL store's connections: the server's
 * version (SKIP LOCKED, or refused), the URL's options, each host tried in
 * turn, what a new connection is set up with, and a server refused
 * (read-only, too old).
 */
#include <ctype.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/my.h"

/* ---------------------------------------------------------------- versions */

int jobq__mysql_version_check(const char *info, int *mariadb, long *version,
                              char *why, size_t len) {
  *mariadb = info != NULL && strstr(info, "MariaDB") != NULL;
  *version = 0;
  if (info == NULL) info = "";
  const char *p = info;
  /* MariaDB before 11 announces itself as "5.5.5-10.x.y-MariaDB". */
  if (*mariadb && strncmp(p, "5.5.5-", 6) == 0) p += 6;
  long part[3] = {0, 0, 0};
  int i = 0;
  while (i < 3 && isdigit((unsigned char)*p)) {
    char *end;
    part[i++] = strtol(p, &end, 10);
    p = end;
    if (*p != '.') break;
    p++;
  }
  if (i < 2) {
    snprintf(why, len, "cannot read the server version '%.60s': expected MariaDB 10.6 or "
             "MySQL 8.0.1 or newer", info);
    return -1;
  }
  *version = part[0] * 10000 + part[1] * 100 + part[2];
  long min = *mariadb ? MARIADB_MIN : MYSQL_MIN;
  if (*version < min) {
    snprintf(why, len, "runs %s %ld.%ld.%ld, which has no SKIP LOCKED: expected %s or newer",
             *mariadb ? "MariaDB" : "MySQL", part[0], part[1], part[2],
             *mariadb ? "MariaDB 10.6" : "MySQL 8.0.1");
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- connection */

/* The first row of a plain query, as text: *res to be freed. */
MYSQL_ROW my_query_row(jobq *db, MYSQL *m, const char *sql, MYSQL_RES **res,
                           const char *what) {
  *res = NULL;
  if (mysql_real_query(m, sql, strlen(sql)) != 0) {
    my_error(db, mysql_errno(m), mysql_error(m), what);
    return NULL;
  }
  *res = mysql_store_result(m);
  MYSQL_ROW row = *res ? mysql_fetch_row(*res) : NULL;
  if (row == NULL) {
    jobq__fail(db, JOBQ_EDB, "%s: no row", what);
    if (*res) mysql_free_result(*res);
    *res = NULL;
  }
  return row;
}

int my_is_off(const char *v) {
  return v == NULL || strcmp(v, "0") == 0 || strcmp(v, "OFF") == 0;
}

/* What a new connection needs before jobq uses it: a server with SKIP
 * LOCKED, the session's settings, and a primary that accepts writes. */
static int setup(jobq *db, MYSQL *m, const char *host) {
  my *c = my_conn(db);
  char why[200];
  if (jobq__mysql_version_check(mysql_get_server_info(m), &c->mariadb, &c->version, why,
                                sizeof why) != 0)
    return jobq__fail(db, JOBQ_ENOTSUP, "'%s' (%s) %s", c->redacted, host, why);
  c->collation = c->mariadb ? "utf8mb4_nopad_bin"
                 : c->version >= 80017 ? "utf8mb4_0900_bin"
                                       : "utf8mb4_bin";
  char sql[512];
  if (mysql_real_query(m, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", 54) != 0)
    return my_error(db, mysql_errno(m), mysql_error(m), "setting up the connection");
  long long stmt_ms = (long long)c->statement_timeout_ms;
  if (c->mariadb)
    snprintf(sql, sizeof sql,
             "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,"
             "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', "
             "autocommit = 1, innodb_lock_wait_timeout = %u, max_statement_time = "
             "%lld.%03lld, idle_transaction_timeout = 60",
             c->lock_wait_s, stmt_ms / 1000, stmt_ms % 1000);
  else
    snprintf(sql, sizeof sql,
             "SET time_zone = '+00:00', sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,"
             "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', "
             "autocommit = 1, innodb_lock_wait_timeout = %u, max_execution_time = %lld, "
             "information_schema_stats_expiry = 0",
             c->lock_wait_s, stmt_ms);
  if (mysql_real_query(m, sql, strlen(sql)) != 0)
    return my_error(db, mysql_errno(m), mysql_error(m), "setting up the connection");
  MYSQL_RES *res;
  MYSQL_ROW row = my_query_row(
      db, m,
      c->mariadb ? "SELECT @@read_only, @@innodb_read_only, @@tx_read_only, "
                   "@@innodb_flush_log_at_trx_commit, @@innodb_autoinc_lock_mode, "
                   "@@auto_increment_increment, @@max_allowed_packet"
                 : "SELECT @@read_only, @@innodb_read_only, @@transaction_read_only, "
                   "@@innodb_flush_log_at_trx_commit, @@innodb_autoinc_lock_mode, "
                   "@@auto_increment_increment, @@max_allowed_packet, @@super_read_only",
      &res, "reading the server's settings");
  if (row == NULL) return db->err;
  int rc = JOBQ_OK;
  if (db->readonly) {
    /* A handle that only reads takes a read-only server or replica, and
     * makes sure of writing nothing. */
    if (mysql_real_query(m, "SET SESSION TRANSACTION READ ONLY", 33) != 0)
      rc = my_error(db, mysql_errno(m), mysql_error(m), "setting up the connection");
  } else if (!my_is_off(row[0]) || !my_is_off(row[1]) || (!c->mariadb && !my_is_off(row[7])))
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' (%s) is read-only (read_only is %s): expected a primary that "
                    "accepts writes",
                    c->redacted, host, row[0] ? row[0] : "NULL");
  else if (!my_is_off(row[2]))
    rc = jobq__fail(db, JOBQ_EREADONLY,
                    "'%s' (%s) starts read-only transactions (transaction_read_only is "
                    "on): expected a database that accepts writes",
                    c->redacted, host);
  if (rc == JOBQ_OK) {
    const char *flush = row[3] ? row[3] : "NULL";
    if (strcmp(flush, "1") != 0)
      snprintf(db->warning, sizeof db->warning,
               "'%s' has innodb_flush_log_at_trx_commit = %s: a put or ack that jobq "
               "reported done can be lost when the server or its machine crashes; "
               "expected 1",
               c->redacted, flush);
    else
      db->warning[0] = '\0';
    /* The rows of one INSERT take consecutive ids, auto_increment_increment
     * apart, where the server hands them out so (innodb_autoinc_lock_mode 0
     * or 1); otherwise one row a statement. */
    int lock_mode = row[4] ? (int)strtol(row[4], NULL, 10) : 2;
    int64_t step = row[5] ? strtoll(row[5], NULL, 10) : 1;
    db->id_step = lock_mode <= 1 ? (step < 1 ? 1 : step) : 0;
    c->max_packet = row[6] ? strtoul(row[6], NULL, 10) : 4 << 20;
    /* What one statement may carry: well within max_allowed_packet. */
    db->stmt_bytes = c->max_packet > (1 << 20) ? c->max_packet / 2 : 1 << 19;
  }
  mysql_free_result(res);
  return rc;
}

/* Connects to one host. */
static MYSQL *connect_host(jobq *db, const char *host, unsigned port) {
  my *c = my_conn(db);
  MYSQL *m = mysql_init(NULL);
  if (m == NULL) {
    jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    return NULL;
  }
  unsigned timeout = c->connect_timeout_s;
  /* Reads may wait for a lock or a long statement. */
  unsigned io = (unsigned)(c->statement_timeout_ms / 1000) + c->lock_wait_s + 30;
  my_bool on = 1;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io);
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  if (c->sslmode > 0) mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &on);
  if (c->sslmode > 1) mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
  if (c->sslca) mysql_options(m, MYSQL_OPT_SSL_CA, c->sslca);
  if (c->sslcert) mysql_options(m, MYSQL_OPT_SSL_CERT, c->sslcert);
  if (c->sslkey) mysql_options(m, MYSQL_OPT_SSL_KEY, c->sslkey);
  if (mysql_real_connect(m, host, c->user, c->password, c->dbname, port, c->socket,
                         CLIENT_FOUND_ROWS) == NULL) {
    int code = my_is_denied(mysql_errno(m)) ? JOBQ_EDENIED : JOBQ_ECONN;
    jobq__fail(db, code, "cannot connect to '%s': %s", c->redacted, mysql_error(m));
    mysql_close(m);
    return NULL;
  }
  if (setup(db, m, host) != JOBQ_OK) {
    mysql_close(m);
    return NULL;
  }
  return m;
}

/* Connects to the first host that answers and accepts writes.  When
 * none does, a host that refused us for good (JOBQ_EDENIED) is the
 * answer: its error is kept, whatever the hosts after it said. */
MYSQL *my_connect_any(jobq *db) {
  my *c = my_conn(db);
  MYSQL *m = NULL;
  if (jobq__libmariadb_load(db) != JOBQ_OK) return NULL;
  jobq__error denied = {JOBQ_OK, ""};
  for (size_t i = 0; i < c->nhosts && m == NULL; i++) {
    m = connect_host(db, c->hosts[i].name, c->hosts[i].port);
    if (m == NULL && db->err == JOBQ_EDENIED && denied.err == JOBQ_OK)
      jobq__error_keep(db, &denied);
  }
  if (c->nhosts == 0) m = connect_host(db, NULL, 0);
  if (m == NULL && denied.err != JOBQ_OK) jobq__error_restore(db, &denied);
  return m;
}

static int set_string(char **dst, const char *src) {
  free(*dst);
  *dst = src ? strdup(src) : NULL;
  return src && *dst == NULL ? JOBQ_ENOMEM : JOBQ_OK;
}

/* The options of its URLs (lib/url.c checks them). */
const jobq_option my_options[] = {
    {"connect_timeout", 's', 1, 86400, NULL},
    {"lock_wait_timeout", 's', 1, 86400, NULL},
    {"statement_timeout", 'd', 1, 86400000, "a duration from 1ms to 1d, like 30s"},
    {"sslmode", 'c', 0, 0, "disable, require, verify-ca or verify-full"},
    {"sslca", 't', 0, 0, NULL},
    {"sslcert", 't', 0, 0, NULL},
    {"sslkey", 't', 0, 0, NULL},
    {"socket", 't', 0, 0, NULL},
    {NULL, 0, 0, 0, NULL},
};

int my_open(jobq *db, const jobq_url *u) {
  my *c = calloc(1, sizeof *c);
  if (c == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  db->conn = c;
  c->redacted = db->url_redacted;
  /* A lock wait times out (and the transaction runs again) before the
   * statement does: 20 s against 30 s by default. */
  c->connect_timeout_s = (unsigned)jobq__url_number(u, my_options, "connect_timeout", 10);
  c->lock_wait_s = (unsigned)jobq__url_number(u, my_options, "lock_wait_timeout", 20);
  c->statement_timeout_ms = jobq__url_number(u, my_options, "statement_timeout", 30000);
  const char *mode = jobq__url_opt(u, "sslmode");
  c->sslmode = mode == NULL || strcmp(mode, "disable") == 0 ? 0
               : strcmp(mode, "require") == 0               ? 1
                                                            : 2;
  const char *const texts[] = {"sslca", "sslcert", "sslkey", "socket"};
  char **dst[] = {&c->sslca, &c->sslcert, &c->sslkey, &c->socket};
  for (size_t i = 0; i < 4; i++)
    if (set_string(dst[i], jobq__url_opt(u, texts[i])) != JOBQ_OK)
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  if (u->dbname == NULL || *u->dbname == '\0')
    return jobq__fail(db, JOBQ_EURL,
                      "database url '%s' names no database: expected "
                      "%s://USER:PASSWORD@HOST[:PORT]/DATABASE",
                      c->redacted, u->scheme);
  if (strlen(u->dbname) > 64)
    return jobq__fail(db, JOBQ_EURL,
                      "invalid database name in '%s': expected at most 64 characters",
                      c->redacted);
  if (set_string(&c->user, u->user) != JOBQ_OK ||
      set_string(&c->password, u->password) != JOBQ_OK ||
      set_string(&c->dbname, u->dbname) != JOBQ_OK)
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  int rc = jobq__url_hosts(db, u, DEFAULT_PORT, &c->hosts, &c->nhosts);
  if (rc != JOBQ_OK) return rc;
  if ((c->conn = my_connect_any(db)) == NULL) return db->err;
  if (db->max_payload + 65536 > c->max_packet)
    return jobq__fail(db, JOBQ_EURL,
                      "max_payload %zu bytes is too large for '%s', whose "
                      "max_allowed_packet is %lu bytes: expected at most %lu bytes, or a "
                      "larger max_allowed_packet on the server",
                      db->max_payload, c->redacted, c->max_packet,
                      c->max_packet > 65536 ? c->max_packet - 65536 : 0);
  return JOBQ_OK;
}

void my_close(jobq *db) {
  my *c = my_conn(db);
  if (c == NULL) return;
  my_stmts_release(c);
  if (c->conn != NULL) mysql_close(c->conn);
  jobq__url_hosts_free(c->hosts, c->nhosts);
  if (c->password != NULL) memset(c->password, 0, strlen(c->password));
  free(c->user);
  free(c->password);
  free(c->dbname);
  free(c->socket);
  free(c->sslca);
  free(c->sslcert);
  free(c->sslkey);
  free(c);
  db->conn = NULL;
}

void *my_native(jobq *db) { return my_conn(db)->conn; }
