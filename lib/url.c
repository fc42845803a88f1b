/*
 * url.c - database URLs: parsing into a jobq_url for the stores, and the
 * one redaction function that keeps passwords out of every message.
 *
 *   sqlite:PATH  sqlite:///ABS/PATH  sqlite:PATH?busy_timeout=5s
 *   SCHEME://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/DB[?K=V&...]
 *
 * Percent-encoding is decoded in every part.  A message about a URL shows
 * it redacted.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Decodes %XX in [s, s+len) into a new string; NULL on bad encoding. */
static char *decode(const char *s, size_t len, int *bad) {
  char *out = malloc(len + 1);
  if (out == NULL) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '%') {
      if (i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
          isxdigit((unsigned char)s[i + 2])) {
        char hex[3] = {s[i + 1], s[i + 2], 0};
        out[o++] = (char)strtol(hex, NULL, 16);
        i += 2;
        continue;
      }
      free(out);
      *bad = 1;
      return NULL;
    }
    out[o++] = s[i];
  }
  out[o] = '\0';
  return out;
}

char *jobq_url_redact(const char *url) {
  if (url == NULL) return strdup("");
  char *out = strdup(url);
  if (out == NULL) return NULL;
  char *sep = strstr(out, "://");
  if (sep != NULL) {
    char *auth = sep + 3;
    /* The authority as the parser sees it: up to the path or the query. */
    size_t alen = strcspn(auth, "/?");
    char *at = NULL;
    for (size_t i = 0; i < alen; i++)
      if (auth[i] == '@') at = auth + i;
    if (at != NULL) {
      char *colon = memchr(auth, ':', (size_t)(at - auth));
      if (colon != NULL) {
        size_t rest = strlen(at);
        char *r = malloc((size_t)(colon - out) + 4 + rest + 1);
        if (r == NULL) {
          free(out);
          return NULL;
        }
        size_t head = (size_t)(colon - out) + 1;
        memcpy(r, out, head);
        memcpy(r + head, "***", 3);
        memcpy(r + head + 3, at, rest + 1);
        free(out);
        out = r;
      }
    }
  }
  /* password=... in the query string */
  char *q = strchr(out, '?');
  while (q != NULL) {
    char *p = strstr(q, "password=");
    if (p == NULL) break;
    if (p[-1] != '?' && p[-1] != '&') {
      q = p + 1;
      continue;
    }
    char *v = p + 9;
    size_t vlen = strcspn(v, "&#");
    size_t tail = strlen(v + vlen);
    char *r = malloc((size_t)(v - out) + 3 + tail + 1);
    if (r == NULL) {
      free(out);
      return NULL;
    }
    memcpy(r, out, (size_t)(v - out));
    memcpy(r + (v - out), "***", 3);
    memcpy(r + (v - out) + 3, v + vlen, tail + 1);
    size_t off = (size_t)(v - out) + 3;
    free(out);
    out = r;
    q = out + off;
  }
  return out;
}

static int bad_url(jobq *db, const char *text, const char *what) {
  char *red = jobq_url_redact(text);
  jobq__fail(db, JOBQ_EURL, "invalid database url '%s': %s",
             red ? red : "", what);
  free(red);
  return JOBQ_EURL;
}

void jobq__url_release(jobq_url *u) {
  if (u == NULL) return;
  free(u->scheme);
  free(u->path);
  free(u->user);
  free(u->password);
  free(u->host);
  free(u->port);
  free(u->dbname);
  for (size_t i = 0; i < u->nopts; i++) {
    free(u->keys[i]);
    free(u->values[i]);
  }
  free(u->keys);
  free(u->values);
  memset(u, 0, sizeof *u);
}

const char *jobq__url_opt(const jobq_url *u, const char *key) {
  for (size_t i = 0; i < u->nopts; i++)
    if (strcmp(u->keys[i], key) == 0) return u->values[i];
  return NULL;
}

static int parse_query(jobq *db, const char *text, const char *q,
                       jobq_url *u) {
  while (*q != '\0') {
    size_t len = strcspn(q, "&");
    if (len > 0) {
      const char *eq = memchr(q, '=', len);
      if (eq == NULL) return bad_url(db, text, "expected KEY=VALUE options after '?'");
      int bad = 0;
      char *k = decode(q, (size_t)(eq - q), &bad);
      char *v = k ? decode(eq + 1, len - (size_t)(eq - q) - 1, &bad) : NULL;
      char **nk = v ? realloc(u->keys, (u->nopts + 1) * sizeof *nk) : NULL;
      if (nk) u->keys = nk;
      char **nv = nk ? realloc(u->values, (u->nopts + 1) * sizeof *nv) : NULL;
      if (nv) u->values = nv;
      if (nv == NULL) {
        free(k);
        free(v);
        if (bad) return bad_url(db, text, "bad percent-encoding");
        return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      }
      u->keys[u->nopts] = k;
      u->values[u->nopts] = v;
      u->nopts++;
    }
    q += len;
    if (*q == '&') q++;
  }
  return JOBQ_OK;
}

/* Checks one HOST[:PORT] or [V6]:PORT of a network URL's host list. */
static int check_host(jobq *db, const char *text, const char *h, size_t len) {
  if (len == 0) return bad_url(db, text, "expected a host name after '//'");
  const char *port = NULL;
  size_t hlen = len;
  if (h[0] == '[') {
    const char *close = memchr(h, ']', len);
    if (close == NULL) return bad_url(db, text, "unclosed '[' in an IPv6 address");
    hlen = (size_t)(close - h) + 1;
    if (hlen < len) {
      if (h[hlen] != ':') return bad_url(db, text, "expected ':PORT' after ']'");
      port = h + hlen + 1;
    }
  } else {
    const char *colon = memchr(h, ':', len);
    if (colon != NULL) {
      if (memchr(colon + 1, ':', len - (size_t)(colon - h) - 1) != NULL)
        return bad_url(db, text, "an IPv6 address must be in brackets, like [::1]:5432");
      hlen = (size_t)(colon - h);
      port = colon + 1;
    }
  }
  if (hlen == 0) return bad_url(db, text, "expected a host name before ':'");
  if (port != NULL) {
    size_t plen = len - (size_t)(port - h);
    long v = 0;
    if (plen == 0 || plen > 5) return bad_url(db, text, "expected a port from 1 to 65535");
    for (size_t i = 0; i < plen; i++) {
      if (!isdigit((unsigned char)port[i]))
        return bad_url(db, text, "expected a port from 1 to 65535");
      v = v * 10 + (port[i] - '0');
    }
    if (v < 1 || v > 65535) return bad_url(db, text, "expected a port from 1 to 65535");
  }
  return JOBQ_OK;
}

int jobq__url_parse(jobq *db, const char *text, jobq_url *u) {
  memset(u, 0, sizeof *u);
  if (text == NULL || *text == '\0')
    return bad_url(db, "", "expected sqlite:PATH");
  size_t slen = 0;
  while (isalnum((unsigned char)text[slen]) || text[slen] == '+' ||
         text[slen] == '-' || text[slen] == '.')
    slen++;
  if (slen == 0 || text[slen] != ':')
    return bad_url(db, text, "expected SCHEME:..., like sqlite:jobq.db");
  int failed = 0;
  u->scheme = jobq__memdup(text, slen, &failed);
  if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (char *c = u->scheme; *c; c++) *c = (char)tolower((unsigned char)*c);
  const char *rest = text + slen + 1;
  const char *qmark = strchr(rest, '?');
  size_t body = qmark ? (size_t)(qmark - rest) : strlen(rest);
  int rc = JOBQ_OK;
  int bad = 0;

  if (strcmp(u->scheme, "sqlite") == 0 || strcmp(u->scheme, "sqlite3") == 0) {
    if (body >= 2 && rest[0] == '/' && rest[1] == '/') rest += 2, body -= 2;
    if (body == 0) {
      rc = bad_url(db, text, "expected a file path after 'sqlite:'");
      goto out;
    }
    u->path = decode(rest, body, &bad);
    if (u->path == NULL) {
      rc = bad ? bad_url(db, text, "bad percent-encoding")
               : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      goto out;
    }
  } else {
    if (body < 2 || rest[0] != '/' || rest[1] != '/') {
      rc = bad_url(db, text, "expected SCHEME://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE");
      goto out;
    }
    rest += 2, body -= 2;
    size_t alen = 0;
    while (alen < body && rest[alen] != '/') alen++;
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
      if (rest[i] == '@') at = rest + i;
    const char *hosts = rest;
    if (at != NULL) {
      const char *colon = memchr(rest, ':', (size_t)(at - rest));
      size_t ulen = colon ? (size_t)(colon - rest) : (size_t)(at - rest);
      u->user = decode(rest, ulen, &bad);
      if (u->user && colon)
        u->password = decode(colon + 1, (size_t)(at - colon - 1), &bad);
      if (bad) {
        rc = bad_url(db, text, "bad percent-encoding");
        goto out;
      }
      hosts = at + 1;
    }
    size_t hlen = (size_t)(rest + alen - hosts);
    for (size_t i = 0, start = 0; i <= hlen; i++) {
      if (i == hlen || hosts[i] == ',') {
        rc = check_host(db, text, hosts + start, i - start);
        if (rc != JOBQ_OK) goto out;
        start = i + 1;
      }
    }
    u->host = jobq__memdup(hosts, hlen, &failed);
    if (alen < body) u->dbname = decode(rest + alen + 1, body - alen - 1, &bad);
    if (bad) {
      rc = bad_url(db, text, "bad percent-encoding");
      goto out;
    }
  }
  if (qmark != NULL) rc = parse_query(db, text, qmark + 1, u);
out:
  if (rc != JOBQ_OK) jobq__url_release(u);
  return rc;
}
