/*
 * proto.c - the line protocol between the foreman and its persistent
 * workers (docs/worker-protocol.md): the "job" line the foreman writes and
 * the strict parser of the "done", "fail" and "retry" replies it reads.
 * A worker first writes "ready" once it can take jobs.  Every line is
 * printable ASCII: fields are separated by one space, and bytes (keys,
 * payloads, results, error texts) travel as standard base64, so that any
 * payload is safe and a worker needs only a line reader and a base64
 * decoder, which every language has (a shell has base64(1)).  Anything
 * that is not exactly a reply is refused with a reason: the foreman then
 * kills the worker and fails its job.  The base64 (common/base64.c) is
 * stricter here than on the command line, which forgives missing
 * padding: a worker's bytes must be exactly right.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "fm.h"

/* ---------------------------------------------------------------- job line */

/* Appends bytes as base64, or "-" when there are none. */
static size_t put_bytes(char *out, const void *data, size_t len) {
  if (len == 0) {
    out[0] = '-';
    return 1;
  }
  base64_encode(data, len, out);
  return base64_len(len);
}

char *fm_proto_job(const jobq_job *job, size_t *len) {
  size_t klen = job->key != NULL ? strlen(job->key) : 0;
  size_t cap = 160 + strlen(job->queue) + base64_len(klen) +
               base64_len(job->payload_len);
  char *line = fm_xmalloc(cap);
  int n = snprintf(line, cap, "job %" PRId64 " %s %d %d %d %s ", job->id,
                   job->queue, job->attempt, job->max_attempts,
                   job->prev_lost ? 1 : 0, job->claim);
  size_t o = (size_t)n;
  o += put_bytes(line + o, job->key, klen);
  line[o++] = ' ';
  o += put_bytes(line + o, job->payload, job->payload_len);
  line[o++] = '\n';
  *len = o;
  return line;
}

/* ---------------------------------------------------------------- replies */

int fm_proto_ready(const char *line, size_t len) {
  return len == 5 && memcmp(line, "ready", 5) == 0;
}

size_t fm_proto_max_line(size_t max_data) {
  return 32 + 20 + 20 + base64_len(max_data);
}

#define MAX_TOKENS 5

static int refuse(char *why, size_t whysize, const char *fmt, const char *a) {
  snprintf(why, whysize, fmt, a);
  return -1;
}

/* A decimal integer in [min, max] of exactly len bytes. */
static int number(const char *s, size_t len, int64_t min, int64_t max,
                  int64_t *v) {
  if (len == 0 || len > 18) return -1;
  int64_t r = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    r = r * 10 + (s[i] - '0');
  }
  if (len > 1 && s[0] == '0') return -1;
  if (r < min || r > max) return -1;
  *v = r;
  return 0;
}

int fm_proto_reply(const char *line, size_t len, size_t max_data,
                   struct fm_reply *r, char *why, size_t whysize) {
  static const char expected[] =
      "expected 'done ID [RESULT]', 'fail ID [ERROR]' or "
      "'retry ID [DELAY_MS [REASON]]'%s";
  memset(r, 0, sizeof *r);
  r->delay_ms = -1;
  const char *tok[MAX_TOKENS];
  size_t tlen[MAX_TOKENS], nt = 0;
  size_t i = 0;
  if (len == 0)
    return refuse(why, whysize, "an empty line: %s", "expected a reply");
  for (size_t k = 0; k < len; k++) {
    unsigned char c = (unsigned char)line[k];
    if (c < 0x21 && c != ' ')
      return refuse(why, whysize, "a control character in the reply: %s",
                    "expected printable ASCII");
    if (c > 0x7e)
      return refuse(why, whysize, "a byte over 0x7e in the reply: %s",
                    "expected printable ASCII (bytes go as base64)");
  }
  while (i <= len) {
    size_t j = i;
    while (j < len && line[j] != ' ') j++;
    if (j == i) return refuse(why, whysize, expected, ", one space between fields");
    if (nt == MAX_TOKENS) return refuse(why, whysize, expected, ", not more fields");
    tok[nt] = line + i;
    tlen[nt++] = j - i;
    i = j + 1;
  }
  if (nt >= 1 && tlen[0] == 4 && memcmp(tok[0], "done", 4) == 0)
    r->kind = FM_REPLY_DONE;
  else if (nt >= 1 && tlen[0] == 4 && memcmp(tok[0], "fail", 4) == 0)
    r->kind = FM_REPLY_FAIL;
  else if (nt >= 1 && tlen[0] == 5 && memcmp(tok[0], "retry", 5) == 0)
    r->kind = FM_REPLY_RETRY;
  else
    return refuse(why, whysize, expected, "");
  size_t most = r->kind == FM_REPLY_RETRY ? 4 : 3;
  if (nt < 2) return refuse(why, whysize, expected, ": the job id is missing");
  if (nt > most) return refuse(why, whysize, expected, ", not more fields");
  if (number(tok[1], tlen[1], 1, INT64_MAX / 2, &r->id) != 0)
    return refuse(why, whysize, expected, ": ID is a job id, a positive integer");
  size_t data_at = 2;
  if (r->kind == FM_REPLY_RETRY && nt >= 3) {
    data_at = 3;
    if (!(tlen[2] == 1 && tok[2][0] == '-') &&
        number(tok[2], tlen[2], 0, JOBQ_DURATION_MAX_MS, &r->delay_ms) != 0)
      return refuse(why, whysize, expected,
                    ": DELAY_MS is zero or more milliseconds, or '-' for the "
                    "job's backoff");
  }
  if (nt > data_at && !(tlen[data_at] == 1 && tok[data_at][0] == '-')) {
    size_t blen = tlen[data_at];
    unsigned char *data = fm_xmalloc(blen / 4 * 3 + 1);
    size_t dlen;
    if (base64_decode(tok[data_at], blen, BASE64_PADDED, data, &dlen) != 0) {
      free(data);
      return refuse(why, whysize, expected,
                    ": the last field is standard base64 with padding, or '-'");
    }
    if (dlen > max_data) {
      free(data);
      char limit[64];
      snprintf(limit, sizeof limit, "%zu bytes", max_data);
      snprintf(why, whysize, "the %s of %zu bytes is over the limit of %s",
               r->kind == FM_REPLY_DONE ? "result" : "text", dlen, limit);
      return -2;
    }
    data[dlen] = '\0';
    r->data = (char *)data;
    r->len = dlen;
  }
  return 0;
}
