/*
 * server.c - HTTP for `jobq web`, through libmicrohttpd: one thread polls
 * every connection and answers each request in turn, so the one jobq
 * handle is only ever used by that thread.
 *
 * Security, in the order a request meets it:
 *   - the Host header must name this server (the listening address, the
 *     loopback names when on loopback, or an --allow-host), so that a
 *     page of another site cannot reach it through DNS rebinding;
 *   - with a token (--token-file), the API and /metrics need it, as
 *     "Authorization: Bearer TOKEN" or the cookie that POST /login sets;
 *   - every action is a POST carrying the CSRF token that GET
 *     /api/session gives to the page (same origin only), and an Origin,
 *     when the browser sends one, of this server; --read-only refuses
 *     them all;
 *   - every answer carries a strict Content-Security-Policy (scripts and
 *     styles from this server only, no inline code, no frames), and the
 *     page builds its DOM from text nodes, never from HTML.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <systemd/sd-daemon.h>

#include "web.h"

#define BODY_MAX 4096
#define COOKIE "jobq_login"

static const char csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

struct server {
  const struct web_options *o;
  jobq *db;
  int port;         /* the port listened on (o->port may be 0) */
  char csrf[65];    /* the CSRF token of this run */
  char login[65];   /* the login cookie's value of this run */
};

struct request {
  struct web_buf body;
  int too_big;
};

/* ---------------------------------------------------------------- buffers */

void web_buf_add(struct web_buf *b, const char *s, size_t n) {
  if (b->cap != 0 && b->p == NULL) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      free(b->p);
      b->p = NULL;
      b->cap = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void web_buf_printf(struct web_buf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    web_buf_add(b, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (big == NULL) {
    web_buf_add(b, "", 0);
    free(b->p);
    b->p = NULL;
    b->cap = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  web_buf_add(b, big, (size_t)n);
  free(big);
}

/* ---------------------------------------------------------------- helpers */

static void random_hex(char out[65]) {
  unsigned char r[32];
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t n = getrandom(r + got, sizeof r - got, 0);
    if (n > 0) got += (size_t)n;
    else if (errno != EINTR) abort(); /* no randomness: no secret to make */
  }
  for (size_t i = 0; i < sizeof r; i++) snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* Compares without leaking where a guess went wrong. */
static int same_secret(const char *given, const char *want) {
  if (given == NULL) return 0;
  size_t a = strlen(given), b = strlen(want);
  unsigned char diff = a != b;
  for (size_t i = 0; i < b; i++) diff |= (unsigned char)(given[i < a ? i : 0] ^ want[i]);
  return diff == 0;
}

static const char *header(struct MHD_Connection *c, const char *name) {
  return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static const char *query_arg(void *ctx, const char *name) {
  return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, name);
}

int web_host_allowed(const struct web_options *o, int listening_port, const char *host) {
  if (host == NULL) return 0;
  char want[300];
  const char *names[2 + WEB_HOSTS_MAX];
  size_t n = 0;
  int v6 = strchr(o->host, ':') != NULL;
  snprintf(want, sizeof want, v6 ? "[%s]" : "%s", o->host);
  names[n++] = want;
  if (o->loopback) names[n++] = "localhost";
  for (size_t i = 0; i < o->nallow_hosts; i++) names[n++] = o->allow_hosts[i];
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (strncasecmp(host, names[i], len) != 0) continue;
    const char *rest = host + len;
    char port[16];
    snprintf(port, sizeof port, ":%d", listening_port);
    /* An allowed name with its own port matches as it is, and only so. */
    int own_port = strchr(names[i], ']') ? strstr(names[i], "]:") != NULL
                                         : strchr(names[i], ':') != NULL;
    if (own_port) {
      if (*rest == '\0') return 1;
      continue;
    }
    if (strcmp(rest, port) == 0 || (*rest == '\0' && listening_port == 80)) return 1;
  }
  return 0;
}

/* Whether the request carries the token or the login cookie. */
static int authenticated(const struct server *s, struct MHD_Connection *c) {
  if (s->o->token == NULL) return 1;
  const char *auth = header(c, MHD_HTTP_HEADER_AUTHORIZATION);
  if (auth != NULL && strncasecmp(auth, "Bearer ", 7) == 0 && same_secret(auth + 7, s->o->token))
    return 1;
  const char *cookie = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, COOKIE);
  return same_secret(cookie, s->login);
}

/* ---------------------------------------------------------------- answers */

static enum MHD_Result answer(struct MHD_Connection *c, int status, const char *type,
                            const void *data, size_t len, int copy, const char *cookie) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
  if (r == NULL) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, "Content-Security-Policy", csp);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
  MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (cookie != NULL) MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, struct web_reply *r,
                                 const char *cookie) {
  char *text = r->json ? json_dumps(r->json, JSON_COMPACT) : NULL;
  json_decref(r->json);
  r->json = NULL;
  if (text == NULL)
    return answer(c, 500, "application/json", "{\"error\":\"out of memory\"}", 25, 0, NULL);
  enum MHD_Result ret = answer(c, r->status, "application/json", text, strlen(text), 1, cookie);
  free(text);
  return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct web_reply r = {status, NULL};
  web_reply_error(&r, status, "%s", msg);
  return send_json(c, &r, NULL);
}

/* ---------------------------------------------------------------- routes */

static enum MHD_Result login(struct server *s, struct MHD_Connection *c, struct request *q) {
  if (s->o->token == NULL) return send_error(c, 404, "no login: this server has no token");
  json_t *doc = q->body.p ? json_loads(q->body.p, 0, NULL) : NULL;
  const char *token = json_string_value(json_object_get(doc, "token"));
  int ok = same_secret(token, s->o->token);
  json_decref(doc);
  if (!ok) return send_error(c, 403, "wrong token");
  char cookie[160];
  snprintf(cookie, sizeof cookie, COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict", s->login);
  struct web_reply r = {200, json_pack("{s:b}", "ok", 1)};
  return send_json(c, &r, cookie);
}

static enum MHD_Result session_info(struct server *s, struct MHD_Connection *c) {
  char *url = jobq_url_redact(s->o->url);
  struct web_reply r = {200, json_pack("{s:s, s:b, s:b, s:s, s:s?}", "csrf", s->csrf,
                                       "read_only", s->o->read_only, "login",
                                       s->o->token != NULL, "version", JOBQ_VERSION,
                                       "database", url)};
  free(url);
  return send_json(c, &r, NULL);
}

static enum MHD_Result metrics(struct server *s, struct MHD_Connection *c) {
  struct web_buf b = {0};
  int rc = web_metrics(s->db, &b);
  enum MHD_Result ret;
  if (rc != JOBQ_OK)
    ret = answer(c, 503, "text/plain; charset=utf-8", jobq_errmsg(s->db), strlen(jobq_errmsg(s->db)),
               1, NULL);
  else if (b.p == NULL)
    ret = answer(c, 500, "text/plain; charset=utf-8", "out of memory", 13, 0, NULL);
  else
    ret = answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len, 1, NULL);
  free(b.p);
  return ret;
}

/* An action: POST, with the CSRF token, from this origin, not read-only. */
static enum MHD_Result action(struct server *s, struct MHD_Connection *c, const char *path) {
  if (s->o->read_only)
    return send_error(c, 403, "this dashboard is read-only (jobq web --read-only)");
  if (!same_secret(header(c, "X-CSRF-Token"), s->csrf))
    return send_error(c, 403, "missing or wrong CSRF token: reload the page");
  const char *origin = header(c, "Origin");
  const char *host = header(c, MHD_HTTP_HEADER_HOST);
  if (origin != NULL && (strncmp(origin, "http://", 7) != 0 || strcasecmp(origin + 7, host) != 0))
    return send_error(c, 403, "cross-origin request refused");
  struct web_reply r = {200, NULL};
  web_api_post(s->db, path, query_arg, c, &r);
  return send_json(c, &r, NULL);
}

static enum MHD_Result route(struct server *s, struct MHD_Connection *c, const char *url,
                             const char *method, struct request *q) {
  if (!web_host_allowed(s->o, s->port, header(c, MHD_HTTP_HEADER_HOST)))
    return send_error(c, 421, "unexpected Host header: this server answers to its own "
                              "address only (see --allow-host)");
  int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  int post = strcmp(method, "POST") == 0;
  if (!get && !post) return send_error(c, 405, "method %s not allowed", method);
  if (q->too_big) return send_error(c, 413, "request body over %d bytes", BODY_MAX);
  const struct web_asset *a = get ? web_asset_find(url) : NULL;
  if (a != NULL)
    return answer(c, 200, a->type, a->data, (size_t)(a->end - a->data), 0, NULL);
  if (post && strcmp(url, "/login") == 0) return login(s, c, q);
  if (!authenticated(s, c)) {
    struct web_reply r = {401, json_pack("{s:s, s:b}", "error", "login required", "login", 1)};
    return send_json(c, &r, NULL);
  }
  if (post && strcmp(url, "/logout") == 0) {
    struct web_reply r = {200, json_pack("{s:b}", "ok", 1)};
    return send_json(c, &r, COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
  }
  if (get && strcmp(url, "/metrics") == 0) return metrics(s, c);
  if (get && strcmp(url, "/api/session") == 0) return session_info(s, c);
  if (strncmp(url, "/api/", 5) == 0) {
    if (post) return action(s, c, url + 5);
    struct web_reply r = {200, NULL};
    web_api_get(s->db, url + 5, query_arg, c, &r);
    return send_json(c, &r, NULL);
  }
  return send_error(c, 404, "no such page");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version,
                              const char *upload, size_t *upload_size, void **state) {
  struct server *s = cls;
  struct request *q = *state;
  if (q == NULL) {
    q = calloc(1, sizeof *q);
    if (q == NULL) return MHD_NO;
    *state = q;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    if (q->body.len + *upload_size > BODY_MAX) q->too_big = 1;
    else web_buf_add(&q->body, upload, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  return route(s, c, url, method, q);
}

static void completed(void *cls, struct MHD_Connection *c, void **state,
                      enum MHD_RequestTerminationCode code) {
  struct request *q = *state;
  if (q != NULL) free(q->body.p);
  free(q);
  *state = NULL;
}

/* A socket listening on o's address: its descriptor, or -1 after saying
 * why not; *port gets the port (o->port 0: one the system chose). */
static int listen_on(const struct web_options *o, int *port) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  int v6 = strchr(o->host, ':') != NULL;
  if (v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)o->port);
    inet_pton(AF_INET6, o->host, &a->sin6_addr);
    len = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)o->port);
    inet_pton(AF_INET, o->host, &a->sin_addr);
    len = sizeof *a;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
    fprintf(stderr, "jobq web: cannot listen on %s%s%s:%d: %s\n", v6 ? "[" : "", o->host,
            v6 ? "]" : "", o->port, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
  return fd;
}

int web_run(const struct web_options *o, jobq *db) {
  struct server s = {o, db, 0, "", ""};
  random_hex(s.csrf);
  random_hex(s.login);
  int fd = listen_on(o, &s.port);
  if (fd < 0) return 1;
  /* The signals that stop the server are waited for here, not delivered
   * to the server's thread. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (strchr(o->host, ':') != NULL) flags |= MHD_USE_IPv6;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, handle, &s, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_NOTIFY_COMPLETED, completed, &s, MHD_OPTION_CONNECTION_LIMIT, 256u,
      MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
  if (d == NULL) {
    fprintf(stderr, "jobq web: cannot start the HTTP server\n");
    close(fd);
    return 1;
  }
  int v6 = strchr(o->host, ':') != NULL;
  char *url = jobq_url_redact(o->url);
  fprintf(stderr, "jobq web: serving %s on http://%s%s%s:%d/%s%s\n", url ? url : "the database",
          v6 ? "[" : "", o->host, v6 ? "]" : "", s.port, o->token ? " (token required)" : "",
          o->read_only ? " (read-only)" : "");
  free(url);
  sd_notifyf(0, "READY=1\nSTATUS=serving on port %d", s.port);
  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  sd_notify(0, "STOPPING=1");
  fprintf(stderr, "jobq web: stopping on %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  MHD_stop_daemon(d); /* closes fd */
  return 0;
}
