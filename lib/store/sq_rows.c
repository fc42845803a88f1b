/*
 * sq_rows.c - jobq_rows(), the SQLite store's table of a set statement's
 * rows.
 *
 * A set statement (jobq__sql_set) gets its rows as columns of values.
 * PostgreSQL takes each column whole as an array; SQLite's texts read
 * them through this table-valued function instead of spelling the rows
 * out: jobq_rows(?5, ?2, ?3) has a row for each value of the columns bound
 * to ?5, ?2 and ?3 (their values in column1, column2, column3).  One
 * statement then takes any number of rows, with no text per number of
 * rows; joined to a table, each row is looked up there in turn, with no
 * list of values copied into a temporary index first.  The
 * store binds a column as a pointer (sqlite3_bind_pointer, of type
 * "jobq_col") to its jobq_val, whose values stay the caller's until the
 * statement is reset.  It works like SQLite's own carray extension, which
 * Debian's library does not build in, for the columns of several kinds a
 * set statement has.
 */
#include <string.h>

#include "store/sq.h"

/* Columns of values a statement may pass: column1 to column16, then as
 * many hidden ones for its arguments. */
#define ROWS_COLS 16
static const char POINTER_TYPE[] = "jobq_col";

typedef struct rows_cursor {
  sqlite3_vtab_cursor base;
  const jobq_val *cols[ROWS_COLS]; /* each a column (V_COL), or NULL */
  size_t n;                        /* rows */
  size_t at;                       /* the current row */
} rows_cursor;

static int rows_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **vtab, char **err) {
  (void)aux;
  (void)argc;
  (void)argv;
  (void)err;
  int rc = sqlite3_declare_vtab(
      db, "CREATE TABLE x(column1, column2, column3, column4, column5, column6, column7, "
          "column8, column9, column10, column11, column12, column13, column14, column15, "
          "column16, a1 HIDDEN, a2 HIDDEN, a3 HIDDEN, a4 HIDDEN, a5 HIDDEN, a6 HIDDEN, "
          "a7 HIDDEN, a8 HIDDEN, a9 HIDDEN, a10 HIDDEN, a11 HIDDEN, a12 HIDDEN, a13 HIDDEN, "
          "a14 HIDDEN, a15 HIDDEN, a16 HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  sqlite3_vtab *v = sqlite3_malloc(sizeof *v);
  if (v == NULL) return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  *vtab = v;
  return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

/* The arguments are equality constraints on the hidden columns: each one
 * must be usable (the table is read once its arguments are known), and
 * they reach rows_filter() in column order.  idxNum is how many there are.
 * A scan is cheap and its rows few beside any table it is joined to, so
 * the planner reads it first and looks each row up in the other table. */
static int rows_best_index(sqlite3_vtab *v, sqlite3_index_info *info) {
  (void)v;
  int at[ROWS_COLS];
  int given = 0;
  for (int i = 0; i < ROWS_COLS; i++) at[i] = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    int arg = c->iColumn - ROWS_COLS;
    if (arg < 0 || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!c->usable) return SQLITE_CONSTRAINT;
    at[arg] = i;
  }
  for (int arg = 0; arg < ROWS_COLS; arg++) {
    if (at[arg] < 0) continue;
    info->aConstraintUsage[at[arg]].argvIndex = ++given;
    info->aConstraintUsage[at[arg]].omit = 1;
  }
  info->idxNum = given;
  info->estimatedCost = 10;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

static int rows_open(sqlite3_vtab *v, sqlite3_vtab_cursor **cur) {
  (void)v;
  rows_cursor *c = sqlite3_malloc(sizeof *c);
  if (c == NULL) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *cur = &c->base;
  return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *cur) {
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* The columns bound to the arguments; an argument bound to anything else
 * (NULL, a value) gives a column of NULLs, and no rows when it is the
 * first. */
static int rows_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                       sqlite3_value **argv) {
  (void)idx_num;
  (void)idx_str;
  rows_cursor *c = (rows_cursor *)cur;
  memset(c->cols, 0, sizeof c->cols);
  c->n = 0;
  c->at = 0;
  for (int i = 0; i < argc && i < ROWS_COLS; i++) {
    const jobq_val *col = sqlite3_value_pointer(argv[i], POINTER_TYPE);
    c->cols[i] = col != NULL && col->type == 'c' ? col : NULL;
  }
  if (c->cols[0] != NULL) c->n = c->cols[0]->len;
  return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cur) {
  ((rows_cursor *)cur)->at++;
  return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cur) {
  const rows_cursor *c = (const rows_cursor *)cur;
  return c->at >= c->n;
}

static int rows_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const rows_cursor *c = (const rows_cursor *)cur;
  const jobq_val *column = col < ROWS_COLS ? c->cols[col] : NULL;
  if (column == NULL || c->at >= column->len) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  const jobq_val *v = (const jobq_val *)column->p + c->at;
  switch (v->type) {
    case 'i': sqlite3_result_int64(ctx, v->i); break;
    case 't': sqlite3_result_text64(ctx, v->p, v->len, SQLITE_STATIC, SQLITE_UTF8); break;
    case 'b': sqlite3_result_blob64(ctx, v->p, v->len, SQLITE_STATIC); break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((const rows_cursor *)cur)->at + 1;
  return SQLITE_OK;
}

/* Eponymous only: used as jobq_rows(...), never created as a table. */
static const sqlite3_module rows_module = {
    .iVersion = 0,
    .xCreate = NULL,
    .xConnect = rows_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = rows_disconnect,
    .xDestroy = rows_disconnect,
    .xOpen = rows_open,
    .xClose = rows_close,
    .xFilter = rows_filter,
    .xNext = rows_next,
    .xEof = rows_eof,
    .xColumn = rows_column,
    .xRowid = rows_rowid,
};

int jobq__sq_rows_register(sqlite3 *db) {
  return sqlite3_create_module(db, "jobq_rows", &rows_module, NULL);
}

int jobq__sq_rows_bind(sqlite3_stmt *st, int at, const jobq_val *col) {
  return sqlite3_bind_pointer(st, at, (void *)col, POINTER_TYPE, NULL);
}
