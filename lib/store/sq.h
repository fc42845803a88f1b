/*
 * sq.h - what the files of the SQLite store share: the table of a set
 * statement's rows (sq_rows.c).  Nothing outside lib/store/sq_*.c and
 * sqlite.c includes it.
 */
#ifndef JOBQ_SQ_H
#define JOBQ_SQ_H

#include <sqlite3.h>

#include "internal.h"

/* Makes jobq_rows() known on connection db: an SQLite result code. */
int jobq__sq_rows_register(sqlite3 *db);
/* Binds column col (a V_COL value, the caller's until st is reset) to
 * parameter at of st, for jobq_rows(): an SQLite result code. */
int jobq__sq_rows_bind(sqlite3_stmt *st, int at, const jobq_val *col);

#endif
