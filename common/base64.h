/*
 * base64.h - standard base64 (RFC 4648: A-Z a-z 0-9 + /, padded with =),
 * the one encoder and decoder of the programs: the command line's
 * payload_base64 and its output of bytes that are not text (cli/), and
 * the worker protocol's fields (foreman/).  common/ holds what the
 * programs share that uses nothing of the library: libc alone.
 */
#ifndef JOBQ_COMMON_BASE64_H
#define JOBQ_COMMON_BASE64_H

#include <stddef.h>

/* The characters base64_encode() writes for n bytes. */
size_t base64_len(size_t n);

/* Writes the base64_len(n) characters of in's n bytes to out, padded, with
 * no NUL after them. */
void base64_encode(const void *in, size_t n, char *out);

/* How strict base64_decode() is: the worker protocol wants every byte
 * exactly right; a person's input may leave the padding out. */
enum base64_padding { BASE64_PADDED, BASE64_PAD_OPTIONAL };

/* Decodes len characters of in into out, which has room for len / 4 * 3
 * + 2 bytes: 0 with *outlen set, or -1 for a character outside the
 * alphabet, padding anywhere but at the end, or (BASE64_PADDED) a length
 * that is not a multiple of 4.  out holds no NUL after the bytes. */
int base64_decode(const char *in, size_t len, enum base64_padding padding,
                  unsigned char *out, size_t *outlen);

#endif
