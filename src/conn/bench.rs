// SPDX-License-Identifier: GPL-2.0

//! `IOCTL_BENCH`: benchmark loops that run entirely in the kernel, on the
//! fd's connection, with buffers allocated once and reused (a child of
//! `conn`, whose state it drives).
//!
//! Times come from `ktime_get()`. A latency sample is perftest's: the time
//! from one post of the measuring loop to its next ([`PostClock`]), so the
//! loop's own turn between an answer and its next request counts. A
//! completion is stamped when its handler runs (`total_ns` ends there).

use super::{
    deadline, errno, msg::Fragment, op_timeout, timeout_of, Conn, Step, Work, TURN_OP, TURN_RECV,
    TURN_SEND,
};
use crate::abi;
use crate::kapi::{
    dma::{DeviceBuf, Direction},
    mr::{Access, Region},
    qp::SendOp,
    work::PreparedSend,
};
use kernel::{prelude::*, sync::Arc, time::Ktime, uaccess::UserSlice};

/// Receives the ping-pong loops give back at a time, at most half the
/// connection's: one message is in flight each way, so one never finds
/// none posted. Reposting in batches keeps the receive path's code out of
/// most rounds.
const REPOST_BATCH: usize = 8;

mod latency;
use latency::Span;

/// A bandwidth run's per-message times (`ktime_get()` ns): posts in the
/// order posted, completions in the order reaped.
struct BwStamps {
    posted: KVVec<i64>,
    completed: KVVec<i64>,
}

/// What [`Conn::pipelined`] measured.
struct Pipelined {
    /// When the first message was posted, after the buffers' setup.
    first_post: i64,
    /// The last completion.
    end: i64,
    /// The shortest span of `depth` consecutive completions.
    best: u64,
}

impl Conn {
    /// Runs the benchmark `b` describes and fills in its outputs.
    pub(crate) fn bench(self: &Arc<Self>, b: &mut abi::Bench) -> Result {
        let atomic = matches!(b.op, abi::BENCH_CAS | abi::BENCH_FADD);
        if b.op > abi::BENCH_FADD
            || b.iters == 0
            || b.iters > abi::BENCH_MAX_ITERS
            || b.size == 0
            || u64::from(b.size) > abi::MAX_MSG_SIZE
            || (atomic && (b.size != 8 || b.remote_addr % 8 != 0))
        {
            return Err(EINVAL);
        }
        let send = b.op == abi::BENCH_SEND;
        let write = b.op == abi::BENCH_WRITE;
        let valid = match b.mode {
            abi::BENCH_LAT => true,
            abi::BENCH_RESPOND => send || write,
            abi::BENCH_SINK => send,
            abi::BENCH_PINGPONG => write,
            abi::BENCH_BW => !atomic && (1..=abi::BENCH_MAX_DEPTH).contains(&b.depth),
            _ => false,
        };
        let pingpong = write && matches!(b.mode, abi::BENCH_PINGPONG | abi::BENCH_RESPOND);
        if !valid || (!pingpong && b.window != 0) {
            return Err(EINVAL);
        }
        if send && b.size > abi::RECV_BUF_SIZE {
            return Err(errno::EMSGSIZE());
        }
        // The whole connection: SEND loops send and receive, and the
        // one-sided loops must not interleave with other operations.
        let timeout = timeout_of(b.timeout_ms);
        let _turn = self.take_turns(TURN_SEND | TURN_RECV | TURN_OP, deadline(timeout))?;
        {
            let st = self.st.lock();
            Self::require_connected(&st)?;
            // The SEND loops carry bare SENDs: only on a raw connection.
            if send && !st.msg.raw {
                return Err(EINVAL);
            }
            if matches!(b.op, abi::BENCH_READ | abi::BENCH_CAS | abi::BENCH_FADD)
                && st.info.initiator_depth == 0
            {
                return Err(errno::EOPNOTSUPP());
            }
        }
        // Refused before anything is posted, as `IOCTL_ATOMIC` refuses it:
        // siw 6.12 fails the post of an atomic with EINVAL but leaves the
        // request's slot marked in its send queue, and its flush later
        // completes it with a context the failed post gave back.
        if atomic && !self.op_device()?.attrs().has_atomics() {
            return Err(errno::EOPNOTSUPP());
        }
        // Up to `BENCH_MAX_ITERS` samples, 8 MB: vmalloc'ed if need be (a
        // kmalloc that large fails, with a warning, however much memory is
        // free).
        let mut samples = KVVec::new();
        if matches!(b.mode, abi::BENCH_LAT | abi::BENCH_PINGPONG) && b.samples != 0 {
            samples = KVVec::with_capacity(b.iters as usize, GFP_KERNEL)?;
        }
        // Bandwidth: each message's post and completion time, for perftest's
        // peak (`abi::Bench::samples`); up to 16 MB, so vmalloc'ed if need be.
        let mut stamps = None;
        if b.mode == abi::BENCH_BW && b.samples != 0 {
            stamps = Some(BwStamps {
                posted: KVVec::with_capacity(b.iters as usize, GFP_KERNEL)?,
                completed: KVVec::with_capacity(b.iters as usize, GFP_KERNEL)?,
            });
        }
        let mut start = Ktime::ktime_get().to_ns();
        // Latency and bandwidth runs count from their first post, as
        // perftest's do, not from the buffers' setup.
        let (span, best) = match (b.op, b.mode) {
            (abi::BENCH_SEND, abi::BENCH_LAT) => (self.send_pingpong(b, timeout, &mut samples)?, 0),
            (abi::BENCH_SEND, abi::BENCH_RESPOND) => (self.send_echo(b, timeout)?.into(), 0),
            (abi::BENCH_SEND, abi::BENCH_SINK) => (self.send_sink(b, timeout)?.into(), 0),
            (_, abi::BENCH_PINGPONG) => (self.write_pingpong(b, timeout, &mut samples, true)?, 0),
            (_, abi::BENCH_RESPOND) => (self.write_pingpong(b, timeout, &mut samples, false)?, 0),
            (_, abi::BENCH_LAT) => (self.one_at_a_time(b, &mut samples)?, 0),
            _ => {
                let r = self.pipelined(b, stamps.as_mut())?;
                let span = Span {
                    first: Some(r.first_post),
                    end: r.end,
                };
                (span, r.best)
            }
        };
        if let Some(first) = span.first {
            start = first;
        }
        let end = span.end;
        b.total_ns = (end - start).max(0) as u64;
        b.bytes = u64::from(b.size) * u64::from(b.iters);
        b.best_ns = best;
        if !samples.is_empty() {
            let mut w = UserSlice::new(b.samples as usize, samples.len() * 8).writer();
            for s in samples.iter() {
                w.write_slice(&s.to_ne_bytes())?;
            }
        }
        if let Some(t) = stamps {
            let n = t.posted.len() + t.completed.len();
            let mut w = UserSlice::new(b.samples as usize, n * 8).writer();
            for s in Iterator::chain(t.posted.iter(), t.completed.iter()) {
                w.write_slice(&((s - start).max(0) as u64).to_ne_bytes())?;
            }
        }
        Ok(())
    }

    /// The operation of a one-sided benchmark on byte 0 of the peer's window.
    fn bench_op(b: &abi::Bench) -> SendOp {
        let (remote_addr, rkey) = (b.remote_addr, b.rkey);
        match b.op {
            abi::BENCH_WRITE => SendOp::Write { remote_addr, rkey },
            abi::BENCH_READ => SendOp::Read { remote_addr, rkey },
            abi::BENCH_CAS => SendOp::CompareSwap {
                remote_addr,
                rkey,
                compare: 0,
                swap: 0,
            },
            abi::BENCH_FADD => SendOp::FetchAdd {
                remote_addr,
                rkey,
                add: 1,
            },
            _ => SendOp::Send,
        }
    }

    /// A fresh operation generation with `pending` steps.
    fn bench_gen(&self, pending: u32) -> u64 {
        let mut st = self.st.lock();
        st.op.gen += 1;
        st.op.pending = pending;
        st.op.error = None;
        st.op.gen
    }

    /// Posts step `idx` of generation `gen`: with `buf`, or, for a READ on
    /// iWARP, into the registered sink `sink` (see [`Self::bench_sinks`]).
    fn bench_post(
        self: &Arc<Self>,
        gen: u64,
        idx: usize,
        buf: Option<DeviceBuf>,
        sink: Option<&Arc<Region>>,
        len: usize,
        op: SendOp,
    ) -> Result {
        if let (Some(sink), SendOp::Read { remote_addr, rkey }) = (sink, op) {
            let w = self.bench_work(gen, idx, None, 0);
            let ep = self.ep.lock();
            let qp = ep.qp().ok_or_else(|| self.no_qp())?;
            return self.post_step(&ep, || {
                qp.post_read_into(self, w, sink, len, remote_addr, rkey, false)
            });
        }
        let w = self.bench_work(gen, idx, Some(buf.ok_or(EIO)?), len);
        let ep = self.ep.lock();
        let qp = ep.qp().ok_or_else(|| self.no_qp())?;
        self.post_step(&ep, || qp.post_send(self, w, op))
    }

    /// The context of step `idx` of generation `gen`, with the step's
    /// completion time cleared ([`Self::bench_take`] waits for it).
    fn bench_work(&self, gen: u64, idx: usize, buf: Option<DeviceBuf>, len: usize) -> Work {
        if let Some(t) = self.st.lock().op.stamps.get_mut(idx) {
            *t = 0;
        }
        Work::Op {
            gen,
            idx,
            buf,
            len,
            msg: false,
        }
    }

    /// Makes step 0 of a fresh generation ready to post with `buf`: the
    /// request's box is allocated here, before the loop's clock runs, so
    /// that [`Self::bench_post_prepared`] allocates nothing.
    fn bench_prepare(
        self: &Arc<Self>,
        buf: DeviceBuf,
        len: usize,
        op: SendOp,
    ) -> Result<PreparedSend<Conn>> {
        let w = self.bench_work(self.bench_gen(1), 0, Some(buf), len);
        let ep = self.ep.lock();
        let qp = ep.qp().ok_or_else(|| self.no_qp())?;
        qp.prepare_send(self, w, op).map_err(|(e, _)| e)
    }

    /// Posts what [`Self::bench_prepare`] made ready.
    fn bench_post_prepared(&self, p: PreparedSend<Conn>) -> Result {
        let ep = self.ep.lock();
        let qp = ep.qp().ok_or_else(|| self.no_qp())?;
        self.post_step(&ep, || qp.post_prepared(p))
    }

    /// READ sinks for a benchmark on iWARP, one per operation in flight,
    /// registered once with remote write access and reused (as perftest
    /// registers its buffer once); none elsewhere. They are deregistered
    /// when dropped, after the benchmark.
    fn bench_sinks(self: &Arc<Self>, b: &abi::Bench, n: usize) -> Result<KVec<Arc<Region>>> {
        let mut sinks = KVec::new();
        if b.op != abi::BENCH_READ {
            return Ok(sinks);
        }
        let pd = self.op_pd()?;
        if !pd.device().is_iwarp() {
            return Ok(sinks);
        }
        let mut steps = KVec::new();
        for _ in 0..n {
            let sink = Region::new(&pd, b.size as usize, 0)?;
            steps.push(Step::Reg(sink.clone(), Access::REMOTE_WRITE), GFP_KERNEL)?;
            sinks.push(sink, GFP_KERNEL)?;
        }
        self.run_op(b.timeout_ms, steps)?;
        let mut st = self.st.lock();
        st.info.read_sinks = st.info.read_sinks.saturating_add(n as u32);
        Ok(sinks)
    }

    /// Waits until at most `pending` steps of benchmark `b` are
    /// outstanding: a wait on the transport, which lasts until its verdict
    /// unless `b` sets `timeout_ms` (`op_timeout`); the waits on the peer
    /// (its next message, its WRITE) keep `timeout_of`'s default.
    fn bench_wait(&self, b: &abi::Bench, pending: u32) -> Result {
        self.wait(op_timeout(b.timeout_ms), |st| {
            if let Some(e) = st.op.error {
                return Some(Err(e));
            }
            (st.op.pending <= pending).then_some(Ok(()))
        })
    }

    /// Takes back the buffer of step `idx` (none for a READ into a sink)
    /// and its completion time; `EAGAIN` if it has not completed.
    fn bench_take(&self, idx: usize) -> Result<(Option<DeviceBuf>, i64)> {
        let mut st = self.st.lock();
        let stamp = match st.op.stamps.get_mut(idx) {
            Some(t) if *t != 0 => core::mem::replace(t, 0),
            _ => return Err(EAGAIN),
        };
        let buf = st.op.bufs.get_mut(idx).and_then(Option::take);
        Ok((buf, stamp))
    }

    fn bench_buf(&self, b: &abi::Bench) -> Result<DeviceBuf> {
        let dir = match b.op {
            abi::BENCH_WRITE | abi::BENCH_SEND => Direction::ToDevice,
            _ => Direction::FromDevice,
        };
        DeviceBuf::alloc(&self.op_device()?, b.size as usize, dir)
    }

    /// Bandwidth: `depth` operations in flight; each completion's buffer
    /// carries the next post. With `stamps`, records each message's post
    /// time and each completion's time, in order.
    fn pipelined(
        self: &Arc<Self>,
        b: &abi::Bench,
        mut stamps: Option<&mut BwStamps>,
    ) -> Result<Pipelined> {
        let op = Self::bench_op(b);
        let depth = b.depth.min(b.iters) as usize;
        let sinks = self.bench_sinks(b, depth)?;
        let paced = self.bench_paced(b)?;
        let mut counted = 0u32;
        let gen = self.bench_gen(0);
        let mut bufs = KVec::with_capacity(depth, GFP_KERNEL)?;
        for _ in 0..depth {
            bufs.push(self.bench_buf(b)?, GFP_KERNEL)?;
        }
        let mut posted = 0u32;
        let start = Ktime::ktime_get().to_ns();
        for (idx, buf) in bufs.into_iter().enumerate() {
            if paced {
                self.bench_credit(b, posted, &mut counted)?;
            }
            self.st.lock().op.pending += 1;
            if let Some(t) = stamps.as_deref_mut() {
                t.posted.push(Ktime::ktime_get().to_ns(), GFP_KERNEL)?;
            }
            self.bench_post(gen, idx, Some(buf), sinks.get(idx), b.size as usize, op)?;
            posted += 1;
        }
        // Completion times in order, for the peak: a ring of `depth`.
        let mut ring = KVec::with_capacity(depth, GFP_KERNEL)?;
        let mut done = 0u32;
        let mut best = u64::MAX;
        let mut end = start;
        while done < b.iters {
            self.bench_wait(b, (posted - done).saturating_sub(1))?;
            for idx in 0..depth {
                let Ok((buf, t)) = self.bench_take(idx) else {
                    continue;
                };
                done += 1;
                end = end.max(t);
                if let Some(s) = stamps.as_deref_mut() {
                    s.completed.push(t, GFP_KERNEL)?;
                }
                if ring.len() < depth {
                    ring.push(t, GFP_KERNEL)?;
                } else if let Some(slot) = ring.get_mut(done as usize % depth) {
                    *slot = t;
                }
                if ring.len() == depth {
                    let lo = ring.iter().copied().min().unwrap_or(t);
                    best = best.min((t - lo).max(1) as u64);
                }
                if posted < b.iters {
                    if paced {
                        self.bench_credit(b, posted, &mut counted)?;
                    }
                    self.st.lock().op.pending += 1;
                    if let Some(s) = stamps.as_deref_mut() {
                        s.posted.push(Ktime::ktime_get().to_ns(), GFP_KERNEL)?;
                    }
                    self.bench_post(gen, idx, buf, sinks.get(idx), b.size as usize, op)?;
                    posted += 1;
                }
            }
        }
        // The sink's last count: none is left behind on the connection.
        while paced && counted < b.iters {
            counted = self.bench_count(timeout_of(b.timeout_ms), counted, posted, true)?;
        }
        Ok(Pipelined {
            first_post: start,
            end,
            best: if best == u64::MAX { 0 } else { best },
        })
    }

    /// Waits for one raw message; gives its buffer back for reposting.
    fn bench_recv_one(self: &Arc<Self>, timeout: u32) -> Result<i64> {
        let f = self.bench_next(timeout, true)?.ok_or(EIO)?;
        let stamp = f.stamp;
        self.bench_repost(f)?;
        Ok(stamp)
    }

    /// Takes the next raw message, waiting for it if `wait` (`None` when
    /// none has come and `wait` is not set). The caller gives it back with
    /// [`Self::bench_repost`].
    fn bench_next(&self, timeout: u32, wait: bool) -> Result<Option<Fragment>> {
        if !wait {
            return Ok(self.st.lock().msg.rx.pop());
        }
        self.wait(timeout, |st| {
            if let Some(f) = st.msg.rx.pop() {
                return Some(Ok(Some(f)));
            }
            Self::require_connected(st).err().map(Err)
        })
    }

    /// Reposts the receive buffer of a message [`Self::bench_next`] took.
    fn bench_repost(self: &Arc<Self>, f: Fragment) -> Result {
        self.st.lock().keep_for_repost(f.buf.into_device());
        self.pump()
    }

    /// [`Self::bench_repost`] for the ping-pong loops: the buffer waits
    /// until [`REPOST_BATCH`] have, and they go back together.
    fn bench_repost_batched(self: &Arc<Self>, f: Fragment) -> Result {
        let due = {
            let mut st = self.st.lock();
            st.keep_for_repost(f.buf.into_device());
            // Half the receives at most, so plenty stay posted.
            let batch = REPOST_BATCH.min(st.info.recv_depth as usize / 2).max(1);
            st.msg.repost.len() >= batch
        };
        if due {
            self.pump()?;
        }
        Ok(())
    }

    /// The other end of SEND bandwidth: receive each message.
    ///
    /// When paced ([`Self::bench_paced`]), the sink sends back the count of
    /// messages it has reposted a receive for, every
    /// `abi::BENCH_COUNT_EVERY` messages and after the last.
    fn send_sink(self: &Arc<Self>, b: &abi::Bench, timeout: u32) -> Result<i64> {
        let paced = self.bench_paced(b)?;
        let mut buf = Some(DeviceBuf::alloc(
            &self.op_device()?,
            8,
            Direction::ToDevice,
        )?);
        let mut end = 0;
        for n in 1..=b.iters {
            end = self.bench_recv_one(timeout)?;
            let len = if paced && (n % abi::BENCH_COUNT_EVERY == 0 || n == b.iters) {
                let mut cpu = buf.take().ok_or(EIO)?.into_cpu();
                cpu.copy_from_slice(&abi::bench_count_encode(n));
                buf = Some(cpu.into_device());
                8
            } else {
                continue;
            };
            let gen = self.bench_gen(1);
            self.bench_post(gen, 0, buf.take(), None, len, SendOp::Send)?;
            self.bench_wait(b, 0)?;
            buf = self.bench_take(0)?.0;
        }
        Ok(end)
    }

    /// Whether the SEND bandwidth loop is paced by the sink's counts: on a
    /// device without receiver-not-ready retry, which is iWARP. There a
    /// SEND that finds no receive posted ends the connection (siw: a DDP
    /// TERMINATE, "no buffer"), and a SEND's completion says only that it
    /// left, not that it was received, so `depth` does not bound what the
    /// sink has yet to repost. On InfiniBand and RoCE the responder answers
    /// such a SEND with RNR NAK and the requester retries, as perftest's
    /// `ib_send_bw` relies on. Both ends decide alike: a connection has one
    /// transport.
    fn bench_paced(&self, b: &abi::Bench) -> Result<bool> {
        Ok(b.op == abi::BENCH_SEND && self.op_device()?.is_iwarp())
    }

    /// Paced SEND bandwidth, the sending end, before posting message
    /// `posted` (0-based): takes the counts that have come, and waits until
    /// the sink has reposted a receive for this message (it started with
    /// its receive depth posted, and reposts one for each message it
    /// counts).
    fn bench_credit(self: &Arc<Self>, b: &abi::Bench, posted: u32, counted: &mut u32) -> Result {
        let timeout = timeout_of(b.timeout_ms);
        let depth = self.st.lock().msg.peer_depth;
        loop {
            let wait = posted >= counted.saturating_add(depth);
            match self.bench_count(timeout, *counted, posted, wait) {
                Ok(n) if n != *counted => *counted = n,
                Ok(_) if !wait => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes the sink's next count, waiting for it if `wait` (else the
    /// count stays `counted` when none has come), and reposts its receive.
    /// A count that does not advance, or counts more than the `sent`
    /// messages, breaks the protocol (`abi::bench_count`): the connection
    /// closes with `EPROTO`.
    fn bench_count(
        self: &Arc<Self>,
        timeout: u32,
        counted: u32,
        sent: u32,
        wait: bool,
    ) -> Result<u32> {
        let Some(f) = self.bench_next(timeout, wait)? else {
            return Ok(counted);
        };
        let got = f.buf.get(..f.len).unwrap_or(&[]);
        match abi::bench_count(got, counted, sent) {
            Ok(n) => {
                self.bench_repost(f)?;
                Ok(n)
            }
            Err(fault) => {
                // Outside a completion, so this side disconnects and the QP
                // goes to the error state here, not again at the next
                // completion (`Conn::complete`). The buffer is not reposted
                // on the dead connection: it is freed.
                {
                    let mut st = self.st.lock();
                    self.wire_fault(&mut st, fault, got);
                    st.msg.fail_qp = false;
                }
                self.hang_up_if_owed(&self.ep.lock());
                Err(errno::EPROTO())
            }
        }
    }
}
