// SPDX-License-Identifier: GPL-2.0

//! The latency loops of `IOCTL_BENCH` (a child of `bench`): one-sided
//! operations one at a time, and the SEND and WRITE ping-pongs, both ends.
//! Their samples are perftest's, from one post of the measuring end to its
//! next ([`PostClock`]).

use super::super::{errno, msg::Fragment, Conn};
use crate::abi;
use crate::kapi::{dma::DeviceBuf, mr::Region, qp::SendOp, sched, work::PreparedSend};
use kernel::{prelude::*, sync::Arc, time::Ktime};

/// perftest's latency clock: each sample is the time from one post of the
/// measuring loop to the next (`tposted[i + 1] - tposted[i]` in perftest's
/// `print_report_lat()`), halved for a ping-pong (SEND, WRITE), whole for a
/// round trip (READ, atomics). Whatever the loop does between seeing the
/// answer and posting again is in the sample, as it is in perftest's, so
/// the loops do their bookkeeping while a request is in flight. The last
/// sample ends where the loop would post again ([`PostClock::end`]): one
/// sample per iteration, as `abi::Bench::samples` has room for.
struct PostClock<'a> {
    samples: &'a mut KVVec<u64>,
    /// The first post's time.
    first: Option<i64>,
    /// The last post's time.
    last: Option<i64>,
    /// A ping-pong's samples are halves.
    pingpong: bool,
}

impl<'a> PostClock<'a> {
    fn new(samples: &'a mut KVVec<u64>, pingpong: bool) -> Self {
        Self {
            samples,
            first: None,
            last: None,
            pingpong,
        }
    }

    /// Stamps a post, about to be made, and records the sample it ends.
    fn post(&mut self) -> Result {
        let now = Ktime::ktime_get().to_ns();
        self.record(now)?;
        self.first.get_or_insert(now);
        self.last = Some(now);
        Ok(())
    }

    /// Ends the last sample, where the loop would post again; returns the
    /// run's span, which the samples tile.
    fn end(mut self) -> Result<Span> {
        let now = Ktime::ktime_get().to_ns();
        self.record(now)?;
        Ok(Span {
            first: self.first,
            end: now,
        })
    }

    fn record(&mut self, now: i64) -> Result {
        if let Some(t) = self.last {
            if self.samples.capacity() > self.samples.len() {
                // Divided by a constant: no division-by-zero panic path.
                let span = (now - t).max(0) as u64;
                let sample = if self.pingpong { span / 2 } else { span };
                self.samples.push(sample, GFP_KERNEL)?;
            }
        }
        Ok(())
    }
}

/// What a benchmark loop ran for: from its first post, if it timed its
/// posts (`None`: from when the ioctl began), to `end` (`ktime_get()` ns).
pub(super) struct Span {
    pub(super) first: Option<i64>,
    pub(super) end: i64,
}

impl From<i64> for Span {
    fn from(end: i64) -> Self {
        Self { first: None, end }
    }
}

impl Conn {
    /// Latency of one-sided operations: one at a time, each timed from its
    /// post to the next post (a full round trip, as perftest's READ and
    /// atomic latencies are; [`PostClock`]).
    pub(super) fn one_at_a_time(
        self: &Arc<Self>,
        b: &abi::Bench,
        samples: &mut KVVec<u64>,
    ) -> Result<Span> {
        let op = Self::bench_op(b);
        let sinks = self.bench_sinks(b, 1)?;
        let mut buf = Some(self.bench_buf(b)?);
        let mut clock = PostClock::new(samples, false);
        for _ in 0..b.iters {
            let gen = self.bench_gen(1);
            clock.post()?;
            self.bench_post(gen, 0, buf.take(), sinks.first(), b.size as usize, op)?;
            self.bench_wait(b, 0)?;
            buf = self.bench_take(0)?.0;
        }
        clock.end()
    }

    /// SEND latency, the initiating end of a ping-pong: half of each round
    /// trip, from post to post, as perftest's `ib_send_lat` reports.
    ///
    /// The next SEND is posted as soon as the answer is seen: while a
    /// message travels, the loop reaps its SEND, makes the next one ready,
    /// and reposts the previous answer's receive. One message is in flight
    /// each way and at least 2 receives are posted, so a receive reposted
    /// a round late is never missed.
    pub(super) fn send_pingpong(
        self: &Arc<Self>,
        b: &abi::Bench,
        timeout: u32,
        samples: &mut KVVec<u64>,
    ) -> Result<Span> {
        let size = b.size as usize;
        let mut next = Some(self.bench_prepare(self.bench_buf(b)?, size, SendOp::Send)?);
        let mut clock = PostClock::new(samples, true);
        let mut answered: Option<Fragment> = None;
        for i in 1..=b.iters {
            clock.post()?;
            self.bench_post_prepared(next.take().ok_or(EIO)?)?;
            if let Some(answer) = answered.take() {
                self.bench_repost_batched(answer)?;
            }
            self.bench_wait(b, 0)?;
            let buf = self.bench_take(0)?.0.ok_or(EIO)?;
            if i < b.iters {
                next = Some(self.bench_prepare(buf, size, SendOp::Send)?);
            }
            answered = Some(self.bench_next(timeout, true)?.ok_or(EIO)?);
        }
        let span = clock.end()?;
        if let Some(answer) = answered {
            self.bench_repost_batched(answer)?;
        }
        self.pump()?;
        Ok(span)
    }

    /// The answering end of the SEND ping-pong: each message is sent back
    /// as soon as it is seen, with a request made ready beforehand, and its
    /// receive reposted after.
    pub(super) fn send_echo(self: &Arc<Self>, b: &abi::Bench, timeout: u32) -> Result<i64> {
        let size = b.size as usize;
        let mut next = Some(self.bench_prepare(self.bench_buf(b)?, size, SendOp::Send)?);
        let mut end = 0;
        for n in 1..=b.iters {
            let msg = self.bench_next(timeout, true)?.ok_or(EIO)?;
            end = msg.stamp;
            self.bench_post_prepared(next.take().ok_or(EIO)?)?;
            self.bench_repost_batched(msg)?;
            self.bench_wait(b, 0)?;
            let buf = self.bench_take(0)?.0.ok_or(EIO)?;
            if n < b.iters {
                next = Some(self.bench_prepare(buf, size, SendOp::Send)?);
            }
        }
        self.pump()?;
        Ok(end)
    }

    /// WRITE latency as perftest's `ib_write_lat` has it (see
    /// `abi::BENCH_PINGPONG`): the initiating end (`first`) WRITEs, then
    /// polls its window for the answer; the other end polls, then answers.
    /// A sample is half of the initiator's round trip, from post to post
    /// ([`PostClock`]).
    pub(super) fn write_pingpong(
        self: &Arc<Self>,
        b: &abi::Bench,
        timeout: u32,
        samples: &mut KVVec<u64>,
        first: bool,
    ) -> Result<Span> {
        let size = b.size as usize;
        let win = self.window(b.window, size)?;
        let op = Self::bench_op(b);
        // The WRITE of round `i`, made ready before the round: the last
        // byte of what it writes carries the round's tag.
        let ready = |i: u32, buf: DeviceBuf| -> Result<PreparedSend<Conn>> {
            let mut cpu = buf.into_cpu();
            if let Some(last) = cpu.get_mut(size - 1) {
                *last = (i % 256) as u8;
            }
            self.bench_prepare(cpu.into_device(), size, op)
        };
        let mut next = Some(ready(1, self.bench_buf(b)?)?);
        let mut clock = PostClock::new(samples, true);
        let mut end = 0;
        for i in 1..=b.iters {
            let tag = (i % 256) as u8;
            if !first {
                end = self.poll_window(&win, size - 1, tag, timeout)?;
            } else {
                clock.post()?;
            }
            self.bench_post_prepared(next.take().ok_or(EIO)?)?;
            // The WRITE's completion and the next one made ready while the
            // peer answers: the initiating end posts again as soon as it
            // sees the answer, as perftest's `ib_write_lat` does.
            self.bench_wait(b, 0)?;
            let buf = self.bench_take(0)?.0.ok_or(EIO)?;
            if i < b.iters {
                next = Some(ready(i + 1, buf)?);
            }
            if first {
                self.poll_window(&win, size - 1, tag, timeout)?;
            }
        }
        if first {
            return clock.end();
        }
        Ok(end.into())
    }

    /// Polls byte `at` of the window memory `win` until the peer's WRITE
    /// has put `tag` there; returns when it saw it. Each look syncs that one
    /// byte for the CPU, and nothing back (see [`Region::read`]).
    /// Completions are reaped meanwhile on a busy-polling connection, every
    /// `REAP_EVERY` looks: the one this round waits for is its own WRITE's,
    /// which `bench_wait` reaps after, and a failed one is seen within a
    /// few looks.
    fn poll_window(&self, win: &Region, at: usize, tag: u8, timeout: u32) -> Result<i64> {
        const REAP_EVERY: u32 = 8;
        // Jiffies for the deadline: ktime_get() is read only once the tag
        // is there (`sched::jiffies`).
        let start = sched::jiffies();
        let limit = kernel::time::msecs_to_jiffies(timeout);
        let mut looks = 0u32;
        loop {
            let mut seen = [0u8];
            win.read(at, &mut seen)?;
            if seen[0] == tag {
                return Ok(Ktime::ktime_get().to_ns());
            }
            looks = looks.wrapping_add(1);
            if looks % REAP_EVERY != 0 {
                continue;
            }
            let spinning = {
                let st = self.st.lock();
                Self::require_connected(&st)?;
                if let Some(e) = st.op.error {
                    return Err(e);
                }
                st.spin
            };
            if sched::jiffies().wrapping_sub(start) >= limit {
                return Err(errno::ETIMEDOUT());
            }
            if kernel::current!().signal_pending() {
                return Err(EINTR);
            }
            self.reap();
            Self::pass(spinning);
        }
    }
}
