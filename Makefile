# libhiera and the hiera command. `make` builds build/hiera, build/libhiera.a and build/libhiera.so.
# `make check` runs every test; `make demo` looks up a value in the bundled example.

PREFIX ?= /usr/local
CC ?= cc
B = build
PKGS = yaml-0.1 oniguruma openssl
CFLAGS ?= -O2 -g
# Link-time optimisation of the library and the command: calls between the library's files are
# inlined as calls within a file are (about 10% less CPU per lookup in hiera batch). The objects
# keep their plain code too (fat), so a program linked without LTO (the unit tests, a user's
# cc) links against libhiera.a as before. `make LTO=` builds without it.
LTO ?= -flto=auto -ffat-lto-objects
# What pkg-config says of the libraries (PKG_CFLAGS, PKG_LIBS, CLI_LIBS, SERVE_CFLAGS, CURL_CFLAGS) and
# where mimalloc is (MIMALLOC_SO) is asked once per build folder, into $(B)/config.mk, by
# the rule below, after scripts/deps.sh has installed what is missing. GNU make makes an included makefile
# before anything else and then reads everything again, so whatever the first command on a fresh
# machine (make, make -j2 check, make install, make demo, make check-asan), the compiler and the
# linker get the flags of the packages just installed. The file is made again when the Makefile
# or scripts/deps.sh change; delete it (or `make clean`) to ask again after installing a package.
# `make clean`, `make uninstall`, `make deb` and `make check-deb` need none of it.
ifneq ($(filter-out clean uninstall deps deb check-deb,$(or $(MAKECMDGOALS),all)),)
include $(B)/config.mk
endif
# The allocator of the long runs: mimalloc (libmimalloc-dev) when it is installed. hiera batch
# makes and frees millions of small values, where mimalloc spends about 7% less CPU than glibc's
# malloc; but loading it and its pages per size class cost a one-shot lookup a quarter of a
# millisecond (a seventh of it). So the command is linked without it, and hiera batch, serve,
# check and diff start again at once with it preloaded (src/cli/main.c: LD_PRELOAD, put back as
# it was for the commands they run), when MIMALLOC_SO (from $(B)/config.mk) names the library.
# The library leaves the allocator to the program that embeds it. `make MIMALLOC=` builds without.
MIMALLOC ?= $(if $(MIMALLOC_SO),-DHIERA_MIMALLOC_SO='"$(MIMALLOC_SO)"')
comma = ,
WARN = -Wall -Wextra -Wshadow -Wno-unused-parameter
# (CPPFLAGS and LDFLAGS as given: a Debian build's hardening flags, dpkg-buildflags)
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CPPFLAGS) $(CFLAGS) -Iinclude -Isrc $(PKG_CFLAGS)
LIBS = $(PKG_LIBS) -lm -lpthread
# the hiera command loads libcrypto only when eyaml needs it (src/crypto/lazy/libcrypto.c: part of
# the crypto module, linked into the command only; the library links libcrypto), and Oniguruma
# only when a regexp first needs it (src/base/lazy/oniguruma.c, likewise): CLI_LIBS (from
# $(B)/config.mk) names libyaml, linked statically when its archive is installed (Debian's
# libyaml-dev ships libyaml.a): a one-shot lookup then loads libc alone; `make YAML_STATIC=no`
# (the Debian package: security updates of libyaml reach it) links the shared libyaml
# the library's modules, one folder each (src/base, formats, types, engine, crypto, hiera3, api,
# puppet: what hiera check reads of manifests, check: hiera check's rules, diff: hiera diff's
# comparison, facts: facts sources, Facter and PuppetDB's client, fleet: many nodes x many keys
# on a pool of threads; edit: byte-preserving edits of data files);
# src/cli is the command
LIB_DIRS := base formats types crypto engine hiera3 diff api puppet check edit facts fleet
LIB_SRC := $(sort $(foreach d,$(LIB_DIRS),$(wildcard src/$(d)/*.c)))
LIB_HDR := $(wildcard $(foreach d,$(LIB_DIRS),src/$(d)/*.h)) include/hiera.h include/hiera_fleet.h
CLI_SRC := $(sort $(wildcard src/cli/*.c))
# `hiera serve` (src/serve/): part of the command, with its page (src/serve/web/) compiled in;
# libmicrohttpd and GnuTLS are opened when the server starts (src/serve/libs.c), and libsystemd
# when systemd runs it (src/serve/systemd.c), so only their headers are needed to build
# (SERVE_CFLAGS: from $(B)/config.mk)
SERVE_SRC := $(sort $(wildcard src/serve/*.c))
SERVE_WEB := $(sort $(wildcard src/serve/web/*))
# `hiera lsp` (src/lsp/): the language server, part of the command only
LSP_SRC := $(sort $(wildcard src/lsp/*.c))
# PuppetDB's client (src/facts/puppetdb.c): libcurl is opened on the first request
# (src/facts/curl_lib.c), so only its header is needed to build (CURL_CFLAGS: from $(B)/config.mk)
LIB_OBJ := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
PIC_OBJ := $(LIB_SRC:src/%.c=$(B)/pic/%.o)
CLI_OBJ := $(CLI_SRC:src/cli/%.c=$(B)/obj/cli/%.o) $(SERVE_SRC:src/serve/%.c=$(B)/obj/serve/%.o) $(B)/obj/serve/assets.o \
           $(LSP_SRC:src/lsp/%.c=$(B)/obj/lsp/%.o) \
           $(B)/obj/crypto/lazy/libcrypto.o $(B)/obj/base/lazy/oniguruma.o
# (the test programs link libhiera.a's plain code with -fno-lto: without it GCC's linker plugin
# takes the fat objects' LTO code and optimises the whole library again for each program, 25 s
# of CPU instead of 0.4)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
# the shared library's ABI version: 1 since the option structs start with their size (0.2.0)
SOVER = 1
# the Python that builds the module (Debian's python3, where python3-cffi and python3-pytest are,
# ahead of another one on PATH)
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: FORCE all deps test-deps check unit cases demo clean install uninstall install-check check-web check-diff check-puppetdb \
        check-lsp check-edit deb check-deb check-realrepos python check-python install-python check-ansible
all: $(B)/hiera $(B)/libhiera.a $(B)/libhiera.so

# the build's packages (also installed, when missing, before $(B)/config.mk is written)
deps:
	@sh scripts/deps.sh

# and the tests' (cmocka, python3-yaml, groff): before the first unit test is built
test-deps:
	@sh scripts/deps.sh --test

$(B)/config.mk: Makefile scripts/deps.sh
	@sh scripts/deps.sh
	@mkdir -p $(dir $@)
	@pkg-config --exists $(PKGS) libmicrohttpd gnutls libsystemd libcurl || \
	  { echo "pkg-config does not find $(PKGS) libmicrohttpd gnutls libsystemd libcurl" >&2; exit 1; }
	@{ echo "# made by the Makefile after scripts/deps.sh; delete it to ask pkg-config again"; \
	  echo "PKG_CFLAGS := $$(pkg-config --cflags $(PKGS))"; \
	  echo "PKG_LIBS := $$(pkg-config --libs $(PKGS))"; \
	  echo "CLI_LIBS := $$(if [ "$(YAML_STATIC)" != no ] && [ -f "$$($(CC) -print-file-name=libyaml.a)" ]; then echo -l:libyaml.a; \
	    else pkg-config --libs yaml-0.1; fi) -lm -ldl -lpthread"; \
	  echo "SERVE_CFLAGS := $$(pkg-config --cflags libmicrohttpd gnutls libsystemd)"; \
	  echo "CURL_CFLAGS := $$(pkg-config --cflags libcurl)"; \
	  echo "MIMALLOC_SO := $$(p=$$($(CC) -print-file-name=libmimalloc.so.2); [ -f "$$p" ] && echo "$$(cd "$$(dirname "$$p")" && pwd -P)/libmimalloc.so.2")"; \
	} > $@.tmp && mv $@.tmp $@

# what this build folder is compiled with: objects and programs are made again when it changes
# (`make check LTO=` and then `make` give an LTO build, not the first build's objects)
BUILD_FLAGS = $(CC) $(ALL_CFLAGS) $(LTO) $(MIMALLOC)
$(B)/flags: FORCE
	@mkdir -p $(B)
	@printf '%s\n' '$(BUILD_FLAGS)' | cmp -s - $@ || printf '%s\n' '$(BUILD_FLAGS)' > $@
FORCE:

$(B)/obj/%.o: src/%.c $(LIB_HDR) $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LTO) -c $< -o $@

$(B)/pic/%.o: src/%.c $(LIB_HDR) $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LTO) -fPIC -fvisibility=hidden -DHIERA_BUILD_SHARED -c $< -o $@

# (the facts module names libcurl's types: its header's folder)
$(B)/obj/facts/%.o $(B)/pic/facts/%.o: ALL_CFLAGS += $(CURL_CFLAGS)

$(B)/obj/cli/main.o: ALL_CFLAGS += $(MIMALLOC)
$(B)/obj/cli/%.o: src/cli/%.c $(LIB_HDR) $(wildcard src/cli/*.h) $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) $(LTO) -c $< -o $@

$(B)/obj/serve/%.o: src/serve/%.c $(LIB_HDR) $(wildcard src/serve/*.h) $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SERVE_CFLAGS) $(LTO) -c $< -o $@

$(B)/obj/lsp/%.o: src/lsp/%.c $(LIB_HDR) $(wildcard src/lsp/*.h) $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) $(LTO) -c $< -o $@

# the page's files as byte arrays (scripts/embed.c, built for the build machine)
$(B)/embed: scripts/embed.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -o $@ $<

$(B)/gen/assets.c: $(SERVE_WEB) $(B)/embed
	@mkdir -p $(dir $@)
	./$(B)/embed $@ / 'text/html; charset=utf-8' src/serve/web/index.html \
	  /app.js 'text/javascript; charset=utf-8' src/serve/web/app.js /style.css 'text/css; charset=utf-8' src/serve/web/style.css

$(B)/obj/serve/assets.o: $(B)/gen/assets.c src/serve/serve.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SERVE_CFLAGS) -c $< -o $@

$(B)/libhiera.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/libhiera.so: $(PIC_OBJ)
	$(CC) $(CFLAGS) $(LTO) $(LDFLAGS) -shared -Wl,-soname,libhiera.so.$(SOVER) -o $@ $^ $(LIBS)

$(B)/hiera: $(CLI_OBJ) $(B)/libhiera.a $(B)/flags
	$(CC) $(CFLAGS) $(LTO) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libhiera.a $(CLI_LIBS)

# (TEST_DEPS= : the tests' packages are known to be installed, as in a Debian package build)
TEST_DEPS ?= test-deps
$(B)/tests/%: tests/unit/%.c $(B)/libhiera.a tests/unit/testutil.h | $(TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fno-lto $(CURL_CFLAGS) -Itests/unit $(shell pkg-config --cflags cmocka) -o $@ $< $(B)/libhiera.a $(LIBS) $(shell pkg-config --libs cmocka)

unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do ./$$t >$$t.log 2>&1 || { echo "FAIL $$t"; cat $$t.log; fail=1; }; done; \
	  echo "unit tests: $(words $(UNIT_BIN)) programs"; exit $$fail

# The suites not about the Puppet version (their expected answers are Puppet 7.23's) ask as
# Puppet 7 whatever Puppet this machine has installed (hiera follows the installed one): a machine
# with Puppet 8 passes too. Those about versions choose for themselves (run-cases.py
# --puppet-version, tests/cli/check.py and tests/check/run.py's version checks, tests/diff's
# upgrade); check-puppetdb compares with the installed Puppet and follows it.
VERSION7_TARGETS = unit cases check check-diff check-realrepos check-lsp check-web check-edit install-check \
                   conformance-asan check-asan check-valgrind fuzz-regress check-tsan
$(VERSION7_TARGETS): export HIERA_PUPPET_VERSION = 7

# the recorded cases answered as Puppet 7.23 (expected.json) and as Puppet 8.10 (expected-puppet8.json
# where Puppet 8 answers otherwise)
cases: $(B)/hiera
	@python3 tests/run-cases.py --hiera $(B)/hiera --puppet-version 7
	@python3 tests/run-cases.py --hiera $(B)/hiera --puppet-version 8

check: all test-deps
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory cases
	@python3 tests/batch/check.py --hiera $(B)/hiera
	@python3 tests/facts/check.py --hiera $(B)/hiera
	@python3 tests/batch/memo-compare.py --hiera $(B)/hiera
	@python3 tests/batch/answer-memo.py --hiera $(B)/hiera
	@python3 tests/keys/check.py --hiera $(B)/hiera
	@python3 tests/cli/check.py --hiera $(B)/hiera
	@python3 tests/cli/result-cache.py --hiera $(B)/hiera
	@python3 tests/cli/result-cache-random.py --hiera $(B)/hiera
	@python3 tests/check/run.py --hiera $(B)/hiera
	@python3 tests/check/realrepos.py --hiera $(B)/hiera
	@python3 tests/diff/check.py --hiera $(B)/hiera
	@python3 tests/diff/fastpath.py --hiera $(B)/hiera --rounds 25
	@python3 tests/diff/puppet-diff.py --hiera $(B)/hiera
	@python3 tests/edit/check.py --hiera $(B)/hiera
	@sh tests/eyaml/lookup.sh $(B)/hiera
	@$(MAKE) --no-print-directory $(B)/tests/stress
	@./$(B)/tests/stress --threads 4 --rounds 1 tests/cases >$(B)/tests/stress.log 2>&1 \
	  && sed -n 's/^\([0-9]* passed\)/threads: \1/p' $(B)/tests/stress.log \
	  || { grep -A20 '^FAIL' $(B)/tests/stress.log | head -100; tail -3 $(B)/tests/stress.log; exit 1; }
	@python3 tests/serve/check.py --hiera $(B)/hiera
	@python3 tests/edit/serve.py --hiera $(B)/hiera
	@python3 tests/edit/race.py --hiera $(B)/hiera
	@python3 tests/serve/storm.py --hiera $(B)/hiera --rounds 2
	@python3 tests/serve/systemd.py --hiera $(B)/hiera
	@python3 tests/docs/check.py --hiera $(B)/hiera
	@python3 tests/completion/check.py --hiera $(B)/hiera
	@python3 tests/puppetdb/errors.py --hiera $(B)/hiera
	@python3 tests/lsp/check.py --hiera $(B)/hiera
	@$(MAKE) --no-print-directory check-python
	@$(MAKE) --no-print-directory install-check

# the Python module `hiera` (python/: cffi in API mode over include/hiera.h and hiera_fleet.h),
# usable from the build tree: PYTHONPATH=$(B)/python (the extension finds $(B)/libhiera.so.1)
PY_SRC := python/build.py $(wildcard python/hiera/*.py)
python: $(B)/python/hiera/__init__.py
$(B)/python/hiera/__init__.py: $(PY_SRC) include/hiera.h include/hiera_fleet.h $(B)/libhiera.so
	@PYTHON=$(PYTHON) sh scripts/deps.sh --python
	@ln -sf libhiera.so $(B)/libhiera.so.$(SOVER)
	$(PYTHON) python/build.py --out $(B)/python --include include --libdir $(B) --rpath '$$ORIGIN/../..'
	@touch $@

# its tests (pytest): the recorded cases through the module, against `hiera lookup`, threads, errors
# (PY_SAN_ENV: what the interpreter needs when the library is sanitized, given by check-asan;
# install-check passes it to its Python run as HIERA_PY_ENV)
check-python: python $(B)/hiera
	@PYTHONPATH=$(B)/python HIERA_BIN=$(B)/hiera $(PY_SAN_ENV) $(PYTHON) -m pytest -q -p no:cacheprovider tests/python

# the in-process Ansible lookup (ansible/) against community.general.hiera with Hiera 3.10's hiera,
# through the real ansible-playbook: 200 terms (a few minutes: Hiera 3.10 is a Ruby process per term)
check-ansible: python
	@$(PYTHON) tests/ansible/inprocess.py --pythonpath $(B)/python

# hiera diff at length (CI): the fast path against full comparisons on many random edits, and the
# recorded Puppet answers (tests/diff/puppet-diff.py --record N asks Puppet for more)
check-diff: all
	@python3 tests/diff/check.py --hiera $(B)/hiera
	@python3 tests/diff/fastpath.py --hiera $(B)/hiera --rounds 200 --seed 20000
	@python3 tests/diff/puppet-diff.py --hiera $(B)/hiera

# hiera check and hiera diff on real public control repositories (issue 37), when their trees are
# laid out (tests/check/realrepos/README.md: REALREPOS=DIR, default /tmp/hiera-realrepos; with
# REALREPOS_MIRROR=M, a folder of the repositories' git dirs, build.sh lays out from M first what
# DIR lacks, and says what it cannot): the triaged findings, hiera diff on real commit pairs against Puppet's
# recorded answers, and hiera set / unset round trips on their data files (tests/edit/realrepo.py)
REALREPOS ?= /tmp/hiera-realrepos
REALREPOS_MIRROR ?=
# REALREPOS_REQUIRE=1: a tree that cannot be checked is a failure; REALREPOS_EDIT_FILES: the data files of
# each tree hiera set / unset is tried on (tests/edit/realrepo.py, 0: all of them)
REALREPOS_REQUIRE ?=
REALREPOS_EDIT_FILES ?= 20
check-realrepos: all
	@if [ -n "$(REALREPOS_MIRROR)" ]; then \
	  bash tests/check/realrepos/build.sh "$(REALREPOS)" "$(REALREPOS_MIRROR)"; rc=$$?; \
	  [ $$rc = 0 ] || [ $$rc = 3 ] || exit $$rc; fi
	@python3 tests/check/realrepos.py --hiera $(B)/hiera --trees $(REALREPOS) $(if $(REALREPOS_REQUIRE),--require-trees)
	@python3 tests/diff/realpairs.py --hiera $(B)/hiera --mirror $(REALREPOS)/mirror
	@python3 tests/edit/realrepo.py --hiera $(B)/hiera --max-files $(REALREPOS_EDIT_FILES) --realrepos $(REALREPOS)

demo: all
	@echo '$$ build/hiera lookup --codedir examples/control-repo --environmentpath examples/control-repo/environments --node web01.example.com --facts examples/control-repo/facts/web01.example.com.yaml --merge deep profile::base::users'
	@./$(B)/hiera lookup --codedir examples/control-repo --environmentpath examples/control-repo/environments \
	  --node web01.example.com --facts examples/control-repo/facts/web01.example.com.yaml --merge deep profile::base::users

# ---- installation: PREFIX and DESTDIR as usual
# the version, from the public header (HIERA_VERSION)
VERSION := $(shell sed -n 's/^\#define HIERA_VERSION "\(.*\)"/\1/p' include/hiera.h)
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
# the README (hiera lsp links its diagnostics to its rules: ../share/doc/hiera from the command)
DOCDIR ?= $(PREFIX)/share/doc/hiera
# the man pages: hiera(1), one per subcommand (hiera-lookup(1)...), hiera-serve(8)
MAN1 := $(wildcard docs/*.1)
MAN8 := $(wildcard docs/*.8)

# hiera.pc is written at each install from hiera.pc.in with the PREFIX, LIBDIR and INCLUDEDIR of
# that install (a file kept in $(B) would keep the folders of an earlier `make install`)
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(B)/hiera $(DESTDIR)$(BINDIR)/hiera
	install -m 0644 $(B)/libhiera.a $(DESTDIR)$(LIBDIR)/libhiera.a
	install -m 0755 $(B)/libhiera.so $(DESTDIR)$(LIBDIR)/libhiera.so.$(VERSION)
	ln -sf libhiera.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libhiera.so.$(SOVER)
	ln -sf libhiera.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libhiera.so
	install -m 0644 include/hiera.h include/hiera_fleet.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' hiera.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/hiera.pc
	chmod 0644 $(DESTDIR)$(LIBDIR)/pkgconfig/hiera.pc
	install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(MAN8) $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 completion/hiera $(DESTDIR)$(BASHCOMPDIR)/hiera
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	@if [ "$(INSTALL_PYTHON)" != no ] && $(PYTHON) -c 'import cffi, sysconfig, os; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' 2>/dev/null; \
	  then $(MAKE) --no-print-directory install-python; \
	  else echo "the Python module is not installed: $(PYTHON) lacks cffi or its headers (python3-cffi, python3-dev)"; fi

# the Python module into Python's site-packages of the prefix (PYTHONDIR; make install leaves it out
# with INSTALL_PYTHON=no), built against the
# library as installed in LIBDIR (recorded as its run path unless the loader looks there anyway)
PYTHONDIR ?= $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("platlib", "posix_prefix", {"base": "$(PREFIX)", "platbase": "$(PREFIX)"}))' 2>/dev/null)
SYSTEM_LIBDIRS := /lib /usr/lib /lib64 /usr/lib64 /usr/lib/$(shell $(CC) -dumpmachine 2>/dev/null)
install-python: $(B)/libhiera.so
	@rm -rf $(B)/python-install && mkdir -p $(B)/python-install
	@ln -sf libhiera.so $(B)/libhiera.so.$(SOVER)
	$(PYTHON) python/build.py --out $(B)/python-install --include include --libdir $(B) \
	  $(if $(filter $(LIBDIR),$(SYSTEM_LIBDIRS)),,--rpath $(LIBDIR))
	install -d $(DESTDIR)$(PYTHONDIR)/hiera
	install -m 0644 $(B)/python-install/hiera/*.py $(DESTDIR)$(PYTHONDIR)/hiera/
	install -m 0755 $(B)/python-install/hiera/_hiera*.so $(DESTDIR)$(PYTHONDIR)/hiera/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/hiera $(DESTDIR)$(LIBDIR)/libhiera.a $(DESTDIR)$(LIBDIR)/libhiera.so* \
	      $(DESTDIR)$(INCLUDEDIR)/hiera.h $(DESTDIR)$(INCLUDEDIR)/hiera_fleet.h $(DESTDIR)$(LIBDIR)/pkgconfig/hiera.pc \
	      $(MAN1:docs/%=$(DESTDIR)$(MANDIR)/man1/%) $(MAN8:docs/%=$(DESTDIR)$(MANDIR)/man8/%) $(DESTDIR)$(BASHCOMPDIR)/hiera \
	      $(DESTDIR)$(DOCDIR)/README.md
	rm -rf $(DESTDIR)$(PYTHONDIR)/hiera

# hiera lsp in a real editor: Neovim's LSP client, headless, on a real control repository (a
# mirror of puppetlabs-seteam/control-repo when this machine has one, else a generated tree);
# installs neovim when missing
check-lsp: all
	@sh scripts/deps.sh --lsp
	@python3 tests/lsp/nvim/run.py --hiera $(B)/hiera

# the page of hiera serve in headless chromium, and its edit flow (installs chromium, npm and
# playwright-core when missing; screenshots in build/web-artifacts)
check-web: all
	@sh tests/web/run.sh $(B)/hiera

# hiera set / unset on random files and edits and the editor's fuzz corpus, judged by Ruby's Psych
# (as Puppet reads data); installs ruby when missing (as root). About 2 minutes.
check-edit: all
	@command -v ruby >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || { apt-get update -qq >/dev/null 2>&1 || true; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=900 ruby >/dev/null; }
	@python3 tests/edit/ruby-random.py --hiera $(B)/hiera

# hiera against a real PuppetDB (Debian's puppetdb with its own PostgreSQL cluster, started and
# stopped by the script in a scratch folder) and Puppet reading the same PuppetDB through
# puppet-terminus-puppetdb; installs the packages when missing (as root). A few minutes: PuppetDB
# is a JVM service.
check-puppetdb: all
	@python3 tests/puppetdb/real.py --hiera $(B)/hiera

# installs into a scratch DESTDIR and builds the README's example against it with pkg-config
install-check: all
	@HIERA_PY_ENV="$(PY_SAN_ENV)" sh tests/install/check.sh

# ---- Debian packages (debian/): hiera-c (the command, man pages, bash completion), libhiera1,
# libhiera-dev and hiera-serve (the systemd service). `make deb` builds them with
# dpkg-buildpackage in a copy of the tree (scripts/deb.sh), into $(B)/deb; `make check-deb` builds
# them from a clean clone in a fresh Debian 12 root, runs lintian, installs them and tries them
# (tests/deb/check.sh: ../shared/tools/fresh-machine, as root; .ci/run runs it)
deb:
	@sh scripts/deb.sh $(B)/deb

check-deb:
	@sh tests/deb/check.sh

clean:
	rm -rf $(B)

# =============================================================================================
# Sanitizers, valgrind and fuzzing (issue 7). An appended section: it reuses the rules above with
# another build folder and flags, and adds the libFuzzer harnesses of tests/fuzz/.
#   make asan            build-asan/hiera, libhiera.a and the unit tests, with AddressSanitizer,
#                        UndefinedBehaviorSanitizer and LeakSanitizer
#   make check-asan      every test under the sanitizers: unit tests,
#                        the recorded cases, the fuzz regression inputs, and the shared
#                        conformance cases when ../shared exists
#   make check-valgrind  unit tests and recorded cases under valgrind --leak-check=full (build-vg/)
#   make fuzz            the libFuzzer harnesses (clang) as build-fuzz/fuzz-*
#   make fuzz-regress    replays tests/fuzz/regressions/ and the seed corpora through them
#   make fuzz-smoke      runs each harness FUZZ_TIME seconds (default 20) from an empty corpus
# =============================================================================================
.PHONY: asan check-asan check-valgrind conformance-asan fuzz fuzz-regress fuzz-smoke

ASAN_B = build-asan
SAN_CFLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -DHIERA_FREE_ON_EXIT
# abort_on_error: a report ends the process with SIGABRT, which the test runners count as a crash
# (a plain exit 1 would pass for an expected lookup error)
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
          LSAN_OPTIONS=exitcode=134
SHARED_CONFORMANCE = ../shared/conformance

asan:
	@$(MAKE) --no-print-directory B=$(ASAN_B) CFLAGS="$(SAN_CFLAGS)" LTO= MIMALLOC= all $(UNIT_SRC:tests/unit/%.c=$(ASAN_B)/tests/%)

# (with a scratch disk cache, removed afterwards)
RUN_CONFORMANCE_ASAN = if [ -x $(SHARED_CONFORMANCE)/run ]; then \
	  dc=$$(mktemp -d /tmp/hiera-conformance-cache-XXXXXX) && \
	  HIERA_CACHE_DIR=$$dc HIERA_PUPPET_VERSION=7 $(SAN_ENV) $(SHARED_CONFORMANCE)/run --hiera $(ASAN_B)/hiera && \
	  HIERA_CACHE_DIR=$$dc HIERA_PUPPET_VERSION=7 $(SAN_ENV) $(SHARED_CONFORMANCE)/run --hiera $(ASAN_B)/hiera $(SHARED_CONFORMANCE)/puppet-spec/*/; \
	  rc=$$?; rm -rf "$$dc"; exit $$rc; \
	else echo "no $(SHARED_CONFORMANCE): conformance cases skipped"; fi

conformance-asan: asan
	@$(RUN_CONFORMANCE_ASAN)

# tests/install/check.sh builds the README examples with a plain `cc` against the (sanitized)
# library: a `cc` that adds the sanitizer flags goes first in PATH for the sanitized check.
# The Python module's tests load the sanitized library into Debian's python3, which is not built
# with ASan: its runtime is preloaded (else ASan aborts: "runtime does not come first"), and leaks
# are not looked for in that process (the interpreter never frees its own objects at exit; the
# library's leaks are looked for by the unit tests and every hiera run of the other checks).
PY_SAN_ENV_ASAN = LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
check-asan: asan
	@mkdir -p $(ASAN_B)/bin && real=$$(command -v $(CC)) && \
	  printf '#!/bin/sh\nexec %s -fsanitize=address,undefined "$$@"\n' "$$real" >$(ASAN_B)/bin/cc && chmod +x $(ASAN_B)/bin/cc
	@PATH="$(CURDIR)/$(ASAN_B)/bin:$$PATH" $(SAN_ENV) $(MAKE) --no-print-directory B=$(ASAN_B) CFLAGS="$(SAN_CFLAGS)" LTO= MIMALLOC= \
	  PY_SAN_ENV="$(PY_SAN_ENV_ASAN)" check
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then $(MAKE) --no-print-directory fuzz-regress; \
	else echo "no $(FUZZ_CC): fuzz regressions skipped"; fi
	@$(RUN_CONFORMANCE_ASAN)

# valgrind: an unsanitized -O0 build, every hiera call and unit test program under memcheck.
VG_B = build-vg
VALGRIND = valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
           --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=200
check-valgrind:
	@$(MAKE) --no-print-directory B=$(VG_B) CFLAGS="-O0 -g -DHIERA_FREE_ON_EXIT" LTO= MIMALLOC= all $(UNIT_SRC:tests/unit/%.c=$(VG_B)/tests/%)
	@fail=0; for t in $(UNIT_SRC:tests/unit/%.c=$(VG_B)/tests/%); do \
	  $(VALGRIND) ./$$t >$$t.log 2>&1 || { echo "FAIL (valgrind) $$t"; tail -40 $$t.log; fail=1; }; done; \
	  echo "valgrind: unit tests done"; exit $$fail
	@printf '#!/bin/sh\nexec $(VALGRIND) "%s/$(VG_B)/hiera" "$$@"\n' "$$(pwd)" >$(VG_B)/hiera-vg && chmod +x $(VG_B)/hiera-vg
	@python3 tests/run-cases.py --hiera $(VG_B)/hiera-vg

# ---- libFuzzer harnesses: tests/fuzz/fuzz_<name>.c -> build-fuzz/fuzz-<name>
FUZZ_CC = clang
FUZZ_B = build-fuzz
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -g -O1 -fno-omit-frame-pointer \
              -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
              -Iinclude -Isrc -Itests/fuzz $(PKG_CFLAGS)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(FUZZ_B)/fuzz-%)
FUZZ_LIB_OBJ := $(LIB_SRC:src/%.c=$(FUZZ_B)/obj/%.o)
FUZZ_TIME ?= 20

$(FUZZ_B)/obj/%.o: src/%.c $(LIB_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_B)/libhiera-fuzz.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_B)/fuzz-%: tests/fuzz/fuzz_%.c $(FUZZ_B)/libhiera-fuzz.a $(wildcard tests/fuzz/*.h)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_B)/libhiera-fuzz.a $(LIBS)

fuzz:
	@sh scripts/deps.sh --fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

# Replays every kept finding and seed through its harness (libFuzzer runs the files given and exits).
# The harnesses stop a run at the first report, so a non-zero exit is a failure.
FUZZ_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fuzz-regress: fuzz
	@fail=0; for b in $(FUZZ_BIN); do n=$${b#$(FUZZ_B)/fuzz-}; files=""; \
	  for d in tests/fuzz/regressions/$$n tests/fuzz/corpus/$$n; do \
	    [ -d $$d ] && files="$$files $$(find $(CURDIR)/$$d -type f | sort | tr '\n' ' ')"; done; \
	  [ -n "$$files" ] || continue; \
	  $(FUZZ_ENV) ./$$b -rss_limit_mb=2048 -timeout=20 $$files >$$b.regress.log 2>&1 \
	    || { echo "FAIL fuzz-regress $$n"; tail -60 $$b.regress.log; fail=1; }; done; \
	  echo "fuzz regressions: $(words $(FUZZ_BIN)) harnesses"; exit $$fail

fuzz-smoke: fuzz
	@fail=0; for b in $(FUZZ_BIN); do rm -rf $(FUZZ_B)/smoke/$${b#$(FUZZ_B)/}; mkdir -p $(FUZZ_B)/smoke/$${b#$(FUZZ_B)/}; \
	  $(FUZZ_ENV) ./$$b -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_B)/smoke/ $(FUZZ_B)/smoke/$${b#$(FUZZ_B)/} >$$b.smoke.log 2>&1 \
	    || { echo "FAIL fuzz-smoke $$b"; tail -60 $$b.smoke.log; fail=1; }; \
	  echo "$$b: $$(grep -o 'stat::number_of_executed_units: [0-9]*' $$b.smoke.log || tail -1 $$b.smoke.log)"; done; exit $$fail

# =============================================================================================
# ThreadSanitizer (issue 13): separate contexts on separate threads.
#   make check-tsan   build-tsan/: the library with -fsanitize=thread (no LTO, no mimalloc) and
#                     tests/threads/stress.c, which answers every recorded case (tests/cases) from
#                     STRESS_THREADS threads, STRESS_ROUNDS times each in shuffled orders, each
#                     thread with its own contexts and cache, and checks every answer against the
#                     single-thread one. Any ThreadSanitizer report fails it (exit 66).
#                     Then build-tsan/hiera serves tests/edit/race.py: saves through /v1/edit (the
#                     environment's data and the global layer's: state_rebuild_now on request
#                     threads) while the watcher and the builder rebuild what the test writes and
#                     other clients ask; a report in the server's log fails it.
# =============================================================================================
.PHONY: tsan check-tsan

TSAN_B = build-tsan
TSAN_CFLAGS = -O1 -g -fno-omit-frame-pointer -fsanitize=thread
TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 $(TSAN_OPTIONS)"
STRESS_THREADS ?= 8
STRESS_ROUNDS ?= 3

$(B)/tests/stress: tests/threads/stress.c $(B)/libhiera.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fno-lto -o $@ $< $(B)/libhiera.a $(LIBS)

tsan:
	@$(MAKE) --no-print-directory B=$(TSAN_B) CFLAGS="$(TSAN_CFLAGS)" LTO= MIMALLOC= $(TSAN_B)/libhiera.a $(TSAN_B)/tests/stress \
	  $(TSAN_B)/hiera $(TSAN_B)/tests/test_fleet

# (and the fleet run's threads: tests/unit/test_fleet.c, up to 4 workers sharing a facts pager)
check-tsan: tsan
	@$(TSAN_ENV) ./$(TSAN_B)/tests/stress --threads $(STRESS_THREADS) --rounds $(STRESS_ROUNDS) tests/cases
	@$(TSAN_ENV) ./$(TSAN_B)/tests/test_fleet >$(TSAN_B)/tests/test_fleet.log 2>&1 \
	  && echo "fleet threads: passed" || { tail -60 $(TSAN_B)/tests/test_fleet.log; exit 1; }
	@$(TSAN_ENV) python3 tests/edit/race.py --hiera $(TSAN_B)/hiera --seconds 8
