'use strict';
// pg.js - enqueueing on PostgreSQL in the application's own transaction,
// through the jobq_put() SQL function (docs/sql.md) on a node-postgres
// client (pg's Client, PoolClient or Pool: anything with query(text,
// values)): the job exists when, and only when, that transaction commits.
// Needs no libjobq.
//
//   await client.query('BEGIN');
//   await client.query('INSERT INTO orders(id) VALUES ($1)', [7]);
//   const id = await jobq.pg.put(client, 'email', { order: 7 });
//   await client.query('COMMIT');
//
// jobq's tables must be on the connection's search_path (the schema=
// option of a jobq URL names their schema; public by default).

const { toBuffer, toMs, atMs } = require('./job');

// put()'s options by the name of the SQL function's parameter.
const SQL_ARGS = [
  ['priority', 'priority'],
  ['key', 'order_key'],
  ['barrier', 'barrier'],
  ['unique', 'unique_key'],
  ['maxAttempts', 'max_attempts'],
  ['timeout', 'timeout_ms'],
  ['backoff', 'backoff_ms'],
];

// The statement and values that enqueue one job, in node-postgres'
// numbered parameter style.  The options are Client.put()'s.
function putSql(queue, payload, opts = {}) {
  if (typeof queue !== 'string') throw new TypeError('invalid queue: expected a queue name');
  const known = new Set([...SQL_ARGS.map(([name]) => name), 'delay', 'at']);
  for (const name of Object.keys(opts)) {
    if (!known.has(name)) throw new TypeError(`unexpected option '${name}'`);
  }
  if (opts.delay != null && opts.at != null) {
    throw new TypeError('a delay and an at time were both given: expected one');
  }
  const values = { ...opts, barrier: opts.barrier ? true : undefined,
    timeout: toMs(opts.timeout, 'timeout') ?? undefined,
    backoff: toMs(opts.backoff, 'backoff') ?? undefined };
  const params = [queue, toBuffer(payload)];
  let sql = 'SELECT jobq_put($1, $2';
  for (const [name, sqlName] of SQL_ARGS) {
    if (values[name] !== undefined && values[name] !== null) {
      params.push(values[name]);
      sql += `, ${sqlName} => $${params.length}`;
    }
  }
  if (opts.delay != null) {
    params.push(toMs(opts.delay, 'delay'));
    sql += `, delay_ms => $${params.length}`;
  } else if (opts.at != null) {
    // The function's own clock: the statement's start on the server.
    params.push(atMs(opts.at));
    sql += `, delay_ms => greatest(0, $${params.length}::bigint` +
      ' - floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)';
  }
  return { text: `${sql}) AS id`, values: params };
}

// Enqueues one job on client (in its transaction, if one is open) and
// resolves with its id: the existing job's id when its unique key is held.
// An invalid argument rejects with the server's error (SQLSTATE 22023).
async function put(client, queue, payload, opts = {}) {
  const { text, values } = putSql(queue, payload, opts);
  const res = await client.query(text, values);
  return Number(res.rows[0].id);
}

module.exports = { put, putSql };
