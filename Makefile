# jobq build.  `make` builds libjobq (static and shared), the jobq command,
# the examples and the tests into build/.  `make check` is the whole test
# suite: the tests as built, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer (into build-san/), then a short run of each
# fuzz target (clang's libFuzzer, into build-fuzz/).  `make fuzz` fuzzes
# longer.  `make install PREFIX=...`.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
SAN      ?=

PKGS     := sqlite3 libpq jansson
CPPFLAGS += -Iinclude -Ilib -D_GNU_SOURCE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-unused-parameter -fPIC \
            -include lib/banned.h $(shell pkg-config --cflags $(PKGS))
LDLIBS   += $(shell pkg-config --libs $(PKGS)) -lpthread -lm

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

LIB_SRC  := $(wildcard lib/*.c lib/store/*.c)
CLI_SRC  := $(wildcard cli/*.c)
TEST_SRC := $(wildcard tests/*.c)
EX_SRC   := $(wildcard examples/*.c)
BENCH_SRC:= $(wildcard bench/*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TESTS    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(filter tests/test_%.c,$(TEST_SRC)))
TEST_LIB := $(patsubst %.c,$(BUILD)/%.o,$(filter-out tests/test_%.c,$(TEST_SRC)))
EXAMPLES := $(EX_SRC:examples/%.c=$(BUILD)/examples/%)
BENCHES  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
# The command's objects but its main(), for the fuzz targets.
CLI_PARTS:= $(filter-out $(BUILD)/cli/jobq.o,$(CLI_OBJ))

all: $(BUILD)/libjobq.a $(BUILD)/libjobq.so $(BUILD)/jobq $(EXAMPLES) $(BENCHES) $(TESTS)

$(BUILD)/%.o: %.c include/jobq.h $(wildcard lib/*.h lib/store/*.h cli/*.h tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libjobq.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libjobq.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libjobq.so.0 $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/jobq: $(CLI_OBJ) $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libjobq.a $(LDLIBS)

$(BUILD)/examples/%: $(BUILD)/examples/%.o $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libjobq.a $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libjobq.a $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_LIB) $(BUILD)/libjobq.a
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB) $(BUILD)/libjobq.a $(LDLIBS) -lcmocka

$(BUILD)/tests/fuzz/%.o: tests/fuzz/%.c include/jobq.h $(wildcard lib/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Icli $(CFLAGS) -c -o $@ $<

$(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/%.o $(CLI_PARTS) $(BUILD)/libjobq.a
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_LDFLAGS) -o $@ $< $(CLI_PARTS) $(BUILD)/libjobq.a $(LDLIBS)

fuzzers: $(FUZZERS)

# The fuzz targets (tests/fuzz/) built with clang into build-fuzz, and run
# for FUZZ_SECONDS each; `make check` runs a short smoke of each.
FUZZ_SECONDS ?= 60
fuzz-build:
	$(MAKE) BUILD=build-fuzz SAN=fuzz CC=clang fuzzers

fuzz: deps fuzz-build
	tests/fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# Installs the Debian packages the build and the tests need (only the
# missing ones).
deps:
	scripts/install-deps.sh

# The whole suite: plain build, then the sanitizer build.
check: deps all
	JOBQ_BUILD=$(BUILD) tests/run.sh
	$(MAKE) BUILD=build-san SAN=1 all
	JOBQ_BUILD=build-san tests/run.sh
	$(MAKE) fuzz-build
	tests/fuzz/run.sh build-fuzz 5

# The plain build only (quick).
test: all
	JOBQ_BUILD=$(BUILD) tests/run.sh

demo: deps all
	examples/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/jobq $(DESTDIR)$(PREFIX)/bin/jobq
	install -m 644 include/jobq.h $(DESTDIR)$(PREFIX)/include/jobq.h
	install -m 644 $(BUILD)/libjobq.a $(DESTDIR)$(PREFIX)/lib/libjobq.a
	install -m 755 $(BUILD)/libjobq.so $(DESTDIR)$(PREFIX)/lib/libjobq.so.0
	ln -sf libjobq.so.0 $(DESTDIR)$(PREFIX)/lib/libjobq.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/^#define JOBQ_VERSION "\(.*\)"/\1/p' include/jobq.h)|' \
	  jobq.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/jobq.pc
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf build build-san build-fuzz

.PHONY: all deps check test demo install clean fuzz fuzz-build fuzzers
