// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers around the static inlines and macros of ib_core and
 * rdma_cm that Rust cannot call. No logic lives here: every function forwards
 * its arguments and returns the result. See Documentation/design.rst.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/ratelimit.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "bindings/helpers.h"

u32 rkrust_rdma_start_port(const struct ib_device *dev)
{
	return rdma_start_port(dev);
}

u32 rkrust_rdma_end_port(const struct ib_device *dev)
{
	return rdma_end_port(dev);
}

bool rkrust_rdma_protocol_iwarp(const struct ib_device *dev, u32 port)
{
	return rdma_protocol_iwarp(dev, port);
}

bool rkrust_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

/* A macro: passes KBUILD_MODNAME as the owner's name. */
struct ib_pd *rkrust_ib_alloc_pd(struct ib_device *dev, unsigned int flags)
{
	return ib_alloc_pd(dev, flags);
}

void rkrust_ib_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

/* A macro: passes KBUILD_MODNAME as the owner's name. */
struct ib_cq *rkrust_ib_alloc_cq(struct ib_device *dev, void *private,
				 int nr_cqe, int comp_vector,
				 enum ib_poll_context poll_ctx)
{
	return ib_alloc_cq(dev, private, nr_cqe, comp_vector, poll_ctx);
}

/* bindgen skips a function named after a Rust keyword. */
void rkrust_yield(void)
{
	yield();
}

int rkrust_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr)
{
	return ib_post_send(qp, wr, bad_wr);
}

int rkrust_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	return ib_post_recv(qp, wr, bad_wr);
}

int rkrust_ib_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

void rkrust_ib_update_fast_reg_key(struct ib_mr *mr, u8 newkey)
{
	ib_update_fast_reg_key(mr, newkey);
}

u64 rkrust_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
			     size_t size, enum dma_data_direction direction)
{
	return ib_dma_map_single(dev, cpu_addr, size, direction);
}

void rkrust_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
				enum dma_data_direction direction)
{
	ib_dma_unmap_single(dev, addr, size, direction);
}

int rkrust_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr)
{
	return ib_dma_mapping_error(dev, dma_addr);
}

/* SIZE_MAX for a device with virtual DMA (rxe, siw): nothing is mapped. */
size_t rkrust_ib_dma_max_mapping_size(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev) ? SIZE_MAX : dma_max_mapping_size(dev->dma_device);
}

void rkrust_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr,
				       size_t size,
				       enum dma_data_direction dir)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, dir);
}

void rkrust_ib_dma_sync_single_for_device(struct ib_device *dev, u64 addr,
					  size_t size,
					  enum dma_data_direction dir)
{
	ib_dma_sync_single_for_device(dev, addr, size, dir);
}

/* A macro: passes KBUILD_MODNAME as the owner's name. */
struct rdma_cm_id *rkrust_rdma_create_id(struct net *net,
					 rdma_cm_event_handler handler,
					 void *context,
					 enum rdma_ucm_port_space ps,
					 enum ib_qp_type qp_type)
{
	return rdma_create_id(net, handler, context, ps, qp_type);
}

/* A macro over a static state: the module's one log rate limit. */
static DEFINE_RATELIMIT_STATE(rkrust_ratelimit_state, 5 * HZ, 10);

bool rkrust_ratelimit(void)
{
	return __ratelimit(&rkrust_ratelimit_state);
}

/*
 * A C table entry: compat_ptr_ioctl() is a function with CONFIG_COMPAT and a
 * NULL macro without it.
 */
long (*const rkrust_compat_ptr_ioctl)(struct file *, unsigned int,
				      unsigned long) = compat_ptr_ioctl;
