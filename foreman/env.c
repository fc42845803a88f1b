/*
 * env.c - the environment of jobs and workers.  It starts from the
 * foreman's own environment, scrubbed of everything that names or opens
 * the queue database: every JOBQ_* variable (JOBQ_DB among them),
 * DATABASE_URL, PGPASSWORD, PGPASSFILE, MYSQL_PWD, and any variable whose
 * value holds the database URL or its password in any of the forms it
 * may take (see secrets_of).  A job only learns about itself: its id,
 * queue, attempt, key and claim token.  The base is built once; each
 * job's copy adds its own variables.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

static const char *const secret_names[] = {"DATABASE_URL", "PGPASSWORD",
                                           "PGPASSFILE", "MYSQL_PWD"};

/* Secrets shorter than this are not looked for: they would match too
 * much, and they are weak anyway. */
#define SECRET_MIN 4
#define SECRETS_MAX 16

struct secrets {
  char *v[SECRETS_MAX];
  size_t n;
};

static void add(struct secrets *s, char *secret) {
  if (secret == NULL) return;
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i], secret) == 0) {
      free(secret);
      return;
    }
  if (strlen(secret) < SECRET_MIN || s->n == SECRETS_MAX) {
    free(secret);
    return;
  }
  s->v[s->n++] = secret;
}

static void secrets_release(struct secrets *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  s->n = 0;
}

/* s with %XX decoded (in either case); a '%' that starts no escape is
 * kept as it is.  New string. */
static char *percent_decode(const char *s) {
  size_t len = strlen(s);
  char *out = fm_xmalloc(len + 1), *o = out;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
        isxdigit((unsigned char)s[i + 2])) {
      char hex[3] = {s[i + 1], s[i + 2], 0};
      *o++ = (char)strtol(hex, NULL, 16);
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  *o = '\0';
  return out;
}

/* s as a libpq conninfo value writes it between quotes ('\'' and '\\'
 * escaped), or NULL when it needs no escape (then it is s). */
static char *conninfo_quoted(const char *s) {
  if (strpbrk(s, "'\\") == NULL) return NULL;
  char *out = fm_xmalloc(2 * strlen(s) + 1), *o = out;
  for (; *s != '\0'; s++) {
    if (*s == '\'' || *s == '\\') *o++ = '\\';
    *o++ = *s;
  }
  *o = '\0';
  return out;
}

/* Adds a password as the URL has it and in its other forms: decoded, and
 * as a conninfo string would quote it. */
static void add_password(struct secrets *s, const char *raw, size_t len) {
  char *as_is = fm_xmalloc(len + 1);
  memcpy(as_is, raw, len);
  as_is[len] = '\0';
  char *plain = percent_decode(as_is);
  add(s, conninfo_quoted(plain));
  add(s, plain);
  add(s, as_is);
}

/*
 * Every form in which the database's password may sit in a variable: the
 * password of scheme://user:password@host... and of a ?password= option,
 * each as written (percent-encoded) and decoded, and as a conninfo
 * string quotes it; and the values of PGPASSWORD and MYSQL_PWD, which
 * the client libraries use when the URL has no password.  A value is
 * also checked decoded (see fm_env_is_secret), which catches the
 * password percent-encoded in any other way.
 */
static void secrets_of(const char *url, char **environ_, struct secrets *s) {
  s->n = 0;
  if (url != NULL) {
    const char *q = strchr(url, '?');
    while (q != NULL) {
      q++;
      size_t len = strcspn(q, "&#");
      if (strncmp(q, "password=", 9) == 0 && len > 9) add_password(s, q + 9, len - 9);
      q = q[len] == '&' ? q + len : NULL;
    }
    const char *p = strstr(url, "://");
    if (p != NULL) {
      p += 3;
      size_t alen = strcspn(p, "/?#");
      const char *at = NULL;
      for (size_t i = 0; i < alen; i++)
        if (p[i] == '@') at = p + i;
      const char *colon = at != NULL ? memchr(p, ':', (size_t)(at - p)) : NULL;
      if (colon != NULL) add_password(s, colon + 1, (size_t)(at - colon - 1));
    }
  }
  for (size_t i = 0; environ_ != NULL && environ_[i] != NULL; i++) {
    const char *v = environ_[i];
    if (strncmp(v, "PGPASSWORD=", 11) == 0) add_password(s, v + 11, strlen(v + 11));
    if (strncmp(v, "MYSQL_PWD=", 10) == 0) add_password(s, v + 10, strlen(v + 10));
  }
}

static int holds_secret(const char *value, const char *url,
                        const struct secrets *s) {
  if (url != NULL && url[0] != '\0' && strstr(value, url) != NULL) return 1;
  if (s->n == 0) return 0;
  char *decoded = strchr(value, '%') != NULL ? percent_decode(value) : NULL;
  int hit = 0;
  for (size_t i = 0; i < s->n && !hit; i++)
    hit = strstr(value, s->v[i]) != NULL ||
          (decoded != NULL && strstr(decoded, s->v[i]) != NULL);
  free(decoded);
  return hit;
}

static int secret_name(const char *var) {
  const char *eq = strchr(var, '=');
  if (eq == NULL) return 0;
  size_t nlen = (size_t)(eq - var);
  if (nlen >= 5 && strncmp(var, "JOBQ_", 5) == 0) return 1;
  for (size_t i = 0; i < sizeof secret_names / sizeof secret_names[0]; i++)
    if (strlen(secret_names[i]) == nlen && strncmp(var, secret_names[i], nlen) == 0)
      return 1;
  return 0;
}

int fm_env_is_secret(const char *var, const char *url, char **environ_) {
  const char *eq = strchr(var, '=');
  if (eq == NULL) return 0;
  if (secret_name(var)) return 1;
  struct secrets s;
  secrets_of(url, environ_, &s);
  int hit = holds_secret(eq + 1, url, &s);
  secrets_release(&s);
  return hit;
}

void fm_env_init(struct fm_env *e, char **environ_, const char *url) {
  size_t n = 0;
  while (environ_ != NULL && environ_[n] != NULL) n++;
  e->vars = fm_xmalloc((n + 1) * sizeof *e->vars);
  e->n = 0;
  struct secrets s;
  secrets_of(url, environ_, &s);
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(environ_[i], '=');
    if (eq == NULL || (!secret_name(environ_[i]) && !holds_secret(eq + 1, url, &s)))
      e->vars[e->n++] = fm_xstrdup(environ_[i]);
  }
  e->vars[e->n] = NULL;
  secrets_release(&s);
}

void fm_env_set(struct fm_env *e, const char *name, const char *value) {
  size_t nlen = strlen(name), len = nlen + 1 + strlen(value) + 1;
  char *var = fm_xmalloc(len);
  snprintf(var, len, "%s=%s", name, value);
  for (size_t i = 0; i < e->n; i++)
    if (strncmp(e->vars[i], name, nlen) == 0 && e->vars[i][nlen] == '=') {
      free(e->vars[i]);
      e->vars[i] = var;
      return;
    }
  e->vars = fm_xrealloc(e->vars, (e->n + 2) * sizeof *e->vars);
  e->vars[e->n++] = var;
  e->vars[e->n] = NULL;
}

void fm_env_release(struct fm_env *e) {
  for (size_t i = 0; i < e->n; i++) free(e->vars[i]);
  free(e->vars);
  e->vars = NULL;
  e->n = 0;
}

/* NAME=VALUE, new. */
static char *var(const char *name, const char *value) {
  size_t len = strlen(name) + 1 + strlen(value) + 1;
  char *s = fm_xmalloc(len);
  snprintf(s, len, "%s=%s", name, value);
  return s;
}

/* The base's strings (borrowed) followed by the owned ones. */
static void assemble(const struct fm_env *e, struct fm_envp *out) {
  out->vars = fm_xmalloc((e->n + out->nowned + 1) * sizeof *out->vars);
  memcpy(out->vars, e->vars, e->n * sizeof *out->vars);
  memcpy(out->vars + e->n, out->owned, out->nowned * sizeof *out->vars);
  out->vars[e->n + out->nowned] = NULL;
}

void fm_env_job(const struct fm_env *e, const jobq_job *job,
                struct fm_envp *out) {
  char num[32];
  size_t n = 0;
  snprintf(num, sizeof num, "%" PRId64, job->id);
  out->owned[n++] = var("JOBQ_JOB_ID", num);
  out->owned[n++] = var("JOBQ_QUEUE", job->queue);
  snprintf(num, sizeof num, "%d", job->attempt);
  out->owned[n++] = var("JOBQ_ATTEMPT", num);
  snprintf(num, sizeof num, "%d", job->max_attempts);
  out->owned[n++] = var("JOBQ_MAX_ATTEMPTS", num);
  out->owned[n++] = var("JOBQ_CLAIM", job->claim);
  if (job->key != NULL) out->owned[n++] = var("JOBQ_KEY", job->key);
  if (job->prev_lost) out->owned[n++] = var("JOBQ_PREV_LOST", "1");
  out->nowned = n;
  assemble(e, out);
}

void fm_env_worker(const struct fm_env *e, int index, struct fm_envp *out) {
  char num[32];
  snprintf(num, sizeof num, "%d", index);
  out->owned[0] = var("JOBQ_WORKER", num);
  snprintf(num, sizeof num, "%d", FM_PROTOCOL_VERSION);
  out->owned[1] = var("JOBQ_PROTOCOL", num);
  out->nowned = 2;
  assemble(e, out);
}

void fm_envp_release(struct fm_envp *p) {
  for (size_t i = 0; i < p->nowned; i++) free(p->owned[i]);
  free(p->vars);
  p->vars = NULL;
  p->nowned = 0;
}
