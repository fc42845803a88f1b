/*
 * output.c - everything jobq prints as data: aligned tables, compact JSON
 * documents, times (RFC 3339, UTC, milliseconds) and durations, bytes that
 * may or may not be text (shown as text, escaped, or base64), the shape
 * of a job that `ls` and `show` share, and the progress bar of long work.
 * Tables look the same on a terminal and in a pipe; only the progress bar
 * and the cutting of long cells depend on a terminal.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "output.h"
#include "util.h"

/* ---------------------------------------------------------------- tables */

void cli_table_init(struct cli_table *t, const struct cli_column *cols,
                    size_t ncols) {
  memset(t, 0, sizeof *t);
  t->cols = cols;
  t->ncols = ncols;
}

void cli_table_cell(struct cli_table *t, const char *fmt, ...) {
  if (t->ncells == t->alloc) {
    t->alloc = t->alloc ? t->alloc * 2 : 64;
    t->cells = cli_xrealloc(t->cells, t->alloc * sizeof *t->cells);
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *cell = cli_xmalloc((size_t)(n < 0 ? 0 : n) + 1);
  va_start(ap, fmt);
  vsnprintf(cell, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
  va_end(ap);
  t->cells[t->ncells++] = cell;
}

/* Columns on screen: one per UTF-8 character. */
static size_t text_width(const char *s) {
  size_t w = 0;
  for (; *s != '\0'; s++)
    if (((unsigned char)*s & 0xC0) != 0x80) w++;
  return w;
}

static void print_row(const struct cli_table *t, const size_t *width,
                      const char *const *cells) {
  for (size_t c = 0; c < t->ncols; c++) {
    size_t pad = width[c] - text_width(cells[c]);
    int last = c + 1 == t->ncols;
    if (c > 0) fputs("  ", stdout);
    if (t->cols[c].right)
      printf("%*s%s", (int)pad, "", cells[c]);
    else
      printf("%s%*s", cells[c], last ? 0 : (int)pad, "");
  }
  putchar('\n');
}

void cli_table_print(const struct cli_table *t) {
  size_t *width = cli_xmalloc(t->ncols * sizeof *width);
  const char **header = cli_xmalloc(t->ncols * sizeof *header);
  for (size_t c = 0; c < t->ncols; c++) {
    header[c] = t->cols[c].name;
    width[c] = text_width(header[c]);
  }
  for (size_t i = 0; i < t->ncells; i++) {
    size_t w = text_width(t->cells[i]);
    if (w > width[i % t->ncols]) width[i % t->ncols] = w;
  }
  print_row(t, width, header);
  for (size_t i = 0; i + t->ncols <= t->ncells; i += t->ncols)
    print_row(t, width, (const char *const *)t->cells + i);
  free(width);
  free(header);
}

void cli_table_release(struct cli_table *t) {
  for (size_t i = 0; i < t->ncells; i++) free(t->cells[i]);
  free(t->cells);
  memset(t, 0, sizeof *t);
}

void cli_field(const char *label, const char *fmt, ...) {
  printf("%-17s ", label);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

/* ---------------------------------------------------------------- JSON */

json_t *cli_json_object(void) {
  json_t *o = json_object();
  if (o == NULL) cli_oom();
  return o;
}

void cli_print_count(const char *verb, int64_t n, const char *noun) {
  if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, verb, json_integer(n));
    cli_json_print(o);
  } else {
    printf("%s %lld %s%s\n", verb, (long long)n, noun, n == 1 ? "" : "s");
  }
}

int cli_print_parts(jobq *db, int rc, const char *verb, int64_t n, const char *noun) {
  if (rc == JOBQ_OK) {
    cli_print_count(verb, n, noun);
    return 0;
  }
  rc = cli_lib_error(db, rc);
  if (n > 0)
    cli_error("%s %lld %s%s before that; run it again for the rest", verb, (long long)n, noun,
              n == 1 ? "" : "s");
  return rc;
}

int cli_print_bulk(jobq *db, int rc, int quiet, int dry_run, const char *done,
                   const char *verb, int64_t n) {
  if (rc != JOBQ_OK) return cli_print_parts(db, rc, done, n, "job");
  if (quiet) return 0;
  if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, done, json_integer(n));
    cli_json_set(o, "dry_run", json_boolean(dry_run));
    cli_json_print(o);
  } else {
    printf("%s%s %lld job%s\n", dry_run ? "would " : "", dry_run ? verb : done, (long long)n,
           n == 1 ? "" : "s");
  }
  return 0;
}

void cli_json_print(json_t *doc) {
  if (doc == NULL) cli_oom();
  char *text = json_dumps(doc, JSON_COMPACT);
  if (text == NULL) cli_oom();
  puts(text);
  free(text);
  json_decref(doc);
}

void cli_json_set(json_t *obj, const char *key, json_t *value) {
  if (value == NULL || json_object_set_new(obj, key, value) != 0) cli_oom();
}

json_t *cli_json_str(const char *s) {
  if (s == NULL) return json_null();
  size_t len = strlen(s);
  if (cli_utf8_valid(s, len)) return json_stringn(s, len);
  char *e = cli_escape(s, len);
  json_t *v = json_string(e);
  free(e);
  return v;
}

json_t *cli_json_time(int64_t ms) {
  char buf[CLI_TIME_BUF];
  return ms == 0 ? json_null() : json_string(cli_fmt_time(buf, ms));
}

void cli_json_bytes(json_t *obj, const char *key, const void *data,
                    size_t len) {
  if (data == NULL) {
    cli_json_set(obj, key, json_null());
  } else if (cli_utf8_valid(data, len) && memchr(data, '\0', len) == NULL) {
    cli_json_set(obj, key, json_stringn(data, len));
  } else {
    char name[64];
    snprintf(name, sizeof name, "%s_base64", key);
    char *b = cli_base64(data, len);
    cli_json_set(obj, name, json_string(b));
    free(b);
  }
}

/* ---------------------------------------------------------------- times */

const char *cli_fmt_time(char *buf, int64_t ms) {
  int64_t secs = ms / 1000, frac = ms % 1000;
  if (frac < 0) {
    frac += 1000;
    secs--;
  }
  time_t t = (time_t)secs;
  struct tm tm;
  /* RFC 3339 writes the years 0000 to 9999; jobq takes times from 1970
   * to 9999 only, but a row written by hand may hold any number: it is
   * shown as Unix seconds, the form --at reads. */
  if (ms < 0 || ms > JOBQ_TIME_MAX_MS || gmtime_r(&t, &tm) == NULL) {
    snprintf(buf, CLI_TIME_BUF, "@%lld.%03d", (long long)secs, (int)frac);
    return buf;
  }
  /* strftime bounds the fields that snprintf cannot know are small. */
  char date[24];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, CLI_TIME_BUF, "%.19s.%03dZ", date, (int)frac);
  return buf;
}

static const struct {
  const char *unit;
  int64_t ms;
} units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000},
             {"ms", 1}};

const char *cli_fmt_duration(char *buf, int64_t ms) {
  if (ms <= 0) {
    snprintf(buf, CLI_TIME_BUF, "0s");
    return buf;
  }
  size_t o = 0;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (ms >= units[i].ms) {
      o += (size_t)snprintf(buf + o, CLI_TIME_BUF - o, "%lld%s",
                            (long long)(ms / units[i].ms), units[i].unit);
      ms %= units[i].ms;
    }
  }
  return buf;
}

const char *cli_fmt_age(char *buf, int64_t ms) {
  if (ms < 0) ms = 0;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (ms >= units[i].ms || units[i].ms == 1) {
      snprintf(buf, CLI_TIME_BUF, "%lld%s", (long long)(ms / units[i].ms),
               units[i].unit);
      break;
    }
  }
  return buf;
}

const char *cli_fmt_relative(char *buf, int64_t at_ms, int64_t now_ms) {
  char age[CLI_TIME_BUF];
  int64_t d;
  /* A time written by hand may be any number: the distance saturates. */
  if (at_ms > now_ms) {
    if (__builtin_sub_overflow(at_ms, now_ms, &d)) d = INT64_MAX;
    snprintf(buf, CLI_TIME_BUF, "in %s", cli_fmt_age(age, d));
  } else {
    if (__builtin_sub_overflow(now_ms, at_ms, &d)) d = INT64_MAX;
    snprintf(buf, CLI_TIME_BUF, "%s ago", cli_fmt_age(age, d));
  }
  return buf;
}

/* ---------------------------------------------------------------- bytes */

size_t cli_utf8_seq(const unsigned char *p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

int cli_utf8_valid(const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len;) {
    size_t n = cli_utf8_seq(p + i, len - i);
    if (n == 0) return 0;
    i += n;
  }
  return 1;
}

int cli_is_plain_text(const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    if (p[i] < 0x20 || p[i] == 0x7F) return 0;
  return cli_utf8_valid(data, len);
}

char *cli_escape(const void *data, size_t len) {
  const unsigned char *p = data;
  char *out = cli_xmalloc(len * 4 + 1);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    unsigned char c = p[i];
    size_t n = cli_utf8_seq(p + i, len - i);
    if (c == '\\') {
      memcpy(out + o, "\\\\", 2), o += 2;
    } else if (c == '\n') {
      memcpy(out + o, "\\n", 2), o += 2;
    } else if (c == '\t') {
      memcpy(out + o, "\\t", 2), o += 2;
    } else if (c == '\r') {
      memcpy(out + o, "\\r", 2), o += 2;
    } else if (c < 0x20 || c == 0x7F || n == 0) {
      o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
      n = 1;
    } else {
      memcpy(out + o, p + i, n);
      o += n;
      i += n;
      continue;
    }
    i += 1;
  }
  out[o] = '\0';
  return out;
}

char *cli_escape_str(const char *s, const char *if_null) {
  return s != NULL ? cli_escape(s, strlen(s)) : cli_xstrdup(if_null);
}

void cli_cut(char *s, size_t max) {
  if (max == 0 || text_width(s) <= max) return;
  if (max < 4) max = 4;
  size_t chars = 0, i = 0;
  for (; s[i] != '\0'; i++) {
    if (((unsigned char)s[i] & 0xC0) != 0x80 && chars++ == max - 3) break;
  }
  memcpy(s + i, "...", 4);
}

char *cli_base64(const void *data, size_t len) {
  char *out = cli_xmalloc(base64_len(len) + 1);
  base64_encode(data, len, out);
  out[base64_len(len)] = '\0';
  return out;
}

/* ---------------------------------------------------------------- jobs */

const char *cli_job_state(const jobq_job_info *job, int64_t now_ms) {
  if (job->state == JOBQ_STATE_READY && job->run_at_ms > now_ms)
    return "scheduled";
  const char *name = jobq_state_name(job->state);
  return name != NULL ? name : "unknown";
}

json_t *cli_job_json(const jobq_job_info *j, int64_t now_ms, int bodies) {
  json_t *o = cli_json_object();
  cli_json_set(o, "id", json_integer(j->id));
  cli_json_set(o, "queue", cli_json_str(j->queue));
  cli_json_set(o, "state", json_string(cli_job_state(j, now_ms)));
  cli_json_set(o, "priority", json_integer(j->priority));
  cli_json_set(o, "run_at", cli_json_time(j->run_at_ms));
  cli_json_set(o, "key", cli_json_str(j->key));
  cli_json_set(o, "barrier", json_boolean(j->barrier));
  cli_json_set(o, "unique_key", cli_json_str(j->unique_key));
  cli_json_set(o, "attempts", json_integer(j->attempts));
  cli_json_set(o, "max_attempts", json_integer(j->max_attempts));
  cli_json_set(o, "timeout_ms", json_integer(j->timeout_ms));
  cli_json_set(o, "backoff_ms", json_integer(j->backoff_ms));
  cli_json_set(o, "created_at", cli_json_time(j->created_at_ms));
  cli_json_set(o, "claimed_at", cli_json_time(j->claimed_at_ms));
  cli_json_set(o, "finished_at", cli_json_time(j->finished_at_ms));
  cli_json_set(o, "session", cli_json_str(j->session));
  cli_json_set(o, "claim", cli_json_str(j->claim));
  cli_json_set(o, "cancel_requested", json_boolean(j->cancel_requested));
  cli_json_set(o, "prev_lost", json_boolean(j->prev_lost));
  cli_json_set(o, "part", j->part >= 0 ? json_integer(j->part) : json_null());
  cli_json_set(o, "last_error", cli_json_str(j->last_error));
  cli_json_set(o, "payload_len", json_integer((json_int_t)j->payload_len));
  if (bodies) cli_json_bytes(o, "payload", j->payload, j->payload_len);
  cli_json_set(o, "result_len", json_integer((json_int_t)j->result_len));
  if (bodies) cli_json_bytes(o, "result", j->result, j->result_len);
  return o;
}

void cli_print_identity(const jobq_identity *id) {
  char *url = jobq_url_redact(cli_db_url());
  if (url == NULL) cli_oom();
  char now[CLI_TIME_BUF];
  if (cli_global.json) {
    json_t *o = cli_json_object();
    cli_json_set(o, "database", cli_json_str(url));
    cli_json_set(o, "queue_id", json_string(id->queue_id));
    cli_json_set(o, "epoch", json_integer(id->epoch));
    cli_json_set(o, "seq", json_integer(id->seq));
    cli_json_set(o, "schema_version", json_integer(id->schema_version));
    cli_json_set(o, "now", cli_json_time(id->now_ms));
    cli_json_print(o);
  } else {
    cli_field("database", "%s", url);
    cli_field("queue id", "%s", id->queue_id);
    cli_field("epoch", "%lld", (long long)id->epoch);
    cli_field("job sequence", "%lld", (long long)id->seq);
    cli_field("schema version", "%d", id->schema_version);
    cli_field("database clock", "%s", cli_fmt_time(now, id->now_ms));
  }
  free(url);
}

/* ---------------------------------------------------------------- terminal */

int cli_stdout_is_tty(void) { return isatty(STDOUT_FILENO); }

int cli_term_width(void) {
  struct winsize ws;
  if (!isatty(STDOUT_FILENO)) return 0;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 80;
  return ws.ws_col;
}

/* Whether a bar is on the screen, for cli_progress_erase(). */
static int bar_drawn;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_start(struct cli_progress *p, const char *label,
                        const char *unit, int64_t total) {
  p->on = label != NULL && isatty(STDERR_FILENO);
  p->label = label;
  p->unit = unit;
  p->total = total;
  p->last = 0;
}

void cli_progress_update(struct cli_progress *p, int64_t done, int64_t items) {
  if (!p->on) return;
  double now = now_seconds();
  if (now - p->last < 0.1) return;
  p->last = now;
  if (p->total > 0) {
    int64_t pct = done >= p->total ? 100 : done * 100 / p->total;
    char bar[31];
    memset(bar, '.', 30);
    memset(bar, '#', (size_t)(pct * 30 / 100));
    bar[30] = '\0';
    fprintf(stderr, "\r%s [%s] %3lld%%  %lld %s", p->label, bar,
            (long long)pct, (long long)items, p->unit);
  } else {
    fprintf(stderr, "\r%s %lld %s", p->label, (long long)items, p->unit);
  }
  bar_drawn = 1;
  fflush(stderr);
}

static void progress_jobs(void *arg, int64_t done) { cli_progress_update(arg, done, done); }

void cli_progress_bulk(jobq *db, jobq_bulk_opts *o, int quiet, struct cli_progress *bar,
                       const char *label,
                       int (*count)(jobq *, const jobq_bulk_opts *, int64_t *, void *),
                       void *arg) {
  memset(bar, 0, sizeof *bar);
  if (o->dry_run || quiet || cli_global.json || !isatty(STDERR_FILENO)) return;
  int64_t total = 0;
  o->dry_run = 1;
  int rc = count(db, o, &total, arg);
  o->dry_run = 0;
  if (rc != JOBQ_OK || total == 0) return;
  cli_progress_start(bar, label, "jobs", total);
  o->progress = progress_jobs;
  o->progress_arg = bar;
}

void cli_progress_end(struct cli_progress *p) {
  (void)p;
  cli_progress_erase();
}

void cli_progress_erase(void) {
  if (bar_drawn) fputs("\r\033[K", stderr);
  bar_drawn = 0;
}
