// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's rust/helpers/rdma.c, built into the module for its own copy
 * of kernel::rdma (Kbuild puts its directory on the include path).
 */
#include "rdma.c"
