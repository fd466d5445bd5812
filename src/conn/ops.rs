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
    Reg(Arc<Window>, Access),
    /// Invalidate a window's key.
    Inv(Arc<Window>),
    /// RDMA READ of `len` bytes from (address, key) into a registered
    /// window, invalidating its key as it completes: iWARP's READ sink.
    ReadInto(Arc<Window>, u64, u32, usize),
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
        })
    }
}

impl Conn {
    /// Posts `steps` as one operation and waits for all of them. Returns
    /// the buffers the completions gave back, by step.
    pub(super) fn run_op(
        self: &Arc<Self>,
        timeout_ms: u32,
        steps: KVec<Step>,
    ) -> Result<KVec<Option<DeviceBuf>>> {
        let n = steps.len();
        if n == 0 || n > OP_SLOTS {
            return Err(EINVAL);
        }
        let gen = {
            let mut st = self.st.lock();
            Self::require_connected(&st)?;
            st.op.gen += 1;
            st.op.pending = n as u32;
            st.op.error = None;
            for b in st.op.bufs.iter_mut() {
                *b = None;
            }
            st.op.gen
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
                let r = match step {
                    Step::Send(op, buf, len) => {
                        let w = Work::Op { gen, idx, buf, len };
                        qp.post_send(self, w, op)
                    }
                    Step::Reg(mem, access) => {
                        let w = Work::Op {
                            gen,
                            idx,
                            buf: None,
                            len: 0,
                        };
                        qp.post_reg_mr(self, w, &mem, access)
                    }
                    Step::Inv(mem) => {
                        let w = Work::Op {
                            gen,
                            idx,
                            buf: None,
                            len: 0,
                        };
                        qp.post_local_inv(self, w, &mem)
                    }
                    Step::ReadInto(mem, remote_addr, rkey, len) => {
                        let w = Work::Op {
                            gen,
                            idx,
                            buf: None,
                            len: 0,
                        };
                        qp.post_read_into(self, w, &mem, len, remote_addr, rkey, true)
                    }
                };
                if let Err((e, _)) = r {
                    result = Err(e);
                    break;
                }
                posted += 1;
            }
        }
        if result.is_err() {
            // Steps never posted will not complete.
            let mut st = self.st.lock();
            st.op.pending -= (n - posted) as u32;
        }
        // Posted steps always complete: successfully, with an error, or
        // flushed when the connection goes down.
        let done = self.wait(op_timeout(timeout_ms), |st| {
            (st.op.pending == 0).then(|| st.op.error.map_or(Ok(()), Err))
        });
        result?;
        done?;
        let mut st = self.st.lock();
        let mut out = KVec::with_capacity(n, GFP_KERNEL)?;
        for b in st.op.bufs.iter_mut().take(n) {
            out.push(b.take(), GFP_KERNEL)?;
        }
        Ok(out)
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
        let dev = self.op_device()?;
        if !write && dev.attrs().max_sge_rd == 0 {
            // Each READ lands in one contiguous buffer: one entry.
            return Err(errno::EOPNOTSUPP());
        }
        if !write && dev.is_iwarp() {
            return self.read_iwarp(r);
        }
        let len = r.len as usize;
        let mut reader = UserSlice::new(r.buf as usize, len).reader();
        let mut steps = KVec::new();
        let mut off = 0;
        while off < len {
            let chunk = (len - off).min(OP_CHUNK);
            let remote_addr = r.remote_addr.wrapping_add(off as u64);
            let step = if write {
                let mut cpu = DeviceBuf::alloc(&dev, chunk, Direction::ToDevice)?.into_cpu();
                reader.read_slice(&mut cpu)?;
                let op = SendOp::Write {
                    remote_addr,
                    rkey: r.rkey,
                };
                Step::Send(op, Some(cpu.into_device()), chunk)
            } else {
                let buf = DeviceBuf::alloc(&dev, chunk, Direction::FromDevice)?;
                let op = SendOp::Read {
                    remote_addr,
                    rkey: r.rkey,
                };
                Step::Send(op, Some(buf), chunk)
            };
            steps.push(step, GFP_KERNEL)?;
            off += chunk;
        }
        let bufs = self.run_op(r.timeout_ms, steps)?;
        if !write {
            let mut writer = UserSlice::new(r.buf as usize, len).writer();
            for b in bufs {
                let cpu = b.ok_or(EIO)?.into_cpu();
                writer.write_slice(&cpu)?;
            }
        }
        Ok(())
    }

    /// `IOCTL_RDMA_READ` on iWARP: each chunk lands in a window of its own,
    /// registered with remote write access (the peer's device writes the
    /// READ's response through its key), and the READ invalidates that key
    /// as it completes, so the memory is the CPU's again before it is
    /// copied out. `TURN_OP` held, connected.
    fn read_iwarp(self: &Arc<Self>, r: &abi::Rdma) -> Result {
        let pd = self.op_pd()?;
        let len = r.len as usize;
        let mut sinks = KVec::new();
        let mut steps = KVec::new();
        let mut off = 0;
        while off < len {
            let chunk = (len - off).min(OP_CHUNK);
            let sink = Arc::new(Window::new(&pd, chunk, 0)?, GFP_KERNEL)?;
            let remote_addr = r.remote_addr.wrapping_add(off as u64);
            steps.push(Step::Reg(sink.clone(), Access::REMOTE_WRITE), GFP_KERNEL)?;
            steps.push(
                Step::ReadInto(sink.clone(), remote_addr, r.rkey, chunk),
                GFP_KERNEL,
            )?;
            sinks.push(sink, GFP_KERNEL)?;
            off += chunk;
        }
        self.run_op(r.timeout_ms, steps)?;
        {
            let mut st = self.st.lock();
            st.info.read_sinks = st.info.read_sinks.saturating_add(sinks.len() as u32);
        }
        let mut bounce = KVec::with_capacity(len.min(OP_CHUNK), GFP_KERNEL)?;
        bounce.extend_with(len.min(OP_CHUNK), 0u8, GFP_KERNEL)?;
        let mut writer = UserSlice::new(r.buf as usize, len).writer();
        for sink in sinks.iter() {
            let part = bounce.get_mut(..sink.len()).ok_or(EINVAL)?;
            sink.read(0, part)?;
            writer.write_slice(part)?;
        }
        Ok(())
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
    pub(super) fn complete_op(st: &mut St, wc: &Wc, gen: u64, idx: usize, buf: Option<DeviceBuf>) {
        let op = &mut st.op;
        if gen != op.gen {
            // An interrupted earlier operation: its buffer just goes.
            return;
        }
        if let Some(slot) = op.bufs.get_mut(idx) {
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
            op.error = Some(wc.errno());
        }
    }
}
