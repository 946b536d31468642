# kvpipe — one non-recursive GNU make file.
#   make            build $(O)/bin/*
#   make check      deps + build + lint + valgrind subset + unit tests + bats + fuzz-corpus replay
#   make demo       deps + build + the main pipeline on bundled sample data
#   make asan       the whole check under ASan+UBSan with bounds checks, vendor stb
#                   included (O=build/asan)
#   make valgrind   unit tests, fuzz-corpus replay and a bats subset under valgrind
#   make lint       clang-format, layering (lint-layers, lint-functions),
#                   mandoc -Tlint, banned functions, exported symbols,
#                   commit messages (lint-commits)
#   make bench      benchmarks (ratios against baselines measured in the same run)
#   make fuzz       libFuzzer targets (clang); make fuzz-run FUZZ_SECONDS=N runs them
#   make install    PREFIX/DESTDIR, binaries, man pages, bash completions
#   make deb        a Debian binary package, $(O)/kvpipe_VERSION-1_ARCH.deb

PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
DESTDIR     ?=
PKG_CONFIG  ?= pkg-config
O           ?= build

MSGPACK_PC ?= msgpack
PKGS = json-c $(MSGPACK_PC) libexif libxxhash libpcre2-8 zlib libzstd yaml-0.1 \
       libavformat libavcodec libavutil

VERSION := $(shell sed -n 's/^#define KVP_VERSION "\(.*\)"/\1/p' lib/kvpipe.h)

CFLAGS  ?= -O2 -g
# Link-time optimization of the binaries. The objects are fat (their code
# is in them beside the GIMPLE), so unit tests and fuzz replays link them
# as usual (-fno-lto); only the binaries are optimized whole, about 5% off
# route-score's replay (bench (d)). LTO= builds without it, as make asan
# and make fuzz do.
LTO     ?= -flto=auto -ffat-lto-objects
# The filters are linked statically, as position-independent executables
# (-static-pie): no loader, no shared-library relocations at each start,
# 1.4 ms off every run (route-score's replay, bench (d), went 5% faster).
# kv-hash (libcrypto), kv-capture (libzmq) and mm-expand (which dlopens
# FFmpeg when it first reads a video: Debian's libavformat.a needs some
# fifty codec libraries that ship no .a) load the shared libraries they
# need; STATIC= links every binary that way. The
# valgrind subset runs shared copies ($(O)/dyn/): valgrind follows malloc
# in a shared libc only.
STATIC  ?= -static-pie
SHARED_CMDS := kv-hash kv-capture mm-expand
WARN     = -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wundef -Wvla
WERROR  ?= -Werror
PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) stb 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
override CPPFLAGS += -I. -Ilib -MMD -MP $(PKG_CFLAGS)
LDLIBS   += $(PKG_LIBS) -lm -pthread
BATS_FILES ?= tests/
SAN      ?=
# The sanitizer runtimes need the dynamic loader: a -static-pie binary
# built with ASan segfaults at start. SAN set implies a shared link, and
# asking for both at once is refused.
ifneq ($(strip $(SAN)),)
ifeq ($(origin STATIC),file)
STATIC :=
else ifneq ($(strip $(STATIC)),)
$(error SAN='$(SAN)' needs a shared link: drop STATIC='$(STATIC)' or set STATIC=)
endif
endif
ALL_CFLAGS = $(CFLAGS) $(WARN) $(WERROR) $(SAN)
ALL_LDFLAGS = $(LDFLAGS) $(SAN) -Wl,--as-needed

# The flags $(O)'s objects are compiled with, kept in $(O)/.flags: when
# they change (say an LTO= build, then make bench) the objects are built
# again rather than linked as they were.
BUILD_FLAGS = $(CC) $(ALL_CFLAGS) $(LTO)
FLAGS_STAMP = $(O)/.flags
$(shell mkdir -p '$(O)' && { printf '%s\n' '$(BUILD_FLAGS)' | cmp -s - '$(FLAGS_STAMP)' || printf '%s\n' '$(BUILD_FLAGS)' >'$(FLAGS_STAMP)'; })

ifeq ($(V),1)
Q =
else
Q = @
endif

STAGES   := common events capture hash mm route lab replay report
LIB_SRC  := $(wildcard $(STAGES:%=lib/%/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(O)/%.o)
FE_SRC   := $(wildcard fe/*.c)
FE_OBJ   := $(FE_SRC:%.c=$(O)/%.o)
CMDS     := $(basename $(notdir $(wildcard cmd/*.c)))
BINS     := $(CMDS:%=$(O)/bin/%)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(O)/unit/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
REPLAYS  := $(FUZZ_SRC:tests/fuzz/%.c=$(O)/replay/%)
DEPS     := $(LIB_OBJ:.o=.d) $(FE_OBJ:.o=.d) $(CMDS:%=$(O)/cmd/%.d)

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all deps check test unit bats fuzz-replay demo asan valgrind valgrind-run lint \
        lint-layers lint-functions lint-commits format format-check bench install \
        uninstall deb clean fuzz fuzz-run

all: $(BINS)

# stb_image is vendor code: no warnings, no -Werror.
$(O)/lib/mm/stb_image_impl.o: lib/mm/stb_image_impl.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -w -c -o $@ $<

$(O)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LTO) -c -o $@ $<

$(O)/libkvpipe.a: $(LIB_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# fe/: the front-end kit (argp options, messages, output, record loops),
# linked into the binaries only, as libarchive_fe is.
$(O)/libkvpipe_fe.a: $(FE_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(O)/bin/%: $(O)/cmd/%.o $(O)/libkvpipe_fe.a $(O)/libkvpipe.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) $(LTO) $(ALL_LDFLAGS) $(STATIC) -o $@ $^ $(LDLIBS)
$(SHARED_CMDS:%=$(O)/bin/%): STATIC =

# the same objects linked shared, without LTO, for valgrind
$(O)/dyn/%: $(O)/cmd/%.o $(O)/libkvpipe_fe.a $(O)/libkvpipe.a
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS) -fno-lto $(ALL_LDFLAGS) -o $@ $^ $(LDLIBS)

$(O)/unit/%: tests/unit/%.c $(O)/libkvpipe.a tests/unit/unit.h $(FLAGS_STAMP)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit $(ALL_CFLAGS) $(ALL_LDFLAGS) -fno-lto -o $@ $< $(O)/libkvpipe.a $(LDLIBS)

# Fuzz targets are also linked with a plain main() that replays their corpus,
# so `make check` exercises every corpus file without clang's libFuzzer.
$(O)/replay/%: tests/fuzz/%.c tests/fuzz/replay_main.c $(O)/libkvpipe.a
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(ALL_LDFLAGS) -fno-lto -o $@ $< tests/fuzz/replay_main.c $(O)/libkvpipe.a $(LDLIBS)

# libcrypto (SHA-256 of the engine hash schemes, lib/hash/engine_hash.c) is
# linked into kv-hash only.
CRYPTO_LIBS := $(shell $(PKG_CONFIG) --libs libcrypto 2>/dev/null || echo -lcrypto)
$(O)/bin/kv-hash $(O)/dyn/kv-hash: LDLIBS += $(CRYPTO_LIBS) -lpthread
$(O)/unit/test_engine_hash: LDLIBS += $(CRYPTO_LIBS)

# libzmq (lib/capture/cap_zmq.c) is linked into kv-capture only.
ZMQ_LIBS := $(shell $(PKG_CONFIG) --libs libzmq 2>/dev/null || echo -lzmq)
$(O)/bin/kv-capture $(O)/dyn/kv-capture: LDLIBS += $(ZMQ_LIBS)
$(O)/unit/test_capture: LDLIBS += $(ZMQ_LIBS)

-include $(DEPS)

# --- dependencies -----------------------------------------------------------
# dpkg-dev and lintian build and check make deb's package, man-db finds its
# man pages once installed (tests/deb.bats); openssh-server and -client
# run kvpipe(7)'s GNU parallel recipe over ssh, and rsync carries its
# --transferfile and --return files (tests/scale-out.bats).
DEB_PKGS = build-essential pkg-config libjson-c-dev libmsgpack-dev \
           libxxhash-dev libstb-dev libexif-dev libpcre2-dev libzmq3-dev \
           libssl-dev libcbor-dev libavformat-dev libavcodec-dev libavutil-dev libyaml-dev \
           ffmpeg bats bats-assert bats-support jq \
           python3 python3-msgpack python3-zmq parallel xxd bc mandoc valgrind time \
             zlib1g-dev libzstd-dev zstd xxhash clang-format git mawk chromium \
           dpkg-dev lintian man-db openssh-server openssh-client rsync

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# --- tests -------------------------------------------------------------------
unit: $(UNITS)
	@st=0; for t in $(UNITS); do echo "  UNIT    $$t"; $(KVP_EXEC_PREFIX) $$t || st=1; done; exit $$st

bats: $(BINS)
	$(Q)KVP_BIN=$(abspath $(O)/bin) bats $(BATS_FLAGS) $(BATS_FILES)

fuzz-replay: $(REPLAYS)
	@st=0; for t in $(REPLAYS); do \
	  n=$$(basename $$t); echo "  REPLAY  $$n"; \
	  $(KVP_EXEC_PREFIX) $$t tests/fuzz/corpus/$$n || st=1; done; exit $$st

test: all
	$(Q)tests/run-all.sh $(O)

# The gates CI runs: style and man-page lint, the valgrind subset, then the
# whole suite (its "N passed, N failed, N skipped" line comes last; a skipped
# test fails it). make deps installs every program the checks run
# (tests/deps.bats checks DEB_PKGS). make asan runs the suite under
# ASan+UBSan, bounds checks included, on the stb unit too (stb_image 2.27's
# DHT overflow stays inside its heap object: only -fsanitize=bounds sees
# it); .ci/run runs make check in a fresh clone.
check: deps
	$(Q)$(MAKE) --no-print-directory lint
	$(Q)$(MAKE) --no-print-directory valgrind
	$(Q)$(MAKE) --no-print-directory test

asan:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)ASAN_OPTIONS=abort_on_error=1:halt_on_error=1:detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) --no-print-directory O=build/asan CFLAGS="-O1 -g $(PLAIN)" LTO= STATIC= \
	  SAN="-fsanitize=address,undefined,bounds -fno-sanitize-recover=all -fno-omit-frame-pointer" test

# make asan and make valgrind build with the arena off (every big table a
# plain malloc, bigmem.h) and the sub-states' invariants asserted
# (common/debug.h), each in its own build folder.
PLAIN = -DKVP_PLAIN_MALLOC -DKVP_DEBUG
VALGRIND = valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 --suppressions=$(abspath tests/valgrind.supp)
valgrind:
	$(Q)$(MAKE) --no-print-directory O=build/plain CFLAGS="-O2 -g $(PLAIN)" LTO= valgrind-run
valgrind-run: all $(CMDS:%=$(O)/dyn/%) $(UNITS) $(REPLAYS)
	$(Q)st=0; for t in $(UNITS); do $(VALGRIND) $$t >/dev/null || st=1; done; \
	$(MAKE) --no-print-directory fuzz-replay KVP_EXEC_PREFIX="$(VALGRIND)" >/dev/null || st=1; \
	KVP_EXEC_PREFIX="$(VALGRIND)" KVP_BIN=$(abspath $(O)/dyn) bats --filter-tags valgrind tests/ || st=1; exit $$st

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)O=$(O) sh tests/demo.sh

bench: all
	$(Q)KVP_BIN=$(abspath $(O)/bin) sh bench/run.sh

# --- lint ----------------------------------------------------------------------
C_FILES = $(wildcard cmd/*.c lib/*.h lib/*/*.[ch] fe/*.[ch] tests/unit/*.c tests/unit/*.h tests/fuzz/*.c bench/*.c)
FMT_FILES = $(filter-out lib/mm/stb_image_impl.c,$(C_FILES))
format:
	clang-format -i $(FMT_FILES)
format-check:
	clang-format --dry-run -Werror $(FMT_FILES)
# Layering (tests/lint/, each tested in tests/lint.bats): lib/ never prints
# or exits (nm on the archive), includes follow the stage order, the files
# of one stage call each other without a cycle (nm on the objects), no file
# reaches a router sub-state it does not own, citations of the reference
# specs name a file and a section of docs/spec/, and no function body is
# over 80 lines.
LINT_SRC = $(wildcard lib/*.h lib/*/*.[ch] fe/*.[ch] cmd/*.c)
# Citations are looked for in every tracked text file of these folders
# (images, binary fixtures and fuzz corpora left out), or outside a git
# checkout in CITE_GLOB.
CITE_DIRS = cmd lib fe tests man bench docs README.md ARCHITECTURE.md
CITE_GLOB = cmd/*.c lib/*.h lib/*/*.[ch] fe/*.[ch] tests/*.bats tests/*.py \
	tests/*.bash tests/*.sh tests/*/*.md tests/unit/*.[ch] tests/fuzz/*.c \
	tests/lint/*.sh tests/fixtures/*/*.py tests/fixtures/*/*.json \
	man/*.[157] bench/* docs/*.md docs/spec/*.md README.md ARCHITECTURE.md
CITE_SRC = $(wildcard $(or $(shell git ls-files -- $(CITE_DIRS) 2>/dev/null | \
	grep -v -e '^tests/fuzz/corpus/' -e '\.jpg$$' -e '\.png$$' -e '\.bin$$'),$(CITE_GLOB)))
lint-layers: $(O)/libkvpipe.a
	$(Q)sh tests/lint/lib-symbols.sh $(O)/libkvpipe.a
	$(Q)sh tests/lint/includes.sh $(LINT_SRC)
	$(Q)sh tests/lint/call-cycles.sh $(LIB_OBJ)
	$(Q)sh tests/lint/owners.sh lib/route/*.c
	$(Q)sh tests/lint/citations.sh $(CITE_SRC)
lint-functions:
	$(Q)sh tests/lint/func-length.sh $(LINT_SRC)
# Every commit after the project's named base (045ec37) has a subject of at
# most 72 characters, a blank line and a body (tests/lint/commit-msg.sh;
# outside a git checkout or in a shallow clone it notes so and passes).
lint-commits:
	$(Q)sh tests/lint/commit-msg.sh
lint: format-check all lint-layers lint-functions lint-commits
	mandoc -Tlint -Wwarning man/*.[157]
	@! grep -nE '\b(sprintf|strcpy|strcat|strtok|gets|atoi|atol)\(' $(wildcard cmd/*.c fe/*.c lib/*/*.c) || { echo "banned function"; exit 1; }
	@bad=$$(nm -g --defined-only $(O)/libkvpipe.a | awk 'NF==3 && $$2 ~ /[TDBR]/ {print $$3}' | grep -v '^kvp_' | grep -v '^stbi_'); \
	  [ -z "$$bad" ] || { echo "non-kvp_ exported symbols: $$bad"; exit 1; }

# --- fuzzing with libFuzzer (clang) --------------------------------------------
# make fuzz builds every target (ASan + UBSan, UBSan reports fatal);
# make fuzz-run FUZZ_SECONDS=N runs each for N seconds on a scratch copy of
# its corpus in $(FUZZ_OUT) (crash inputs in $(FUZZ_OUT)/crashes/TARGET/);
# FUZZ_TARGETS=fuzz_wire picks some. See tests/fuzz/README.md.
FUZZ_SAN     = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 60
FUZZ_OUT     ?= build/fuzz-run
FUZZ_TARGETS ?=
fuzz:
	@mkdir -p build/fuzz build/fuzzlib
	@echo '$(FUZZ_SAN)' | cmp -s - build/fuzzlib/.san || { rm -rf build/fuzzlib; \
	  mkdir -p build/fuzzlib; echo '$(FUZZ_SAN)' >build/fuzzlib/.san; }
	$(Q)$(MAKE) --no-print-directory O=build/fuzzlib CC=clang CFLAGS="-O1 -g" LTO= SAN="-fsanitize=fuzzer-no-link $(FUZZ_SAN)" build/fuzzlib/libkvpipe.a
	$(Q)for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  clang $(CPPFLAGS) -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) -o build/fuzz/$$n $$f build/fuzzlib/libkvpipe.a $(LDLIBS) || exit 1; done

fuzz-run: fuzz
	$(Q)sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_OUT) $(FUZZ_TARGETS)

# --- install -----------------------------------------------------------------
install:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(BINS) $(DESTDIR)$(BINDIR)
	install -m 0644 $(wildcard man/*.1) $(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(wildcard man/*.5) $(DESTDIR)$(MANDIR)/man5
	install -m 0644 $(wildcard man/*.7) $(DESTDIR)$(MANDIR)/man7
	install -m 0644 $(wildcard completions/bash/*) $(DESTDIR)$(BASHCOMPDIR)

uninstall:
	rm -f $(CMDS:%=$(DESTDIR)$(BINDIR)/%) $(CMDS:%=$(DESTDIR)$(BASHCOMPDIR)/%)
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard man/*.1))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man5/%,$(wildcard man/*.5))
	rm -f $(patsubst man/%,$(DESTDIR)$(MANDIR)/man7/%,$(wildcard man/*.7))
	rm -f $(patsubst completions/bash/%,$(DESTDIR)$(BASHCOMPDIR)/%,$(wildcard completions/bash/*))

# --- Debian package ------------------------------------------------------------
# make deb writes $(DEB_FILE): the eight tools, their man pages (gzipped),
# the bash completions, /usr/share/doc/kvpipe/copyright (debian/copyright,
# DEP-5: kvpipe's license and those of the code compiled into it) and
# changelog.Debian.gz. Depends is computed by dpkg-shlibdeps from the
# shared libraries the binaries link; debian/control is the stub it and
# dpkg-gencontrol read. tests/deb.bats builds, lints, installs and removes it.
#
# Built with dpkg-deb, not debhelper: the package is one `make install` tree
# under /usr with no maintainer scripts, services or libraries to split, so
# the few steps debhelper would run (strip, gzip, md5sums, shlibdeps,
# gencontrol) are written out here with dpkg-dev's own tools, and
# dpkg-deb --root-owner-group needs no fakeroot. debhelper would add a whole
# source package (debian/rules, compat, source/format) and a
# dpkg-buildpackage run that builds in the top folder and writes into its
# parent, for nothing this package needs.
#
# The tools are built again in $(O)/deb/ with Debian's flags
# (dpkg-buildflags, hardening=+all) and linked against the shared libraries
# (STATIC=), as Debian's policy wants: a security update of zlib, libzstd,
# PCRE2, libexif or json-c then reaches them, for the 1.4 ms each start
# costs. LTO is off there (LTO=): it makes the build four times longer for
# 5% of route-score's replay.
DEB_VERSION = $(VERSION)-1
DEB_ARCH    = $(shell dpkg --print-architecture 2>/dev/null)
DEB_FILE    = $(O)/kvpipe_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_ROOT    = $(O)/deb/root
DEB_FLAGS   = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
# without -g: the packaged binaries are stripped, and the build is 25% shorter
DEB_CFLAGS  = $(filter-out -g,$(shell $(DEB_FLAGS) CFLAGS))
# the date of the last commit (reproducible builds), else now
DEB_EPOCH   = $(or $(shell git log -1 --format=%ct 2>/dev/null),$(shell date +%s))
deb: deps
	$(Q)$(MAKE) --no-print-directory O=$(O)/deb STATIC= LTO= SAN= \
	  CFLAGS="$(DEB_CFLAGS)" CPPFLAGS="$$($(DEB_FLAGS) CPPFLAGS)" \
	  LDFLAGS="$$($(DEB_FLAGS) LDFLAGS)" all
	$(Q)rm -rf $(DEB_ROOT) $(DEB_FILE)
	$(Q)$(MAKE) --no-print-directory -s O=$(O)/deb install DESTDIR=$(abspath $(DEB_ROOT)) PREFIX=/usr
	$(Q)strip --strip-unneeded --remove-section=.comment --remove-section=.note $(DEB_ROOT)/usr/bin/*
	$(Q)gzip -9n $(DEB_ROOT)/usr/share/man/man*/*
	$(Q)install -d $(DEB_ROOT)/usr/share/doc/kvpipe $(DEB_ROOT)/DEBIAN
	$(Q)install -m 0644 debian/copyright $(DEB_ROOT)/usr/share/doc/kvpipe/copyright
	$(Q){ echo "kvpipe ($(DEB_VERSION)) unstable; urgency=medium"; echo; \
	  echo "  * kvpipe $(VERSION), packaged by make deb."; echo; \
	  echo " -- $$(sed -n 's/^Maintainer: //p' debian/control)  $$(date -R -u -d @$(DEB_EPOCH))"; \
	} >$(O)/deb/changelog
	$(Q)gzip -9n -c $(O)/deb/changelog >$(DEB_ROOT)/usr/share/doc/kvpipe/changelog.Debian.gz
	$(Q)rm -f $(O)/deb/substvars
	$(Q)dpkg-shlibdeps -T$(O)/deb/substvars $(DEB_ROOT)/usr/bin/*
	@# mm-expand dlopens FFmpeg for video files only (lib/mm/video.c):
	@# the packages of those libraries are Recommends, found like shlibs.
	$(Q)printf 'av:Recommends=%s\n' "$$(ldconfig -p | \
	  awk '/lib(avformat|avcodec|avutil)\.so\.[0-9]+ / {print "*/" $$1}' | \
	  xargs -r dpkg-query -S | cut -d: -f1 | LC_ALL=C sort -u | paste -sd, | sed 's/,/, /g')" \
	  >>$(O)/deb/substvars
	$(Q)dpkg-gencontrol -pkvpipe -cdebian/control -l$(O)/deb/changelog -T$(O)/deb/substvars \
	  -f$(O)/deb/files -P$(DEB_ROOT)
	$(Q)cd $(DEB_ROOT) && find usr -type f | LC_ALL=C sort | xargs md5sum >DEBIAN/md5sums
	$(Q)SOURCE_DATE_EPOCH=$(DEB_EPOCH) dpkg-deb --root-owner-group -Zxz --build $(DEB_ROOT) $(DEB_FILE)

clean:
	rm -rf build
