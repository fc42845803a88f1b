# jobq build.  `make` builds libjobq (static and shared), the jobq command,
# the examples and the tests into build/.  `make check` is the whole test
# suite: the tests as built, then again under AddressSanitizer and
# UndefinedBehaviorSanitizer (into build-san/).  `make install PREFIX=...`.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
SAN      ?=

PKGS     := sqlite3 libpq libmariadb jansson
CPPFLAGS += -Iinclude -Ilib -D_GNU_SOURCE
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-unused-parameter -fPIC \
            -include lib/banned.h $(shell pkg-config --cflags $(PKGS))
LDLIBS   += $(shell pkg-config --libs $(PKGS)) -lpthread -lm

ifneq ($(SAN),)
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

# Installs the Debian packages the build and the tests need (only the
# missing ones).
deps:
	scripts/install-deps.sh

# The whole suite: plain build, then the sanitizer build.
check: deps all
	JOBQ_BUILD=$(BUILD) tests/run.sh
	$(MAKE) BUILD=build-san SAN=1 all
	JOBQ_BUILD=build-san tests/run.sh

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
	rm -rf build build-san

.PHONY: all deps check test demo install clean
