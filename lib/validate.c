/*
 * validate.c - checks of everything a caller hands in, shared by every
 * store, so that bad input is refused before any SQL runs and the message
 * names the input and what was expected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* "job 7: " for jobq_put_many(), "" otherwise. */
static const char *prefix(char *buf, size_t len, long index) {
  if (index < 0) return "";
  snprintf(buf, len, "job %ld: ", index);
  return buf;
}

/* Copies at most 40 bytes of s for a message, with "..." when cut. */
static const char *shown(char *buf, size_t len, const char *s) {
  size_t n = strlen(s);
  if (n < 41 || len < 45) {
    snprintf(buf, len, "%s", s);
  } else {
    snprintf(buf, len, "%.40s...", s);
  }
  return buf;
}

static int queue_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > JOBQ_QUEUE_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return 0;
  }
  return 1;
}

static int check_queue_at(jobq *db, const char *name, long index) {
  char p[32], s[48];
  if (name == NULL || !queue_name_ok(name))
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid queue name '%s': expected 1 to 63 characters "
                      "of a-z, 0-9, '_', '.', '-', starting with a letter or digit",
                      prefix(p, sizeof p, index),
                      shown(s, sizeof s, name ? name : ""));
  return JOBQ_OK;
}

int jobq_check_queue(jobq *db, const char *name) {
  return check_queue_at(db, name, -1);
}

/* The length of the UTF-8 sequence at s (at most left bytes), or 0 when
 * it is not valid (overlong forms, surrogates and NUL included). */
static size_t utf8_seq(const unsigned char *s, size_t left) {
  unsigned c = s[0];
  if (c == 0) return 0;
  if (c < 0x80) return 1;
  size_t n;
  unsigned min;
  if ((c & 0xe0) == 0xc0) n = 2, min = 0x80, c &= 0x1f;
  else if ((c & 0xf0) == 0xe0) n = 3, min = 0x800, c &= 0x0f;
  else if ((c & 0xf8) == 0xf0) n = 4, min = 0x10000, c &= 0x07;
  else return 0;
  if (n > left) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  return n;
}

int jobq__utf8_valid(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0) return 0;
    i += n;
  }
  return 1;
}

int jobq__utf8_clean(const char *s, size_t len, char **out, size_t *out_len) {
  *out = NULL;
  *out_len = len;
  if (jobq__utf8_valid(s, len)) return JOBQ_OK;
  char *c = malloc(len + 1);
  if (c == NULL) return JOBQ_ENOMEM;
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_seq(p + i, len - i);
    if (n == 0) {
      c[i++] = '?';
    } else {
      memcpy(c + i, p + i, n);
      i += n;
    }
  }
  c[len] = '\0';
  *out = c;
  return JOBQ_OK;
}

int jobq__check_key(jobq *db, const char *what, const char *key, long index) {
  char p[32], s[48];
  if (key == NULL) return JOBQ_OK;
  size_t n = strlen(key);
  if (n == 0 || n > JOBQ_KEY_MAX)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid %s '%s': expected 1 to %d bytes",
                      prefix(p, sizeof p, index), what, shown(s, sizeof s, key),
                      JOBQ_KEY_MAX);
  if (!jobq__utf8_valid(key, n))
    return jobq__fail(db, JOBQ_EINVAL, "%sinvalid %s: expected valid UTF-8 text",
                      prefix(p, sizeof p, index), what);
  return JOBQ_OK;
}

/* The parents of job index (-1: a lone put) of a put. */
static int check_after(jobq *db, const jobq_put_opts *o, long index) {
  char p[32];
  if ((o->after == NULL && o->n_after > 0) ||
      (o->after_index == NULL && o->n_after_index > 0))
    return jobq__fail(db, JOBQ_EINVAL, "%sinvalid after: NULL with length %zu",
                      prefix(p, sizeof p, index),
                      o->after == NULL ? o->n_after : o->n_after_index);
  if (o->n_after + o->n_after_index > JOBQ_AFTER_MAX)
    return jobq__fail(db, JOBQ_EINVAL, "%s%zu jobs named by after: expected at most %d",
                      prefix(p, sizeof p, index), o->n_after + o->n_after_index,
                      JOBQ_AFTER_MAX);
  if (o->n_after + o->n_after_index == 0) return JOBQ_OK;
  for (size_t k = 0; k < o->n_after; k++)
    if (o->after[k] <= 0)
      return jobq__fail(db, JOBQ_EINVAL, "%sinvalid after id '%lld': expected a job id",
                        prefix(p, sizeof p, index), (long long)o->after[k]);
  if (o->n_after_index > 0 && index < 0)
    return jobq__fail(db, JOBQ_EINVAL,
                      "after_index names jobs of the same batch: expected jobq_put_many");
  for (size_t k = 0; k < o->n_after_index; k++)
    if (o->after_index[k] >= (size_t)index)
      return jobq__fail(
          db, JOBQ_EINVAL,
          "%sinvalid after_index '%zu': expected the place of an earlier job "
          "of the batch (0 to %ld)",
          prefix(p, sizeof p, index), o->after_index[k], index - 1);
  return JOBQ_OK;
}

int jobq__check_put(jobq *db, const jobq_put_opts *o, long index) {
  char p[32];
  int rc = check_queue_at(db, o->queue ? o->queue : JOBQ_DEFAULT_QUEUE, index);
  if (rc != JOBQ_OK) return rc;
  if (o->payload == NULL && o->payload_len > 0)
    return jobq__fail(db, JOBQ_EINVAL, "%sinvalid payload: NULL with length %zu",
                      prefix(p, sizeof p, index), o->payload_len);
  if (o->payload_len > db->max_payload)
    return jobq__fail(db, JOBQ_ETOOBIG,
                      "%spayload of %zu bytes is over the limit of %zu bytes",
                      prefix(p, sizeof p, index), o->payload_len,
                      db->max_payload);
  if (o->priority < JOBQ_PRIORITY_MIN || o->priority > JOBQ_PRIORITY_MAX)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid priority '%d': expected an integer from %d to %d",
                      prefix(p, sizeof p, index), o->priority, JOBQ_PRIORITY_MIN,
                      JOBQ_PRIORITY_MAX);
  if (o->delay_ms < 0 || o->delay_ms > JOBQ_DURATION_MAX_MS)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid delay '%lldms': expected 0 to %lldms (100 years)",
                      prefix(p, sizeof p, index), (long long)o->delay_ms,
                      JOBQ_DURATION_MAX_MS);
  if (o->run_at_ms < 0 || o->run_at_ms > JOBQ_TIME_MAX_MS)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid run-at '%lld': expected Unix milliseconds from 1 to "
                      "%lld (9999-12-31T23:59:59.999Z), or 0 for none",
                      prefix(p, sizeof p, index), (long long)o->run_at_ms,
                      JOBQ_TIME_MAX_MS);
  if (o->delay_ms > 0 && o->run_at_ms > 0)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sa delay and a run-at time were both given: expected one",
                      prefix(p, sizeof p, index));
  if (o->max_attempts < 1 || o->max_attempts > JOBQ_ATTEMPTS_MAX)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid max attempts '%d': expected 1 to %d",
                      prefix(p, sizeof p, index), o->max_attempts,
                      JOBQ_ATTEMPTS_MAX);
  if (o->timeout_ms < 0 || o->timeout_ms > JOBQ_DURATION_MAX_MS)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid timeout '%lldms': expected 0 (none) to %lldms (100 "
                      "years)",
                      prefix(p, sizeof p, index), (long long)o->timeout_ms,
                      JOBQ_DURATION_MAX_MS);
  if (o->backoff_ms < 0 || o->backoff_ms > JOBQ_BACKOFF_CAP_MS)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sinvalid backoff '%lldms': expected 0 to 1h",
                      prefix(p, sizeof p, index), (long long)o->backoff_ms);
  if ((rc = jobq__check_key(db, "key", o->key, index)) != JOBQ_OK) return rc;
  if ((rc = jobq__check_key(db, "unique key", o->unique_key, index)) != JOBQ_OK)
    return rc;
  if (o->barrier && o->key != NULL)
    return jobq__fail(db, JOBQ_EINVAL,
                      "%sa barrier cannot have an ordering key: expected one or the other",
                      prefix(p, sizeof p, index));
  return check_after(db, o, index);
}
