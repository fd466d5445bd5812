/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bindgen input for the module's own copy of kernel::rdma: the headers the
 * series adds to the kernel's bindings_helper.h, and the helpers, read from
 * their definitions as the kernel reads its own (Kbuild renames
 * rust_helper_X to X).
 */
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include "rdma.c"
