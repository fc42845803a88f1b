'use strict';
// sqlite.js - one SQL statement on a Client's own SQLite connection (the
// sqlite3 * that jobq_native() gives), through the same libsqlite3 that
// libjobq uses, so that the application's writes and jobq's puts or acks
// share one transaction.  Preparing and stepping, which may wait on the
// file, run on libuv's thread pool; binding and reading columns do not.

const native = require('./native');
const errors = require('./errors');

const OK = 0;
const ROW = 100;
const DONE = 101;
const INTEGER = 1;
const FLOAT = 2;
const TEXT = 3;
const NULL = 5;
const TRANSIENT = -1n; // SQLITE_TRANSIENT: SQLite copies the value

let S = null;

function load() {
  if (S !== null) return S;
  const { koffi } = native.load();
  const lib = koffi.load('libsqlite3.so.0');
  S = {};
  for (const proto of [
    'int sqlite3_prepare_v2(void *db, const char *sql, int nbyte, _Out_ void **stmt, ' +
      '_Out_ const char **tail)',
    'int sqlite3_finalize(void *stmt)',
    'int sqlite3_step(void *stmt)',
    'const char *sqlite3_errmsg(void *db)',
    'int sqlite3_bind_parameter_count(void *stmt)',
    'int sqlite3_bind_parameter_index(void *stmt, const char *name)',
    'int sqlite3_bind_null(void *stmt, int i)',
    'int sqlite3_bind_int64(void *stmt, int i, int64_t v)',
    'int sqlite3_bind_double(void *stmt, int i, double v)',
    'int sqlite3_bind_text(void *stmt, int i, const char *v, int n, intptr_t destructor)',
    'int sqlite3_bind_blob(void *stmt, int i, const void *v, int n, intptr_t destructor)',
    'int sqlite3_column_count(void *stmt)',
    'int sqlite3_column_type(void *stmt, int i)',
    'int64_t sqlite3_column_int64(void *stmt, int i)',
    'double sqlite3_column_double(void *stmt, int i)',
    'const void *sqlite3_column_blob(void *stmt, int i)',
    'int sqlite3_column_bytes(void *stmt, int i)',
  ]) {
    S[proto.match(/(sqlite3_\w+)\(/)[1]] = lib.func(proto);
  }
  return S;
}

function fail(db, sql, rc) {
  const msg = S.sqlite3_errmsg(db);
  const cls = rc === 5 || rc === 6 ? errors.Busy : errors.DatabaseError; // BUSY, LOCKED
  return new cls(`statement '${sql.slice(0, 80)}' failed: ${msg}`);
}

function bind(stmt, i, value) {
  if (value === null || value === undefined) return S.sqlite3_bind_null(stmt, i);
  if (typeof value === 'boolean') value = value ? 1 : 0;
  if (typeof value === 'bigint') return S.sqlite3_bind_int64(stmt, i, value);
  if (typeof value === 'number') {
    return Number.isInteger(value) ? S.sqlite3_bind_int64(stmt, i, value)
      : S.sqlite3_bind_double(stmt, i, value);
  }
  if (typeof value === 'string') {
    const b = Buffer.from(value, 'utf8');
    return S.sqlite3_bind_text(stmt, i, value, b.length, TRANSIENT);
  }
  if (value instanceof Uint8Array) {
    return S.sqlite3_bind_blob(stmt, i, value.length ? value : null, value.length, TRANSIENT);
  }
  throw new TypeError(`invalid SQL parameter ${i} (${typeof value}): expected null, a number, ` +
    'a bigint, a string or a Buffer');
}

function column(stmt, i) {
  switch (S.sqlite3_column_type(stmt, i)) {
    case INTEGER: return Number(S.sqlite3_column_int64(stmt, i));
    case FLOAT: return S.sqlite3_column_double(stmt, i);
    case NULL: return null;
    case TEXT: return native.bytesAt(S.sqlite3_column_blob(stmt, i),
      S.sqlite3_column_bytes(stmt, i)).toString('utf8');
    default: return native.bytesAt(S.sqlite3_column_blob(stmt, i), S.sqlite3_column_bytes(stmt, i));
  }
}

// Runs sql with params on db (a sqlite3 *); resolves with the rows.
async function execute(db, sql, params = []) {
  if (typeof sql !== 'string') throw new TypeError('invalid sql: expected a string');
  load();
  const text = Buffer.from(sql, 'utf8');
  const stmt = [null];
  const tail = [null];
  let rc = await native.callAsync(S.sqlite3_prepare_v2, [db, sql, text.length, stmt, tail]);
  if (rc !== OK) throw fail(db, sql, rc);
  if (!stmt[0]) throw new errors.Invalid(`invalid sql '${sql.slice(0, 80)}': expected a statement`);
  const st = stmt[0];
  try {
    if (tail[0] && tail[0].replace(/[\s;]/g, '') !== '') {
      throw new errors.Invalid(`invalid sql '${sql.slice(0, 80)}': expected one statement, got more`);
    }
    const count = S.sqlite3_bind_parameter_count(st);
    if (Array.isArray(params)) {
      if (params.length !== count) {
        throw new errors.Invalid(`the statement takes ${count} parameters, ${params.length} given`);
      }
      params.forEach((v, k) => {
        if (bind(st, k + 1, v) !== OK) throw fail(db, sql);
      });
    } else {
      for (const [name, v] of Object.entries(params)) {
        const i = S.sqlite3_bind_parameter_index(st, `:${name}`);
        if (i === 0) {
          throw new errors.Invalid(`invalid SQL parameter '${name}': the statement has no :${name}`);
        }
        if (bind(st, i, v) !== OK) throw fail(db, sql);
      }
    }
    const rows = [];
    const ncol = S.sqlite3_column_count(st);
    for (;;) {
      rc = await native.callAsync(S.sqlite3_step, [st]);
      if (rc === ROW) {
        const row = [];
        for (let i = 0; i < ncol; i++) row.push(column(st, i));
        rows.push(row);
      } else if (rc === DONE) {
        return rows;
      } else {
        throw fail(db, sql, rc);
      }
    }
  } finally {
    S.sqlite3_finalize(st);
  }
}

module.exports = { execute };
