// SPDX-License-Identifier: GPL-2.0

//! Scheduling, time and log rate limiting for the polling loops and the
//! peer's faults: what 6.12's `kernel` crate does not offer.

use super::sys as bindings;

/// Gives the CPU to any other runnable task before coming back
/// (`yield()`): for loops that poll in process context, so that the
/// device's own workers (rxe's, say) run on this CPU too.
pub(crate) fn yield_now() {
    // SAFETY: no memory-safety precondition; like any sleeping call it
    // belongs in process context (`might_sleep()` checks that).
    unsafe { bindings::rkrust_yield() };
}

/// Gives the CPU only if the scheduler asks for it (`cond_resched()`): a
/// tick found this task's slice used up, or a wake-up should preempt it.
/// For loops that spin as a userspace poller does, which the kernel
/// preempts at those points too.
pub(crate) fn cond_resched() {
    // SAFETY: no memory-safety precondition; it may sleep, so it belongs in
    // process context (`might_resched()` checks that).
    unsafe { bindings::rkrust_cond_resched() };
}

/// The `jiffies` counter: a plain memory read, unlike `ktime_get()`, which
/// reads the clocksource: under TCG a call into QEMU each time (the TSC's
/// `cpu_get_ticks()`, or the emulated HPET where the kernel does not trust
/// the TSC). For loops that check a deadline on every pass.
pub(crate) fn jiffies() -> kernel::time::Jiffies {
    // SAFETY: `jiffies` is a valid, always-mapped kernel variable; the timer
    // interrupt updates it, hence the volatile read.
    unsafe { core::ptr::read_volatile(core::ptr::addr_of!(bindings::jiffies)) }
}

/// Whether a rate-limited message may be printed now: at most 10 in any 5
/// seconds for the whole module (`__ratelimit()` on one static state), so a
/// peer that keeps breaking a rule cannot flood the log.
pub(crate) fn ratelimit() -> bool {
    // SAFETY: no precondition; the state is a static of `helpers.c`, and
    // `__ratelimit()` may be called from any context.
    unsafe { bindings::rkrust_ratelimit() }
}
