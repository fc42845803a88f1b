/*
 * libmariadb.h - the MariaDB/MySQL client library as the MySQL store calls
 * it: through a table of its functions, filled when the first MySQL URL
 * is opened (jobq__libmariadb_load(), clientlib.c), so that a program
 * that never opens one never loads it nor the TLS libraries it pulls in.
 * Include this instead of <mysql.h>; each function below is then a call
 * through the table, under its own name.  A function the store starts to
 * use is added to the list and to the #defines.  (jobq-bench's bare SQL
 * keeps a table of its own, bench/sql.h.)
 */
#ifndef JOBQ_LIBMARIADB_H
#define JOBQ_LIBMARIADB_H

#include <mysql.h>

#include "jobq.h"

#define JOBQ_LIBMARIADB_SONAME "libmariadb.so.3"

#define JOBQ_LIBMARIADB_FUNCS(X)                                              \
  X(mysql_close) X(mysql_errno) X(mysql_error) X(mysql_fetch_row)              \
  X(mysql_free_result) X(mysql_get_server_info) X(mysql_init) X(mysql_options) \
  X(mysql_real_connect) X(mysql_real_query)                                   \
  X(mysql_stmt_affected_rows) X(mysql_stmt_bind_param)                         \
  X(mysql_stmt_bind_result) X(mysql_stmt_close) X(mysql_stmt_errno)            \
  X(mysql_stmt_error) X(mysql_stmt_execute) X(mysql_stmt_fetch)                \
  X(mysql_stmt_fetch_column) X(mysql_stmt_field_count)                         \
  X(mysql_stmt_free_result) X(mysql_stmt_init) X(mysql_stmt_insert_id)         \
  X(mysql_stmt_param_count) X(mysql_stmt_prepare) X(mysql_stmt_store_result)   \
  X(mysql_store_result)

struct jobq__libmariadb {
#define JOBQ_LIBMARIADB_SLOT(f) __typeof__(f) *f##_;
  JOBQ_LIBMARIADB_FUNCS(JOBQ_LIBMARIADB_SLOT)
#undef JOBQ_LIBMARIADB_SLOT
};
extern struct jobq__libmariadb jobq__libmariadb;

/* Loads the client library once per process; JOBQ_ENOTSUP, with db's
 * message naming the library and the reason, when it cannot be loaded.
 * Thread-safe. */
int jobq__libmariadb_load(jobq *db);

#define mysql_close (jobq__libmariadb.mysql_close_)
#define mysql_errno (jobq__libmariadb.mysql_errno_)
#define mysql_error (jobq__libmariadb.mysql_error_)
#define mysql_fetch_row (jobq__libmariadb.mysql_fetch_row_)
#define mysql_free_result (jobq__libmariadb.mysql_free_result_)
#define mysql_get_server_info (jobq__libmariadb.mysql_get_server_info_)
#define mysql_init (jobq__libmariadb.mysql_init_)
#define mysql_options (jobq__libmariadb.mysql_options_)
#define mysql_real_connect (jobq__libmariadb.mysql_real_connect_)
#define mysql_real_query (jobq__libmariadb.mysql_real_query_)
#define mysql_stmt_affected_rows (jobq__libmariadb.mysql_stmt_affected_rows_)
#define mysql_stmt_bind_param (jobq__libmariadb.mysql_stmt_bind_param_)
#define mysql_stmt_bind_result (jobq__libmariadb.mysql_stmt_bind_result_)
#define mysql_stmt_close (jobq__libmariadb.mysql_stmt_close_)
#define mysql_stmt_errno (jobq__libmariadb.mysql_stmt_errno_)
#define mysql_stmt_error (jobq__libmariadb.mysql_stmt_error_)
#define mysql_stmt_execute (jobq__libmariadb.mysql_stmt_execute_)
#define mysql_stmt_fetch (jobq__libmariadb.mysql_stmt_fetch_)
#define mysql_stmt_fetch_column (jobq__libmariadb.mysql_stmt_fetch_column_)
#define mysql_stmt_field_count (jobq__libmariadb.mysql_stmt_field_count_)
#define mysql_stmt_free_result (jobq__libmariadb.mysql_stmt_free_result_)
#define mysql_stmt_init (jobq__libmariadb.mysql_stmt_init_)
#define mysql_stmt_insert_id (jobq__libmariadb.mysql_stmt_insert_id_)
#define mysql_stmt_param_count (jobq__libmariadb.mysql_stmt_param_count_)
#define mysql_stmt_prepare (jobq__libmariadb.mysql_stmt_prepare_)
#define mysql_stmt_store_result (jobq__libmariadb.mysql_stmt_store_result_)
#define mysql_store_result (jobq__libmariadb.mysql_store_result_)

#endif
