/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bindgen input: everything of the kernel the abstraction layer (src/kapi)
 * calls that the kernel's own bindings do not have. The generated file,
 * bindings/bindings_generated.rs, is made at build time against the headers
 * and .config of the kernel the module is built for, so struct layouts
 * always match that kernel (a lockdep or KASAN build changes them). What is
 * generated is chosen in bindings/bindgen_parameters.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>

#include "helpers.h"

/*
 * ib_core and rdma_cm, unless the kernel's own bindings have them
 * (RKRUST_KERNEL_RDMA: the kernel carries the rust-rdma series; Kbuild).
 * The helpers are read from their definitions; Kbuild renames rust_helper_X
 * to X, as the kernel's rust/Makefile does.
 */
#ifndef RKRUST_KERNEL_RDMA
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/ib_cm.h>
#include "../kernel/rust/helpers/rdma.c"
#endif

/* Macros bindgen cannot see as constants. */
const int RKRUST_MISC_DYNAMIC_MINOR = MISC_DYNAMIC_MINOR;
