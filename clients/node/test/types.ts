// types.ts - the package used as a TypeScript program would, checked by
// `tsc -p test/tsconfig.json` (types.test.js): it only has to compile.
import * as jobq from '..';

async function produce(): Promise<number> {
  const q: jobq.Client = await jobq.connect('sqlite:jobq.db');
  const { id, existed }: jobq.PutResult = await q.put('email', { to: 'ada' }, {
    key: 'ada', unique: 'welcome-ada', priority: 10, delay: 1000, maxAttempts: 5, timeout: 30000,
    backoff: 2000,
  });
  await q.put('reports', Buffer.from('x'), { barrier: true, at: new Date() });
  const many: jobq.PutResult[] = await q.putMany(['a', new jobq.Put({ b: 1 }, { key: 'k' })],
    { queue: 'email', priority: 1 });
  const stats: jobq.QueueStats[] = await q.stats();
  const info: jobq.JobInfo = await q.show(id);
  const page: jobq.JobInfo[] = await q.ls({ queue: 'email', state: 'scheduled', limit: 10, after: 0 });
  const rows: jobq.Row[] = await q.transaction(async () => {
    await q.put('email', 'in a transaction');
    return q.execute('SELECT ?', [1]);
  });
  await q.cancel(id);
  await q.retry(id);
  await q.pause('email');
  await q.resume('email');
  await q.setLimits('email', { running: 5, rate: '100/1m', runningPerKey: null });
  await q.setLimits('sms', { rate: { count: 10, period: 1000 }, ratePerKey: '5/1m' });
  const all: jobq.QueueLimits[] = await q.limits();
  const one: jobq.QueueLimits = await q.limits('email');
  if (one.held || all.length === 0 || one.ratePeriod === null) await q.setLimits('email');
  const s: jobq.Session = await q.session({ name: 'ts', lease: 5000 });
  const jobs: jobq.Job[] = await s.claim(['email'], 10);
  for (const job of jobs) {
    const already: boolean = await s.complete(job, { ok: job.json() });
    if (!already) await s.retryLater(job, { delay: 100, reason: 'again' });
  }
  const cancelled: number[] = await s.heartbeat();
  await s.close();
  await q.close();
  return existed ? 0 : many.length + stats.length + page.length + rows.length +
    cancelled.length + (info.result ? info.result.length : 0);
}

jobq.handle('email', async (job: jobq.Job) => {
  if (job.attempt === 1) throw new jobq.Retry('later', { delay: 1000 });
  if (job.signal.aborted) throw new jobq.Fail('cancelled');
  return { sent: job.text, claim: job.claim, prevLost: job.prevLost, key: job.key };
});

async function work(): Promise<jobq.Counts> {
  const w = new jobq.Worker({ url: 'sqlite:jobq.db', queues: ['email'], concurrency: 4 });
  process.on('SIGUSR2', () => w.stop());
  return w.run({ until: 'idle' });
}

async function inTests(): Promise<void> {
  const out: jobq.Outcome = await jobq.testing.perform('email', 'x', { attempt: 2 });
  if (out.state === 'retry' && out.delay !== null) return;
  const q = await jobq.testing.queue();
  const counts = await jobq.testing.drain(q, { scheduled: true });
  console.log(counts.done, out.text);
  await q.close();
}

async function inPostgres(client: jobq.pg.Queryable): Promise<number> {
  return jobq.pg.put(client, 'email', { order: 7 }, { key: 'order-7' });
}

function errors(e: unknown): string {
  if (e instanceof jobq.Lost || e instanceof jobq.Identity) return e.code;
  if (e instanceof jobq.JobqError) return `${e.errno}`;
  return jobq.version + jobq.libraryVersion();
}

export { produce, work, inTests, inPostgres, errors };
