/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the one-line wrappers in helpers.c: the static inlines and
 * macros of ib_core that Rust cannot call directly. bindgen reads this file
 * through rdma_krust_bindings.h; helpers.c includes it so that every wrapper
 * has a prototype.
 */
#ifndef RDMA_KRUST_HELPERS_H
#define RDMA_KRUST_HELPERS_H

#include <linux/types.h>

struct ib_device;

u32 rkrust_rdma_start_port(const struct ib_device *dev);
u32 rkrust_rdma_end_port(const struct ib_device *dev);

#endif /* RDMA_KRUST_HELPERS_H */
