/*
 * ndjson.c - the input of `jobq put --ndjson`: lines read one at a time
 * (blank ones skipped, each bounded), and each line a JSON object whose
 * fields describe a job (queue, payload or payload_base64, priority,
 * delay, run_at, key, barrier, unique, max_attempts, timeout, backoff,
 * after, after_index, after_any_outcome),
 * turned into jobq_put_opts on top of the command's defaults.  Every
 * wrong field gets a message naming it and what is expected.  Kept apart
 * from the command so that it can be fuzzed on its own.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "ndjson.h"
#include "options.h"
#include "output.h"
#include "util.h"

/* The fields of a line. */
enum field {
  F_QUEUE,
  F_PAYLOAD,
  F_PAYLOAD_BASE64,
  F_PRIORITY,
  F_DELAY,
  F_RUN_AT,
  F_KEY,
  F_BARRIER,
  F_UNIQUE,
  F_MAX_ATTEMPTS,
  F_TIMEOUT,
  F_BACKOFF,
  F_AFTER,
  F_AFTER_INDEX,
  F_AFTER_ANY,
  NFIELDS
};
static const char *const fields[NFIELDS] = {[F_QUEUE] = "queue",
                                            [F_PAYLOAD] = "payload",
                                            [F_PAYLOAD_BASE64] = "payload_base64",
                                            [F_PRIORITY] = "priority",
                                            [F_DELAY] = "delay",
                                            [F_RUN_AT] = "run_at",
                                            [F_KEY] = "key",
                                            [F_BARRIER] = "barrier",
                                            [F_UNIQUE] = "unique",
                                            [F_MAX_ATTEMPTS] = "max_attempts",
                                            [F_TIMEOUT] = "timeout",
                                            [F_BACKOFF] = "backoff",
                                            [F_AFTER] = "after",
                                            [F_AFTER_INDEX] = "after_index",
                                            [F_AFTER_ANY] = "after_any_outcome"};

/* Where a line's message goes. */
struct err {
  char *buf;
  size_t len;
};

static int line_error(struct err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Keeps the message; returns -1. */
static int line_error(struct err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->buf, e->len, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
  }
}

/* A duration field: "5s" or integer milliseconds, from 0 to max. */
static int line_duration(struct err *line, const char *name, const json_t *v,
                         int64_t max, int64_t *ms) {
  char shown[CLI_QUOTE_BUF], most[CLI_TIME_BUF];
  int64_t got;
  if (json_is_integer(v)) {
    got = json_integer_value(v);
    if (got < 0)
      return line_error(line, "invalid %s '%lld': expected zero or more "
                        "milliseconds",
                        name, (long long)got);
    if (got > max)
      return line_error(line, "invalid %s '%lld': expected at most %lld "
                        "milliseconds (%s)",
                        name, (long long)got, (long long)max,
                        cli_fmt_duration(most, max));
  } else if (json_is_string(v)) {
    const char *text = json_string_value(v);
    if (jobq_parse_duration(text, &got) != JOBQ_OK)
      return line_error(line, "invalid %s '%s': expected a duration like 30s, "
                        "5m or 1h30m",
                        name, cli_quote(shown, text));
    if (got > max)
      return line_error(line, "invalid %s '%s': expected at most %s", name,
                        cli_quote(shown, text), cli_fmt_duration(most, max));
  } else {
    return line_error(line, "invalid %s: expected a duration string like \"30s\" "
                      "or integer milliseconds, not %s",
                      name, type_name(v));
  }
  *ms = got;
  return 0;
}

/* An integer field within [min, max]. */
static int line_int(struct err *line, const char *name, const json_t *v, int64_t min,
                    int64_t max, int *out) {
  if (!json_is_integer(v))
    return line_error(line, "invalid %s: expected an integer from %lld to %lld, "
                      "not %s",
                      name, (long long)min, (long long)max, type_name(v));
  json_int_t i = json_integer_value(v);
  if (i < min || i > max)
    return line_error(line, "invalid %s '%lld': expected an integer from %lld "
                      "to %lld",
                      name, (long long)i, (long long)min, (long long)max);
  *out = (int)i;
  return 0;
}

/* An array field of integers from min up (after, after_index): a new
 * array of them in *out (room for extra more), their number in *n. */
static int line_ints(struct err *line, const char *name, const json_t *v, int64_t min,
                     size_t extra, int64_t **out, size_t *n) {
  if (!json_is_array(v))
    return line_error(line, "invalid %s: expected an array of %s, not %s", name,
                      min > 0 ? "job ids" : "places of earlier lines", type_name(v));
  size_t len = json_array_size(v);
  if (len > JOBQ_AFTER_MAX)
    return line_error(line, "invalid %s: %zu jobs: expected at most %d", name, len,
                      JOBQ_AFTER_MAX);
  *out = cli_xmalloc((len + extra + 1) * sizeof **out);
  *n = len;
  for (size_t i = 0; i < len; i++) {
    const json_t *e = json_array_get(v, i);
    if (!json_is_integer(e) || json_integer_value(e) < min)
      return line_error(line, "invalid %s: expected %s, not %s", name,
                        min > 0 ? "job ids (integers from 1)"
                                : "places of earlier lines (integers from 0)",
                        json_is_integer(e) ? "a smaller integer" : type_name(e));
    (*out)[i] = json_integer_value(e);
  }
  return 0;
}

/* payload_base64 (padding optional) into a new buffer *out of *outlen
 * bytes and a NUL (caller frees); 0, or -1 when text is not base64. */
static int decode(const char *text, size_t len, char **out, size_t *outlen) {
  unsigned char *buf = cli_xmalloc(len / 4 * 3 + 3);
  if (base64_decode(text, len, BASE64_PAD_OPTIONAL, buf, outlen) != 0) {
    free(buf);
    return -1;
  }
  buf[*outlen] = '\0';
  *out = (char *)buf;
  return 0;
}

int ndjson_parse(const char *text, size_t len, const jobq_put_opts *base,
                 struct ndjson_job *job, char *errbuf, size_t errlen) {
  struct err e = {errbuf, errlen}, *line = &e;
  job->json = NULL;
  job->decoded = NULL;
  job->after = NULL;
  job->after_index = NULL;
  json_error_t err;
  json_t *obj = json_loadb(text, len,
                           JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
                               JSON_ALLOW_NUL,
                           &err);
  if (obj == NULL) {
    return line_error(line, "invalid JSON: %s (column %d)", err.text,
                      err.column);
  }
  job->json = obj; /* owned by the job from here on */
  if (!json_is_object(obj))
    return line_error(line, "expected a JSON object like {\"payload\":\"...\"}, "
                      "not %s",
                      type_name(obj));
  jobq_put_opts *o = &job->opts;
  *o = *base;
  const char *key;
  json_t *v;
  int has_delay = 0, has_run_at = 0, has_payload = 0;
  char shown[CLI_QUOTE_BUF];
  json_object_foreach(obj, key, v) {
    enum field f;
    for (f = 0; f < NFIELDS; f++)
      if (strcmp(key, fields[f]) == 0) break;
    if (f == NFIELDS) {
      const char *best = cli_suggest(key, fields, NFIELDS);
      if (best != NULL)
        return line_error(line, "unknown field '%s': did you mean '%s'?",
                          cli_quote(shown, key), best);
      char known[256];
      size_t used = 0;
      for (size_t i = 0; i < NFIELDS; i++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s",
                                 i == 0 ? "" : i + 1 == NFIELDS ? " or " : ", ",
                                 fields[i]);
      return line_error(line, "unknown field '%s': expected %s",
                        cli_quote(shown, key), known);
    }
    if (json_is_null(v)) continue; /* the default */
    int is_text = f == F_QUEUE || f == F_PAYLOAD || f == F_PAYLOAD_BASE64 ||
                  f == F_KEY || f == F_UNIQUE;
    if (is_text && !json_is_string(v))
      return line_error(line, "invalid %s: expected a string, not %s", key,
                        type_name(v));
    /* A name or key is C text: a NUL inside would cut it short. */
    if (is_text && f != F_PAYLOAD && f != F_PAYLOAD_BASE64 &&
        strlen(json_string_value(v)) != json_string_length(v))
      return line_error(line, "invalid %s: expected text without NUL "
                        "(\\u0000) characters",
                        key);
    int64_t ms;
    switch (f) {
      case F_QUEUE: o->queue = json_string_value(v); break;
      case F_PAYLOAD:
      case F_PAYLOAD_BASE64:
        if (has_payload)
          return line_error(line, "payload and payload_base64 were both "
                            "given: expected one");
        has_payload = 1;
        if (f == F_PAYLOAD) {
          o->payload = json_string_value(v);
          o->payload_len = json_string_length(v);
        } else if (decode(json_string_value(v), json_string_length(v), &job->decoded,
                          &o->payload_len) != 0) {
          return line_error(line, "invalid payload_base64: expected standard "
                            "base64");
        } else {
          o->payload = job->decoded;
        }
        break;
      case F_PRIORITY:
        if (line_int(line, key, v, JOBQ_PRIORITY_MIN, JOBQ_PRIORITY_MAX,
                     &o->priority))
          return -1;
        break;
      case F_DELAY:
        if (line_duration(line, key, v, JOBQ_DURATION_MAX_MS, &ms)) return -1;
        o->delay_ms = ms;
        o->run_at_ms = 0;
        has_delay = 1;
        break;
      case F_RUN_AT:
        if (json_is_integer(v) && json_integer_value(v) > 0 &&
            json_integer_value(v) <= JOBQ_TIME_MAX_MS) {
          o->run_at_ms = json_integer_value(v);
        } else if (json_is_integer(v) && json_integer_value(v) > 0) {
          return line_error(line, "invalid run_at '%lld': expected Unix "
                            "milliseconds up to %lld (9999-12-31T23:59:59.999Z)",
                            (long long)json_integer_value(v), JOBQ_TIME_MAX_MS);
        } else if (json_is_string(v)) {
          const char *why;
          if (cli_time_from_text(json_string_value(v), &o->run_at_ms, &why) != 0)
            return line_error(line, "invalid run_at '%s': expected %s",
                              cli_quote(shown, json_string_value(v)), why);
        } else {
          return line_error(line, "invalid run_at: expected an RFC 3339 time "
                            "string or positive Unix milliseconds, not %s",
                            json_is_integer(v) ? "zero or less" : type_name(v));
        }
        o->delay_ms = 0;
        has_run_at = 1;
        break;
      case F_KEY: o->key = json_string_value(v); break;
      case F_BARRIER:
        if (!json_is_boolean(v))
          return line_error(line, "invalid barrier: expected true or false, "
                            "not %s",
                            type_name(v));
        o->barrier = json_is_true(v);
        break;
      case F_UNIQUE: o->unique_key = json_string_value(v); break;
      case F_MAX_ATTEMPTS:
        if (line_int(line, key, v, 1, JOBQ_ATTEMPTS_MAX, &o->max_attempts))
          return -1;
        break;
      case F_TIMEOUT:
        if (line_duration(line, key, v, JOBQ_DURATION_MAX_MS, &o->timeout_ms))
          return -1;
        break;
      case F_BACKOFF:
        if (line_duration(line, key, v, JOBQ_BACKOFF_CAP_MS, &o->backoff_ms))
          return -1;
        break;
      case F_AFTER:
        free(job->after);
        job->after = NULL;
        if (line_ints(line, key, v, 1, JOBQ_AFTER_MAX, &job->after, &o->n_after))
          return -1;
        o->after = job->after;
        break;
      case F_AFTER_INDEX: {
        int64_t *places = NULL;
        size_t n = 0;
        int r = line_ints(line, key, v, 0, 0, &places, &n);
        free(job->after_index);
        job->after_index = cli_xmalloc((n + 1) * sizeof *job->after_index);
        for (size_t i = 0; i < n && r == 0; i++) job->after_index[i] = (size_t)places[i];
        free(places);
        if (r) return -1;
        o->after_index = job->after_index;
        o->n_after_index = n;
        break;
      }
      case F_AFTER_ANY:
        if (!json_is_boolean(v))
          return line_error(line,
                            "invalid after_any_outcome: expected true or false, "
                            "not %s",
                            type_name(v));
        o->after_any_outcome = json_is_true(v);
        break;
      case NFIELDS:
        break;
    }
  }
  if (has_delay && has_run_at)
    return line_error(line, "delay and run_at were both given: expected one "
                      "of them");
  return 0;
}

void ndjson_job_release(struct ndjson_job *job) {
  json_decref(job->json);
  free(job->decoded);
  free(job->after);
  free(job->after_index);
  job->json = NULL;
  job->decoded = NULL;
  job->after = NULL;
  job->after_index = NULL;
}

/* ---------------------------------------------------------------- lines */

void ndjson_reader_init(struct ndjson_reader *r, FILE *f, size_t max) {
  memset(r, 0, sizeof *r);
  r->f = f;
  r->max = max;
}

/* Reads one line into r->buf, without its newline: 1, 0 at the end, 2
 * when over r->max bytes, -1 on a read error. */
static int read_line(struct ndjson_reader *r, size_t *len) {
  size_t n = 0;
  int c, over = 0;
  while ((c = getc_unlocked(r->f)) != EOF) {
    r->bytes++;
    if (c == '\n') break;
    if (n >= r->max) {
      over = 1;
      continue;
    }
    if (n + 1 >= r->cap) {
      r->cap = r->cap ? r->cap * 2 : 4096;
      r->buf = cli_xrealloc(r->buf, r->cap);
    }
    r->buf[n++] = (char)c;
  }
  if (ferror(r->f)) return -1;
  if (c == EOF && n == 0 && !over) return 0;
  if (r->buf == NULL) r->buf = cli_xrealloc(NULL, r->cap = 64);
  r->buf[n] = '\0';
  *len = n;
  return over ? 2 : 1;
}

int ndjson_next(struct ndjson_reader *r, const char **text, size_t *len) {
  for (;;) {
    int got = read_line(r, len);
    if (got == 0 || got == -1) return got;
    r->line++;
    if (got == 2) return 2;
    size_t blank = 0;
    while (blank < *len && (r->buf[blank] == ' ' || r->buf[blank] == '\t' ||
                            r->buf[blank] == '\r'))
      blank++;
    if (blank < *len) {
      *text = r->buf;
      return 1;
    }
  }
}

void ndjson_reader_release(struct ndjson_reader *r) {
  free(r->buf);
  r->buf = NULL;
  r->cap = 0;
}
