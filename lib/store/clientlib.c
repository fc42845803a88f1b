/*
 * clientlib.c - the network stores' client libraries, loaded when a URL
 * first needs one.  libpq and libmariadb, with the TLS, Kerberos and LDAP
 * libraries they depend on, are two dozen shared objects: loading them
 * all at every start cost each `jobq` command 20 ms of processor time and
 * a SQLite foreman 5 MiB of resident memory it never used.  So the
 * library is not linked with them; the PostgreSQL and MySQL stores call
 * them through tables of functions (libpq.h, libmariadb.h) that this file
 * fills with dlopen() and dlsym(), once per process.  The handles are kept
 * for the life of the process.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "store/libmariadb.h"
#include "store/libpq.h"

struct symbol {
  const char *name;
  size_t at; /* offset of its slot in the table */
};

struct client {
  const char *soname, *what;    /* "libpq.so.5", what it is and where from */
  const struct symbol *symbols;
  size_t n;
  void *table;
  int rc;                       /* of the one attempt */
  char why[300];
};

/* Opens c->soname and fills c->table; on failure c->rc and c->why say
 * why.  A library without one of the functions is refused whole. */
static void load(struct client *c) {
  void *h = dlopen(c->soname, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    snprintf(c->why, sizeof c->why, "cannot load %s, %s: %s", c->soname, c->what,
             e ? e : "unknown error");
    c->rc = JOBQ_ENOTSUP;
    return;
  }
  for (size_t i = 0; i < c->n; i++) {
    void *f = dlsym(h, c->symbols[i].name);
    if (f == NULL) {
      snprintf(c->why, sizeof c->why, "%s, %s, has no function %s: expected a newer version",
               c->soname, c->what, c->symbols[i].name);
      c->rc = JOBQ_ENOTSUP;
      return; /* the handle stays open: the program may use the library itself */
    }
    memcpy((char *)c->table + c->symbols[i].at, &f, sizeof f);
  }
  c->rc = JOBQ_OK;
}

static int loaded(jobq *db, struct client *c, pthread_once_t *once, void (*run)(void)) {
  pthread_once(once, run);
  if (c->rc == JOBQ_OK) return JOBQ_OK;
  return jobq__fail(db, c->rc, "%s", c->why);
}

struct jobq__libpq jobq__libpq;

static const struct symbol pq_symbols[] = {
#define JOBQ_LIBPQ_SYMBOL(f) {#f, offsetof(struct jobq__libpq, f##_)},
    JOBQ_LIBPQ_FUNCS(JOBQ_LIBPQ_SYMBOL)
#undef JOBQ_LIBPQ_SYMBOL
};

static struct client pq = {
    JOBQ_LIBPQ_SONAME, "the PostgreSQL client library (Debian package libpq5, 14 or later)",
    pq_symbols, sizeof pq_symbols / sizeof pq_symbols[0], &jobq__libpq, JOBQ_ENOTSUP, ""};
static pthread_once_t pq_once = PTHREAD_ONCE_INIT;
static void pq_load(void) { load(&pq); }

int jobq__libpq_load(jobq *db) { return loaded(db, &pq, &pq_once, pq_load); }

struct jobq__libmariadb jobq__libmariadb;

static const struct symbol my_symbols[] = {
#define JOBQ_LIBMARIADB_SYMBOL(f) {#f, offsetof(struct jobq__libmariadb, f##_)},
    JOBQ_LIBMARIADB_FUNCS(JOBQ_LIBMARIADB_SYMBOL)
#undef JOBQ_LIBMARIADB_SYMBOL
};

static struct client my = {
    JOBQ_LIBMARIADB_SONAME, "the MariaDB client library (Debian package libmariadb3)",
    my_symbols, sizeof my_symbols / sizeof my_symbols[0], &jobq__libmariadb, JOBQ_ENOTSUP,
    ""};
static pthread_once_t my_once = PTHREAD_ONCE_INIT;
static void my_load(void) { load(&my); }

int jobq__libmariadb_load(jobq *db) { return loaded(db, &my, &my_once, my_load); }
