// SPDX-License-Identifier: GPL-2.0

//! Waits: the deadlines of an ioctl's `timeout_ms`, and how a caller waits
//! for a condition on `st`, sleeping on the connection's condition
//! variable or, on a busy-polling connection, reaping the CQ itself.

use super::*;

/// The `ktime_get()` time (ns) `ms` milliseconds from now.
pub(super) fn deadline(ms: u32) -> i64 {
    Ktime::ktime_get().to_ns() + i64::from(ms) * 1_000_000
}

/// Milliseconds left until `end` (rounded up); `ETIMEDOUT` once it passed.
/// Loops that wait more than once wait against one deadline, so that an
/// ioctl's `timeout_ms` bounds the whole call.
pub(super) fn ms_until(end: i64) -> Result<u32> {
    let left = end - Ktime::ktime_get().to_ns();
    if left <= 0 {
        return Err(errno::ETIMEDOUT());
    }
    Ok(u32::try_from((left + 999_999) / 1_000_000).unwrap_or(u32::MAX))
}

pub(super) fn timeout_of(ms: u32) -> u32 {
    if ms == 0 {
        abi::DEFAULT_TIMEOUT_MS
    } else {
        ms
    }
}

/// What a wait on the transport lasts: posted work requests always complete,
/// successfully, failed once the transport's retries are spent
/// (`abi::Transport`), or flushed when the connection goes down, so the
/// wait ends with the transport's verdict or a signal. (`u32::MAX` ms, 49
/// days, stands for "no deadline".)
pub(super) const UNTIL_VERDICT: u32 = u32::MAX;

/// A one-sided operation's wait: the caller's `timeout_ms`, or the
/// transport's verdict for 0.
pub(super) fn op_timeout(ms: u32) -> u32 {
    if ms == 0 {
        UNTIL_VERDICT
    } else {
        ms
    }
}

impl Conn {
    /// Waits until `f` returns `Some`, for at most `ms` milliseconds.
    /// A signal gives `EINTR`, the timeout `ETIMEDOUT`.
    pub(super) fn wait<T>(
        &self,
        ms: u32,
        mut f: impl FnMut(&mut St) -> Option<Result<T>>,
    ) -> Result<T> {
        let mut left = msecs_to_jiffies(ms);
        let mut st = self.st.lock();
        if st.polled {
            drop(st);
            return self.wait_polling(ms, f);
        }
        loop {
            // A disconnect put off for what is in flight is paid by the
            // waiter once its time is up; the nap ends by then.
            let nap = match Self::deferred_hang_up_due(&mut st) {
                Some(0) => {
                    drop(st);
                    self.hang_up_if_owed(&self.ep.lock());
                    st = self.st.lock();
                    continue;
                }
                Some(due) => due.min(left),
                None => left,
            };
            if let Some(r) = f(&mut st) {
                return r;
            }
            let slept = match self.cv.wait_interruptible_timeout(&mut st, nap) {
                CondVarTimeoutResult::Timeout => nap,
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
                CondVarTimeoutResult::Woken { jiffies } => nap - jiffies.min(nap),
            };
            left -= slept.min(left);
            if left == 0 {
                // What came with the last wake-up still counts.
                return f(&mut st).unwrap_or_else(|| Err(errno::ETIMEDOUT()));
            }
        }
    }

    /// [`Self::wait`] on a busy-polling connection (`abi::CONN_POLL`): this
    /// thread reaps the completions. It spins while completions come, and
    /// after [`abi::POLL_SPIN_US`] without one naps a jiffy between polls
    /// (a cm event or another waiter's completion ends the nap early).
    /// With `abi::CONN_SPIN` it never naps.
    fn wait_polling<T>(
        &self,
        ms: u32,
        mut f: impl FnMut(&mut St) -> Option<Result<T>>,
    ) -> Result<T> {
        // Jiffies, not ktime: this runs on every pass of the loop, and
        // ktime_get() reads the clocksource (`sched::jiffies`).
        let start = sched::jiffies();
        let timeout = msecs_to_jiffies(ms);
        let spin = msecs_to_jiffies(abi::POLL_SPIN_US.div_ceil(1000)).max(1);
        let mut last_seen = start;
        loop {
            let reaped = self.reap();
            let mut st = self.st.lock();
            if Self::deferred_hang_up_due(&mut st) == Some(0) {
                // Put off for what was in flight, and owed now.
                drop(st);
                self.hang_up_if_owed(&self.ep.lock());
                continue;
            }
            if let Some(r) = f(&mut st) {
                return r;
            }
            let now = sched::jiffies();
            if now.wrapping_sub(start) >= timeout {
                return Err(errno::ETIMEDOUT());
            }
            let spinning = st.spin;
            if reaped > 0 || spinning {
                last_seen = now;
            } else if now.wrapping_sub(last_seen) > spin {
                if let CondVarTimeoutResult::Signal { .. } =
                    self.cv.wait_interruptible_timeout(&mut st, 1)
                {
                    return Err(EINTR);
                }
                continue;
            }
            drop(st);
            if kernel::current!().signal_pending() {
                return Err(EINTR);
            }
            Self::pass(spinning);
        }
    }

    /// Ends a pass of a polling loop: yields the CPU, or with
    /// `abi::CONN_SPIN` gives it up only if the scheduler asks.
    pub(super) fn pass(spinning: bool) {
        if spinning {
            sched::cond_resched();
        } else {
            sched::yield_now();
        }
    }

    /// Runs the handlers of the completions waiting in a busy-polling
    /// connection's CQ; returns how many ran. `ep` serializes the reapers,
    /// so messages are handled in the order they arrived.
    pub(super) fn reap(&self) -> u32 {
        let ep = self.ep.lock();
        // Each handler notifies `cv`, waking waiters that nap.
        let n = ep.qp().map_or(0, |qp| qp.reap(POLL_BUDGET).unwrap_or(0));
        // The handlers ran under `ep`: a disconnect they owe is made here.
        if n > 0 {
            self.hang_up_if_owed(&ep);
        }
        n
    }
}
