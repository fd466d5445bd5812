# SPDX-License-Identifier: GPL-2.0
#
#   make                    build rdma_krust.ko against KDIR
#   make KDIR=/path/to/kernel/build
#   make rust-analyzer      rust-project.json for editors
#   make test               everything: cargo tests and the QEMU guest suite
#   make demo               boot the guest and print the device table
#   make clean
#
# KDIR defaults to the project's cached kernel (scripts/build-kernel.sh),
# which is built on first use.

CACHED_KDIR := $(shell scripts/build-kernel.sh --print-kdir)
KDIR ?= $(CACHED_KDIR)
LLVM ?= 1
export LLVM

ROOT := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))

all: modules

# Only the project's own cached kernel is built on demand.
ifeq ($(KDIR),$(CACHED_KDIR))
KERNEL_DEP := $(KDIR)/.krust-built
$(KERNEL_DEP):
	scripts/build-kernel.sh
endif

modules rust-analyzer: $(KERNEL_DEP)
	$(MAKE) -C $(KDIR) M=$(ROOT) $@

clean:
	$(MAKE) -C $(KDIR) M=$(ROOT) $@

test:
	scripts/test-all.sh

bench:
	scripts/bench.sh

demo:
	scripts/qemu-test.sh --demo

.PHONY: all modules rust-analyzer clean test demo bench
