/*
 * util.c - the small things every file of the foreman uses: a monotonic
 * clock, jitter, one-line messages on stderr, durations and signal names
 * for those messages, failpoints for tests, and allocation that stops the
 * program when memory runs out (a foreman that cannot allocate cannot
 * keep its promises; its guard then stops the jobs, and their leases
 * bring them back).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fm.h"

int64_t fm_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*, seeded from the clock and the pid: jitter needs no more. */
static uint64_t next_random(void) {
  static _Thread_local uint64_t state;
  if (state == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    state = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
            ((uint64_t)getpid() << 40) ^ 0x9E3779B97F4A7C15ULL;
  }
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}

int64_t fm_jitter(int64_t ms, int pct) {
  if (ms <= 0 || pct <= 0) return ms;
  double f = (double)(next_random() >> 11) / (double)(1ULL << 53); /* [0,1) */
  double scale = 1.0 + (2.0 * f - 1.0) * pct / 100.0;
  int64_t v = (int64_t)((double)ms * scale);
  return v < 1 ? 1 : v;
}

/* Set once at start (fm_log_setup), read by every log line. */
static int log_times, log_json, log_journal;

void fm_log_setup(int times, int json) {
  log_times = times;
  log_json = json;
  /* JOURNAL_STREAM is "DEVICE:INODE" of the journal's socket; stderr
   * is the journal when it is that socket (not just inherited). */
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  struct stat st;
  log_journal = js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
                fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
                (unsigned long long)st.st_ino == ino;
}

static const char *const level_names[] = {"emerg", "alert", "crit", "err",
                                          "warning", "notice", "info", "debug"};

/* A log line under construction: bounded, cut rather than overrun. */
struct line {
  char p[2048];
  size_t len;
};

static void put(struct line *l, const char *s, size_t n) {
  if (n > sizeof l->p - 2 - l->len) n = sizeof l->p - 2 - l->len;
  memcpy(l->p + l->len, s, n);
  l->len += n;
}

static void putf(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct line *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(l->p + l->len, sizeof l->p - 1 - l->len, fmt, ap);
  va_end(ap);
  if (n > 0) l->len += (size_t)n < sizeof l->p - 2 - l->len ? (size_t)n : sizeof l->p - 2 - l->len;
}

/* The length of the UTF-8 character at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t k = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
  if (k == 0 || k > n) return 0;
  for (size_t i = 1; i < k; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
      (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
    return 0;
  return k;
}

/* s as a JSON string, quotes included; bytes that are not UTF-8 become
 * U+FFFD. */
static void put_json(struct line *l, const char *s, size_t n) {
  put(l, "\"", 1);
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned char c = u[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      put(l, e, 2);
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      if (c == '\n') put(l, "\\n", 2);
      else if (c == '\t') put(l, "\\t", 2);
      else putf(l, "\\u%04x", c);
      i++;
    } else if (c < 0x80) {
      put(l, s + i, 1);
      i++;
    } else {
      size_t k = utf8_len(u + i, n - i);
      if (k == 0) {
        put(l, "\\ufffd", 6);
        i++;
      } else {
        put(l, s + i, k);
        i += k;
      }
    }
  }
  put(l, "\"", 1);
}

/* The line's start: the journal's priority, then the time and level and
 * event (JSON) or the time and pid (text, --log-times). */
static void begin(struct line *l, int prio, const char *event) {
  l->len = 0;
  if (log_journal) putf(l, "<%d>", prio);
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char when[80];
  snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
  if (log_json)
    putf(l, "{\"time\":\"%s\",\"level\":\"%s\",\"event\":\"%s\",\"pid\":%d", when,
         level_names[prio], event, (int)getpid());
  else if (log_times && !log_journal)
    putf(l, "%s jobq work[%d]: ", when, (int)getpid());
  else
    putf(l, "jobq work: ");
}

/* Ends the line and writes it in one write, so that lines of several
 * processes do not interleave. */
static void end(struct line *l) {
  if (log_json) put(l, "}", 1);
  l->p[l->len++] = '\n';
  ssize_t w = write(STDERR_FILENO, l->p, l->len);
  (void)w;
}

static void vlog(int prio, const char *event, const char *fmt, va_list ap) {
  struct line l;
  begin(&l, prio, event);
  char msg[1200];
  int m = vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = m < 0 ? 0 : (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
  if (log_json) {
    put(&l, ",\"message\":", 11);
    put_json(&l, msg, n);
  } else {
    put(&l, msg, n);
  }
  end(&l);
}

void fm_logp(int prio, const char *event, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(prio, event, fmt, ap);
  va_end(ap);
}

void fm_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(FM_INFO, "log", fmt, ap);
  va_end(ap);
}

void fm_log_job(const struct fm_log_job *j) {
  char d[FM_DUR_BUF];
  fm_fmt_ms(d, j->duration_ms);
  int prio = strcmp(j->outcome, "done") == 0 ? FM_INFO : FM_NOTICE;
  /* The end of an error says most; a line holds a few hundred bytes of it. */
  const char *err = j->error;
  size_t elen = err != NULL ? j->error_len : 0;
  if (elen > 400) {
    err += elen - 400;
    elen = 400;
  }
  struct line l;
  begin(&l, prio, "job");
  if (log_json) {
    putf(&l, ",\"job\":%lld,\"queue\":", (long long)j->id);
    put_json(&l, j->queue, strlen(j->queue));
    putf(&l, ",\"attempt\":%d,\"max_attempts\":%d,\"duration_ms\":%lld,\"outcome\":\"%s\"",
         j->attempt, j->max_attempts, (long long)j->duration_ms, j->outcome);
    if (elen > 0) {
      put(&l, ",\"error\":", 9);
      put_json(&l, err, elen);
    }
  } else {
    char shown[FM_QUOTE_BUF];
    putf(&l, "job %lld (%s, attempt %d of %d): %s in %s", (long long)j->id, j->queue,
         j->attempt, j->max_attempts, j->outcome, d);
    if (j->error != NULL && j->error_len > 0)
      putf(&l, ": %s", fm_quote(shown, j->error, j->error_len));
  }
  end(&l);
}

const char *fm_fmt_ms(char *buf, int64_t ms) {
  if (ms < 1000) {
    snprintf(buf, FM_DUR_BUF, "%lldms", (long long)ms);
  } else if (ms < 60000) {
    if (ms % 1000 == 0)
      snprintf(buf, FM_DUR_BUF, "%llds", (long long)(ms / 1000));
    else
      snprintf(buf, FM_DUR_BUF, "%.1fs", (double)ms / 1000.0);
  } else if (ms < 3600000) {
    int64_t s = ms / 1000;
    if (s % 60 == 0)
      snprintf(buf, FM_DUR_BUF, "%lldm", (long long)(s / 60));
    else
      snprintf(buf, FM_DUR_BUF, "%lldm%llds", (long long)(s / 60),
               (long long)(s % 60));
  } else {
    int64_t m = ms / 60000;
    if (m % 60 == 0)
      snprintf(buf, FM_DUR_BUF, "%lldh", (long long)(m / 60));
    else
      snprintf(buf, FM_DUR_BUF, "%lldh%lldm", (long long)(m / 60),
               (long long)(m % 60));
  }
  return buf;
}

const char *fm_signame(char *buf, int sig) {
  const char *abbrev = sigabbrev_np(sig);
  if (abbrev != NULL)
    snprintf(buf, FM_SIG_BUF, "SIG%s", abbrev);
  else
    snprintf(buf, FM_SIG_BUF, "signal %d", sig);
  return buf;
}

static void oom(void) {
  fm_logp(FM_ERR, "out_of_memory", "out of memory: stopping");
  exit(1);
}

void *fm_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) oom();
  return p;
}

void *fm_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (q == NULL) oom();
  return q;
}

char *fm_xstrdup(const char *s) {
  char *c = strdup(s);
  if (c == NULL) oom();
  return c;
}

const char *fm_quote(char *buf, const void *data, size_t len) {
  const unsigned char *p = data;
  size_t o = 0, cut = len > 64 ? 64 : len;
  for (size_t i = 0; i < cut; i++) {
    if (p[i] < 0x20 || p[i] > 0x7e || p[i] == '\\')
      o += (size_t)snprintf(buf + o, FM_QUOTE_BUF - o, "\\x%02x", p[i]);
    else
      buf[o++] = (char)p[i];
  }
  if (cut < len) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
  return buf;
}

/* The spec is read once: the foreman's environment does not change, and a
 * job's start should not pay for a getenv(). */
void fm_failpoint(const char *name) {
  static const char *spec;
  static int looked;
  if (!looked) {
    spec = getenv("JOBQ_FAILPOINT");
    looked = 1;
  }
  if (spec == NULL || *spec == '\0') return;
  size_t nlen = strlen(name);
  for (const char *p = spec; *p != '\0';) {
    size_t len = strcspn(p, ",");
    if (len > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
      const char *action = p + nlen + 1;
      size_t alen = len - nlen - 1;
      if (alen > 6 && strncmp(action, "sleep:", 6) == 0) {
        long ms = strtol(action + 6, NULL, 10);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (ms > 0 && nanosleep(&ts, &ts) != 0) {
        }
      } else if (alen == 4 && strncmp(action, "kill", 4) == 0) {
        raise(SIGKILL);
      }
      return;
    }
    p += len;
    if (*p == ',') p++;
  }
}

const char *fm_strerror(int err) {
  return uv_strerror(uv_translate_sys_error(err));
}
