/*
 * sql.c - the client libraries' tables of the benchmark's bare SQL
 * (sql.h), filled from the library jobq already loaded for the URL.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "sql.h"
#include "util.h"

struct bench_libpq bench_libpq;
struct bench_libmariadb bench_libmariadb;

struct symbol {
  const char *name;
  size_t at; /* offset of its slot in the table */
};

static const struct symbol pq_symbols[] = {
#define BENCH_SQL_SYMBOL(f) {#f, offsetof(struct bench_libpq, f##_)},
    BENCH_LIBPQ_FUNCS(BENCH_SQL_SYMBOL)
#undef BENCH_SQL_SYMBOL
};

static const struct symbol my_symbols[] = {
#define BENCH_SQL_SYMBOL(f) {#f, offsetof(struct bench_libmariadb, f##_)},
    BENCH_LIBMARIADB_FUNCS(BENCH_SQL_SYMBOL)
#undef BENCH_SQL_SYMBOL
};

/* The sonames the library loads (lib/store/libpq.h, libmariadb.h). */
static int load(const char *soname, const struct symbol *symbols, size_t n, void *table) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *e = dlerror();
    cli_error("cannot load %s: %s", soname, e != NULL ? e : "unknown error");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    void *f = dlsym(h, symbols[i].name);
    if (f == NULL) {
      cli_error("%s has no function %s: expected a newer version", soname, symbols[i].name);
      return -1;
    }
    memcpy((char *)table + symbols[i].at, &f, sizeof f);
  }
  return 0;
}

int bench_sql_load(int store) {
  if (store == BENCH_POSTGRES)
    return load("libpq.so.5", pq_symbols, sizeof pq_symbols / sizeof pq_symbols[0],
                &bench_libpq);
  if (store == BENCH_MYSQL)
    return load("libmariadb.so.3", my_symbols, sizeof my_symbols / sizeof my_symbols[0],
                &bench_libmariadb);
  return 0;
}
