/*
 * capture.c - bounded buffers for what jobs write: the head of stdout up
 * to the largest result (a job that writes more is failed, not cut), and
 * the tail of stderr, a ring of the last few KiB, which becomes the error
 * text of a failed job.  Neither ever grows past its bound, whatever a job
 * writes.
 */
#include <stdlib.h>
#include <string.h>

#include "fm.h"

void fm_capture_init(struct fm_capture *c, size_t max) {
  memset(c, 0, sizeof *c);
  c->max = max;
}

void fm_capture_add(struct fm_capture *c, const char *p, size_t n) {
  if (n > c->max - c->len) {
    c->over = 1;
    n = c->max - c->len;
  }
  if (n == 0) return;
  if (c->len + n > c->cap) {
    size_t cap = c->cap ? c->cap : 4096;
    while (cap < c->len + n) cap *= 2;
    if (cap > c->max) cap = c->max;
    c->data = fm_xrealloc(c->data, cap);
    c->cap = cap;
  }
  memcpy(c->data + c->len, p, n);
  c->len += n;
}

char *fm_capture_take(struct fm_capture *c, size_t *len) {
  char *d = c->data;
  *len = c->len;
  c->data = NULL;
  c->len = c->cap = 0;
  return d;
}

void fm_capture_release(struct fm_capture *c) {
  free(c->data);
  c->data = NULL;
  c->len = c->cap = 0;
}

void fm_tail_add(struct fm_tail *t, const char *p, size_t n) {
  t->total += n;
  if (n >= FM_TAIL_MAX) {
    memcpy(t->data, p + n - FM_TAIL_MAX, FM_TAIL_MAX);
    t->end = 0;
    return;
  }
  size_t first = FM_TAIL_MAX - t->end;
  if (first > n) first = n;
  memcpy(t->data + t->end, p, first);
  memcpy(t->data, p + first, n - first);
  t->end = (t->end + n) % FM_TAIL_MAX;
}

void fm_tail_clear(struct fm_tail *t) {
  t->end = 0;
  t->total = 0;
}

char *fm_error_text(const char *what, const struct fm_tail *t, size_t *len) {
  size_t have = t != NULL && t->total < FM_TAIL_MAX ? (size_t)t->total
                : t != NULL ? FM_TAIL_MAX : 0;
  size_t wlen = strlen(what);
  char *out = fm_xmalloc(wlen + 2 + 3 + have + 1);
  memcpy(out, what, wlen);
  size_t o = wlen;
  if (have > 0) {
    /* The ring in order: from end (oldest) when full, else from 0. */
    char *tail = out + wlen + 2 + 3;
    size_t start = t->total < FM_TAIL_MAX ? 0 : t->end;
    for (size_t i = 0; i < have; i++) tail[i] = t->data[(start + i) % FM_TAIL_MAX];
    size_t n = have, skip = 0;
    while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r' ||
                     tail[n - 1] == ' ' || tail[n - 1] == '\t'))
      n--;
    while (skip < n && (tail[skip] == '\n' || tail[skip] == '\r'))
      skip++;
    if (n > skip) {
      memcpy(out + o, ": ", 2);
      o += 2;
      if (t->total > FM_TAIL_MAX) {
        memcpy(out + o, "...", 3);
        o += 3;
      }
      memmove(out + o, tail + skip, n - skip);
      o += n - skip;
    }
  }
  out[o] = '\0';
  *len = o;
  return out;
}
