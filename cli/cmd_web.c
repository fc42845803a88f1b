/*
 * cmd_web.c - `jobq web`: checks the listening address and the token,
 * opens the database and hands both to the server in web/.  Refuses to
 * listen beyond loopback without a token: a dashboard that can retry and
 * cancel jobs is not left open to a network.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../web/web.h"
#include "builtin.h"

#define TOKEN_MIN 16

static const char usage[] =
    "usage: jobq web [--listen ADDR:PORT] [--token-file FILE] [--read-only]\n"
    "                [--allow-host HOST]...\n"
    "\n"
    "Serves a dashboard of the queue database (its queues, jobs, sessions and\n"
    "dead jobs, with pause, resume, retry and cancel), its JSON API under\n"
    "/api/, and Prometheus metrics at /metrics, until SIGINT or SIGTERM.\n"
    "Listens on 127.0.0.1:8080 by default (port 0: any free port; the\n"
    "address is printed on stderr).  On an address other than loopback it\n"
    "needs --token-file: every request must then carry the token, as\n"
    "'Authorization: Bearer TOKEN' or through the page's login.  Actions are\n"
    "POSTs with a CSRF token; --read-only refuses them and hides them.\n"
    "Requests must name the server in their Host header: its address, or\n"
    "localhost on loopback, or a HOST given with --allow-host (a name a\n"
    "reverse proxy or DNS gives it, with :PORT when not the listening one).\n";

/* ADDR:PORT into o->host, o->port and o->loopback; 0 or a usage error. */
static int parse_listen(const char *text, struct web_options *o) {
  const char *colon = strrchr(text, ':');
  const char *host = text;
  size_t hlen = colon ? (size_t)(colon - text) : 0;
  if (hlen >= 2 && text[0] == '[' && text[hlen - 1] == ']') {
    host++;
    hlen -= 2;
  }
  char *end = NULL;
  long port = colon ? strtol(colon + 1, &end, 10) : -1;
  unsigned char addr[16];
  if (colon == NULL || hlen == 0 || hlen >= sizeof o->host || end == colon + 1 || *end != '\0' ||
      port < 0 || port > 65535)
    goto bad;
  snprintf(o->host, sizeof o->host, "%.*s", (int)hlen, host);
  if (strcmp(o->host, "localhost") == 0) snprintf(o->host, sizeof o->host, "127.0.0.1");
  o->port = (int)port;
  if (inet_pton(AF_INET, o->host, addr) == 1) {
    o->loopback = addr[0] == 127;
  } else if (inet_pton(AF_INET6, o->host, addr) == 1 && host != text) {
    static const unsigned char one[16] = {[15] = 1};
    o->loopback = memcmp(addr, one, 16) == 0;
  } else {
    goto bad;
  }
  return 0;
bad:
  cli_error("invalid --listen '%s': expected ADDR:PORT like 127.0.0.1:8080, "
            "[::1]:8080 or 0.0.0.0:8080",
            text);
  return CLI_EXIT_USAGE;
}

/* The token in path: its first line without surrounding blanks. */
static int read_token(const char *path, char **token) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    cli_error("cannot read --token-file '%s': %s", path, cli_strerror(errno));
    return CLI_EXIT_USAGE;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && (st.st_mode & 0004))
    cli_error("warning: --token-file '%s' can be read by every user: chmod o-r it", path);
  char line[1024];
  if (fgets(line, sizeof line, f) == NULL) line[0] = '\0';
  fclose(f);
  char *p = line, *e = line + strlen(line);
  while (*p && isspace((unsigned char)*p)) p++;
  while (e > p && isspace((unsigned char)e[-1])) *--e = '\0';
  for (char *c = p; *c; c++)
    if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e) e = NULL;
  if (e == NULL || strlen(p) < TOKEN_MIN) {
    cli_error("invalid --token-file '%s': expected a first line of at least %d printable "
              "characters without spaces, like the output of 'openssl rand -hex 32'",
              path, TOKEN_MIN);
    return CLI_EXIT_USAGE;
  }
  *token = strdup(p);
  if (*token == NULL) cli_oom();
  return 0;
}

static int run(int argc, char **argv) {
  const char *listen = "127.0.0.1:8080", *token_file = NULL;
  int read_only = 0;
  struct cli_list hosts = {0};
  const struct cli_option options[] = {
      CLI_STRING(0, "listen", &listen, "ADDR:PORT",
                 "where to listen (default 127.0.0.1:8080; port 0: any free one)"),
      CLI_STRING(0, "token-file", &token_file, "FILE",
                 "require the token on FILE's first line (needed beyond loopback)"),
      CLI_FLAG(0, "read-only", &read_only, "show, never act: no pause, retry or cancel"),
      CLI_LIST(0, "allow-host", &hosts, "HOST",
               "also answer requests whose Host header is HOST; repeat for more"),
      CLI_END};
  int rc = cli_parse_options(usage, options, &argc, argv);
  if (rc != CLI_PARSED) return rc;
  struct web_options o;
  memset(&o, 0, sizeof o);
  o.url = cli_db_url();
  o.read_only = read_only;
  if (cli_check_args(argc, argv, 0, "no arguments") || parse_listen(listen, &o) != 0) {
    free(hosts.items);
    return CLI_EXIT_USAGE;
  }
  if (hosts.n > WEB_HOSTS_MAX) {
    cli_error("too many --allow-host: expected at most %d", WEB_HOSTS_MAX);
    free(hosts.items);
    return CLI_EXIT_USAGE;
  }
  for (size_t i = 0; i < hosts.n; i++) {
    const char *h = hosts.items[i];
    if (*h == '\0' || strlen(h) > 255 || strpbrk(h, " \t\r\n/") != NULL) {
      cli_error("invalid --allow-host '%s': expected a host name like jobq.example.com "
                "or jobq.example.com:443",
                h);
      free(hosts.items);
      return CLI_EXIT_USAGE;
    }
    o.allow_hosts[o.nallow_hosts++] = h;
  }
  char *token = NULL;
  if (token_file != NULL && (rc = read_token(token_file, &token)) != 0) {
    free(hosts.items);
    return rc;
  }
  if (!o.loopback && token == NULL) {
    cli_error("refusing to listen on '%s' without --token-file: beyond loopback every "
              "request must carry a token",
              listen);
    free(hosts.items);
    return CLI_EXIT_USAGE;
  }
  o.token = token;
  cli_hide_db_password(); /* `ps` shows a long-running server's arguments */
  jobq *db;
  if ((rc = cli_open(&db)) == 0) {
    rc = web_run(&o, db) == 0 ? CLI_EXIT_OK : CLI_EXIT_ERROR;
    jobq_close(db);
  }
  free(token);
  free(hosts.items);
  return rc;
}

const struct cli_command cli_cmd_web = {
    "web", "serve a dashboard, a JSON API and Prometheus metrics", run};
