# pxfer - plain GNU make.
#   make                 build build/release/pxfer and libpxfer.so
#   make test            build with AddressSanitizer + UBSan and run the suite
#   make tsan            build with ThreadSanitizer, run the tests without the VM
#   make lint            shellcheck every shell script, and the tree's rules (test/lint/)
#   make bench           release build, then the benchmarks (bench/);
#                        BASELINE=<rev> compares with that commit's build
#   make install PREFIX=/usr/local DESTDIR=   (and uninstall)
#   make progs           only what make install installs: the command and
#                        libpxfer.so (the Debian package builds this)
#   make demo            the README's loopback demo
#   make docs            the diagrams in docs/ from their .dot sources

VERSION := 0.4.0
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
CC ?= gcc

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1
else ifeq ($(SAN),thread)
BUILD ?= build/tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
OPT := -O1
else
BUILD ?= build/release
SANFLAGS :=
OPT := -O2
endif

# the libraries the engine uses, by their pkg-config names
PKG_CONFIG ?= pkg-config
DEPS := liburing libsodium libcrypto libxxhash librdmacm libibverbs
DEPS_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(DEPS) 2>/dev/null)
DEPS_LIBS := $(shell $(PKG_CONFIG) --libs $(DEPS) 2>/dev/null)
ifeq ($(DEPS_LIBS),)
ifneq ($(filter-out clean uninstall,$(or $(MAKECMDGOALS),all)),)
$(error $(PKG_CONFIG) finds no $(DEPS): run tools/install-deps.sh)
endif
endif

# PMIx, for a job's wire-up (src/api/job.c): its headers live in a folder
# of their own; pmix.pc's rpath to that folder is left out, since Debian's
# libpmix2 puts the library in the linker's usual path too
PMIX_CFLAGS := $(shell $(PKG_CONFIG) --cflags pmix 2>/dev/null)
PMIX_LIBS := $(filter-out -Wl%,$(shell $(PKG_CONFIG) --libs pmix 2>/dev/null))
ifeq ($(PMIX_LIBS),)
ifneq ($(filter-out clean uninstall,$(or $(MAKECMDGOALS),all)),)
$(error $(PKG_CONFIG) finds no pmix: run tools/install-deps.sh)
endif
endif
DEPS_LIBS += $(PMIX_LIBS)

CPPFLAGS += -D_GNU_SOURCE -DPXFER_VERSION='"$(VERSION)"' -Iinclude -Isrc $(DEPS_CFLAGS)
CFLAGS ?= $(OPT) -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter -pthread -MMD -MP $(SANFLAGS)
# WERROR=1 (as CI builds): any warning fails the build
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif
LDFLAGS += -pthread $(SANFLAGS)
LDLIBS := $(DEPS_LIBS)

# the library, layer by layer (docs/architecture.md); the CLI links it
LIB_DIRS := src/core src/io src/transport src/transport/tcp src/transport/rdma \
	    src/engine src/send src/recv src/api
LIB_SRC := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC := $(wildcard test/unit/*.c)
HELPER_SRC := $(wildcard test/helper/*.c)
BENCH_SRC := $(wildcard bench/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
# the objects go into libpxfer.so too, which exports only what pxfer.h
# marks PXFER_API (and src/api/libpxfer.map lists)
LIB_CFLAGS := -fPIC -fvisibility=hidden
$(LIB_OBJ): private CFLAGS += $(LIB_CFLAGS)
$(BUILD)/src/api/job.o: private CPPFLAGS += $(PMIX_CFLAGS)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:%.c=$(BUILD)/%)
HELPER_BIN := $(HELPER_SRC:%.c=$(BUILD)/%)
BENCH_BIN := $(BENCH_SRC:%.c=$(BUILD)/%)

# libpxfer.so.VERSION, whose soname libpxfer.so.SOVERSION changes, before
# 1.0, with any change to a struct or a call in include/pxfer/pxfer.h
SOVERSION := 3
SONAME := libpxfer.so.$(SOVERSION)
SHLIB := libpxfer.so.$(VERSION)
LIB_MAP := src/api/libpxfer.map
# every symbol resolved at link time, except in sanitizer builds, whose
# runtime clang leaves to the program
SO_NOUNDEF := $(if $(SANFLAGS),,-z defs)

all: $(BUILD)/pxfer $(BUILD)/$(SHLIB) $(TEST_BIN) $(HELPER_BIN) $(BENCH_BIN)

progs: $(BUILD)/pxfer $(BUILD)/$(SHLIB)

# Objects are rebuilt when the compiler or the flags change, not only
# their sources: a stamp holds the command line, rewritten (when make
# reads this file) only when it differs.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) lib: $(LIB_CFLAGS) $(SO_NOUNDEF)
ifneq ($(FLAGS_NOW),$(file <$(FLAGS_STAMP)))
$(shell mkdir -p $(BUILD))
$(file >$(FLAGS_STAMP),$(FLAGS_NOW))
endif

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libpxfer.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# the public library, with its two names beside it as it is installed
$(BUILD)/$(SHLIB): $(LIB_OBJ) $(LIB_MAP)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(LIB_MAP) \
		$(SO_NOUNDEF) $(LDFLAGS) -o $@ $(LIB_OBJ) $(LDLIBS)
	ln -sf $(SHLIB) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $(BUILD)/libpxfer.so

$(BUILD)/pxfer: $(CLI_OBJ) $(BUILD)/libpxfer.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/test/%: $(BUILD)/test/%.o $(BUILD)/libpxfer.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libpxfer.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The test suite runs against the sanitizer build.
test:
	$(MAKE) SAN=1 all
	$(MAKE) SAN=1 rxe-progs
	PXFER_BUILD=$(CURDIR)/build/san test/runtests.sh

# Only the fast unit tests and loopback tests, without the VM.
check:
	$(MAKE) SAN=1 all
	PXFER_BUILD=$(CURDIR)/build/san PXFER_SKIP_VM=1 test/runtests.sh

# The unit and loopback tests under ThreadSanitizer (build/tsan, no VM).
tsan:
	$(MAKE) SAN=thread all
	PXFER_BUILD=$(CURDIR)/build/tsan PXFER_SKIP_VM=1 test/runtests.sh

# shellcheck on every shell script: the *.sh and *.bash files, and those
# whose first line runs sh or bash (test/vm/run, .ci/run, ...); options in
# .shellcheckrc
LINT_PICK := FNR == 1 && (FILENAME ~ /\.(ba)?sh$$/ || /^\#!.*[\/ ](ba|da)?sh( |$$)/) { print FILENAME } { nextfile }
lint:
	@command -v shellcheck >/dev/null || { echo "lint: shellcheck is not installed (tools/install-deps.sh)" >&2; exit 1; }
	@find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0 | \
		xargs -0 awk '$(LINT_PICK)' | sort | \
		xargs -d '\n' sh -c 'echo "shellcheck: $$# scripts"; shellcheck "$$@"' sh
	test/lint/layout.py
	@test/lint/docs.sh || [ $$? -eq 77 ]

# TCP peers over loopback, the scale-out job on namespaced nodes (skipped
# without root, ip netns, tc or mpirun), the broadcast to 1-8 namespaced
# receivers (skipped without root, ip netns or tc), then RDMA against
# ib_write_bw in the test VM. BASELINE=<rev>: also the build of that commit, alternated
# with this one in the same run of the TCP benchmark, and compared.
# BENCH_FLAGS: more options for bench/bench.sh (--reps 9, --out FILE);
# SCALEOUT_FLAGS for bench/scaleout.sh (--quick, --out FILE), and
# BROADCAST_FLAGS for bench/broadcast.sh.
BASELINE ?=
SCALEOUT_FLAGS ?=
BROADCAST_FLAGS ?=
BASELINE_DIR = build/baseline/$(BASELINE)
bench: all $(if $(BASELINE),bench-baseline)
	PXFER_BUILD=$(CURDIR)/build/release \
	$(if $(BASELINE),PXFER_BASELINE=$(CURDIR)/$(BASELINE_DIR)/build/release/pxfer) \
	bench/bench.sh $(BENCH_FLAGS)
	PXFER_BUILD=$(CURDIR)/build/release bench/scaleout.sh $(SCALEOUT_FLAGS)
	PXFER_BUILD=$(CURDIR)/build/release bench/broadcast.sh $(BROADCAST_FLAGS)
	PXFER_BUILD=$(CURDIR)/build/release bench/rdma.sh

bench-baseline:
	rm -rf $(BASELINE_DIR) && mkdir -p $(BASELINE_DIR)
	git archive --format=tar $(BASELINE) | tar -x -C $(BASELINE_DIR)
	$(MAKE) -C $(BASELINE_DIR) build/release/pxfer

demo: all
	PXFER_BUILD=$(CURDIR)/build/release examples/demo.sh

# the diagrams of docs/architecture.md, from their graphviz sources
DOCS_SVG := $(patsubst %.dot,%.svg,$(wildcard docs/*.dot))
docs: $(DOCS_SVG)
docs/%.svg: docs/%.dot
	dot -Tsvg -o $@ $<

# pxfer.pc's paths, below ${prefix} where they are, so that it moves with it
pc_path = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

install: $(BUILD)/pxfer $(BUILD)/$(SHLIB)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR)/pxfer $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0755 $(BUILD)/pxfer $(DESTDIR)$(BINDIR)/pxfer
	install -m 0755 $(BUILD)/$(SHLIB) $(DESTDIR)$(LIBDIR)/$(SHLIB)
	ln -sf $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libpxfer.so
	install -m 0644 include/pxfer/pxfer.h $(DESTDIR)$(INCLUDEDIR)/pxfer/pxfer.h
	sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(call pc_path,$(LIBDIR))|' \
	    -e 's|@includedir@|$(call pc_path,$(INCLUDEDIR))|' \
	    -e 's|@version@|$(VERSION)|' -e 's|@libs_private@|$(strip $(DEPS_LIBS))|' \
	    src/api/pxfer.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/pxfer.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/pxfer.pc
	install -m 0644 docs/pxfer.1 $(DESTDIR)$(MANDIR)/man1/pxfer.1
	sed 's|@bindir@|$(BINDIR)|' examples/pxfer-recv.service.in \
	    >$(DESTDIR)$(SYSTEMDUNITDIR)/pxfer-recv.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/pxfer-recv.service
	install -m 0644 completion/pxfer.bash $(DESTDIR)$(BASHCOMPDIR)/pxfer
	install -m 0644 completion/_pxfer $(DESTDIR)$(ZSHCOMPDIR)/_pxfer

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pxfer $(DESTDIR)$(LIBDIR)/$(SHLIB) \
	      $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libpxfer.so \
	      $(DESTDIR)$(INCLUDEDIR)/pxfer/pxfer.h $(DESTDIR)$(PKGCONFIGDIR)/pxfer.pc \
	      $(DESTDIR)$(MANDIR)/man1/pxfer.1 \
	      $(DESTDIR)$(SYSTEMDUNITDIR)/pxfer-recv.service \
	      $(DESTDIR)$(BASHCOMPDIR)/pxfer $(DESTDIR)$(ZSHCOMPDIR)/_pxfer
	rmdir $(DESTDIR)$(INCLUDEDIR)/pxfer 2>/dev/null || true

clean:
	rm -rf build/release build/san build/tsan

.PHONY: all progs test check tsan lint bench bench-baseline demo docs install uninstall clean
# keep test and tool objects between builds
.SECONDARY:

-include test/vm/rxe.mk
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(HELPER_BIN:=.d) $(BENCH_BIN:=.d)

# ---- fuzzing ----------------------------------------------------------------
# One fuzz target per decoder a peer reaches: test/fuzz/NAME.c, seeded from
# test/fuzz/corpus/NAME/.
#   make fuzz [FUZZ_TARGETS="msg path"] [FUZZ_SECONDS=60] [FUZZ_FLAGS=...]
#                        clang + libFuzzer + ASan + UBSan into build/fuzz/;
#                        each target runs FUZZ_SECONDS on a copy of its
#                        corpus in build/fuzz/corpus/NAME/, crashes go to
#                        build/fuzz/artifacts/NAME/ (needs clang and its
#                        libFuzzer runtime: tools/install-deps.sh)
#   make fuzz-corpus     regenerate the seeds (test/fuzz/make_corpus.c)
#   make fuzz-clean      remove build/fuzz/, found inputs included
# The suite links every target with test/fuzz/driver.c instead of libFuzzer
# and replays the committed seeds (test/fuzz/corpus.sh).

FUZZ_SRC := $(filter-out test/fuzz/driver.c test/fuzz/make_corpus.c, \
	      $(wildcard test/fuzz/*.c))
FUZZ_ALL := $(notdir $(FUZZ_SRC:.c=))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 60
FUZZ_FLAGS ?=
FUZZ_CC ?= clang
FUZZ_BUILD := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer

# standalone replays and the seed generator, in the suite's build
FUZZ_REPLAY := $(FUZZ_ALL:%=$(BUILD)/test/fuzz/%)
FUZZ_GEN := $(BUILD)/test/fuzz/make_corpus

all: $(FUZZ_REPLAY) $(FUZZ_GEN)

$(FUZZ_REPLAY): $(BUILD)/test/fuzz/%: $(BUILD)/test/fuzz/%.o \
		$(BUILD)/test/fuzz/driver.o $(BUILD)/libpxfer.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(FUZZ_GEN): $(BUILD)/test/fuzz/make_corpus.o $(BUILD)/libpxfer.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the library and the targets again, with clang's coverage for libFuzzer
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_OBJ := $(FUZZ_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_BIN := $(FUZZ_ALL:%=$(FUZZ_BUILD)/%)

$(FUZZ_LIB_OBJ) $(FUZZ_OBJ): $(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link \
		-c -o $@ $<

$(FUZZ_BUILD)/libpxfer.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_BIN): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/test/fuzz/%.o \
	     $(FUZZ_BUILD)/libpxfer.a
	$(FUZZ_CC) -pthread $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# new inputs go to the copy under build/, never to the committed corpus
fuzz: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%)
	@status=0; \
	for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
		cp -n test/fuzz/corpus/$$t/* $(FUZZ_BUILD)/corpus/$$t/; \
		echo "fuzz: $$t for $(FUZZ_SECONDS)s"; \
		$(FUZZ_BUILD)/$$t -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
			-print_final_stats=1 $(FUZZ_FLAGS) \
			$(FUZZ_BUILD)/corpus/$$t || { \
			echo "fuzz: $$t failed: $(FUZZ_BUILD)/artifacts/$$t/"; \
			status=1; }; \
	done; \
	exit $$status

fuzz-corpus: $(FUZZ_GEN)
	$(FUZZ_GEN) test/fuzz/corpus

fuzz-clean:
	rm -rf $(FUZZ_BUILD)

.PHONY: fuzz fuzz-corpus fuzz-clean
-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) \
	 $(BUILD)/test/fuzz/driver.d $(FUZZ_REPLAY:=.d) $(FUZZ_GEN).d
