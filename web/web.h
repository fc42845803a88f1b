/*
 * web.h - `jobq web`: the dashboard, its JSON API and /metrics, served by
 * libmicrohttpd from one queue database; and the Prometheus text that
 * `jobq stats --prometheus` prints as well.
 *
 * web/server.c owns HTTP and its security (the listening address, the
 * token and login cookie, CSRF, the Host check, the response headers),
 * web/api.c the JSON API and the actions, web/metrics.c the Prometheus
 * text, and web/static/ the page itself, built into the binary
 * (web/assets.S).  Everything goes through include/jobq.h.
 */
#ifndef JOBQ_WEB_H
#define JOBQ_WEB_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "jobq.h"

#define WEB_HOSTS_MAX 8

struct web_options {
  const char *url;           /* the database, as every command takes it */
  char host[256];            /* the address to listen on, without [] */
  int port;
  int loopback;              /* host is a loopback address */
  const char *token;         /* NULL: no authentication (loopback only) */
  int read_only;             /* --read-only: no actions */
  const char *allow_hosts[WEB_HOSTS_MAX];  /* more Host header values */
  size_t nallow_hosts;
};

/* Whether host, a request's Host header (NULL when it had none), names
 * the server of o listening on listening_port: its address, localhost
 * when on loopback, or one of o->allow_hosts, each with the listening
 * port (or none for 80) unless an allowed host names its own. */
int web_host_allowed(const struct web_options *o, int listening_port, const char *host);

/* Serves until SIGINT or SIGTERM.  Returns 0, or 1 after printing why it
 * could not listen; messages go to stderr prefixed "jobq web: ". */
int web_run(const struct web_options *o, jobq *db);

/* A growing text buffer; on out of memory p becomes NULL and stays so. */
struct web_buf {
  char *p;
  size_t len, cap;
};
void web_buf_add(struct web_buf *b, const char *s, size_t n);
void web_buf_printf(struct web_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* What the overview and /metrics read, in one go: the database's clock
 * and identity, the queues' counts and limits, the sessions, and the
 * tallies (per minute from since_ms on, or with since_ms < 0 the
 * totals).  Returns
 * JOBQ_OK or the library's error; release with web_figures_release()
 * either way. */
struct web_figures {
  jobq_identity id;
  jobq_queue_stats *queues;
  size_t nqueues;
  jobq_limits *limits; /* the queues that have one, by name */
  size_t nlimits;
  jobq_tally *tallies;
  size_t ntallies;
  jobq_session_info *sessions;
  size_t nsessions;
};
int web_figures_read(jobq *db, int64_t since_ms, struct web_figures *f);
void web_figures_release(struct web_figures *f);

/* The Prometheus text exposition of db's figures, appended to *out.
 * Returns JOBQ_OK or the library's error (jobq_errmsg(db) says why). */
int web_metrics(jobq *db, struct web_buf *out);

/* ---------------------------------------------------------------- api */

/* What an API call answers: an HTTP status and a JSON document (owned
 * by the caller), or for an error a message. */
struct web_reply {
  int status;
  json_t *json;
};

/* The API's GET endpoints (path below /api/) and POST actions; args
 * looks up a query argument by name (NULL when absent). */
typedef const char *(*web_arg_fn)(void *ctx, const char *name);
void web_api_get(jobq *db, const char *path, web_arg_fn arg, void *ctx,
                 struct web_reply *r);
void web_api_post(jobq *db, const char *path, web_arg_fn arg, void *ctx,
                  struct web_reply *r);
/* r becomes an error reply: {"error": message}. */
void web_reply_error(struct web_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------- assets */

struct web_asset {
  const char *path;          /* "/", "/app.js", ... */
  const char *type;          /* its Content-Type */
  const unsigned char *data, *end;  /* its bytes: data up to end */
};
/* The file served at path, or NULL. */
const struct web_asset *web_asset_find(const char *path);

#endif
