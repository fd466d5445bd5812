// SPDX-License-Identifier: GPL-2.0

#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/srcu.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

void rust_helper_might_sleep(void)
{
	might_sleep();
}

u32 rust_helper_rdma_start_port(const struct ib_device *device)
{
	return rdma_start_port(device);
}

u32 rust_helper_rdma_end_port(const struct ib_device *device)
{
	return rdma_end_port(device);
}

bool rust_helper_rdma_protocol_iwarp(const struct ib_device *device,
				     u32 port_num)
{
	return rdma_protocol_iwarp(device, port_num);
}

bool rust_helper_ib_device_try_get(struct ib_device *device)
{
	return ib_device_try_get(device);
}

bool rust_helper_ib_uses_virt_dma(struct ib_device *dev)
{
	return ib_uses_virt_dma(dev);
}

#ifdef CONFIG_MODULES
/*
 * kernel::rdma enters a module's code from a callback only inside a read
 * section of this SRCU, and ends a module's leftovers with
 * synchronize_srcu() when it goes (rust/kernel/rdma/owner.rs).
 */
DEFINE_STATIC_SRCU(rust_rdma_owner_srcu);

int rust_helper_rdma_owner_read_lock(void)
{
	return srcu_read_lock(&rust_rdma_owner_srcu);
}

void rust_helper_rdma_owner_read_unlock(int idx)
{
	srcu_read_unlock(&rust_rdma_owner_srcu, idx);
}

void rust_helper_rdma_owner_synchronize(void)
{
	synchronize_srcu(&rust_rdma_owner_srcu);
}

bool rust_helper_module_is_live(struct module *mod)
{
	return module_is_live(mod);
}
#endif

void rust_helper_ib_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

u64 rust_helper_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
				  size_t size,
				  enum dma_data_direction direction)
{
	return ib_dma_map_single(dev, cpu_addr, size, direction);
}

void rust_helper_ib_dma_unmap_single(struct ib_device *dev, u64 addr,
				     size_t size,
				     enum dma_data_direction direction)
{
	ib_dma_unmap_single(dev, addr, size, direction);
}

int rust_helper_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr)
{
	return ib_dma_mapping_error(dev, dma_addr);
}

void rust_helper_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr,
					    size_t size,
					    enum dma_data_direction dir)
{
	ib_dma_sync_single_for_cpu(dev, addr, size, dir);
}

void rust_helper_ib_dma_sync_single_for_device(struct ib_device *dev,
					       u64 addr, size_t size,
					       enum dma_data_direction dir)
{
	ib_dma_sync_single_for_device(dev, addr, size, dir);
}

int rust_helper_ib_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

void rust_helper_ib_update_fast_reg_key(struct ib_mr *mr, u8 newkey)
{
	ib_update_fast_reg_key(mr, newkey);
}

int rust_helper_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *send_wr,
			     const struct ib_send_wr **bad_send_wr)
{
	return ib_post_send(qp, send_wr, bad_send_wr);
}

int rust_helper_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *recv_wr,
			     const struct ib_recv_wr **bad_recv_wr)
{
	return ib_post_recv(qp, recv_wr, bad_recv_wr);
}

int rust_helper_ib_post_srq_recv(struct ib_srq *srq,
				 const struct ib_recv_wr *recv_wr,
				 const struct ib_recv_wr **bad_recv_wr)
{
	return ib_post_srq_recv(srq, recv_wr, bad_recv_wr);
}
