/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the one-line wrappers in helpers.c: the static inlines and
 * macros of ib_core and rdma_cm that Rust cannot call directly. bindgen reads
 * this file through rdma_krust_bindings.h; helpers.c includes it so that every
 * wrapper has a prototype.
 */
#ifndef RDMA_KRUST_HELPERS_H
#define RDMA_KRUST_HELPERS_H

#include <linux/types.h>
#include <linux/dma-direction.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

u32 rkrust_rdma_start_port(const struct ib_device *dev);
u32 rkrust_rdma_end_port(const struct ib_device *dev);
bool rkrust_rdma_protocol_iwarp(const struct ib_device *dev, u32 port);
bool rkrust_ib_device_try_get(struct ib_device *dev);

struct ib_pd *rkrust_ib_alloc_pd(struct ib_device *dev, unsigned int flags);
void rkrust_ib_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rkrust_ib_alloc_cq(struct ib_device *dev, void *private,
				 int nr_cqe, int comp_vector,
				 enum ib_poll_context poll_ctx);
void rkrust_yield(void);
int rkrust_ib_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr);
int rkrust_ib_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int rkrust_ib_dereg_mr(struct ib_mr *mr);
void rkrust_ib_update_fast_reg_key(struct ib_mr *mr, u8 newkey);

u64 rkrust_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
			     size_t size, enum dma_data_direction direction);
void rkrust_ib_dma_unmap_single(struct ib_device *dev, u64 addr, size_t size,
				enum dma_data_direction direction);
int rkrust_ib_dma_mapping_error(struct ib_device *dev, u64 dma_addr);
size_t rkrust_ib_dma_max_mapping_size(struct ib_device *dev);
void rkrust_ib_dma_sync_single_for_cpu(struct ib_device *dev, u64 addr,
				       size_t size,
				       enum dma_data_direction dir);
void rkrust_ib_dma_sync_single_for_device(struct ib_device *dev, u64 addr,
					  size_t size,
					  enum dma_data_direction dir);

struct rdma_cm_id *rkrust_rdma_create_id(struct net *net,
					 rdma_cm_event_handler handler,
					 void *context,
					 enum rdma_ucm_port_space ps,
					 enum ib_qp_type qp_type);

bool rkrust_ratelimit(void);

struct file;
extern long (*const rkrust_compat_ptr_ioctl)(struct file *, unsigned int,
					     unsigned long);

#endif /* RDMA_KRUST_HELPERS_H */
