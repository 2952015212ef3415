# libhiera and the hiera command. `make` builds build/hiera, build/libhiera.a and build/libhiera.so.
# `make check` runs every test; `make demo` looks up a value in the bundled example.

PREFIX ?= /usr/local
CC ?= cc
PKGS = yaml-0.1 jansson oniguruma openssl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS ?= -O2 -g
WARN = -Wall -Wextra -Wshadow -Wno-unused-parameter
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iinclude -Isrc $(PKG_CFLAGS)
LIBS = $(PKG_LIBS) -lm

B = build
LIB_SRC := $(sort $(wildcard src/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
PIC_OBJ := $(LIB_SRC:src/%.c=$(B)/pic/%.o)
CLI_OBJ := $(CLI_SRC:src/cli/%.c=$(B)/obj/cli/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
SOVER = 0

.PHONY: all deps check unit cases demo clean
all: deps $(B)/hiera $(B)/libhiera.a $(B)/libhiera.so

deps:
	@sh scripts/deps.sh

$(B)/obj/%.o: src/%.c $(wildcard src/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/pic/%.o: src/%.c $(wildcard src/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -DHIERA_BUILD_SHARED -c $< -o $@

$(B)/obj/cli/%.o: src/cli/%.c $(wildcard src/*.h src/cli/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/libhiera.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/libhiera.so: $(PIC_OBJ)
	$(CC) -shared -Wl,-soname,libhiera.so.$(SOVER) -o $@ $^ $(LIBS)

$(B)/hiera: $(CLI_OBJ) $(B)/libhiera.a
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(B)/libhiera.a $(LIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libhiera.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(shell pkg-config --cflags cmocka) -o $@ $< $(B)/libhiera.a $(LIBS) $(shell pkg-config --libs cmocka)

unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do ./$$t >$$t.log 2>&1 || { echo "FAIL $$t"; cat $$t.log; fail=1; }; done; \
	  echo "unit tests: $(words $(UNIT_BIN)) programs"; exit $$fail

cases: $(B)/hiera
	@python3 tests/run-cases.py --hiera $(B)/hiera

check: all
	@sh scripts/deps.sh --test
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory cases

demo: all
	@echo '$$ build/hiera lookup --codedir examples/control-repo --environmentpath examples/control-repo/environments --node web01.example.com --facts examples/control-repo/facts/web01.example.com.yaml --merge deep profile::base::users'
	@./$(B)/hiera lookup --codedir examples/control-repo --environmentpath examples/control-repo/environments \
	  --node web01.example.com --facts examples/control-repo/facts/web01.example.com.yaml --merge deep profile::base::users

clean:
	rm -rf $(B)
