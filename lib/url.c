/*
 * url.c - database URLs: parsing into a jobq_url for the stores, the
 * checks of the options of each store's table (store.h's jobq_option)
 * with one message for each way one is bad, the split of a host list,
 * and the one redaction function that keeps passwords out of every
 * message.
 *
 *   sqlite:PATH  sqlite:///ABS/PATH  sqlite:PATH?busy_timeout=5s
 *   SCHEME://[USER[:PASSWORD]@][HOST[:PORT][,HOST[:PORT]...]]/DB[?K=V&...]
 *   KEY=VALUE KEY='VALUE' ...     (PostgreSQL's keyword/value form)
 *
 * Percent-encoding is decoded in every part of a URL; a PostgreSQL
 * keyword/value string is taken as libpq takes it (single quotes, and a
 * backslash before a quote or a backslash).  An option may be given once.
 * A message about a URL shows it redacted, whatever could be parsed of
 * it: a password holding an unescaped '/', '?', '@' or '#' (common in
 * generated passwords) is hidden all the same, and such a URL is refused
 * with a hint to percent-encode it, before any part of it is named.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define PASSWORD_HINT                                                        \
  "; a password must be percent-encoded: write '/' as %2F, '?' as %3F, '@' " \
  "as %40 and '#' as %23 (and '@' in an option as %40)"

/* The keys whose values are secrets (libpq's password and sslpassword). */
static int secret_key(const char *k, size_t len) {
  return (len == 8 && memcmp(k, "password", 8) == 0) ||
         (len == 11 && memcmp(k, "sslpassword", 11) == 0);
}

/* The length of text's scheme ("postgres" in "postgres://h/db"), 0 when
 * it does not begin with one followed by ':'. */
static size_t scheme_len(const char *text) {
  size_t n = 0;
  if (!isalpha((unsigned char)text[0])) return 0;
  while (isalnum((unsigned char)text[n]) || text[n] == '+' || text[n] == '-' ||
         text[n] == '.')
    n++;
  return text[n] == ':' ? n : 0;
}

static int is_sqlite(const char *scheme, size_t len) {
  return (len == 6 && strncasecmp(scheme, "sqlite", 6) == 0) ||
         (len == 7 && strncasecmp(scheme, "sqlite3", 7) == 0);
}

/* Decodes %XX in [s, s+len) into a new string; NULL on bad encoding (a
 * bad or NUL escape: *bad set) or when out of memory. */
static char *decode(const char *s, size_t len, int *bad) {
  char *out = malloc(len + 1);
  if (out == NULL) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '%') {
      if (i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
          isxdigit((unsigned char)s[i + 2])) {
        char hex[3] = {s[i + 1], s[i + 2], 0};
        char c = (char)strtol(hex, NULL, 16);
        if (c != '\0') {
          out[o++] = c;
          i += 2;
          continue;
        }
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

/* ---------------------------------------------------------------- redaction */

/* [from, to) of text to show as "***"; to == from: nothing. */
typedef struct span {
  size_t from, to;
} span;

/* The password of a URL's user part: from its first ':' to the last '@'
 * of the whole URL, which holds every '/', '?', '@' or '#' the password
 * may have had unescaped. */
static span userinfo_password(const char *url, size_t slen) {
  span s = {0, 0};
  size_t start = slen + 1;
  while (url[start] == '/') start++;
  const char *at = strrchr(url + start, '@');
  if (at == NULL) return s;
  const char *colon = memchr(url + start, ':', (size_t)(at - (url + start)));
  if (colon == NULL) return s;
  s.from = (size_t)(colon + 1 - url);
  s.to = (size_t)(at - url);
  return s;
}

/* A password option in a URL's query (its key percent-decoded): from
 * its value to the end, since an unescaped '&' may be part of it. */
static span query_password(const char *url) {
  span s = {0, 0};
  const char *q = strchr(url, '?');
  while (q != NULL) {
    q++;
    size_t len = strcspn(q, "&"), klen = strcspn(q, "=&");
    int bad = 0;
    char *key = klen < len ? decode(q, klen, &bad) : NULL;
    int secret = key != NULL && secret_key(key, strlen(key));
    free(key);
    if (secret) {
      s.from = (size_t)(q + klen + 1 - url);
      s.to = strlen(url);
      return s;
    }
    q = q[len] == '&' ? q + len : NULL;
  }
  return s;
}

/* A password in a keyword/value string: its value, quoted or not, to the
 * end (an unquoted password with a space in it is one libpq cannot
 * parse, and the rest of it would otherwise show). */
static span conninfo_password(const char *text) {
  span s = {0, 0};
  const char *p = text;
  while (*p != '\0') {
    while (isspace((unsigned char)*p)) p++;
    const char *key = p;
    while (*p != '\0' && *p != '=' && !isspace((unsigned char)*p)) p++;
    size_t klen = (size_t)(p - key);
    while (isspace((unsigned char)*p)) p++;
    if (*p != '=') {
      if (klen == 0 && *p != '\0') p++;
      continue;
    }
    p++;
    if (secret_key(key, klen)) {
      s.from = (size_t)(p - text);
      s.to = strlen(text);
      return s;
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p == '\'') {
      for (p++; *p != '\0' && *p != '\''; p++)
        if (*p == '\\' && p[1] != '\0') p++;
      if (*p == '\'') p++;
    } else {
      for (; *p != '\0' && !isspace((unsigned char)*p); p++)
        if (*p == '\\' && p[1] != '\0') p++;
    }
  }
  return s;
}

char *jobq_url_redact(const char *url) {
  if (url == NULL) return strdup("");
  size_t len = strlen(url), slen = scheme_len(url);
  span a = {0, 0}, b = {0, 0};
  if (slen == 0) {
    a = conninfo_password(url);
  } else {
    /* An SQLite URL has no user part, and its path may hold ':' and '@'. */
    if (!is_sqlite(url, slen)) a = userinfo_password(url, slen);
    b = query_password(url);
  }
  /* Overlapping spans are one. */
  if (a.to > a.from && b.to > b.from && b.from <= a.to && a.from <= b.to) {
    a.from = a.from < b.from ? a.from : b.from;
    a.to = a.to > b.to ? a.to : b.to;
    b.from = b.to = 0;
  }
  if (b.to > b.from && b.from < a.from) {
    span t = a;
    a = b;
    b = t;
  }
  char *out = malloc(len + 7);
  if (out == NULL) return NULL;
  size_t o = 0, i = 0;
  const span spans[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    if (spans[k].to <= spans[k].from) continue;
    memcpy(out + o, url + i, spans[k].from - i);
    o += spans[k].from - i;
    memcpy(out + o, "***", 3);
    o += 3;
    i = spans[k].to;
  }
  memcpy(out + o, url + i, len - i + 1);
  return out;
}

/* ---------------------------------------------------------------- parsing */

/* Whether a network URL has a second '@' in its host part (up to the
 * first '/' or '?'), or one past it: the sign of a password with an
 * unescaped '/', '?' or '@', whose rest would be read as a host, a
 * database or options.  An '@' in an option looks the same, and must be
 * written %40 there too. */
static int misplaced_at(const char *text) {
  size_t slen = scheme_len(text);
  if (slen == 0 || is_sqlite(text, slen) || strncmp(text + slen, "://", 3) != 0) return 0;
  const char *auth = text + slen + 3;
  size_t alen = strcspn(auth, "/?");
  const char *first = memchr(auth, '@', alen);
  if (first != NULL && memchr(first + 1, '@', alen - (size_t)(first + 1 - auth)) != NULL)
    return 1;
  return strchr(auth + alen, '@') != NULL;
}

static int bad_url(jobq *db, const char *text, const char *what) {
  char *red = jobq_url_redact(text);
  jobq__fail(db, JOBQ_EURL, "invalid database url '%s': %s%s", red ? red : "", what,
             misplaced_at(text) ? PASSWORD_HINT : "");
  free(red);
  return JOBQ_EURL;
}

void jobq__url_release(jobq_url *u) {
  if (u == NULL) return;
  free(u->scheme);
  free(u->base);
  free(u->path);
  free(u->user);
  if (u->password != NULL) memset(u->password, 0, strlen(u->password));
  free(u->password);
  free(u->host);
  free(u->port);
  free(u->dbname);
  for (size_t i = 0; i < u->nopts; i++) {
    if (secret_key(u->keys[i], strlen(u->keys[i])))
      memset(u->values[i], 0, strlen(u->values[i]));
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

int jobq__url_after_secret(const jobq_url *u, size_t i) {
  for (size_t k = 0; k < i && k < u->nopts; k++)
    if (secret_key(u->keys[k], strlen(u->keys[k]))) return 1;
  return 0;
}

/* Adds option k = v (both taken), refusing a key given before. */
static int add_opt(jobq *db, const char *text, jobq_url *u, char *k, char *v) {
  for (size_t i = 0; i < u->nopts; i++) {
    if (strcmp(u->keys[i], k) == 0) {
      char what[200];
      /* Past a password, the key may be a piece of it. */
      if (jobq__url_after_secret(u, u->nopts))
        snprintf(what, sizeof what,
                 "an option after the password is given twice: expected each option "
                 "once (write '&' in a password as %%26)");
      else
        snprintf(what, sizeof what,
                 "option '%.64s' is given twice: expected each option once", k);
      free(k);
      free(v);
      return bad_url(db, text, what);
    }
  }
  char **nk = realloc(u->keys, (u->nopts + 1) * sizeof *nk);
  if (nk != NULL) u->keys = nk;
  char **nv = nk ? realloc(u->values, (u->nopts + 1) * sizeof *nv) : NULL;
  if (nv != NULL) u->values = nv;
  if (nv == NULL) {
    free(k);
    free(v);
    return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  }
  u->keys[u->nopts] = k;
  u->values[u->nopts] = v;
  u->nopts++;
  return JOBQ_OK;
}

static int parse_query(jobq *db, const char *text, const char *q, jobq_url *u) {
  while (*q != '\0') {
    size_t len = strcspn(q, "&");
    if (len > 0) {
      const char *eq = memchr(q, '=', len);
      if (eq == NULL) return bad_url(db, text, "expected KEY=VALUE options after '?'");
      int bad = 0;
      char *k = decode(q, (size_t)(eq - q), &bad);
      char *v = k ? decode(eq + 1, len - (size_t)(eq - q) - 1, &bad) : NULL;
      if (v == NULL) {
        free(k);
        return bad ? bad_url(db, text, "bad percent-encoding")
                   : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      }
      int rc = add_opt(db, text, u, k, v);
      if (rc != JOBQ_OK) return rc;
    }
    q += len;
    if (*q == '&') q++;
  }
  return JOBQ_OK;
}

/* PostgreSQL's keyword/value form, as libpq reads it, into options. */
static int parse_conninfo(jobq *db, const char *text, jobq_url *u) {
  const char *p = text;
  while (1) {
    while (isspace((unsigned char)*p)) p++;
    if (*p == '\0') return JOBQ_OK;
    const char *key = p;
    while (*p != '\0' && *p != '=' && !isspace((unsigned char)*p)) p++;
    size_t klen = (size_t)(p - key);
    while (isspace((unsigned char)*p)) p++;
    if (klen == 0 || *p != '=')
      return bad_url(db, text, "expected KEY=VALUE pairs separated by spaces");
    p++;
    while (isspace((unsigned char)*p)) p++;
    char *v = malloc(strlen(p) + 1);
    char *k = v ? strndup(key, klen) : NULL;
    if (k == NULL) {
      free(v);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    size_t o = 0;
    int quoted = *p == '\'';
    if (quoted) p++;
    while (*p != '\0' && (quoted ? *p != '\'' : !isspace((unsigned char)*p))) {
      if (*p == '\\' && p[1] != '\0') p++;
      v[o++] = *p++;
    }
    v[o] = '\0';
    if (quoted && *p != '\'') {
      free(k);
      free(v);
      return bad_url(db, text, "a quoted value has no closing quote");
    }
    if (quoted) p++;
    int rc = add_opt(db, text, u, k, v);
    if (rc != JOBQ_OK) return rc;
  }
}

/* Checks one HOST[:PORT] or [V6]:PORT of a network URL's host list. */
static int check_host(jobq *db, const char *text, const char *h, size_t len) {
  if (len == 0) return bad_url(db, text, "expected a host name between ','");
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

/* The part of a network URL after "SCHEME://", up to its options. */
static int parse_network(jobq *db, const char *text, const char *rest, size_t body,
                         jobq_url *u) {
  int bad = 0, failed = 0;
  if (misplaced_at(text)) return bad_url(db, text, "an '@' after the host");
  size_t alen = 0;
  while (alen < body && rest[alen] != '/') alen++;
  const char *at = memchr(rest, '@', alen);
  const char *hosts = rest;
  if (at != NULL) {
    const char *colon = memchr(rest, ':', (size_t)(at - rest));
    size_t ulen = colon ? (size_t)(colon - rest) : (size_t)(at - rest);
    u->user = decode(rest, ulen, &bad);
    if (u->user && colon) u->password = decode(colon + 1, (size_t)(at - colon - 1), &bad);
    if (bad) return bad_url(db, text, "bad percent-encoding");
    if (u->user == NULL || (colon && u->password == NULL))
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    hosts = at + 1;
  }
  /* No host at all: the client library's default (a local socket). */
  size_t hlen = (size_t)(rest + alen - hosts);
  for (size_t i = 0, start = 0; hlen > 0 && i <= hlen; i++) {
    if (i == hlen || hosts[i] == ',') {
      int rc = check_host(db, text, hosts + start, i - start);
      if (rc != JOBQ_OK) return rc;
      start = i + 1;
    }
  }
  if (hlen > 0) u->host = jobq__memdup(hosts, hlen, &failed);
  if (alen < body) {
    u->dbname = decode(rest + alen + 1, body - alen - 1, &bad);
    if (bad) return bad_url(db, text, "bad percent-encoding");
    failed |= u->dbname == NULL;
  }
  return failed ? jobq__fail(db, JOBQ_ENOMEM, "out of memory") : JOBQ_OK;
}

int jobq__url_parse(jobq *db, const char *text, jobq_url *u) {
  memset(u, 0, sizeof *u);
  if (text == NULL || *text == '\0') return bad_url(db, "", "expected sqlite:PATH");
  size_t slen = scheme_len(text);
  int rc = JOBQ_OK, bad = 0, failed = 0;
  if (slen == 0) {
    /* No scheme: PostgreSQL's keyword/value form, or nothing known. */
    if (strchr(text, '=') == NULL)
      return bad_url(db, text, "expected SCHEME:..., like sqlite:jobq.db");
    u->scheme = strdup("postgres");
    u->conninfo = 1;
    rc = u->scheme ? parse_conninfo(db, text, u) : jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    goto out;
  }
  u->scheme = jobq__memdup(text, slen, &failed);
  if (failed) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  for (char *c = u->scheme; *c; c++) *c = (char)tolower((unsigned char)*c);
  const char *rest = text + slen + 1;
  const char *qmark = strchr(rest, '?');
  size_t body = qmark ? (size_t)(qmark - rest) : strlen(rest);

  if (is_sqlite(u->scheme, slen)) {
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
    /* The URL without its options, for a client library that parses
     * URLs itself (libpq). */
    size_t blen = slen + 1 + body;
    u->base = malloc(blen + 1);
    if (u->base == NULL) {
      rc = jobq__fail(db, JOBQ_ENOMEM, "out of memory");
      goto out;
    }
    snprintf(u->base, blen + 1, "%s:%.*s", u->scheme, (int)body, rest);
    rc = parse_network(db, text, rest + 2, body - 2, u);
    if (rc != JOBQ_OK) goto out;
  }
  if (qmark != NULL) rc = parse_query(db, text, qmark + 1, u);
out:
  if (rc != JOBQ_OK) jobq__url_release(u);
  return rc;
}

/* ---------------------------------------------------------------- numbers */

/* value as an integer from min to max, into *n; 0 when it is not one. */
static int int_value(const char *value, int64_t min, int64_t max, int64_t *n) {
  char *end;
  if (!isdigit((unsigned char)value[0]) || strlen(value) > 18) return 0;
  *n = strtoll(value, &end, 10);
  return *end == '\0' && *n >= min && *n <= max;
}

/* value as seconds from min_s to max_s (a number of seconds, or a
 * duration rounded up), into *n; 0 when it is not. */
static int seconds_value(const char *value, int64_t min_s, int64_t max_s, int64_t *n) {
  int64_t ms = -1;
  if (!isdigit((unsigned char)value[0])) return 0;
  if (value[strspn(value, "0123456789")] == '\0') {
    if (strlen(value) > 18) return 0;
    ms = strtoll(value, NULL, 10) * 1000;
  } else if (jobq_parse_duration(value, &ms) != JOBQ_OK) {
    return 0;
  }
  *n = ms / 1000 + (ms % 1000 != 0);
  return *n >= min_s && *n <= max_s;
}

int jobq__url_int(jobq *db, const char *key, const char *value, int64_t min, int64_t max,
                  int64_t *out) {
  if (!int_value(value, min, max, out))
    return jobq__fail(db, JOBQ_EURL,
                      "invalid %s '%s' in the database url: expected an integer from %lld "
                      "to %lld",
                      key, value, (long long)min, (long long)max);
  return JOBQ_OK;
}

/* ---------------------------------------------------------------- option tables */

static const jobq_option *option_of(const jobq_option *t, const char *key) {
  for (; t->kind != 0; t++)
    if (t->key != NULL && strcmp(t->key, key) == 0) return t;
  return NULL;
}

int jobq__url_unknown(jobq *db, const jobq_url *u, const jobq_option *table, size_t i) {
  /* "a, b or max_payload", or "a, b, max_payload, or THE REST" (the
   * store's to check). */
  char list[400] = "";
  size_t o = 0;
  const char *rest = NULL;
  for (const jobq_option *t = table; t->kind != 0; t++) {
    if (t->kind == '*') rest = t->expected;
    if (t->key != NULL && t->kind != 'x' && o < sizeof list)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s, ", t->key);
  }
  if (o >= 2 && rest == NULL) o -= 2; /* "a, b" then " or max_payload" */
  if (o < sizeof list)
    snprintf(list + o, sizeof list - o, rest ? "max_payload, or %s" : "%smax_payload",
             rest ? rest : (o > 0 ? " or " : ""));
  if (jobq__url_after_secret(u, i))
    return jobq__fail(db, JOBQ_EURL,
                      "invalid database url '%s': an option after the password is unknown "
                      "or has a bad value (write '&' in a password as %%26)",
                      db->url_redacted);
  return jobq__fail(db, JOBQ_EURL, "unknown option '%s' in the database url: expected %s",
                    u->keys[i], list);
}

/* Whether v is one of the words of expected ("a, b or c (why)"). */
static int one_of(const char *v, const char *expected) {
  size_t len = strlen(v);
  for (const char *p = expected; *p != '\0' && *p != '(';) {
    size_t w = strcspn(p, ", (");
    if (w == len && strncmp(p, v, len) == 0) return 1;
    p += w;
    while (*p == ',' || *p == ' ') p++;
    if (strncmp(p, "or ", 3) == 0) p += 3;
  }
  return 0;
}

/* The value of option t as its kind reads it, into *n; 0 when it is not
 * one. */
static int option_value(const jobq_option *t, const char *v, int64_t *n) {
  switch (t->kind) {
    case 'd':
      return jobq_parse_duration(v, n) == JOBQ_OK && *n >= t->min && *n <= t->max;
    case 'z':
      return jobq_parse_size(v, n) == JOBQ_OK && *n >= t->min && *n <= t->max;
    case 'i': return int_value(v, t->min, t->max, n);
    case 's': return seconds_value(v, t->min, t->max, n);
    case 'n': {
      size_t len = strlen(v);
      if (len == 0 || len > 63 || !(islower((unsigned char)v[0]) || v[0] == '_')) return 0;
      for (size_t i = 0; i < len; i++)
        if (!(islower((unsigned char)v[i]) || isdigit((unsigned char)v[i]) || v[i] == '_'))
          return 0;
      return 1;
    }
    case 'c': return one_of(v, t->expected);
    default: return 1;
  }
}

int jobq__url_check(jobq *db, const jobq_url *u, const jobq_option *table) {
  int rc = JOBQ_OK;
  const jobq_option *others = NULL;
  for (const jobq_option *t = table; t->kind != 0; t++)
    if (t->kind == '*') others = t;
  for (size_t i = 0; i < u->nopts && rc == JOBQ_OK; i++) {
    const char *k = u->keys[i], *v = u->values[i];
    if (strcmp(k, "max_payload") == 0) continue; /* the library's (lib/db.c) */
    const jobq_option *t = option_of(table, k);
    int64_t n;
    if (t == NULL && others == NULL)
      rc = jobq__url_unknown(db, u, table, i);
    else if (t != NULL && t->kind == 'x')
      rc = jobq__fail(db, JOBQ_EURL, "option '%s' in the database url: %s", k, t->expected);
    else if (t != NULL && t->kind == 's' && !option_value(t, v, &n))
      rc = jobq__fail(db, JOBQ_EURL,
                      "invalid %s '%s' in the database url: expected seconds from %lld to "
                      "%lld, like 10 or 10s",
                      k, v, (long long)t->min, (long long)t->max);
    else if (t != NULL && t->kind == 'i' && !option_value(t, v, &n))
      rc = jobq__url_int(db, k, v, t->min, t->max, &n);
    else if (t != NULL && !option_value(t, v, &n))
      rc = jobq__fail(db, JOBQ_EURL, "invalid %s '%s' in the database url: expected %s", k, v,
                      t->expected);
    if (rc == JOBQ_EURL && jobq__url_after_secret(u, i))
      rc = jobq__fail(db, JOBQ_EURL,
                      "invalid database url '%s': an option after the password is unknown "
                      "or has a bad value (write '&' in a password as %%26)",
                      db->url_redacted);
  }
  return rc;
}

int64_t jobq__url_number(const jobq_url *u, const jobq_option *table, const char *key,
                         int64_t dflt) {
  const char *v = jobq__url_opt(u, key);
  const jobq_option *t = option_of(table, key);
  int64_t n;
  return v != NULL && t != NULL && strchr("dsiz", t->kind) && option_value(t, v, &n) ? n
                                                                                     : dflt;
}

/* ---------------------------------------------------------------- host lists */

void jobq__url_hosts_free(jobq_host *hosts, size_t n) {
  for (size_t i = 0; hosts != NULL && i < n; i++) free(hosts[i].name);
  free(hosts);
}

int jobq__url_hosts(jobq *db, const jobq_url *u, unsigned dflt, jobq_host **hosts, size_t *n) {
  *hosts = NULL;
  *n = 0;
  const char *list = u->host;
  if (list == NULL || *list == '\0') return JOBQ_OK;
  size_t count = 1;
  for (const char *p = list; *p; p++) count += *p == ',';
  jobq_host *v = calloc(count, sizeof *v);
  if (v == NULL) return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
  /* jobq__url_parse() checked each entry: "host", "host:port",
   * "[v6]" or "[v6]:port". */
  const char *s = list;
  for (size_t i = 0; i < count; i++) {
    size_t len = strcspn(s, ","), hl = len;
    const char *host = s, *port = NULL;
    if (s[0] == '[') {
      const char *close = memchr(s, ']', len);
      host = s + 1;
      hl = close ? (size_t)(close - s) - 1 : len - 1;
      if (close && (size_t)(close - s) + 1 < len) port = close + 2;
    } else {
      const char *colon = memchr(s, ':', len);
      if (colon != NULL) hl = (size_t)(colon - s), port = colon + 1;
    }
    if ((v[i].name = strndup(host, hl)) == NULL) {
      jobq__url_hosts_free(v, i);
      return jobq__fail(db, JOBQ_ENOMEM, "out of memory");
    }
    v[i].port = port ? (unsigned)strtoul(port, NULL, 10) : dflt;
    s += len + (s[len] == ',');
  }
  *hosts = v;
  *n = count;
  return JOBQ_OK;
}
