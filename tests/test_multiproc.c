/*
 * test_multiproc.c - the guarantees under real concurrency and real
 * crashes.  Sixteen processes share one queue database (of the store
 * under test) for 30 seconds
 * (JOBQ_MULTIPROC_SECONDS to change): a few put jobs, the rest claim and
 * complete, fail or release them with short leases, and the parent
 * SIGKILLs a random child every 0.5-1 s and starts a replacement.  Every
 * child keeps an append-only log of what it did and what each call
 * returned.  Afterwards, with every child gone, a clean session drains
 * what is left, and the logs are checked against the database:
 *   - every acknowledged put is archived as done exactly once, with the
 *     payload that was put (nothing lost);
 *   - nothing is archived that no producer ever tried to put;
 *   - each done job's result is the claim token of the claim that
 *     completed it (one completion per job), and at most one completion
 *     ever returned JOBQ_OK without being a repeat;
 *   - no ack succeeded after another session had already been granted
 *     the same job (no job held by two live sessions at once).
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { NCHILD = 16, NPRODUCERS = 4, LEASE_MS = 500 };

/* ---------------------------------------------------------------- children */

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static unsigned rnd(unsigned *seed, unsigned n) {
  *seed = *seed * 1103515245u + 12345u;
  return (*seed >> 8) % n;
}

struct child {
  int fd;       /* the log */
  int role;     /* 0 producer, 1 worker */
  int index, gen;
  unsigned seed;
  const char *url;
};

/* Appends one line to the log; with sync, waits for it to reach disk. */
static void logf_(struct child *c, int sync, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(struct child *c, int sync, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (len < 0 || (size_t)len >= sizeof line) _exit(40);
  const char *p = line;
  while (len > 0) {
    ssize_t w = write(c->fd, p, (size_t)len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(41);
    p += w;
    len -= (int)w;
  }
  if (sync && fsync(c->fd) != 0) _exit(42);
}

static void child_sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static jobq *child_open(struct child *c) {
  for (int tries = 0; tries < 50; tries++) {
    jobq *db = NULL;
    int rc = jobq_open(c->url, &db);
    if (rc == JOBQ_OK) return db;
    logf_(c, 0, "error open %s %s\n", jobq_err_name(rc), jobq_errmsg(db));
    jobq_close(db);
    if (rc != JOBQ_EBUSY) _exit(30);
    child_sleep_ms(10);
  }
  _exit(31);
}

static int producer_main(struct child *c) {
  jobq *db = child_open(c);
  for (long n = 0;;) {
    enum { MAXB = 3 };
    jobq_put_opts o[MAXB];
    char payload[MAXB][64];
    int64_t ids[MAXB];
    size_t batch = 1 + rnd(&c->seed, MAXB);
    for (size_t k = 0; k < batch; k++) {
      snprintf(payload[k], sizeof payload[k], "p%d.%d.%ld", c->index, c->gen,
               n + (long)k);
      jobq_put_opts_init(&o[k]);
      o[k].queue = rnd(&c->seed, 2) ? "a" : "b";
      o[k].priority = (int)rnd(&c->seed, 3);
      o[k].max_attempts = JOBQ_ATTEMPTS_MAX;
      o[k].payload = payload[k];
      o[k].payload_len = strlen(payload[k]);
      logf_(c, 0, "intent %s\n", payload[k]);
    }
    int rc = batch == 1 ? jobq_put(db, &o[0], &ids[0], NULL)
                        : jobq_put_many(db, o, batch, ids, NULL);
    if (rc == JOBQ_OK) {
      for (size_t k = 0; k < batch; k++)
        logf_(c, k + 1 == batch, "put %lld %s\n", (long long)ids[k], payload[k]);
      n += (long)batch;
    } else if (rc == JOBQ_EBUSY) {
      logf_(c, 0, "busy put\n");
      /* The same payloads are not reused: they may have been written. */
      n += (long)batch;
    } else {
      logf_(c, 1, "error put %s %s\n", jobq_err_name(rc), jobq_errmsg(db));
      _exit(32);
    }
    child_sleep_ms(8 + rnd(&c->seed, 20));
  }
}

static jobq_session *worker_session(struct child *c, jobq *db) {
  for (;;) {
    jobq_session_opts so;
    jobq_session_opts_init(&so);
    so.name = "chaos";
    so.lease_ms = LEASE_MS;
    jobq_session *s = NULL;
    int rc = jobq_session_open(db, &so, &s);
    if (rc == JOBQ_OK) {
      logf_(c, 0, "session %s\n", jobq_session_id(s));
      return s;
    }
    logf_(c, 0, "error session %s %s\n", jobq_err_name(rc), jobq_errmsg(db));
    jobq_session_close(s);
    if (rc != JOBQ_EBUSY) _exit(33);
  }
}

static const char *const kind_names[] = {"?", "complete", "fail", "retry",
                                         "release"};

static int worker_main(struct child *c) {
  jobq *db = child_open(c);
  jobq_session *s = worker_session(c, db);
  int64_t last_beat = mono_us();
  for (;;) {
    if (mono_us() - last_beat >= LEASE_MS * 1000 / 3) {
      int rc = jobq_heartbeat(s, NULL, NULL);
      if (rc == JOBQ_EEXPIRED) {
        logf_(c, 0, "expired %s\n", jobq_session_id(s));
        jobq_session_close(s);
        s = worker_session(c, db);
      } else if (rc != JOBQ_OK && rc != JOBQ_EBUSY) {
        logf_(c, 1, "error heartbeat %s %s\n", jobq_err_name(rc), jobq_errmsg(db));
        _exit(34);
      }
      last_beat = mono_us();
    }
    jobq_job *jobs = NULL;
    size_t n = 0;
    int64_t t0 = mono_us();
    int rc = jobq_claim(s, NULL, 0, 1 + rnd(&c->seed, 4), &jobs, &n);
    int64_t t1 = mono_us();
    if (rc == JOBQ_EEXPIRED) {
      logf_(c, 0, "expired %s\n", jobq_session_id(s));
      jobq_session_close(s);
      s = worker_session(c, db);
      continue;
    }
    if (rc == JOBQ_EBUSY) continue;
    if (rc != JOBQ_OK) {
      logf_(c, 1, "error claim %s %s\n", jobq_err_name(rc), jobq_errmsg(db));
      _exit(35);
    }
    if (n == 0) {
      child_sleep_ms(5);
      continue;
    }
    for (size_t k = 0; k < n; k++)
      logf_(c, 0, "claim %lld %s %s %lld %lld\n", (long long)jobs[k].id,
            jobs[k].claim, jobq_session_id(s), (long long)t0, (long long)t1);

    /* Work: usually short; now and then longer than the lease. */
    unsigned w = rnd(&c->seed, 100);
    child_sleep_ms(w < 3 ? 2 * LEASE_MS : (int64_t)rnd(&c->seed, 15));

    jobq_ack acks[4];
    for (size_t k = 0; k < n; k++) {
      unsigned r = rnd(&c->seed, 100);
      jobq_ack_kind kind = r < 85 ? JOBQ_ACK_COMPLETE
                           : r < 95 ? JOBQ_ACK_FAIL
                                    : JOBQ_ACK_RELEASE;
      jobq_ack_init(&acks[k], &jobs[k], kind);
      if (kind == JOBQ_ACK_COMPLETE) {
        acks[k].data = jobs[k].claim;
        acks[k].len = JOBQ_CLAIM_LEN;
      } else if (kind == JOBQ_ACK_FAIL) {
        acks[k].data = "chaos";
        acks[k].len = 5;
        acks[k].retry_in_ms = 0;
      }
      logf_(c, 0, "pre %lld %s %s\n", (long long)jobs[k].id, jobs[k].claim,
            kind_names[kind]);
    }
    /* Half the time one batch, else one call per job. */
    int together = rnd(&c->seed, 2) == 0;
    for (size_t k = 0; k < n;) {
      size_t m = together ? n - k : 1;
      int tries = 0;
      int64_t a0, a1;
      do {
        a0 = mono_us();
        rc = jobq_ack_many(s, &acks[k], m);
        a1 = mono_us();
      } while (rc == JOBQ_EBUSY && ++tries < 5);
      if (rc != JOBQ_OK && rc != JOBQ_EBUSY) {
        logf_(c, 1, "error ack %s %s\n", jobq_err_name(rc), jobq_errmsg(db));
        _exit(36);
      }
      for (size_t q = k; q < k + m; q++)
        logf_(c, 0, "ack %lld %s %s %s %d %lld %lld\n", (long long)acks[q].id,
              acks[q].claim, kind_names[acks[q].kind],
              rc == JOBQ_OK ? jobq_err_name(acks[q].status) : "JOBQ_EBUSY",
              rc == JOBQ_OK ? acks[q].already : 0, (long long)a0, (long long)a1);
      k += m;
    }
    jobq_jobs_free(jobs, n);
  }
}

static int child_main(void *arg) {
  struct child *c = arg;
  c->seed ^= (unsigned)getpid() * 2654435761u ^ (unsigned)mono_us();
  return c->role == 0 ? producer_main(c) : worker_main(c);
}

/* ---------------------------------------------------------------- the run */

struct slot {
  pid_t pid;
  int gen;
};

static pid_t spawn(const char *dir, const char *url, int index, int gen) {
  char name[64], path[PATH_MAX];
  int producer = index < NPRODUCERS;
  snprintf(name, sizeof name, "%s-%02d-%03d.log", producer ? "p" : "w", index, gen);
  th_path(path, sizeof path, dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
  assert_true(fd >= 0);
  struct child c = {fd, producer ? 0 : 1, index, gen, (unsigned)(index * 7919 + gen), url};
  pid_t pid = th_fork(child_main, &c);
  close(fd);
  return pid;
}

/* Reports a child that ended other than by our SIGKILL. */
static int check_status(const char *dir, int index, int gen, int status) {
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return 0;
  print_error("child %d generation %d ended with %s %d (see its log in %s)\n",
              index, gen, WIFSIGNALED(status) ? "signal" : "exit code",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), dir);
  return 1;
}

/* ---------------------------------------------------------------- checking */

struct claim_rec {
  char token[JOBQ_CLAIM_LEN + 1];
  int64_t t0, t1;
};

struct job_rec {
  int put;                 /* a producer logged the put */
  char payload[48];
  size_t nclaims;
  struct claim_rec *claims;
  int completes_ok;        /* complete acks with JOBQ_OK, already 0 */
  char complete_token[JOBQ_CLAIM_LEN + 1];
};

struct ack_rec {
  int64_t id;
  char token[JOBQ_CLAIM_LEN + 1];
  char kind[16];
  char status[24];
  int already;
  int64_t t0, t1;
};

struct logs {
  struct job_rec *jobs;    /* by id, 0..maxid */
  int64_t maxid;
  char **intents;
  size_t nintents, capintents;
  struct ack_rec *acks;
  size_t nacks, capacks;
  size_t nputs, nclaims, nexpired;
};

static struct job_rec *job_at(struct logs *L, int64_t id) {
  if (id <= 0 || id > L->maxid) fail_msg("job id %lld out of range", (long long)id);
  return &L->jobs[id];
}

/* Copies src into dst[size], cut to fit. */
static void copy_str(char *dst, size_t size, const char *src) {
  size_t n = strnlen(src, size - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void read_log(struct logs *L, const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[600];
  while (fgets(line, sizeof line, f) != NULL) {
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n') break; /* cut by SIGKILL */
    char a[64], b[64], d[24], e[24];
    long long id, t0, t1;
    int already;
    if (sscanf(line, "intent %47s", a) == 1) {
      if (L->nintents == L->capintents) {
        L->capintents = L->capintents ? 2 * L->capintents : 1024;
        L->intents = realloc(L->intents, L->capintents * sizeof *L->intents);
        assert_non_null(L->intents);
      }
      L->intents[L->nintents++] = strdup(a);
    } else if (sscanf(line, "put %lld %47s", &id, a) == 2) {
      struct job_rec *j = job_at(L, id);
      if (j->put) fail_msg("job %lld reported put twice", id);
      j->put = 1;
      copy_str(j->payload, sizeof j->payload, a);
      L->nputs++;
    } else if (sscanf(line, "claim %lld %40s %40s %lld %lld", &id, a, b, &t0, &t1) == 5) {
      struct job_rec *j = job_at(L, id);
      j->claims = realloc(j->claims, (j->nclaims + 1) * sizeof *j->claims);
      assert_non_null(j->claims);
      struct claim_rec *c = &j->claims[j->nclaims++];
      copy_str(c->token, sizeof c->token, a);
      c->t0 = t0;
      c->t1 = t1;
      L->nclaims++;
    } else if (sscanf(line, "ack %lld %40s %15s %23s %d %lld %lld", &id, a, d, e,
                      &already, &t0, &t1) == 7) {
      if (L->nacks == L->capacks) {
        L->capacks = L->capacks ? 2 * L->capacks : 1024;
        L->acks = realloc(L->acks, L->capacks * sizeof *L->acks);
        assert_non_null(L->acks);
      }
      struct ack_rec *r = &L->acks[L->nacks++];
      r->id = id;
      copy_str(r->token, sizeof r->token, a);
      copy_str(r->kind, sizeof r->kind, d);
      copy_str(r->status, sizeof r->status, e);
      r->already = already;
      r->t0 = t0;
      r->t1 = t1;
    } else if (strncmp(line, "expired ", 8) == 0) {
      L->nexpired++;
    }
  }
  fclose(f);
}

static void read_logs(struct logs *L, const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".log") != 0) continue;
    char path[PATH_MAX];
    th_path(path, sizeof path, dir, e->d_name);
    read_log(L, path);
  }
  closedir(d);
  if (L->nintents > 0) qsort(L->intents, L->nintents, sizeof *L->intents, cmp_str);
}

/* Completes everything still in the queue with a clean session. */
static size_t drain(jobq *db) {
  jobq_session *s = th_session(db, 5000);
  /* Beat past the children's leases so that their sessions are reaped. */
  int64_t end = th_mono_ms() + 2 * LEASE_MS + 200;
  while (th_mono_ms() < end) {
    assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
    th_sleep_ms(100);
  }
  size_t drained = 0;
  int64_t give_up = th_mono_ms() + 120000;
  for (;;) {
    assert_rc(jobq_heartbeat(s, NULL, NULL), JOBQ_OK);
    size_t n;
    jobq_job *j = th_claim(s, NULL, 200, &n);
    if (n == 0) {
      jobq_jobs_free(j, n);
      if (th_count_jobs(db, 0) == th_count_jobs(db, JOBQ_STATE_DONE)) break;
      if (th_mono_ms() > give_up) fail_msg("the queue does not drain");
      th_sleep_ms(100);
      continue;
    }
    jobq_ack *acks = calloc(n, sizeof *acks);
    assert_non_null(acks);
    for (size_t k = 0; k < n; k++) {
      jobq_ack_init(&acks[k], &j[k], JOBQ_ACK_COMPLETE);
      acks[k].data = j[k].claim;
      acks[k].len = JOBQ_CLAIM_LEN;
    }
    assert_rc(jobq_ack_many(s, acks, n), JOBQ_OK);
    for (size_t k = 0; k < n; k++) {
      assert_int_equal(acks[k].status, JOBQ_OK);
      assert_int_equal(acks[k].already, 0);
    }
    drained += n;
    free(acks);
    jobq_jobs_free(j, n);
  }
  jobq_session_close(s);
  return drained;
}

static void test_chaos(void **state) {
  (void)state;
  int seconds = 30;
  const char *env = getenv("JOBQ_MULTIPROC_SECONDS");
  if (env != NULL && *env != '\0') {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v > 0 && v < 3600) seconds = (int)v;
  }
  char *dir = th_mkdtemp();
  /* The logs and the database stay there when a check fails. */
  print_message("multiproc: %d s in %s\n", seconds, dir);
  /* A fresh, initialised database before anyone races for it. */
  char url[PATH_MAX + 256];
  th_new_db(dir, "queue", url, sizeof url);

  struct slot slots[NCHILD];
  for (int k = 0; k < NCHILD; k++) {
    slots[k].gen = 0;
    slots[k].pid = spawn(dir, url, k, 0);
  }
  unsigned seed = (unsigned)th_mono_ms();
  int failures = 0, kills = 0;
  int64_t deadline = th_mono_ms() + (int64_t)seconds * 1000;
  while (th_mono_ms() < deadline) {
    th_sleep_ms(500 + rnd(&seed, 500));
    /* Children never stop by themselves; one that did hit an error. */
    for (int k = 0; k < NCHILD; k++) {
      int status;
      if (waitpid(slots[k].pid, &status, WNOHANG) == slots[k].pid) {
        failures += check_status(dir, k, slots[k].gen, status);
        slots[k].pid = spawn(dir, url, k, ++slots[k].gen);
      }
    }
    int victim = (int)rnd(&seed, NCHILD);
    kill(slots[victim].pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(slots[victim].pid, &status, 0), slots[victim].pid);
    failures += check_status(dir, victim, slots[victim].gen, status);
    slots[victim].pid = spawn(dir, url, victim, ++slots[victim].gen);
    kills++;
  }
  for (int k = 0; k < NCHILD; k++) kill(slots[k].pid, SIGKILL);
  for (int k = 0; k < NCHILD; k++) {
    int status;
    assert_int_equal(waitpid(slots[k].pid, &status, 0), slots[k].pid);
    failures += check_status(dir, k, slots[k].gen, status);
  }
  if (failures > 0) fail_msg("%d children failed on their own", failures);

  jobq *db = th_open(url);
  size_t drained = drain(db);
  jobq_identity ident;
  assert_rc(jobq_identity_get(db, &ident), JOBQ_OK);

  struct logs L;
  memset(&L, 0, sizeof L);
  L.maxid = ident.seq;
  L.jobs = calloc((size_t)L.maxid + 1, sizeof *L.jobs);
  assert_non_null(L.jobs);
  read_logs(&L, dir);

  /* The archive, job by job: all done, result = completing claim. */
  unsigned char *archived = calloc((size_t)L.maxid + 1, 1);
  char (*done_claim)[JOBQ_CLAIM_LEN + 1] = calloc((size_t)L.maxid + 1, sizeof *done_claim);
  assert_non_null(archived);
  assert_non_null(done_claim);
  size_t ndone = 0;
  for (int64_t id = 1; id <= L.maxid; id++) {
    jobq_job_info *info = NULL;
    int rc = jobq_show(db, id, &info);
    if (rc == JOBQ_ENOTFOUND) continue;
    if (rc != JOBQ_OK) fail_msg("jobq_show(%lld): %s", (long long)id, jobq_errmsg(db));
    const char *payload = info->payload;
    archived[id] = 1;
    ndone++;
    if (info->state != JOBQ_STATE_DONE)
      fail_msg("job %lld ended %s", (long long)id, jobq_state_name(info->state));
    const char *claim = info->claim;
    assert_non_null(claim);
    if (info->result_len != JOBQ_CLAIM_LEN || memcmp(info->result, claim, JOBQ_CLAIM_LEN) != 0)
      fail_msg("job %lld: result '%.*s' is not its claim '%s'", (long long)id,
               (int)info->result_len, info->result ? (const char *)info->result : "", claim);
    snprintf(done_claim[id], sizeof done_claim[id], "%s", claim);
    /* Nothing that nobody tried to put. */
    char *key = (char *)payload;
    if (L.nintents == 0 ||
        bsearch(&key, L.intents, L.nintents, sizeof *L.intents, cmp_str) == NULL)
      fail_msg("job %lld has payload '%s' that no producer put", (long long)id,
               payload);
    struct job_rec *j = &L.jobs[id];
    if (j->put && strcmp(j->payload, payload) != 0)
      fail_msg("job %lld: payload '%s', put as '%s'", (long long)id, payload,
               j->payload);
    jobq_info_free(info, 1);
  }
  assert_int_equal(th_sql_int(db, "SELECT count(*) FROM jobq_jobs"), 0);
  assert_int_equal(th_sql_int(db, "SELECT count(*) FROM (SELECT payload FROM "
                                  "jobq_done GROUP BY payload HAVING count(*) > 1) AS d"),
                   0);

  /* Nothing lost. */
  for (int64_t id = 1; id <= L.maxid; id++)
    if (L.jobs[id].put && !archived[id])
      fail_msg("job %lld was put but is not done", (long long)id);

  /* Acks: one successful completion per job, by the claim that is
   * recorded; a refused completion changed nothing; and no ack succeeded
   * after another claim of its job had been granted. */
  size_t ok_completes = 0, lost = 0;
  for (size_t k = 0; k < L.nacks; k++) {
    struct ack_rec *a = &L.acks[k];
    struct job_rec *j = job_at(&L, a->id);
    int ok = strcmp(a->status, "JOBQ_OK") == 0;
    if (strcmp(a->status, "JOBQ_ELOST") == 0) lost++;
    if (strcmp(a->kind, "complete") == 0) {
      if (ok && !a->already) {
        ok_completes++;
        if (++j->completes_ok > 1)
          fail_msg("job %lld completed twice (second by %s)", (long long)a->id,
                   a->token);
        if (strcmp(done_claim[a->id], a->token) != 0)
          fail_msg("job %lld: completed by %s but archived with claim %s",
                   (long long)a->id, a->token, done_claim[a->id]);
      } else if (!ok && strcmp(done_claim[a->id], a->token) == 0) {
        fail_msg("job %lld: completion by %s returned %s yet took effect",
                 (long long)a->id, a->token, a->status);
      }
    }
    if (!ok || a->already) continue;
    int64_t granted = -1;
    for (size_t c = 0; c < j->nclaims; c++)
      if (strcmp(j->claims[c].token, a->token) == 0) granted = j->claims[c].t1;
    if (granted < 0) fail_msg("job %lld: ack %s without a logged claim", (long long)a->id, a->token);
    for (size_t c = 0; c < j->nclaims; c++) {
      struct claim_rec *o = &j->claims[c];
      if (strcmp(o->token, a->token) == 0) continue;
      if (o->t0 > granted && o->t1 < a->t0)
        fail_msg("job %lld: ack %s (%s) succeeded after claim %s was granted",
                 (long long)a->id, a->token, a->kind, o->token);
    }
  }

  print_message("multiproc: %d s, %d kills, %zu puts logged, %zu claims, %zu acks "
                "(%zu completions, %zu lost), %zu sessions expired, %zu archived, "
                "%zu drained at the end\n",
                seconds, kills, L.nputs, L.nclaims, L.nacks, ok_completes, lost,
                L.nexpired, ndone, drained);
  assert_true(L.nputs > 0);
  assert_true(ok_completes > 0);

  for (int64_t id = 0; id <= L.maxid; id++) free(L.jobs[id].claims);
  free(L.jobs);
  for (size_t k = 0; k < L.nintents; k++) free(L.intents[k]);
  free(L.intents);
  free(L.acks);
  free(archived);
  free(done_claim);
  jobq_close(db);
  th_drop_db(url);
  th_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chaos),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
