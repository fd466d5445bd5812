// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers around the static inlines and macros of ib_core that
 * Rust cannot call. No logic lives here: every function forwards its
 * arguments and returns the result. See Documentation/design.rst.
 */
#include <rdma/ib_verbs.h>

#include "bindings/helpers.h"

u32 rkrust_rdma_start_port(const struct ib_device *dev)
{
	return rdma_start_port(dev);
}

u32 rkrust_rdma_end_port(const struct ib_device *dev)
{
	return rdma_end_port(dev);
}
