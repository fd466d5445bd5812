// SPDX-License-Identifier: GPL-2.0
/*
 * One-line wrappers around static inlines and macros Rust cannot call. No
 * logic lives here: every function forwards its arguments and returns the
 * result. See Documentation/design.rst.
 *
 * The RDMA ones are the kernel's own, from the rust-rdma series: a kernel
 * that carries it (CONFIG_RUST_RDMA_ABSTRACTIONS) builds them into vmlinux,
 * and for one that does not (or with KRUST_OWN_RDMA=1, see Kbuild), the
 * module builds the same file.
 */
#include <linux/ratelimit.h>

#include "bindings/helpers.h"

#ifndef RKRUST_KERNEL_RDMA
#include "kernel/rust/helpers/rdma.c"
#endif

/* bindgen skips a function named after a Rust keyword. */
void rkrust_yield(void)
{
	yield();
}

/* A macro (it checks might_resched() first). */
void rkrust_cond_resched(void)
{
	cond_resched();
}

/* A macro over a static state: the module's one log rate limit. */
static DEFINE_RATELIMIT_STATE(rkrust_ratelimit_state, 5 * HZ, 10);

bool rkrust_ratelimit(void)
{
	return __ratelimit(&rkrust_ratelimit_state);
}

/* A macro (it also sets up the timer and its lockdep class). */
void rkrust_init_delayed_work(struct delayed_work *dw, work_func_t fn)
{
	INIT_DELAYED_WORK(dw, fn);
}

/* A static inline: on the system workqueue. */
bool rkrust_schedule_delayed_work(struct delayed_work *dw, unsigned long delay)
{
	return schedule_delayed_work(dw, delay);
}
