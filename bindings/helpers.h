/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Prototypes of the module's own wrappers in helpers.c. bindgen reads this
 * file through rdma_krust_bindings.h; helpers.c includes it so that every
 * wrapper has a prototype. The RDMA wrappers (kernel/rust/helpers/rdma.c)
 * are read by bindgen from their definitions, as the kernel reads its own.
 */
#ifndef RDMA_KRUST_HELPERS_H
#define RDMA_KRUST_HELPERS_H

#include <linux/types.h>
#include <linux/workqueue.h>

void rkrust_yield(void);
void rkrust_cond_resched(void);
bool rkrust_ratelimit(void);
void rkrust_init_delayed_work(struct delayed_work *dw, work_func_t fn);
bool rkrust_schedule_delayed_work(struct delayed_work *dw, unsigned long delay);

#endif /* RDMA_KRUST_HELPERS_H */
