'use strict';
// transactions.test.js - enqueueing together with the application's own
// writes: on SQLite in the client's transaction with execute(), on
// PostgreSQL through jobq_put() on the application's node-postgres client;
// each committed and rolled back.  Calls from outside a transaction wait
// for it.

const assert = require('assert');
const test = require('node:test');
const support = require('./support');
const jobq = require('..');

const { fresh, sleep } = support;

async function sqlite(t) {
  const f = await fresh(t, 'sqlite');
  await f.q.execute('CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT, price REAL, note BLOB)');
  return f.q;
}

test('sqlite: committed with the application\'s rows', async (t) => {
  const q = await sqlite(t);
  const ids = await q.transaction(async () => {
    await q.execute('INSERT INTO orders(item, price, note) VALUES (?, ?, ?)',
      ['book', 12.5, Buffer.from([0, 1])]);
    const a = await q.put('email', { order: 1 });
    const b = await q.put('email', 'second');
    return [a.id, b.id];
  });
  assert.deepStrictEqual(await q.execute('SELECT id, item, price, note FROM orders'),
    [[1, 'book', 12.5, Buffer.from([0, 1])]]);
  assert.deepStrictEqual((await q.ls()).map((j) => j.id), ids);
});

test('sqlite: rolled back with the application\'s rows', async (t) => {
  const q = await sqlite(t);
  await assert.rejects(q.transaction(async () => {
    await q.execute('INSERT INTO orders(item) VALUES (:item)', { item: 'pen' });
    await q.put('email', 'never');
    throw new Error('changed my mind');
  }), /changed my mind/);
  assert.deepStrictEqual(await q.execute('SELECT count(*) FROM orders'), [[0]]);
  assert.deepStrictEqual(await q.ls(), []);
});

test('sqlite: a failed put leaves the transaction usable', async (t) => {
  const q = await sqlite(t);
  await q.transaction(async () => {
    await q.execute("INSERT INTO orders(item) VALUES ('kept')");
    await assert.rejects(q.put('Bad Queue', 'x'), jobq.Invalid);
    await q.put('email', 'kept too');
  });
  assert.deepStrictEqual(await q.execute('SELECT item FROM orders'), [['kept']]);
  assert.strictEqual((await q.ls()).length, 1);
});

test('sqlite: calls from outside wait for the transaction', async (t) => {
  const q = await sqlite(t);
  const tx = q.transaction(async () => {
    await q.put('email', 'inside');
    await sleep(50);
    throw new Error('roll back');
  });
  const outside = q.put('email', 'outside'); // made while the transaction runs
  await assert.rejects(tx, /roll back/);
  const { id } = await outside;
  assert.deepStrictEqual((await q.ls()).map((j) => j.id), [id]);
  assert.strictEqual((await q.show(id)).payload.toString(), 'outside');
  // A call the callback starts without waiting for it takes its turn after
  // the commit.
  let late = null;
  await q.transaction(async () => {
    late = sleep(20).then(() => q.put('email', 'late'));
  });
  await late;
  assert.strictEqual((await q.ls()).length, 2);
});

test('sqlite: acknowledge with the application\'s rows', async (t) => {
  const q = await sqlite(t);
  const { id } = await q.put('email', 'ada');
  const s = await q.session({ lease: 30000 });
  const [job] = await s.claim('email');
  await q.transaction(async () => {
    await q.execute('INSERT INTO orders(item) VALUES (?)', [`sent ${job.text}`]);
    await s.complete(job, 'sent');
  });
  await s.close();
  assert.strictEqual((await q.show(id)).state, 'done');
  assert.deepStrictEqual(await q.execute('SELECT item FROM orders'), [['sent ada']]);
});

test('sqlite: execute refuses what it cannot run', async (t) => {
  const q = await sqlite(t);
  await assert.rejects(q.execute('INSERT INTO nosuch VALUES (1)'),
    (e) => e instanceof jobq.DatabaseError && e.message.includes('no such table: nosuch'));
  await assert.rejects(q.execute('SELECT 1; SELECT 2'), jobq.Invalid);
  await assert.rejects(q.execute('SELECT ?', []), jobq.Invalid);
  await assert.rejects(q.execute('SELECT ?', [{}]), TypeError);
});

function pgTest(name, fn) {
  test(`postgres: ${name}`, { skip: support.PG_URL ? false : support.NO_PG }, async (t) => {
    const f = await fresh(t, 'postgres');
    const { Client } = require('pg');
    const p = support.pgParts();
    const pg = new Client({ ...p, options: `-c search_path=${f.schema}` });
    await pg.connect();
    t.after(() => pg.end());
    await pg.query('CREATE TABLE orders(id serial PRIMARY KEY, item text)');
    await fn(t, f.q, pg);
  });
}

pgTest('committed with the application\'s rows', async (t, q, pg) => {
  await pg.query('BEGIN');
  await pg.query('INSERT INTO orders(item) VALUES ($1)', ['book']);
  const a = await jobq.pg.put(pg, 'email', { order: 1 }, { key: 'ada', priority: 5,
    maxAttempts: 3, timeout: 2000, backoff: 500 });
  const b = await jobq.pg.put(pg, 'email', Buffer.from([0, 0x62]), { delay: 3600000, unique: 'u-1' });
  const c = await jobq.pg.put(pg, 'email', 'again', { unique: 'u-1' });
  const d = await jobq.pg.put(pg, 'reports', 'bar', { barrier: true });
  await pg.query('COMMIT');
  assert.strictEqual(c, b);
  const info = await q.show(a);
  assert.deepStrictEqual([info.payload.toString(), info.key, info.priority, info.maxAttempts,
    info.timeout, info.backoff], ['{"order":1}', 'ada', 5, 3, 2000, 500]);
  assert.deepStrictEqual((await q.show(b)).payload, Buffer.from([0, 0x62]));
  assert.deepStrictEqual((await q.ls({ state: 'scheduled' })).map((j) => j.id), [b]);
  assert.strictEqual((await q.show(d)).barrier, true);
});

pgTest('rolled back with the application\'s rows', async (t, q, pg) => {
  await pg.query('BEGIN');
  await pg.query('INSERT INTO orders(item) VALUES ($1)', ['pen']);
  await jobq.pg.put(pg, 'email', 'never');
  await pg.query('ROLLBACK');
  assert.strictEqual((await pg.query('SELECT count(*)::int AS n FROM orders')).rows[0].n, 0);
  assert.deepStrictEqual(await q.ls(), []);
});

pgTest('at runs on the database clock', async (t, q, pg) => {
  const when = new Date((await q.identity()).now.getTime() + 600000);
  const id = await jobq.pg.put(pg, 'email', 'later', { at: when });
  assert.ok(Math.abs((await q.show(id)).runAt - when) < 1000);
});

pgTest('bad arguments are the server\'s errors', async (t, q, pg) => {
  await assert.rejects(jobq.pg.put(pg, 'Bad Queue', 'x'),
    (e) => e.code === '22023' && e.message.includes('invalid queue name'));
  assert.throws(() => jobq.pg.putSql('email', 'x', { delay: 1, at: 2 }), TypeError);
});

pgTest('execute is SQLite only', async (t, q) => {
  await assert.rejects(q.execute('SELECT 1'), (e) => e instanceof jobq.NotSupported &&
    e.message.includes('jobq.pg.put') && !e.message.includes(support.pgParts().password));
});

pgTest('client transactions hold jobq\'s own calls', async (t, q) => {
  await assert.rejects(q.transaction(async () => {
    await q.put('email', 'one');
    await q.put('email', 'two');
    throw new Error('no');
  }), /no/);
  assert.deepStrictEqual(await q.ls(), []);
  await q.transaction(() => q.put('email', 'one'));
  assert.strictEqual((await q.ls()).length, 1);
});
