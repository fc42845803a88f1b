/*
 * env.c - the environment of jobs and workers.  It starts from the
 * foreman's own environment, scrubbed of everything that names or opens
 * the queue database: every JOBQ_* variable (JOBQ_DB among them),
 * DATABASE_URL, PGPASSWORD, PGPASSFILE, MYSQL_PWD, and any variable whose
 * value holds the database URL or its password.  A job only learns about
 * itself: its id, queue, attempt, key and claim token.  The base is built
 * once; each job's copy adds its own variables.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

static const char *const secret_names[] = {"DATABASE_URL", "PGPASSWORD",
                                           "PGPASSFILE", "MYSQL_PWD"};

/* The password of scheme://user:password@host... or of a ?password=
 * option, or NULL (caller frees). */
static char *url_password(const char *url) {
  const char *q = strstr(url, "password=");
  if (q != NULL && (q == url || q[-1] == '?' || q[-1] == '&')) {
    q += strlen("password=");
    size_t len = strcspn(q, "&#");
    if (len > 0) return strndup(q, len);
  }
  const char *p = strstr(url, "://");
  if (p == NULL) return NULL;
  p += 3;
  const char *at = strchr(p, '@');
  const char *slash = strchr(p, '/');
  if (at == NULL || (slash != NULL && slash < at)) return NULL;
  const char *colon = memchr(p, ':', (size_t)(at - p));
  if (colon == NULL || colon + 1 == at) return NULL;
  return strndup(colon + 1, (size_t)(at - colon - 1));
}

int fm_env_is_secret(const char *var, const char *url) {
  const char *eq = strchr(var, '=');
  if (eq == NULL) return 0;
  size_t nlen = (size_t)(eq - var);
  const char *value = eq + 1;
  if (nlen >= 5 && strncmp(var, "JOBQ_", 5) == 0) return 1;
  for (size_t i = 0; i < sizeof secret_names / sizeof secret_names[0]; i++)
    if (strlen(secret_names[i]) == nlen && strncmp(var, secret_names[i], nlen) == 0)
      return 1;
  if (url != NULL && url[0] != '\0' && strstr(value, url) != NULL) return 1;
  char *pw = url != NULL ? url_password(url) : NULL;
  /* Very short passwords would match too much; they are weak anyway. */
  int hit = pw != NULL && strlen(pw) >= 4 && strstr(value, pw) != NULL;
  free(pw);
  return hit;
}

void fm_env_init(struct fm_env *e, char **environ_, const char *url) {
  size_t n = 0;
  while (environ_ != NULL && environ_[n] != NULL) n++;
  e->vars = fm_xmalloc((n + 1) * sizeof *e->vars);
  e->n = 0;
  for (size_t i = 0; i < n; i++)
    if (!fm_env_is_secret(environ_[i], url))
      e->vars[e->n++] = fm_xstrdup(environ_[i]);
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
