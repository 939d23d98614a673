# Soft-RoCE test VM: make fragment.
#
# Included by the top-level Makefile (-include test/vm/rxe.mk) and
# usable on its own:  make -f test/vm/rxe.mk rxe-progs
#
#   rxe-progs   build the verbs programs run inside the VM (build/rxe/)
#   rxe-vm      build (or refresh, when missing) the VM image in build/rxe-vm/
#   rxe-shell   interactive shell in the VM
#   rxe-smoke   run test/rdma/smoke.sh
#
# See docs/testing.md.

# Do not become the default goal of an including Makefile.
RXE_SAVED_GOAL := $(.DEFAULT_GOAL)

RXE_ROOT := $(patsubst %/test/vm/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
RXE_OUT := $(RXE_ROOT)/build/rxe

CC ?= cc
CFLAGS ?= -O2 -g -Wall -Wextra
RXE_LIBS := -libverbs -lrdmacm -pthread

RXE_PROGS := $(RXE_OUT)/verbs_selftest

# The programs are rebuilt when the compiler or the flags change (e.g.
# "make SAN=1 rxe-progs" after a release build): the command line is kept
# in $(RXE_OUT)/.flags, rewritten only when it differs.
RXE_BUILD_CMD = $(CC) $(CFLAGS) $(CPPFLAGS) $(LDFLAGS) $(RXE_LIBS)
rxe_same = $(and $(findstring $(1),$(2)),$(findstring $(2),$(1)))

.PHONY: rxe-progs rxe-vm rxe-shell rxe-smoke rxe-force

rxe-progs: $(RXE_PROGS)

# make expands a whole recipe before running it, so the directory is made
# by $(shell) inside the same expansion, ahead of $(file)
$(RXE_OUT)/.flags: rxe-force
	$(shell mkdir -p $(@D))$(if $(call rxe_same,$(RXE_BUILD_CMD),$(file <$@)),,$(file >$@,$(RXE_BUILD_CMD)))

$(RXE_OUT)/verbs_selftest: $(RXE_ROOT)/test/rdma/verbs_selftest.c $(RXE_OUT)/.flags
	$(CC) $(CFLAGS) $(CPPFLAGS) -o $@ $< $(LDFLAGS) $(RXE_LIBS)

rxe-vm:
	$(RXE_ROOT)/test/vm/build.sh

rxe-shell: rxe-progs
	$(RXE_ROOT)/test/vm/run --shell

rxe-smoke: rxe-progs
	$(RXE_ROOT)/test/rdma/smoke.sh

.DEFAULT_GOAL := $(RXE_SAVED_GOAL)
