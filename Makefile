# jobq build.  `make` builds libjobq (static, and shared with its soname
# chain), the jobq command, the jobq-bench benchmark, the examples and the
# tests into build/.  `make check` is the whole test suite: the tests as
# built, then again under AddressSanitizer and UndefinedBehaviorSanitizer
# (into build-san/), then a short run of each fuzz target (clang's
# libFuzzer, into build-fuzz/).  `make fuzz` fuzzes longer.  `make tsan`
# builds into build-tsan/ with ThreadSanitizer and runs the foreman's tests
# (the foreman is the one part with two threads).  `make install
# PREFIX=...` (the library, the commands, the man page and the bash and
# zsh completions) and `make uninstall PREFIX=...`.  `make ha` is the long
# high-availability run (as root).  `make fresh-check` runs
# `make demo` and `make check` in a fresh Debian 12 root (long; not part
# of `make check`).
#
# The targets that install the packages first (demo, check, chaos, fuzz,
# tsan) build in a second make, started after scripts/install-deps.sh:
# the pkg-config flags below are read when a make starts, so on a fresh
# machine the first one would have none.
#
# Only lib/ and the tests see lib/'s headers (-Ilib): cli/, foreman/,
# web/, bench/ and examples/ are built against include/jobq.h alone, and the
# library exports only the names that jobq.h declares (-fvisibility=hidden,
# JOBQ_API, lib/libjobq.map).

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
SAN      ?=
TSAN     ?=

VERSION  := $(shell sed -n 's/^\#define JOBQ_VERSION "\(.*\)"/\1/p' include/jobq.h)
SOMAJOR  := $(firstword $(subst ., ,$(VERSION)))
SONAME   := libjobq.so.$(SOMAJOR)

PKGS     := sqlite3 libpq libmariadb jansson glib-2.0
CPPFLAGS += -Iinclude -D_GNU_SOURCE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-unused-parameter -fPIC \
            -include lib/banned.h $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libpq and libmariadb are loaded when a URL needs them (lib/store/clientlib.c),
# not linked: only the tests that call them directly link them.
# GLib for the time zones of periodic jobs (lib/cronspec.c).
LIB_LIBS := $(shell pkg-config --libs sqlite3 glib-2.0 2>/dev/null) -ldl -lpthread -lm
LDLIBS   += $(shell pkg-config --libs sqlite3 jansson glib-2.0 2>/dev/null) -ldl -lpthread -lm
CLIENT_LIBS := $(shell pkg-config --libs libpq libmariadb 2>/dev/null)
# libuv is the foreman's alone: the library does not link it.
UV_CFLAGS:= $(shell pkg-config --cflags libuv 2>/dev/null)
UV_LIBS  := $(shell pkg-config --libs libuv 2>/dev/null)
# sd_notify, for the foreman and `jobq web` under systemd.
SD_CFLAGS:= $(shell pkg-config --cflags libsystemd 2>/dev/null)
SD_LIBS  := $(shell pkg-config --libs libsystemd 2>/dev/null)
# libmicrohttpd is `jobq web`'s alone (web/).
MHD_CFLAGS:= $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null)

# A plain `make` on a machine without the packages says what to run
# instead of failing at the first #include.
ifeq ($(filter deps demo check chaos fuzz tsan ha clean uninstall fresh-check,$(MAKECMDGOALS)),)
ifneq ($(shell pkg-config --exists $(PKGS) libuv libsystemd libmicrohttpd 2>/dev/null && echo yes),yes)
$(error missing packages: run 'make deps' (scripts/install-deps.sh) first, or 'make demo' or 'make check', which install them)
endif
endif

ifeq ($(SAN),fuzz)
# libFuzzer (clang): every object instrumented, the targets get its main.
CFLAGS   += -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
            -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined
else ifneq ($(SAN),)
CFLAGS   += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=address,undefined
endif
ifneq ($(TSAN),)
CFLAGS   += -O1 -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=thread
endif

LIB_SRC  := $(wildcard lib/*.c lib/store/*.c)
COMMON_SRC := $(wildcard common/*.c)
CLI_SRC  := $(wildcard cli/*.c)
BENCH_SRC:= $(wildcard bench/*.c)
FM_SRC   := $(filter-out foreman/jobq-exec.c,$(wildcard foreman/*.c))
WEB_SRC  := $(wildcard web/*.c)
TEST_SRC := $(wildcard tests/*.c)
EX_SRC   := $(wildcard examples/*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
BENCH_OBJ:= $(BENCH_SRC:%.c=$(BUILD)/%.o)
FM_OBJ   := $(FM_SRC:%.c=$(BUILD)/%.o)
WEB_OBJ  := $(WEB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/web/assets_S.o
TESTS    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(filter tests/test_%.c,$(TEST_SRC)))
TEST_LIB := $(patsubst %.c,$(BUILD)/%.o,$(filter-out tests/test_%.c,$(TEST_SRC)))
EXAMPLES := $(EX_SRC:examples/%.c=$(BUILD)/examples/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
# The command's objects but its main(), for the fuzz targets.
CLI_PARTS:= $(filter-out $(BUILD)/cli/jobq.o,$(CLI_OBJ))
# The command line's options and output, which jobq-bench shares.
CLI_SHARED := $(addprefix $(BUILD)/cli/,options.o output.o util.o)
SHLIB    := $(BUILD)/libjobq.so.$(VERSION)

all: $(BUILD)/libjobq.a $(BUILD)/libjobq.so $(BUILD)/jobq $(BUILD)/jobq-exec \
     $(BUILD)/jobq-bench $(EXAMPLES) $(TESTS)

$(BUILD)/%.o: %.c include/jobq.h $(wildcard lib/*.h lib/store/*.h common/*.h cli/*.h foreman/*.h bench/*.h tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Who sees what: lib/'s headers for lib/ and the tests only; the library's
# own names hidden unless jobq.h exports them (JOBQ_API).
$(BUILD)/lib/%.o $(BUILD)/tests/%.o: CPPFLAGS += -Ilib
$(BUILD)/lib/%.o: CFLAGS += -fvisibility=hidden
$(BUILD)/cli/%.o $(BUILD)/foreman/%.o $(BUILD)/bench/%.o $(BUILD)/tests/%.o: CPPFLAGS += -Icommon
$(BUILD)/bench/%.o: CPPFLAGS += -Icli

$(BUILD)/foreman/%.o: foreman/%.c include/jobq.h $(wildcard common/*.h foreman/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(UV_CFLAGS) $(SD_CFLAGS) -c -o $@ $<

$(BUILD)/web/%.o: web/%.c include/jobq.h web/web.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(MHD_CFLAGS) $(SD_CFLAGS) -c -o $@ $<

# The page's files, built into the binary (web/assets.S).
$(BUILD)/web/assets_S.o: web/assets.S $(wildcard web/static/*)
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

$(BUILD)/libforeman.a: $(FM_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libjobq.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

# The shared library and its soname chain: libjobq.so.0.1.0, then
# libjobq.so.0 (what programs load) and libjobq.so (what -ljobq finds).
$(SHLIB): $(LIB_OBJ) lib/libjobq.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libjobq.map \
	  -Wl,--no-undefined $(LDFLAGS) -o $@ $(LIB_OBJ) $(LIB_LIBS)

$(BUILD)/$(SONAME): $(SHLIB)
	ln -sf $(notdir $<) $@

$(BUILD)/libjobq.so: $(BUILD)/$(SONAME)
	ln -sf $(notdir $<) $@

$(BUILD)/jobq: $(CLI_OBJ) $(WEB_OBJ) $(BUILD)/libforeman.a $(BUILD)/libcommon.a \
              $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(WEB_OBJ) $(BUILD)/libforeman.a $(BUILD)/libcommon.a \
	  $(BUILD)/libjobq.a $(LDLIBS) $(UV_LIBS) $(MHD_LIBS) $(SD_LIBS)

# The benchmark, a program of its own on the public library; `jobq bench`
# runs it.  Its bare SQL loads libpq and libmariadb as the library does.
$(BUILD)/jobq-bench: $(BENCH_OBJ) $(CLI_SHARED) $(BUILD)/libcommon.a $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $(BENCH_OBJ) $(CLI_SHARED) $(BUILD)/libcommon.a \
	  $(BUILD)/libjobq.a $(LDLIBS)

# The foreman's exec helper, once per job: small, libc only, never built
# with the sanitizers (their start-up would be most of its cost).
$(BUILD)/jobq-exec: foreman/jobq-exec.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c17 -Wall -Wextra -Werror -D_GNU_SOURCE -o $@ $<

# The examples link the shared library, as a program of its users does.
$(BUILD)/examples/%: $(BUILD)/examples/%.o $(BUILD)/libjobq.so
	$(CC) $(LDFLAGS) -o $@ $< -L$(BUILD) -Wl,-rpath,'$$ORIGIN/..' -ljobq \
	  $(shell pkg-config --libs sqlite3 2>/dev/null)

# The tests see the library's internals: they link the static library.
$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_LIB) $(BUILD)/libforeman.a $(BUILD)/libcommon.a \
                  $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libforeman.a $(BUILD)/libcommon.a \
	  $(BUILD)/libjobq.a $(LDLIBS) $(UV_LIBS) $(SD_LIBS) $(CLIENT_LIBS) -lcmocka

$(BUILD)/tests/fuzz/%.o: tests/fuzz/%.c include/jobq.h $(wildcard lib/*.h common/*.h cli/*.h foreman/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Icli -Iforeman $(CFLAGS) $(UV_CFLAGS) -c -o $@ $<

$(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/%.o $(CLI_PARTS) $(WEB_OBJ) $(BUILD)/libforeman.a \
                 $(BUILD)/libcommon.a $(BUILD)/libjobq.a
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_LDFLAGS) -o $@ $< $(CLI_PARTS) $(WEB_OBJ) $(BUILD)/libforeman.a \
	  $(BUILD)/libcommon.a $(BUILD)/libjobq.a $(LDLIBS) $(UV_LIBS) $(MHD_LIBS) $(SD_LIBS)

fuzzers: $(FUZZERS)

# The fuzz targets (tests/fuzz/) built with clang into build-fuzz, and run
# for FUZZ_SECONDS each; `make check` runs a short smoke of each.
FUZZ_SECONDS ?= 60
fuzz-build:
	$(MAKE) BUILD=build-fuzz SAN=fuzz CC=clang fuzzers

fuzz: deps
	$(MAKE) fuzz-build
	tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# The long chaos run (tests/chaos/): CHAOS_SECONDS of faults on each store
# (a short one runs in `make check`, tests/cli_chaos.sh).
chaos: deps
	$(MAKE) all
	tests/chaos/run.sh $(BUILD)

# The long high-availability run (tests/ha/, as root): HA_FAILOVERS
# failovers of a PostgreSQL primary to its synchronous standby under the
# chaos load, foremen on hosts of their own (a short one runs in `make
# check`, tests/cli_ha.sh).
ha: deps
	$(MAKE) all
	tests/ha/run.sh $(BUILD)

# A hundred foremen (JOBQ_LOAD_FOREMEN), each on a host of its own, on one
# PostgreSQL, directly and through one PgBouncer in transaction mode (as
# root): every job once, each key in order, at most two server connections
# a foreman directly and the pool's through the pooler.
pgbouncer-load: deps
	$(MAKE) all
	tests/pgbouncer_load.sh $(BUILD)

# Installs the Debian packages the build and the tests need (only the
# missing ones).
deps:
	scripts/install-deps.sh

# The whole suite: plain build (its multi-process runs 10 s a store and
# its chaos runs 10 s a store: `make chaos` and `make ha` are the
# long ones), then the sanitizer build (whose
# multi-process runs are shorter still, and which leaves out the
# high-availability runs, the client packages' suites, the browser's and
# the benchmark's tests, and the timed limit and schedule scripts: they
# exercise the same library code as the plain pass and its cmocka suites,
# through servers, other languages and waits, and would add fourteen
# minutes), to keep the whole under half an hour on two cores.
SAN_SKIP := cli_ha.sh cli_ha_mariadb.sh cli_clients.sh cli_bench.sh cli_web.sh \
  cli_limit.sh cli_cron.sh
SAN_SKIP_WHY := run in the plain pass only (make check: SAN_SKIP)
# The conformance suite through PgBouncer runs the same library code as
# on PostgreSQL: in the plain pass only, for time.
SAN_STORES := sqlite postgres mysql
check: deps
	$(MAKE) all
	JOBQ_BUILD=$(BUILD) JOBQ_MULTIPROC_SECONDS=10 JOBQ_CHAOS_SECONDS=10 JOBQ_HA_SECONDS=25 \
	  tests/run.sh
	$(MAKE) BUILD=build-san SAN=1 all
	JOBQ_BUILD=build-san JOBQ_MULTIPROC_SECONDS=5 JOBQ_CHAOS_SECONDS=10 \
	  JOBQ_TEST_STORES="$(SAN_STORES)" \
	  JOBQ_TEST_SKIP="$(SAN_SKIP)" JOBQ_TEST_SKIP_WHY="$(SAN_SKIP_WHY)" tests/run.sh
	$(MAKE) fuzz-build
	tests/fuzz/run.sh build-fuzz 5

# The plain build only (quick).
test: all
	JOBQ_BUILD=$(BUILD) tests/run.sh

demo: deps
	$(MAKE) all
	examples/demo.sh

# The foreman's tests under ThreadSanitizer (its database thread).
tsan: deps
	$(MAKE) BUILD=build-tsan TSAN=1 all
	JOBQ_BUILD=build-tsan JOBQ_TEST_FILTER=work TSAN_OPTIONS=halt_on_error=1 \
	  tests/run.sh

# The first run on a fresh machine: `make demo` and `make check` as the
# README says, as root in a new Debian 12 root (debootstrap) where none of
# scripts/deps.txt is installed.  Long; its log goes to fresh-check.log.
fresh-check:
	scripts/install-deps.sh fresh-check
	nice -n 10 scripts/fresh-check.sh fresh-check.log

# Where `make install` puts things.  jobq-bench goes to libexec, where
# `jobq bench` looks for it relative to its own folder (../libexec/jobq).
bindir     := $(DESTDIR)$(PREFIX)/bin
libdir     := $(DESTDIR)$(PREFIX)/lib
libexecdir := $(DESTDIR)$(PREFIX)/libexec/jobq
includedir := $(DESTDIR)$(PREFIX)/include
man1dir    := $(DESTDIR)$(PREFIX)/share/man/man1
bashcompdir:= $(DESTDIR)$(PREFIX)/share/bash-completion/completions
zshcompdir := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
MANPAGES   := $(notdir $(wildcard man/*.1))

install: all
	install -d $(bindir) $(libdir)/pkgconfig $(libexecdir) $(includedir) $(man1dir)
	install -m 755 $(BUILD)/jobq $(BUILD)/jobq-exec $(bindir)/
	install -m 755 $(BUILD)/jobq-bench $(libexecdir)/jobq-bench
	install -m 644 include/jobq.h $(includedir)/jobq.h
	install -m 644 $(BUILD)/libjobq.a $(libdir)/libjobq.a
	install -m 755 $(SHLIB) $(libdir)/$(notdir $(SHLIB))
	ln -sf $(notdir $(SHLIB)) $(libdir)/$(SONAME)
	ln -sf $(SONAME) $(libdir)/libjobq.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	  jobq.pc.in > $(libdir)/pkgconfig/jobq.pc
	install -m 644 $(addprefix man/,$(MANPAGES)) $(man1dir)/
	install -d $(bashcompdir) $(zshcompdir)
	install -m 644 completions/jobq.bash $(bashcompdir)/jobq
	install -m 644 completions/_jobq $(zshcompdir)/_jobq

# Removes what `make install` put there (with the same PREFIX and
# DESTDIR), and libexec/jobq when it is left empty.
uninstall:
	rm -f $(bindir)/jobq $(bindir)/jobq-exec $(libexecdir)/jobq-bench \
	  $(includedir)/jobq.h $(libdir)/libjobq.a $(libdir)/$(notdir $(SHLIB)) \
	  $(libdir)/$(SONAME) $(libdir)/libjobq.so $(libdir)/pkgconfig/jobq.pc \
	  $(addprefix $(man1dir)/,$(MANPAGES)) $(bashcompdir)/jobq $(zshcompdir)/_jobq
	-rmdir $(libexecdir) 2>/dev/null

clean:
	rm -rf build build-san build-fuzz build-tsan

.PHONY: all deps check test demo tsan install uninstall clean fuzz fuzz-build fuzzers pgbouncer-load \
        chaos ha fresh-check
