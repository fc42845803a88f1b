/*
 * sql.h - libpq and libmariadb as the benchmark's bare SQL calls them, on
 * the connection jobq_native() hands over.  jobq-bench is not linked with the two client
 * libraries: that would load them, with the TLS, Kerberos and LDAP
 * libraries behind them, at every start of the `jobq-bench
 * --internal-stamp` that the latency workload forks for each job, and
 * weigh on what it measures.  Instead bench_sql_load() takes the
 * functions below from the library jobq_open() already loaded for the
 * URL (dlopen of the same soname finds it), into tables of this
 * program's own.  Each function is then a call through the table, under
 * its own name.  A function the workloads start to use is added to the
 * list and to the #defines.
 */
#ifndef JOBQ_BENCH_SQL_H
#define JOBQ_BENCH_SQL_H

#include <libpq-fe.h>
#include <mysql.h>
#include <stddef.h>

#define BENCH_LIBPQ_FUNCS(X)                                                  \
  X(PQclear) X(PQcmdTuples) X(PQconsumeInput) X(PQerrorMessage) X(PQexec)      \
  X(PQexecParams) X(PQfreemem) X(PQgetvalue) X(PQnotifies) X(PQntuples)        \
  X(PQresultErrorMessage) X(PQresultStatus) X(PQsocket)

#define BENCH_LIBMARIADB_FUNCS(X)                                             \
  X(mysql_errno) X(mysql_error) X(mysql_fetch_row) X(mysql_free_result)        \
  X(mysql_query) X(mysql_stmt_affected_rows) X(mysql_stmt_bind_param)          \
  X(mysql_stmt_bind_result) X(mysql_stmt_close) X(mysql_stmt_errno)            \
  X(mysql_stmt_error) X(mysql_stmt_execute) X(mysql_stmt_fetch)                \
  X(mysql_stmt_free_result) X(mysql_stmt_init) X(mysql_stmt_prepare)          \
  X(mysql_stmt_store_result) X(mysql_store_result)

#define BENCH_SQL_SLOT(f) __typeof__(f) *f##_;
struct bench_libpq {
  BENCH_LIBPQ_FUNCS(BENCH_SQL_SLOT)
};
struct bench_libmariadb {
  BENCH_LIBMARIADB_FUNCS(BENCH_SQL_SLOT)
};
#undef BENCH_SQL_SLOT
extern struct bench_libpq bench_libpq;
extern struct bench_libmariadb bench_libmariadb;

/* Fills the table of store's client library (enum bench_store; nothing
 * for SQLite, which jobq-bench links).  0, or -1 after a message. */
int bench_sql_load(int store);

#define PQclear (bench_libpq.PQclear_)
#define PQcmdTuples (bench_libpq.PQcmdTuples_)
#define PQconsumeInput (bench_libpq.PQconsumeInput_)
#define PQerrorMessage (bench_libpq.PQerrorMessage_)
#define PQexec (bench_libpq.PQexec_)
#define PQexecParams (bench_libpq.PQexecParams_)
#define PQfreemem (bench_libpq.PQfreemem_)
#define PQgetvalue (bench_libpq.PQgetvalue_)
#define PQnotifies (bench_libpq.PQnotifies_)
#define PQntuples (bench_libpq.PQntuples_)
#define PQresultErrorMessage (bench_libpq.PQresultErrorMessage_)
#define PQresultStatus (bench_libpq.PQresultStatus_)
#define PQsocket (bench_libpq.PQsocket_)

#define mysql_errno (bench_libmariadb.mysql_errno_)
#define mysql_error (bench_libmariadb.mysql_error_)
#define mysql_fetch_row (bench_libmariadb.mysql_fetch_row_)
#define mysql_free_result (bench_libmariadb.mysql_free_result_)
#define mysql_query (bench_libmariadb.mysql_query_)
#define mysql_stmt_affected_rows (bench_libmariadb.mysql_stmt_affected_rows_)
#define mysql_stmt_bind_param (bench_libmariadb.mysql_stmt_bind_param_)
#define mysql_stmt_bind_result (bench_libmariadb.mysql_stmt_bind_result_)
#define mysql_stmt_close (bench_libmariadb.mysql_stmt_close_)
#define mysql_stmt_errno (bench_libmariadb.mysql_stmt_errno_)
#define mysql_stmt_error (bench_libmariadb.mysql_stmt_error_)
#define mysql_stmt_execute (bench_libmariadb.mysql_stmt_execute_)
#define mysql_stmt_fetch (bench_libmariadb.mysql_stmt_fetch_)
#define mysql_stmt_free_result (bench_libmariadb.mysql_stmt_free_result_)
#define mysql_stmt_init (bench_libmariadb.mysql_stmt_init_)
#define mysql_stmt_prepare (bench_libmariadb.mysql_stmt_prepare_)
#define mysql_stmt_store_result (bench_libmariadb.mysql_stmt_store_result_)
#define mysql_store_result (bench_libmariadb.mysql_store_result_)

#endif
