// index.d.ts - the types of the jobq package (index.js).  Times are Dates,
// durations milliseconds, payloads and results Buffers.
/// <reference types="node" />

/** A payload or result: bytes as they are, a string as UTF-8, null as
 * nothing, anything else as JSON. */
export type Value = Buffer | Uint8Array | string | null | undefined | number | boolean | object;

export interface PutOptions {
  /** Ordering key: jobs of the queue sharing it run one at a time, in order. */
  key?: string | null;
  /** Unique among the queue's unfinished jobs. */
  unique?: string | null;
  /** -32768 to 32767, higher first (default 0). */
  priority?: number;
  /** Run no earlier than in this many milliseconds. */
  delay?: number | null;
  /** Or no earlier than this time (a Date or Unix milliseconds). */
  at?: Date | number | null;
  /** Runs before the job is dead, 1 to 1000 (default 25). */
  maxAttempts?: number;
  /** Milliseconds, enforced by `jobq work`. */
  timeout?: number | null;
  /** Milliseconds, the base of the exponential backoff (default 1000). */
  backoff?: number | null;
  /** Runs after every earlier job of the queue, before any later one. */
  barrier?: boolean;
  /** Ids of jobs put before: the job is 'pending' until they are all done,
   * and cancelled when one dies or is cancelled. */
  after?: number[] | null;
  /** With after: run once they have all finished, whatever the outcome. */
  afterAnyOutcome?: boolean;
}

export interface PutManyOptions extends PutOptions {
  queue?: string;
  /** The places in the putMany() list of earlier jobs to wait for. */
  afterIndex?: number[] | null;
}

/** One job of a putMany() with options of its own. */
export class Put {
  constructor(payload: Value, options?: PutManyOptions);
  payload: Value;
  options: PutManyOptions;
}

export interface PutResult {
  id: number;
  /** A job with this unique key was already there: nothing was written. */
  existed: boolean;
}

export type State = 'ready' | 'running' | 'waiting' | 'pending' | 'done' | 'dead' | 'cancelled';

export interface JobInfo {
  id: number;
  queue: string;
  state: State;
  priority: number;
  runAt: Date | null;
  key: string | null;
  barrier: boolean;
  uniqueKey: string | null;
  /** null in ls(). */
  payload: Buffer | null;
  /** Done jobs; null otherwise and in ls(). */
  result: Buffer | null;
  attempts: number;
  maxAttempts: number;
  timeout: number | null;
  backoff: number;
  session: string | null;
  claim: string | null;
  createdAt: Date | null;
  claimedAt: Date | null;
  finishedAt: Date | null;
  lastError: string | null;
  cancelRequested: boolean;
  prevLost: boolean;
}

export interface QueueStats {
  name: string;
  ready: number;
  scheduled: number;
  waiting: number;
  pending: number;
  running: number;
  done: number;
  dead: number;
  cancelled: number;
  paused: boolean;
  /** Milliseconds the oldest ready job has waited. */
  oldestReady: number;
  keyPolicy: 'block' | 'skip';
}

/** A queue's limits, each null when not set, and how it stands now. */
export interface QueueLimits {
  queue: string;
  /** At most this many of its jobs claimed at once. */
  running: number | null;
  /** At most rate claimed in any ratePeriod milliseconds of the database clock. */
  rate: number | null;
  ratePeriod: number | null;
  /** At most this many jobs of one ordering key claimed at once. */
  runningPerKey: number | null;
  /** At most ratePerKey jobs of one ordering key claimed in any ratePerKeyPeriod milliseconds. */
  ratePerKey: number | null;
  ratePerKeyPeriod: number | null;
  /** Its jobs claimed now. */
  runningNow: number;
  /** Its jobs claimed in the last rate period. */
  claimedNow: number;
  /** Its keys claimed ratePerKey times in the last period. */
  keysFullNow: number;
  /** A job is ready but the running or rate limit, or its key's rate, is full. */
  held: boolean;
}

export interface LimitOptions {
  running?: number | null;
  /** 'N/PERIOD' ('100/1s', '10/5m', up to a day), or a count per period in milliseconds. */
  rate?: string | { count: number; period: number } | null;
  runningPerKey?: number | null;
  /** As rate, for each ordering key. */
  ratePerKey?: string | { count: number; period: number } | null;
}

export interface SessionInfo {
  id: string;
  name: string;
  host: string;
  pid: number;
  epoch: number;
  startedAt: Date | null;
  heartbeatAt: Date | null;
  expiresAt: Date | null;
  lease: number;
  claimed: number;
  inFlight: number;
  done: number;
  failed: number;
  expired: boolean;
}

export interface IdentityInfo {
  queueId: string;
  epoch: number;
  seq: number;
  schemaVersion: number;
  now: Date | null;
}

export interface ListOptions {
  queue?: string | null;
  state?: State | 'scheduled' | null;
  limit?: number;
  after?: number;
}

export type SqlValue = null | number | bigint | string | boolean | Buffer | Uint8Array;
export type Row = Array<null | number | string | Buffer>;

/** Opens the queue database named by url (default $JOBQ_DB, else
 * 'sqlite:jobq.db'). */
export function connect(url?: string): Promise<Client>;

export class Client {
  private constructor();
  readonly url: string;
  /** The URL with its password replaced by ***. */
  readonly redactedUrl: string;
  /** A warning about the database's durability settings, or null. */
  readonly warning: string | null;
  close(): Promise<void>;
  init(): Promise<void>;
  put(queue: string, payload?: Value, options?: PutOptions): Promise<PutResult>;
  putMany(items: Iterable<Value | Put>, defaults?: PutManyOptions): Promise<PutResult[]>;
  transaction<T>(fn: (client: Client) => Promise<T> | T): Promise<T>;
  /** SQLite only. */
  execute(sql: string, params?: SqlValue[] | Record<string, SqlValue>): Promise<Row[]>;
  stats(): Promise<QueueStats[]>;
  show(id: number): Promise<JobInfo>;
  ls(options?: ListOptions): Promise<JobInfo[]>;
  sessions(): Promise<SessionInfo[]>;
  identity(): Promise<IdentityInfo>;
  /** true: cancelled at once; false: its worker was asked to stop it. */
  cancel(id: number): Promise<boolean>;
  retry(id: number): Promise<void>;
  retryDead(queue?: string | null): Promise<number>;
  pause(queue: string): Promise<void>;
  resume(queue: string): Promise<void>;
  /** Replaces the queue's limits; none given removes them. */
  setLimits(queue: string, limits?: LimitOptions): Promise<void>;
  /** Every queue that has a limit, by name. */
  limits(queue?: null): Promise<QueueLimits[]>;
  /** That queue's limits (null where it has none). */
  limits(queue: string): Promise<QueueLimits>;
  session(options?: { name?: string; lease?: number }): Promise<Session>;
}

export class Session {
  private constructor();
  readonly client: Client;
  readonly id: string;
  /** Milliseconds. */
  readonly lease: number;
  close(): Promise<void>;
  claim(queues?: string | string[] | null, max?: number): Promise<Job[]>;
  /** The ids of this session's jobs whose cancel was requested. */
  heartbeat(): Promise<number[]>;
  setInFlight(n: number): void;
  /** Resolves with true when an earlier identical acknowledgement had committed. */
  complete(job: Job, result?: Value): Promise<boolean>;
  fail(job: Job, error: string): Promise<void>;
  retryLater(job: Job, options?: { delay?: number | null; reason?: string }): Promise<void>;
  release(job: Job): Promise<void>;
  extend(job: Job, ms: number): Promise<void>;
}

export interface JobFields {
  id?: number;
  queue: string;
  payload?: Buffer;
  attempt?: number;
  maxAttempts?: number;
  prevLost?: boolean;
  claim?: string;
  key?: string | null;
  priority?: number;
  timeout?: number | null;
  signal?: AbortSignal;
}

export class Job {
  constructor(fields: JobFields);
  id: number;
  queue: string;
  payload: Buffer;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** The previous attempt's outcome is unknown (its worker died mid-run). */
  prevLost: boolean;
  /** The claim token, different for every attempt: the key for idempotent side effects. */
  claim: string;
  key: string | null;
  priority: number;
  timeout: number | null;
  /** Aborted when an operator cancels the job (in-process workers). */
  signal: AbortSignal;
  readonly text: string;
  json(): any;
}

export class Retry extends Error {
  constructor(reason?: string, options?: { delay?: number | null });
  reason: string;
  delay: number | null;
}

export class Fail extends Error {
  constructor(message: string);
}

export class Outcome {
  state: 'done' | 'failed' | 'retry';
  result: Buffer;
  error: string;
  delay: number | null;
  reason: string;
  readonly text: string;
  json(): any;
}

export type Handler = (job: Job) => Value | Promise<Value>;

export class Registry {
  constructor();
  find(queue: string): Handler | null;
  queues(): string[] | null;
  clear(): void;
  readonly size: number;
}

/** Registers fn for queue (a name, names, or null for every queue without
 * a handler of its own). */
export function handle<F extends Handler>(queue: string | string[] | null, fn: F,
  registry?: Registry): F;

/** Serves the protocol of `jobq work --persistent` with the handlers
 * registered so far, in a script of its own: `node app.js` as the
 * foreman's command.  The process exits when stdin ends. */
export function serve(): void;

export interface WorkerOptions {
  url?: string;
  queues?: string | string[] | null;
  concurrency?: number;
  lease?: number;
  name?: string;
  poll?: number;
  registry?: Registry | null;
  handleSignals?: boolean;
}

export interface Counts {
  done: number;
  failed: number;
  retry: number;
  lost: number;
}

export class Worker {
  constructor(options?: WorkerOptions);
  readonly counts: Counts;
  run(options?: { until?: 'idle' | 'empty' | null }): Promise<Counts>;
  stop(): void;
}

export const version: string;
export function libraryVersion(): string;

export namespace pg {
  interface Queryable {
    query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  }
  function put(client: Queryable, queue: string, payload?: Value,
    options?: Omit<PutOptions, 'at' | 'after' | 'afterAnyOutcome'> & { at?: Date | number | null }): Promise<number>;
  function putSql(queue: string, payload?: Value, options?: PutOptions):
    { text: string; values: unknown[] };
}

export namespace testing {
  function perform(queue: string, payload?: Value,
    fields?: Omit<JobFields, 'queue' | 'payload'> & { registry?: Registry }): Promise<Outcome>;
  function queue(): Promise<Client>;
  function drain(client: Client, options?: { queues?: string[] | null; concurrency?: number;
    scheduled?: boolean; registry?: Registry | null }): Promise<Counts>;
}

export class JobqError extends Error {
  /** The library's negative error code. */
  errno: number;
  /** Its name, 'JOBQ_ELOST'. */
  code: string;
}
export class LibraryError extends JobqError {}
export class Invalid extends JobqError {}
export class InvalidURL extends JobqError {}
export class OutOfMemory extends JobqError {}
export class NotFound extends JobqError {}
export class Lost extends JobqError {}
export class Expired extends JobqError {}
export class WrongState extends JobqError {}
export class Busy extends JobqError {}
export class Unreachable extends JobqError {}
export class DatabaseError extends JobqError {}
export class UnsupportedSchema extends JobqError {}
export class Identity extends JobqError {}
export class TooBig extends JobqError {}
export class NotSupported extends JobqError {}
export class Cancelled extends JobqError {}
export class ReadOnly extends JobqError {}
export class Denied extends JobqError {}
