# SPDX-License-Identifier: GPL-2.0
#
#   make                    build rdma_krust.ko against KDIR
#   make KDIR=/path/to/kernel/build
#   make modules_install    install it into /lib/modules/<release>/extra
#                           (INSTALL_MOD_PATH=DIR puts that under DIR)
#   make rust-analyzer      rust-project.json for editors
#   make test               everything: lints, cargo tests, the QEMU guest suite
#                           (and on the debug kernel when it is cached)
#   make test-debug         the guest suite on the debug kernel
#   make bench              perftest and the module side by side
#   make bench-pair         the same across two guests (Documentation/two-hosts.rst)
#   make demo               boot the guest: device tables from both views, then
#                           one of each operation against the userspace peer
#   make upstream-check     the provider fixes' reproducers on unpatched 6.12
#                           (must show each bug) and on the test kernel (must not)
#   make clean
#
# KDIR defaults to the project's cached kernel (scripts/build-kernel.sh).
# Its directory is named by a hash of what built it, the installed kernel
# source package included, so it is found when a recipe runs, after
# scripts/setup.sh has installed what is missing and the kernel is built
# (both skip quickly when there is nothing to do). KRUST_NO_INSTALL=1 makes
# setup install nothing: a missing tool is named in one line and the goal
# fails.

LLVM ?= 1
export LLVM

ROOT := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))

ifeq ($(KDIR),)
PREPARE := scripts/setup.sh && scripts/build-kernel.sh
KDIR_NOW = "$$(scripts/build-kernel.sh --print-kdir)"
else
PREPARE := true
KDIR_NOW = $(KDIR)
endif

# A KDIR given on the command line may be any kernel: before Kbuild runs,
# say in one line why it cannot build the module, if it cannot (no tree, no
# .config, no CONFIG_RUST, not clang-built, not built). The cached kernel
# (no KDIR) is the project's own and always fits.
KDIR_GOALS := all modules modules_install rust-analyzer
ifneq ($(KDIR),)
ifneq ($(filter $(KDIR_GOALS),$(or $(MAKECMDGOALS),all)),)
KDIR_PROBLEM := $(shell bash '$(ROOT)scripts/check-kdir.sh' '$(KDIR)')
ifneq ($(KDIR_PROBLEM),)
$(error $(KDIR_PROBLEM))
endif
endif
endif

# Where modules_install puts the module under /lib/modules/<release>/:
# extra/, as out-of-tree modules go (Kbuild's own default is updates/).
INSTALL_MOD_DIR ?= extra

all: modules

modules:
	@$(PREPARE)
	$(MAKE) -C $(KDIR_NOW) M=$(ROOT) $@

# The kernel's modules_install with M=: copies the built module (compressed
# and signed if that kernel's config says so for all its modules), then runs
# depmod. INSTALL_MOD_PATH, if given, reaches it through make's own flags.
modules_install:
	@test -f $(ROOT)rdma_krust.ko || \
		{ echo "rdma_krust.ko is not built: run make first (with the same KDIR)" >&2; exit 2; }
	$(MAKE) -C $(KDIR_NOW) M=$(ROOT) INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) $@

# The module build generates bindings/bindings_generated.rs and
# bindings/uapi_generated.rs, which the crate includes: editors need them as
# much as rustc does.
rust-analyzer: modules
	$(MAKE) -C $(KDIR_NOW) M=$(ROOT) $@

clean:
	$(MAKE) -C $(KDIR_NOW) M=$(ROOT) $@

test:
	scripts/test-all.sh

# The guest suite on the debug kernel only (builds it on first use).
test-debug:
	KRUST_FLAVOR=debug KRUST_TIMEOUT=3600 scripts/qemu-test.sh

bench:
	scripts/bench.sh

bench-pair:
	scripts/bench.sh --pair

demo:
	scripts/qemu-test.sh --demo

upstream-check:
	scripts/upstream-check.sh

.PHONY: all modules modules_install rust-analyzer clean test test-debug demo bench bench-pair upstream-check
