# floe build.  `make` builds the release library and program into build/;
# `make MODE=asan` builds with AddressSanitizer + UBSan into build-asan/.
# Every .c file under src/ (except src/cli) goes into libfloe; every
# tests/unit/test_*.c becomes one unit-test program; every fuzz/fuzz_*.c one
# corpus-replay program; `make libfuzzer` builds them as libFuzzer targets
# with clang (apt-get install clang) for real fuzzing sessions.
# `make WITH_PG=0` leaves the Postgres source (and libpq) out, `WITH_KAFKA=0`
# the Kafka source (and librdkafka): their functions stay in the library,
# refusing with FLOE_EUNSUPPORTED (src/mirror/without_pg.c,
# src/kafka/without_kafka.c; docs/api.md).

MODE   ?= release
ifeq ($(MODE),asan)
BUILD  ?= build-asan
OPT    := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDOPT  := -fsanitize=address,undefined
else ifeq ($(MODE),debug)
BUILD  ?= build-debug
OPT    := -O0 -g
LDOPT  :=
else
BUILD  ?= build
OPT    := -O2 -g
LDOPT  :=
endif

CC      ?= cc
WITH_PG    ?= 1
WITH_KAFKA ?= 1
LIB_SRC  := $(shell find src -name '*.c' -not -path 'src/cli/*' -not -name 'without_*.c' | sort)
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))
# libpq (Debian: libpq-dev) for the Postgres source.
ifeq ($(WITH_PG),0)
PQ_INC  :=
PQ_LIB  :=
LIB_SRC := $(filter-out src/mirror/mirror% src/source/pg_conn.c,$(LIB_SRC)) src/mirror/without_pg.c
UNIT_SRC := $(filter-out tests/unit/test_mirror_plan.c tests/unit/test_spill.c,$(UNIT_SRC))
else
PQ_INC  := $(shell pkg-config --cflags-only-I libpq 2>/dev/null || echo -I/usr/include/postgresql)
PQ_LIB  := -lpq
endif
# librdkafka (Debian: librdkafka-dev) for the Kafka source.
ifeq ($(WITH_KAFKA),0)
KAFKA_LIB :=
LIB_SRC := $(filter-out $(filter-out src/kafka/options.c,$(filter src/kafka/%,$(LIB_SRC))),\
                        $(LIB_SRC)) src/kafka/without_kafka.c
BENCH_SRC := $(filter-out bench/bench_kafka_drain.c,$(BENCH_SRC))
else
KAFKA_LIB := -lrdkafka
endif
# -fPIC: the same objects make libfloe.a and libfloe.so.
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wvla -fPIC \
           -Wstrict-prototypes -Wmissing-prototypes -Iinclude -Isrc $(PQ_INC) $(OPT) $(EXTRA_CFLAGS)
LDLIBS  := -lzstd -lsnappy -lz -lsqlite3 -ljansson -lcurl $(PQ_LIB) $(KAFKA_LIB) -lm -lpthread

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

# The library's version (include/floe.h); the shared library's soname
# carries the major: a release that breaks the ABI raises it.
VERSION := $(shell sed -n 's/^\#define FLOE_VERSION_STRING "\(.*\)"/\1/p' include/floe.h)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))

LIB := $(BUILD)/libfloe.a
SO  := $(BUILD)/libfloe.so.$(VERSION)
BIN := $(BUILD)/floe

.PHONY: all unit fuzz bench clean check-src libfuzzer install uninstall
all: $(LIB) $(SO) $(BIN) $(UNIT_BIN) $(FUZZ_BIN) $(BENCH_BIN)

# What the objects and the library were built with: a change (CFLAGS, the
# sources chosen) rebuilds them.
CONFIG := $(CC) $(CFLAGS) | $(LIB_SRC)
$(BUILD)/config: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CONFIG)' | cmp -s - $@ || echo '$(CONFIG)' > $@
FORCE:

$(BUILD)/obj/%.o: %.c $(BUILD)/config
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ) $(BUILD)/config
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(LIB_OBJ)

# Only the public floe_ symbols are exported (scripts/libfloe.map).
$(SO): $(LIB_OBJ) scripts/libfloe.map $(BUILD)/config
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDOPT) -Wl,-soname,libfloe.so.$(MAJOR) -Wl,--version-script=scripts/libfloe.map \
	    -o $@ $(LIB_OBJ) $(LDLIBS)
	ln -sf libfloe.so.$(VERSION) $(BUILD)/libfloe.so.$(MAJOR)
	ln -sf libfloe.so.$(MAJOR) $(BUILD)/libfloe.so

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDOPT) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(LIB) $(LDOPT) $(LDLIBS)

$(BUILD)/fuzz/%: fuzz/%.c fuzz/replay.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< fuzz/replay.c $(LIB) $(LDOPT) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDOPT) $(LDLIBS)

# Run every unit-test program; each prints its own summary line. The *_tool
# programs are helpers that pytest drives with arguments, not tests.
UNIT_RUN := $(filter-out %_tool,$(UNIT_BIN))
unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_RUN); do $$t || fail=1; done; exit $$fail

# Coverage-guided fuzzing: build/libfuzzer/fuzz_x CORPUS_DIR [-max_total_time=N]
LIBFUZZER_BIN := $(FUZZ_SRC:fuzz/%.c=build/libfuzzer/%)
libfuzzer: $(LIBFUZZER_BIN)
build/libfuzzer/%: fuzz/%.c $(LIB_SRC)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(PQ_INC) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -o $@ $< $(LIB_SRC) $(LDLIBS)

check-src:
	@scripts/check-src.sh

# make install [PREFIX=/usr/local] [LIBDIR=$(PREFIX)/lib] [DESTDIR=staging]:
# the program, the header, both libraries and floe.pc (pkg-config).
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
# What linking libfloe.a needs besides it (pkg-config --static --libs):
# floe's own link line.  (Not as Requires.private: pkg-config would then
# add those libraries' private dependencies too, which a link against
# their shared libraries neither needs nor finds.)

install: $(LIB) $(SO) $(BIN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/floe
	install -m 644 include/floe.h $(DESTDIR)$(INCDIR)/floe.h
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libfloe.a
	install -m 755 $(SO) $(DESTDIR)$(LIBDIR)/libfloe.so.$(VERSION)
	ln -sf libfloe.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libfloe.so.$(MAJOR)
	ln -sf libfloe.so.$(MAJOR) $(DESTDIR)$(LIBDIR)/libfloe.so
	printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$(INCDIR)' 'libdir=$(LIBDIR)' '' \
	    'Name: floe' 'Description: streams changes into Apache Iceberg tables exactly once' \
	    'Version: $(VERSION)' \
	    'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lfloe' 'Libs.private: $(LDLIBS)' \
	    > $(DESTDIR)$(LIBDIR)/pkgconfig/floe.pc

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/floe $(DESTDIR)$(INCDIR)/floe.h $(DESTDIR)$(LIBDIR)/libfloe.a \
	    $(DESTDIR)$(LIBDIR)/libfloe.so $(DESTDIR)$(LIBDIR)/libfloe.so.$(MAJOR) \
	    $(DESTDIR)$(LIBDIR)/libfloe.so.$(VERSION) $(DESTDIR)$(LIBDIR)/pkgconfig/floe.pc

clean:
	rm -rf build build-asan build-debug

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
