// SPDX-License-Identifier: GPL-2.0

//! One-sided operations: RDMA WRITE and READ in 256 KiB work requests,
//! compare-and-swap and fetch-and-add, and the registrations and
//! invalidations of windows, each run as one numbered operation whose steps
//! all complete (or are flushed) before it returns.
//!
//! State: `St::op` ([`Ops`]), under the connection's `st` lock. One
//! operation at a time (`TURN_OP`); completions of an interrupted earlier
//! operation are told apart by its number and only free their buffers.

use super::*;

/// One step of a one-sided operation.
pub(super) enum Step {
    /// A send-queue operation with its buffer.
    Send(SendOp, Option<DeviceBuf>, usize),
    /// Register a window's region.
    Reg(Arc<Region>, Access),
    /// Invalidate a window's key.
    Inv(Arc<Region>),
    /// RDMA READ of `len` bytes from (address, key) into a registered
    /// window: iWARP's READ sink, whose key a later `Inv` step takes away.
    ReadInto(Arc<Region>, u64, u32, usize),
}

/// The state of the connection's current one-sided operation.
pub(super) struct Ops {
    /// Its number.
    pub(super) gen: u64,
    /// Its steps not completed yet.
    pub(super) pending: u32,
    /// Its first failure.
    pub(super) error: Option<Error>,
    /// Its buffers, given back by completions, by step.
    pub(super) bufs: KVec<Option<DeviceBuf>>,
    /// When each step's completion was handled (`ktime_get()`, ns).
    pub(super) stamps: KVec<i64>,
    /// The operation READs a message the peer announced
    /// (`Conn::recv_announce`): a READ the peer's side refuses means the
    /// peer named memory it does not expose, a protocol fault (`EPROTO`).
    pub(super) announce: bool,
}

impl Ops {
    pub(super) fn new() -> Result<Self> {
        let mut bufs = KVec::with_capacity(OP_SLOTS, GFP_KERNEL)?;
        let mut stamps = KVec::with_capacity(OP_SLOTS, GFP_KERNEL)?;
        for _ in 0..OP_SLOTS {
            bufs.push(None, GFP_KERNEL)?;
            stamps.push(0, GFP_KERNEL)?;
        }
        Ok(Self {
            gen: 0,
            pending: 0,
            error: None,
            bufs,
            stamps,
            announce: false,
        })
    }
}

impl Conn {
    /// Posts `steps` as one operation and waits for all of them. Returns
    /// the buffers the completions gave back, by step. `TURN_OP` held.
    pub(super) fn run_op(
        self: &Arc<Self>,
        timeout_ms: u32,
        steps: KVec<Step>,
    ) -> Result<KVec<Option<DeviceBuf>>> {
        self.run_op_on(false, timeout_ms, steps)
    }

    /// [`Self::run_op`] on the caller's operations (`St::op`, `TURN_OP`
    /// held) or, with `msg`, on the message path's (`St::msg_op`,
    /// `TURN_MSG_OP` held).
    pub(super) fn run_op_on(
        self: &Arc<Self>,
        msg: bool,
        timeout_ms: u32,
        steps: KVec<Step>,
    ) -> Result<KVec<Option<DeviceBuf>>> {
        fn ops(st: &mut St, msg: bool) -> &mut Ops {
            if msg {
                &mut st.msg_op
            } else {
                &mut st.op
            }
        }
        let n = steps.len();
        if n == 0 || n > OP_SLOTS {
            return Err(EINVAL);
        }
        let gen = {
            let mut st = self.st.lock();
            Self::require_connected(&st)?;
            let op = ops(&mut st, msg);
            op.gen += 1;
            op.pending = n as u32;
            op.error = None;
            for b in op.bufs.iter_mut() {
                *b = None;
            }
            op.gen
        };
        let mut posted = 0;
        let mut result = Ok(());
        {
            let ep = self.ep.lock();
            let qp = ep.qp();
            for (idx, step) in steps.into_iter().enumerate() {
                let Some(qp) = qp else {
                    result = Err(self.no_qp());
                    break;
                };
                let w = |buf, len| Work::Op {
                    gen,
                    idx,
                    buf,
                    len,
                    msg,
                };
                let r = self.post_step(&ep, || match step {
                    Step::Send(op, buf, len) => qp.post_send(self, w(buf, len), op),
                    Step::Reg(mem, access) => qp.post_reg_mr(self, w(None, 0), &mem, access),
                    Step::Inv(mem) => qp.post_local_inv(self, w(None, 0), &mem),
                    // Not READ_WITH_INV: siw loses such a READ when the device
                    // goes mid-flight (its work, holding the sink and so the
                    // device, never comes back: `rdma link delete` hung in
                    // `device_deleted_mid_traffic`). `read_remote` invalidates
                    // the sinks in a step of their own.
                    Step::ReadInto(mem, remote_addr, rkey, len) => {
                        qp.post_read_into(self, w(None, 0), &mem, len, remote_addr, rkey, false)
                    }
                });
                if let Err(e) = r {
                    result = Err(e);
                    break;
                }
                posted += 1;
            }
        }
        if result.is_err() {
            // Steps never posted will not complete.
            let mut st = self.st.lock();
            ops(&mut st, msg).pending -= (n - posted) as u32;
        }
        // Posted steps always complete: successfully, with an error, or
        // flushed when the connection goes down.
        let done = self.wait(op_timeout(timeout_ms), |st| {
            let op = ops(st, msg);
            (op.pending == 0).then(|| op.error.map_or(Ok(()), Err))
        });
        result?;
        done?;
        let mut st = self.st.lock();
        let mut out = KVec::with_capacity(n, GFP_KERNEL)?;
        for b in ops(&mut st, msg).bufs.iter_mut().take(n) {
            out.push(b.take(), GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Posts one step of a one-sided operation or benchmark with `post`,
    /// `ep` held. The step counts in `op_steps` from before the post, since
    /// its completion may be handled before the post returns; a failed post
    /// is uncounted, pays a hang-up it was the last to hold up, and fails
    /// with [`Conn::post_failed`]'s errno.
    pub(super) fn post_step<T>(
        &self,
        ep: &Ep,
        post: impl FnOnce() -> core::result::Result<(), (Error, T)>,
    ) -> Result {
        self.op_steps.fetch_add(1, Ordering::AcqRel);
        let Err((e, _)) = post() else {
            return Ok(());
        };
        self.op_steps.fetch_sub(1, Ordering::AcqRel);
        self.hang_up_when_done(&mut self.st.lock());
        self.hang_up_if_owed(ep);
        Err(self.post_failed(ep, e))
    }

    /// Connected, and for READs and atomics (`rd_atomic`), allowed to issue
    /// them: a connection that negotiated `initiator_depth` 0 cannot.
    pub(super) fn require_initiator(&self, rd_atomic: bool) -> Result {
        let st = self.st.lock();
        Self::require_connected(&st)?;
        if rd_atomic && st.info.initiator_depth == 0 {
            return Err(errno::EOPNOTSUPP());
        }
        Ok(())
    }

    /// The PD of the connection's QP, which windows and READ sinks are
    /// registered on.
    pub(super) fn op_pd(&self) -> Result<Arc<Pd>> {
        let ep = self.ep.lock();
        let qp = ep.qp().ok_or_else(|| self.no_qp())?;
        Ok(qp.pd().clone())
    }

    pub(super) fn op_device(&self) -> Result<DeviceRef> {
        Ok(self.op_pd()?.device().clone())
    }

    /// `IOCTL_RDMA_WRITE` and `IOCTL_RDMA_READ`.
    pub(crate) fn rdma(self: &Arc<Self>, r: &abi::Rdma, write: bool) -> Result {
        if r.len == 0 || r.len > abi::MAX_MSG_SIZE {
            return Err(EINVAL);
        }
        let _turn = self.take_turns(TURN_OP, deadline(op_timeout(r.timeout_ms)))?;
        self.require_initiator(!write)?;
        // The device is let go before any user copy: a copy that waits on
        // a page (userfaultfd) must not hold up the device's removal. Data
        // moves through kernel memory, mapped after it is filled (WRITE)
        // and unmapped before it is copied out (READ).
        let max_sge_rd = self.op_device()?.attrs().max_sge_rd;
        if !write && max_sge_rd == 0 {
            // Each READ lands in one contiguous buffer: one entry.
            return Err(errno::EOPNOTSUPP());
        }
        if !write {
            let segs = [(r.remote_addr, r.rkey, r.len as usize)];
            let chunks = self.read_remote(false, r.timeout_ms, &segs)?;
            let mut writer = UserSlice::new(r.buf as usize, r.len as usize).writer();
            for c in chunks.iter() {
                writer.write_slice(c)?;
            }
            return Ok(());
        }
        let len = r.len as usize;
        let mut chunks = KVec::with_capacity(len.div_ceil(OP_CHUNK), GFP_KERNEL)?;
        let mut reader = UserSlice::new(r.buf as usize, len).reader();
        let mut off = 0;
        while off < len {
            let n = (len - off).min(OP_CHUNK);
            let mut data = KVec::from_elem(0u8, n, GFP_KERNEL)?;
            reader.read_slice(&mut data)?;
            chunks.push(data, GFP_KERNEL)?;
            off += n;
        }
        let dev = self.op_device()?;
        let mut steps = KVec::with_capacity(chunks.len(), GFP_KERNEL)?;
        for (i, data) in chunks.into_iter().enumerate() {
            let (n, remote_addr) = (
                data.len(),
                r.remote_addr.wrapping_add((i * OP_CHUNK) as u64),
            );
            let rkey = r.rkey;
            let buf = DeviceBuf::map(&dev, data, Direction::ToDevice)?;
            steps.push(
                Step::Send(SendOp::Write { remote_addr, rkey }, Some(buf), n),
                GFP_KERNEL,
            )?;
        }
        drop(dev);
        self.run_op(r.timeout_ms, steps)?;
        Ok(())
    }

    /// RDMA READs of `segs`, each (remote address, key, length), into
    /// kernel memory, in work requests of at most [`OP_CHUNK`] bytes:
    /// returns the data, a buffer per work request, in order. The caller
    /// holds `TURN_OP` (or, with `msg`, `TURN_MSG_OP`: the READ of an
    /// announced message) and has checked that this side may READ
    /// ([`Self::require_initiator`], `max_sge_rd`); the device is let go
    /// before the data is copied anywhere (see [`Self::rdma`]).
    ///
    /// On RoCE and IB each READ lands in a buffer mapped for the device
    /// and unmapped before the CPU reads it. On iWARP each lands in a
    /// window of its own, registered with remote write access (the peer's
    /// device writes the READ's response through its key), and once the
    /// READs are done a local invalidate of each key makes the memory the
    /// CPU's again before it is copied out: into kernel memory, allocated
    /// first so that a READ is not done only to be dropped. (Not
    /// READ_WITH_INV: siw loses such a READ when its device goes.)
    pub(super) fn read_remote(
        self: &Arc<Self>,
        msg: bool,
        timeout_ms: u32,
        segs: &[(u64, u32, usize)],
    ) -> Result<KVec<KVec<u8>>> {
        let pd = self.op_pd()?;
        let iwarp = pd.device().is_iwarp();
        let mut out = KVec::new();
        let mut sinks = KVec::new();
        let mut steps = KVec::new();
        for &(addr, rkey, len) in segs {
            let mut off = 0;
            while off < len {
                let n = (len - off).min(OP_CHUNK);
                let remote_addr = addr.wrapping_add(off as u64);
                let data = KVec::from_elem(0u8, n, GFP_KERNEL)?;
                if iwarp {
                    let sink = Region::new(&pd, n, 0)?;
                    steps.push(Step::Reg(sink.clone(), Access::REMOTE_WRITE), GFP_KERNEL)?;
                    steps.push(
                        Step::ReadInto(sink.clone(), remote_addr, rkey, n),
                        GFP_KERNEL,
                    )?;
                    sinks.push(sink, GFP_KERNEL)?;
                    out.push(data, GFP_KERNEL)?;
                } else {
                    let buf = DeviceBuf::map(pd.device(), data, Direction::FromDevice)?;
                    let op = SendOp::Read { remote_addr, rkey };
                    steps.push(Step::Send(op, Some(buf), n), GFP_KERNEL)?;
                }
                off += n;
            }
        }
        drop(pd);
        let bufs = self.run_op_on(msg, timeout_ms, steps)?;
        if iwarp {
            // The READs are done; their sinks' keys go before the CPU reads
            // them, so that the peer can no longer write there.
            let mut inv = KVec::with_capacity(sinks.len(), GFP_KERNEL)?;
            for sink in sinks.iter() {
                inv.push(Step::Inv(sink.clone()), GFP_KERNEL)?;
            }
            self.run_op_on(msg, timeout_ms, inv)?;
            {
                let mut st = self.st.lock();
                st.info.read_sinks = st.info.read_sinks.saturating_add(sinks.len() as u32);
            }
            for (sink, data) in sinks.iter().zip(out.iter_mut()) {
                sink.read(0, data)?;
            }
        } else {
            for b in bufs {
                out.push(b.ok_or(EIO)?.into_cpu().unmap(), GFP_KERNEL)?;
            }
        }
        Ok(out)
    }

    /// `IOCTL_ATOMIC`: returns the remote value before the operation.
    pub(crate) fn atomic(self: &Arc<Self>, a: &abi::AtomicOp) -> Result<u64> {
        if a.reserved != 0 || a.remote_addr % 8 != 0 {
            return Err(EINVAL);
        }
        let op = match a.op {
            abi::ATOMIC_CMP_SWAP => SendOp::CompareSwap {
                remote_addr: a.remote_addr,
                rkey: a.rkey,
                compare: a.compare_add,
                swap: a.swap,
            },
            abi::ATOMIC_FETCH_ADD if a.swap == 0 => SendOp::FetchAdd {
                remote_addr: a.remote_addr,
                rkey: a.rkey,
                add: a.compare_add,
            },
            _ => return Err(EINVAL),
        };
        let _turn = self.take_turns(TURN_OP, deadline(op_timeout(a.timeout_ms)))?;
        self.require_initiator(true)?;
        let dev = self.op_device()?;
        if !dev.attrs().has_atomics() {
            return Err(errno::EOPNOTSUPP());
        }
        let buf = DeviceBuf::alloc(&dev, 8, Direction::FromDevice)?;
        let mut steps = KVec::new();
        steps.push(Step::Send(op, Some(buf), 8), GFP_KERNEL)?;
        let mut bufs = self.run_op(a.timeout_ms, steps)?;
        let cpu = bufs
            .iter_mut()
            .next()
            .and_then(Option::take)
            .ok_or(EIO)?
            .into_cpu();
        let bytes: [u8; 8] = cpu.get(..8).and_then(|b| b.try_into().ok()).ok_or(EIO)?;
        // The device writes the original value in host order (the verbs
        // convention for atomic results).
        Ok(u64::from_ne_bytes(bytes))
    }

    /// Step `idx` of one-sided operation `gen` completed: its buffer and
    /// time go in the step's slot. `st` held; the caller wakes waiters.
    pub(super) fn complete_op(
        &self,
        st: &mut St,
        wc: &Wc,
        msg: bool,
        gen: u64,
        idx: usize,
        buf: Option<DeviceBuf>,
    ) {
        // Every step was counted when posted (`post_step`); saturating all
        // the same, so no miscount could hold a hang-up off for good.
        let _ = self
            .op_steps
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.hang_up_when_done(st);
        // Flushed on a connection still up: the QP left RTS without this
        // side closing it (siw's TERMINATE for a READ the peer refused, a
        // step that failed before this one). It carries nothing more, so
        // it closes now, as a flushed receive closes it: the errno the
        // operation's caller gets and the connection's state agree, with
        // no window in which the one says ECONNRESET and the other
        // CONNECTED.
        if wc.flushed() && st.state == State::Connected {
            self.close_locked(st, wc.errno());
        }
        let torn_down = st.torn_down;
        let closed = match st.state {
            State::Closed(e) => Some(e),
            _ => None,
        };
        let op = if msg { &mut st.msg_op } else { &mut st.op };
        if gen != op.gen {
            // An interrupted earlier operation: its buffer just goes.
            return;
        }
        // Kept for the operation, unless the connection was torn down:
        // nothing would free it then (see `St::torn_down`).
        if let (Some(slot), false) = (op.bufs.get_mut(idx), torn_down) {
            *slot = buf;
        }
        if let Some(t) = op.stamps.get_mut(idx) {
            *t = Ktime::ktime_get().to_ns();
        }
        op.pending = op.pending.saturating_sub(1);
        if !wc.ok() && op.error.is_none() {
            if !wc.flushed() {
                pr_debug!(
                    "one-sided step failed: {}\n",
                    wc.status_msg().to_str().unwrap_or("?")
                );
            }
            // A step the transport gave up on (its retries ran out) on a
            // connection that closed meanwhile fails with the close's errno,
            // as a message does (`Conn::wait_sent`): the peer went, so its
            // answers stopped. One the peer answered (`EACCES`,
            // `EREMOTEIO`) keeps its own.
            let e = wc.errno();
            if op.announce && !wc.flushed() && (e == EACCES || e == errno::EREMOTEIO()) {
                op.error = Some(errno::EPROTO());
                self.wire_fault(st, abi::WireFault::Announce, &[]);
                return;
            }
            op.error = Some(match (e, closed) {
                (e, Some(closed)) if e == errno::ETIMEDOUT() => closed,
                (e, _) => e,
            });
        }
    }
}
