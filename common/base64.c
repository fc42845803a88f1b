/*
 * base64.c - standard base64, encoded and decoded (base64.h).
 */
#include <stdint.h>

#include "base64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_len(size_t n) { return (n + 2) / 3 * 4; }

void base64_encode(const void *in, size_t n, char *out) {
  const unsigned char *p = in;
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    out[o++] = alphabet[v >> 18 & 63];
    out[o++] = alphabet[v >> 12 & 63];
    out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? alphabet[v & 63] : '=';
  }
}

static int value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int base64_decode(const char *in, size_t len, enum base64_padding padding,
                  unsigned char *out, size_t *outlen) {
  size_t tail = len % 4;
  if (tail != 0 && (padding == BASE64_PADDED || tail == 1)) return -1;
  size_t o = 0;
  for (size_t i = 0; i < len; i += 4) {
    int last = i + 4 >= len, pad = 0;
    uint32_t w = 0;
    for (size_t k = 0; k < 4; k++) {
      int v = 0;
      if (i + k >= len) {
        pad++; /* left out: as if padded */
      } else if (in[i + k] == '=' && last && k >= 2) {
        pad++;
      } else if (pad > 0 || (v = value((unsigned char)in[i + k])) < 0) {
        return -1; /* data after padding, or outside the alphabet */
      }
      w = w << 6 | (uint32_t)v;
    }
    out[o++] = (unsigned char)(w >> 16);
    if (pad < 2) out[o++] = (unsigned char)(w >> 8);
    if (pad < 1) out[o++] = (unsigned char)w;
  }
  *outlen = o;
  return 0;
}
