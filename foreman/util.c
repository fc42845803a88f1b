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

/* Set once at start (fm_log_times), read by every log line. */
static int log_times;

void fm_log_times(int on) { log_times = on; }

void fm_log(const char *fmt, ...) {
  char line[1200];
  int n;
  if (log_times) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ jobq work[%d]: ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                 tm.tm_sec, ts.tv_nsec / 1000000, (int)getpid());
  } else {
    n = snprintf(line, sizeof line, "jobq work: ");
  }
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  line[len++] = '\n';
  /* One write, so that lines of several processes do not interleave. */
  ssize_t w = write(STDERR_FILENO, line, len);
  (void)w;
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
  fm_log("out of memory: stopping");
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
