/*
 * random.c - unguessable tokens (claim tokens, session ids, queue ids) from
 * the kernel, and a cheap per-handle generator for jitter.
 */
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Random bytes from the kernel into buf (never fails in practice; falls
 * back to the clock and pid). */
static void jobq__random(void *buf, size_t len) {
  unsigned char *p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t r = getrandom(p + got, len - got, 0);
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got < len) {
    /* No kernel randomness (very old kernel): mix the clock and pid.  Not
     * unguessable, but unique enough to keep claims apart. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                 ((uint64_t)getpid() << 40);
    for (size_t i = got; i < len; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      p[i] = (unsigned char)x;
    }
  }
}

uint64_t jobq__rand(jobq *db) {
  uint64_t x = db->rng;
  if (x == 0) jobq__random(&x, sizeof x);
  if (x == 0) x = 0x9e3779b97f4a7c15ULL;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  db->rng = x;
  return x;
}

void jobq__hex(char *out, const unsigned char *bytes, size_t len) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    unsigned char b = bytes[i];
    out[2 * i] = hex[b >> 4];
    out[2 * i + 1] = hex[b & 15];
  }
  out[2 * len] = '\0';
}

void jobq__random_hex(char *out, size_t len) {
  /* One draw into the back half of out, spelled out from the front: the
   * two characters of byte i land at 2i and 2i+1, never past len+i, so
   * no byte is overwritten before it is read. */
  unsigned char *raw = (unsigned char *)out + len;
  jobq__random(raw, len);
  jobq__hex(out, raw, len);
}

void jobq__uuid(char out[37]) {
  unsigned char b[16];
  jobq__random(b, sizeof b);
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(out, 37,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
           b[12], b[13], b[14], b[15]);
}
