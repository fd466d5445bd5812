// SPDX-License-Identifier: GPL-2.0

//! Messages: `IOCTL_SEND` and `IOCTL_RECV` over RC SENDs with credits
//! (`Documentation/flow-control.rst`), every received header checked before
//! use (`Documentation/wire-protocol.rst`). A message is one SEND: inline,
//! up to `abi::MAX_INLINE_MSG` bytes, or an announce naming regions of the
//! sender's that the receiver READs, then answers with DONE (that part is
//! in `announce.rs`; raw connections are in `raw.rs`).
//!
//! State: `St::msg` ([`Msg`]), under the connection's `st` lock. Only this
//! file and the completions of receives and SENDs change it; one sender
//! (`TURN_SEND`) and one receiver (`TURN_RECV`) at a time.

use super::fifo::Fifo;
use super::*;

/// A received message (inline, or the announce of one) waiting for
/// `IOCTL_RECV`; on a raw connection, a received SEND.
pub(super) struct Fragment {
    pub(super) hdr: WireHdr,
    pub(super) buf: CpuBuf,
    pub(super) len: usize,
    /// When its completion was handled (`ktime_get()`, ns).
    pub(super) stamp: i64,
}

/// The message state of a connection.
pub(super) struct Msg {
    /// Messages received, in order, each checked by `wire`.
    pub(super) rx: Fifo<Fragment>,
    /// The peer's message stream as checked so far.
    pub(super) wire: abi::WireRx,
    /// The peer broke the protocol: later receives are dropped unread.
    pub(super) wire_broken: bool,
    /// The QP is to be moved to the error state once the completion being
    /// handled lets go of `st` (`wire_fault`).
    pub(super) fail_qp: bool,
    /// The peer broke the protocol and has not been told yet: this side
    /// owes it a disconnect ([`Conn::hang_up_if_owed`]).
    pub(super) hang_up: bool,
    /// The peer disconnected while SENDs or one-sided steps were in flight
    /// on IB or RoCE: once all have completed, this side disconnects and
    /// fails the QP (through `hang_up`). See `Conn::defer_hang_up`.
    pub(super) hang_up_when_sent: bool,
    /// With `hang_up_when_sent`: when (jiffies) the disconnect is owed even
    /// if something is still in flight ([`Conn::deferred_hang_up_due`]).
    pub(super) hang_up_by: kernel::time::Jiffies,
    /// Receive buffers that are free to repost (credit-only messages).
    pub(super) repost: Fifo<DeviceBuf>,
    /// SENDs the peer has receives for.
    pub(super) credits: u32,
    /// Receives reposted and not yet announced to the peer.
    pub(super) pending_grant: u32,
    /// The peer said it is down to its last credit.
    pub(super) peer_low: bool,
    /// SENDs posted and not completed.
    pub(super) sends_inflight: u32,
    /// Receives posted and not completed (flushed ones complete too).
    pub(super) recvs_posted: u32,
    /// A SEND completed in error since the message being sent was posted:
    /// it may not have reached the peer.
    pub(super) send_failed: bool,
    /// Raw messages (`abi::CONN_RAW`): no header, no credits.
    pub(super) raw: bool,
    /// Receives this side keeps posted.
    pub(super) depth: u32,
    /// Receives the peer keeps posted; 0 until its setup data is known
    /// (`Conn::learn_peer`).
    pub(super) peer_depth: u32,
    /// The peer READs announces (its setup data): messages longer than
    /// `abi::MAX_INLINE_MSG` may go to it.
    pub(super) peer_reads: bool,
    /// The regions of each of this side's announced messages that waits
    /// for the peer's DONE, oldest first (at most `abi::ANNOUNCE_WINDOW`),
    /// registered for the peer to READ.
    pub(super) out: Fifo<KVec<Arc<Region>>>,
    /// Regions the peer's DONE released, each with the time (jiffies)
    /// after which no duplicate of the peer's READs can still come for it
    /// and it is deregistered (`Conn::retire`).
    pub(super) retired: KVec<(kernel::time::Jiffies, Arc<Region>)>,
    /// How long a close waits for the DONEs of `out` (`Conn::linger`): the
    /// wait its caller gave the `IOCTL_SEND` that announced the last.
    pub(super) linger_ms: u32,
    /// A DONE came: the grace (jiffies) of the regions it retired, for
    /// which [`Conn::complete`] queues `retire_work`; 0 if none came.
    pub(super) retire_in: kernel::time::Jiffies,
    /// The peer's announced messages this side READ and owes DONE for
    /// (`Conn::pump` sends them, one per header).
    pub(super) done_owed: u32,
    /// The data of the message announced at the front of `rx`, READ ahead
    /// of the caller (`Conn::read_ahead`): at most one message's.
    pub(super) body: Option<KVec<KVec<u8>>>,
    /// A READ of the front announce is under way, by `read_ahead` or by a
    /// caller of `IOCTL_RECV`.
    pub(super) reading: bool,
    /// An announce came: [`Conn::complete`] queues `read_work`.
    pub(super) read_wanted: bool,
}

impl Msg {
    pub(super) fn new() -> Result<Self> {
        Ok(Self {
            rx: Fifo::new(RECV_DEPTH as usize)?,
            wire: abi::WireRx::default(),
            wire_broken: false,
            fail_qp: false,
            hang_up_when_sent: false,
            hang_up_by: 0,
            hang_up: false,
            repost: Fifo::new(RECV_DEPTH as usize)?,
            credits: 0,
            pending_grant: 0,
            peer_low: false,
            sends_inflight: 0,
            recvs_posted: 0,
            send_failed: false,
            raw: false,
            depth: RECV_DEPTH,
            peer_depth: 0,
            peer_reads: false,
            out: Fifo::new(abi::ANNOUNCE_WINDOW as usize)?,
            retired: KVec::new(),
            linger_ms: abi::DEFAULT_TIMEOUT_MS,
            retire_in: 0,
            done_owed: 0,
            body: None,
            reading: false,
            read_wanted: false,
        })
    }
}

impl Conn {
    /// Reposts free receive buffers and, when the peer needs them, sends the
    /// credits back, with the DONE this side owes. Process context, `ep`
    /// not held.
    pub(super) fn pump(self: &Arc<Self>) -> Result {
        let ep = self.ep.lock();
        let Some(qp) = ep.qp() else {
            return Err(self.no_qp());
        };
        loop {
            let buf = self.st.lock().msg.repost.pop();
            let Some(buf) = buf else { break };
            if let Err((e, buf)) = self.post_recv_buf(qp, buf) {
                // Kept for the next pump (every RECV and SEND pumps): one
                // receive lost for good could stall a message that needs
                // every receive the connection has.
                if let Some(buf) = buf {
                    self.st.lock().keep_for_repost(buf);
                }
                return Err(self.post_failed(&ep, e));
            }
            self.st.lock().msg.pending_grant += 1;
        }
        // A credit-only message at a time, while one is due: each carries
        // one DONE, and two may be owed.
        loop {
            let (grant, low, was_low, done) = {
                let mut st = self.st.lock();
                // No grant once closed: the QP may still be up, waiting for
                // what was sent to complete (`CmHandler::event`). DONE goes at
                // once: the peer's next announce waits for it.
                let grants_due = st.msg.pending_grant > 0
                    && (st.msg.peer_low || st.msg.pending_grant >= abi::grant_batch(st.msg.depth));
                let due = !st.msg.raw
                    && st.state == State::Connected
                    && (grants_due || st.msg.done_owed > 0)
                    && st.msg.credits >= 1;
                if !due {
                    return Ok(());
                }
                st.msg.credits -= 1;
                let was_low = core::mem::take(&mut st.msg.peer_low);
                st.msg.sends_inflight += 1;
                let grant = core::mem::take(&mut st.msg.pending_grant);
                let done = st.msg.done_owed > 0;
                if done {
                    st.msg.done_owed -= 1;
                    // Before the post: the peer may announce again as soon as
                    // DONE reaches it.
                    st.msg.wire.done_sent();
                }
                (grant, st.msg.credits < 2, was_low, done)
            };
            let hdr = WireHdr::credit(grant, low, done);
            let dev = qp.pd().device().clone();
            let r = DeviceBuf::alloc(&dev, HDR, Direction::ToDevice).and_then(|buf| {
                let mut cpu = buf.into_cpu();
                cpu.get_mut(..HDR)
                    .ok_or(EINVAL)?
                    .copy_from_slice(&hdr.encode());
                qp.post_send(self, Work::Send(cpu.into_device(), HDR), SendOp::Send)
                    .map_err(|(e, _)| self.post_failed(&ep, e))
            });
            if r.is_err() {
                // Nothing went out: the credit, the grant, the peer's plea and
                // the DONE stay for the next pump.
                let mut st = self.st.lock();
                st.msg.sends_inflight -= 1;
                st.msg.credits += 1;
                st.msg.pending_grant += grant;
                st.msg.peer_low |= was_low;
                if done {
                    st.msg.done_owed += 1;
                    st.msg.wire.done_unsent();
                }
            }
            r?;
        }
    }

    /// Posts a receive buffer, counted in `recvs_posted` from before the
    /// post (its completion may run before the post returns: siw completes
    /// a receive posted to a QP in the error state at once).
    /// On failure the buffer comes back (`post_recv` gives back the
    /// `Work::Recv` it was given).
    pub(super) fn post_recv_buf(
        self: &Arc<Self>,
        qp: &Qp,
        buf: DeviceBuf,
    ) -> core::result::Result<(), (Error, Option<DeviceBuf>)> {
        self.st.lock().msg.recvs_posted += 1;
        qp.post_recv(self, Work::Recv(buf)).map_err(|(e, work)| {
            let mut st = self.st.lock();
            st.msg.recvs_posted = st.msg.recvs_posted.saturating_sub(1);
            let buf = match work {
                Work::Recv(buf) => Some(buf),
                _ => None,
            };
            (e, buf)
        })
    }

    /// The error a receiver gets once nothing more can arrive, or `None`
    /// while the connection is up or more may still come.
    ///
    /// rdma_cm can report the peer's close (`DISCONNECTED`) before the
    /// completions of what the peer sent just before it have been handled:
    /// they still wait in the CQ for ib_core's poll work, or for a polling
    /// waiter. After `DISCONNECTED` the QP goes to the error state (moved
    /// there by `CmHandler::event` on IB, at once or once the SENDs in
    /// flight have completed; by the closed stream on iWARP), so every
    /// receive still posted completes, flushed, after those completions.
    /// Until the last of them has, a message the peer finished before it
    /// closed may still be coming, and the receiver waits for it.
    pub(super) fn receiver_closed(st: &St) -> Option<Error> {
        let e = Self::require_connected(st).err()?;
        if st.peer_closed && st.msg.recvs_posted > 0 {
            return None;
        }
        Some(e)
    }

    /// [`Self::pump`] for a receiver: a connection that closed (and may
    /// have lost its QP) is no error here, as what arrived before still
    /// goes to the receiver; the wait that follows reports the close.
    pub(super) fn pump_unless_closed(self: &Arc<Self>) -> Result {
        match self.pump() {
            Err(e) if Self::require_connected(&self.st.lock()).is_ok() => Err(e),
            _ => Ok(()),
        }
    }

    /// `IOCTL_SEND`: one message of `len` bytes from user memory.
    pub(crate) fn send(self: &Arc<Self>, x: &abi::Xfer) -> Result {
        if x.flags != 0 {
            return Err(EINVAL);
        }
        if x.len > abi::MAX_MSG_SIZE {
            return Err(errno::EMSGSIZE());
        }
        let len = x.len as usize;
        let announce = x.len > u64::from(abi::MAX_INLINE_MSG);
        let timeout = timeout_of(x.timeout_ms);
        let end = deadline(timeout);
        let _turn = self.take_turns(TURN_SEND, end)?;
        let raw = {
            let st = self.st.lock();
            Self::require_connected(&st)?;
            // A longer message is READ by the peer: it must READ announces,
            // and this side must answer READs (an IRD).
            if !st.msg.raw && announce && !(st.msg.peer_reads && st.info.responder_resources >= 1) {
                return Err(errno::EMSGSIZE());
            }
            st.msg.raw
        };
        if raw {
            return self.send_raw(x, ms_until(end)?);
        }

        // The SEND's buffer, and for an announce the regions it names
        // (registered, their keys not yet on the wire), filled from user
        // memory first: a fault in the user buffer then costs nothing on
        // the wire, and a copy that waits on a page holds no device. Before
        // the wait for room in the window of announces
        // (`abi::ANNOUNCE_WINDOW`), which then overlaps with the peer's
        // READ of the one before.
        let (data, regions) = if announce {
            self.stage_announce(x, end)?
        } else {
            (Self::stage_inline(x)?, KVec::new())
        };

        // Take the credit the message needs, and for an announce wait for
        // room in the window (a DONE of the peer's), before anything goes
        // out, so that a signal or timeout leaves nothing on the wire.
        loop {
            self.pump()?;
            let got = self.wait(ms_until(end)?, |st| {
                if let Err(e) = Self::require_connected(st) {
                    return Some(Err(e));
                }
                if st.msg.credits > 1 && (!announce || st.msg.wire.may_announce()) {
                    st.msg.credits -= 1;
                    return Some(Ok(true));
                }
                // Free receives to repost: go back and pump.
                if st.msg.repost.len() > 0 {
                    return Some(Ok(false));
                }
                None
            })?;
            if got {
                break;
            }
        }
        {
            let mut st = self.st.lock();
            // Whether this message's SEND succeeds (`wait_sent`).
            st.msg.send_failed = false;
            if announce {
                // The peer may READ it as long as this call would have
                // waited for it: a close waits that long for its DONE.
                st.msg.linger_ms = timeout;
            }
        }
        let result = self.send_one(data, len as u32, regions);
        let done = self.wait_sent(UNTIL_VERDICT);
        result.and(done)
    }

    /// An inline message's SEND buffer: the header left blank, then the
    /// data.
    fn stage_inline(x: &abi::Xfer) -> Result<KVec<u8>> {
        let len = x.len as usize;
        let mut data = KVec::from_elem(0u8, HDR + len, GFP_KERNEL)?;
        UserSlice::new(x.buf as usize, len)
            .reader()
            .read_slice(data.get_mut(HDR..).ok_or(EINVAL)?)?;
        Ok(data)
    }

    /// Sends one message of `msg_len` bytes, its credit taken: `data` is
    /// its SEND (the header left blank), `regions` those an announce names
    /// (none for an inline message). The SEND gets its mapping, its
    /// send-queue slot and its work request before anything of the
    /// connection's changes, so that running short of either (`ENOBUFS`:
    /// slots still held by an interrupted benchmark or a timed-out
    /// operation; `ENOMEM`) fails the call with nothing on the wire and the
    /// credit and grant back. Then only the provider can refuse the post,
    /// which it does for a QP in the error state: a connection that is
    /// going anyway.
    fn send_one(
        self: &Arc<Self>,
        mut data: KVec<u8>,
        msg_len: u32,
        regions: KVec<Arc<Region>>,
    ) -> Result {
        let ep = self.ep.lock();
        let (grant, low) = {
            let mut st = self.st.lock();
            let grant = core::mem::take(&mut st.msg.pending_grant);
            (grant, st.msg.credits < 2)
        };
        let hdr = WireHdr::message(msg_len, grant, low);
        let ready = ep.qp().ok_or_else(|| self.no_qp()).and_then(|qp| {
            let wire_len = data.len();
            data.get_mut(..HDR)
                .ok_or(EINVAL)?
                .copy_from_slice(&hdr.encode());
            let buf = DeviceBuf::map(qp.pd().device(), data, Direction::ToDevice)?;
            let p = qp
                .prepare_send(self, Work::Send(buf, wire_len), SendOp::Send)
                .map_err(|(e, _)| e)?;
            Ok((qp, p))
        });
        let (qp, p) = match ready {
            Ok(r) => r,
            Err(e) => {
                let mut st = self.st.lock();
                st.msg.credits += 1;
                st.msg.pending_grant += grant;
                return Err(e);
            }
        };
        {
            let mut st = self.st.lock();
            st.msg.sends_inflight += 1;
            if grant > 0 {
                st.msg.peer_low = false;
            }
            if !regions.is_empty() {
                // Before the post: the peer's DONE may come back at once.
                st.msg.wire.announce_sent();
                // Room for it: the window was checked with the credit, and
                // only this caller (`TURN_SEND`) adds to `out`.
                if !st.torn_down {
                    let _ = st.msg.out.push(regions);
                }
            }
        }
        if let Err((e, _)) = qp.post_prepared(p) {
            {
                let mut st = self.st.lock();
                st.msg.sends_inflight -= 1;
                st.msg.credits += 1;
            }
            return Err(self.post_failed(&ep, e));
        }
        Ok(())
    }

    /// Waits until every SEND posted has completed, and succeeds if each
    /// one did, that is, the peer acknowledged it. A connection that closes
    /// meanwhile is not an error by itself: the peer may read a message and
    /// disconnect before this side has seen the acknowledgement (the
    /// disconnect's event can be handled before the completion). On IB
    /// and RoCE the peer's disconnect leaves the QP up until the SENDs in
    /// flight complete, acknowledged or failed by the transport
    /// (`CmHandler::event`); on iWARP the closed stream ends them. A close
    /// of this side's own (a wire violation, a failed request:
    /// `Conn::complete`) moves the QP to the error state, so what was not
    /// acknowledged completes at once, flushed. Only a failed SEND makes
    /// the connection's errno count.
    pub(super) fn wait_sent(&self, ms: u32) -> Result {
        let r = self.wait(ms, |st| {
            (st.msg.sends_inflight == 0).then(|| {
                if st.msg.send_failed {
                    Err(Self::closed_error(st))
                } else {
                    Ok(())
                }
            })
        });
        match r {
            // Not completed in time on a closed connection: its errno.
            Err(e) if e == errno::ETIMEDOUT() => Err(Self::closed_error_or(&self.st.lock(), e)),
            r => r,
        }
    }

    /// `IOCTL_RECV`: the next message, into user memory. Returns its length.
    pub(crate) fn recv(self: &Arc<Self>, x: &abi::Xfer) -> Result<u64> {
        if x.flags != 0 {
            return Err(EINVAL);
        }
        let end = deadline(timeout_of(x.timeout_ms));
        // One receiver at a time takes messages off the queue.
        let _turn = self.take_turns(TURN_RECV, end)?;
        if self.st.lock().msg.raw {
            return self.recv_raw(x, ms_until(end)?);
        }
        // Wait until a message is here; nothing is taken before that, so a
        // signal or a timeout leaves the queue as it was. Messages that
        // arrived before the connection closed are still delivered, in
        // order (as a socket delivers data before its FIN); then the
        // connection's errno. An announced one is READ from the peer,
        // which must still be there.
        let (msg_len, announce) = loop {
            self.pump_unless_closed()?;
            let r = self.wait(ms_until(end)?, |st| {
                if let Some(f) = st.msg.rx.front() {
                    let announce = f.hdr.flags & abi::WIRE_READ != 0;
                    return Some(Ok(Some((f.hdr.msg_len as usize, announce))));
                }
                if let Some(e) = Self::receiver_closed(st) {
                    return Some(Err(e));
                }
                if st.msg.repost.len() > 0 && st.state == State::Connected {
                    return Some(Ok(None));
                }
                None
            })?;
            if let Some(m) = r {
                break m;
            }
        };
        if msg_len as u64 > x.len {
            return Err(errno::EMSGSIZE());
        }
        if announce {
            return self.recv_announce(x, msg_len, end);
        }
        self.recv_one(x, HDR, ms_until(end)?)
    }

    /// Copies the data of received SEND `f` from byte `from` into `bounce`;
    /// returns how many bytes. `EPROTO` for a payload that does not fit,
    /// which the wire checks rule out.
    fn payload_into(f: &Fragment, from: usize, bounce: &mut [u8]) -> Result<usize> {
        let payload = f.buf.get(from..f.len.max(from)).ok_or(errno::EPROTO())?;
        bounce
            .get_mut(..payload.len())
            .ok_or(errno::EPROTO())?
            .copy_from_slice(payload);
        Ok(payload.len())
    }

    /// The received SEND at the front of the queue, from byte `from` on
    /// (after the header of an inline message; all of a raw one), into
    /// user memory; waits up to `timeout` ms for one. Returns its length.
    pub(super) fn recv_one(
        self: &Arc<Self>,
        x: &abi::Xfer,
        from: usize,
        timeout: u32,
    ) -> Result<u64> {
        let len = self.wait(timeout, |st| {
            if let Some(f) = st.msg.rx.front() {
                return Some(Ok(f.len.saturating_sub(from)));
            }
            Self::receiver_closed(st).map(Err)
        })?;
        if len as u64 > x.len {
            return Err(errno::EMSGSIZE());
        }
        // Through kernel memory: the receive buffer is given back (and its
        // device let go) before the copy to user memory, which may wait on
        // a page for as long as its owner likes (userfaultfd). Allocated
        // before anything is taken, so running out of memory leaves the
        // message queued.
        let mut bounce = KVec::from_elem(0u8, len.max(1), GFP_KERNEL)?;
        let f = self.st.lock().msg.rx.pop();
        // Emptied under us: torn down.
        let f = f.ok_or_else(|| Self::closed_error(&self.st.lock()))?;
        let n = Self::payload_into(&f, from, &mut bounce);
        self.st.lock().keep_for_repost(f.buf.into_device());
        let r = n.and_then(|n| {
            UserSlice::new(x.buf as usize, n)
                .writer()
                .write_slice(bounce.get(..n).ok_or(EINVAL)?)
        });
        // The message is the caller's now: reposting and returning credits
        // is best effort here, and a connection that broke meanwhile (the
        // peer closing after its last message) fails the next call instead.
        let _ = self.pump();
        r.map(|()| len as u64)
    }

    /// The peer broke the message protocol: this connection closes with
    /// `EPROTO` and reads nothing more it sent; no other connection is
    /// touched. The completion's handler then moves the QP to the error
    /// state (`fail_qp`, [`Conn::complete`]): what this side has posted
    /// completes, flushed, instead of waiting on a peer that may never
    /// answer. And this side disconnects (`hang_up`,
    /// [`Conn::hang_up_if_owed`]), so the peer learns now: a QP in the error
    /// state answers nothing on RoCE, and the peer's requests would retry
    /// into it (rxe's retry count 7 is "forever"). One log line,
    /// rate-limited (a peer could send millions), with the length of what
    /// broke the rule and its first bytes (`got`, the SEND received).
    pub(super) fn wire_fault(&self, st: &mut St, fault: abi::WireFault, got: &[u8]) {
        st.msg.wire_broken = true;
        st.msg.fail_qp = true;
        st.msg.hang_up = true;
        if sched::ratelimit() {
            pr_warn!(
                "peer broke the message protocol ({}; {} bytes: {:02x?}): closing its connection\n",
                fault.as_str(),
                got.len(),
                got.get(..got.len().min(HDR)).unwrap_or(&[])
            );
        }
        self.close_locked(st, errno::EPROTO());
    }

    /// A receive completed: checks it (`abi::WireRx`) and queues its
    /// fragment, or takes its credits. `st` held; the caller wakes waiters.
    pub(super) fn complete_recv(&self, st: &mut St, wc: &Wc, buf: DeviceBuf) {
        st.msg.recvs_posted = st.msg.recvs_posted.saturating_sub(1);
        if !wc.ok() {
            if wc.flushed() && !st.established {
                // Flushed before the connection came up: rdma_cm moved the
                // QP to the error state for a reject, an unreachable peer
                // or a failed connect, and its event, which says which,
                // may come after these completions (on ib_core's workqueue,
                // another thread). That event decides the errno, or the
                // connect's own error when it tears its QP down; a flush
                // would make every refused connect ECONNRESET.
                return;
            }
            if !wc.flushed() {
                pr_debug!(
                    "receive failed: {}\n",
                    wc.status_msg().to_str().unwrap_or("?")
                );
                if !st.msg.raw && !st.msg.wire_broken {
                    // A receive fails on its own when what came does not
                    // fit it: a SEND longer than any message of the
                    // protocol, the peer's doing.
                    self.wire_fault(st, abi::WireFault::Length, &[]);
                    return;
                }
            }
            self.close_locked(st, wc.errno());
            return;
        }
        let cpu = buf.into_cpu();
        let len = (wc.byte_len as usize).min(cpu.len());
        let msg = &mut st.msg;
        if msg.raw {
            let stamp = Ktime::ktime_get().to_ns();
            let frag = Fragment {
                hdr: WireHdr::default(),
                buf: cpu,
                len,
                stamp,
            };
            if msg.rx.push(frag).is_err() {
                self.close_locked(st, errno::EPROTO());
            }
            return;
        }
        if msg.wire_broken {
            return;
        }
        let got = cpu.get(..len).unwrap_or(&[]);
        let hdr = match msg.wire.check(got, msg.credits) {
            Ok((hdr, credits)) => {
                msg.credits = credits;
                hdr
            }
            Err(fault) => {
                self.wire_fault(st, fault, got);
                return;
            }
        };
        msg.peer_low = hdr.flags & abi::WIRE_LOW != 0;
        if hdr.flags & abi::WIRE_DONE != 0 {
            // The peer has READ this side's announced message: its regions
            // go, and their keys with them, once no duplicate of its READ
            // requests can still be on the way (`Conn::retire`). Should
            // keeping one fail for want of memory, it goes now.
            // The grace is worked out only for a DONE, not on every
            // completion; at least a jiffy, so never 0.
            msg.retire_in = Self::retire_grace(&st.info);
            let by = sched::jiffies().wrapping_add(msg.retire_in);
            for r in msg.out.pop().unwrap_or_default() {
                let _ = msg.retired.push((by, r), GFP_KERNEL);
            }
        }
        if hdr.flags & abi::WIRE_CREDIT != 0 {
            st.keep_for_repost(cpu.into_device());
            return;
        }
        let announce = hdr.flags & abi::WIRE_READ != 0;
        let frag = Fragment {
            hdr,
            buf: cpu,
            len,
            stamp: 0,
        };
        // Queued by `Conn::complete`, once it lets go of `st`.
        msg.read_wanted |= announce;
        if msg.rx.push(frag).is_err() {
            // More messages than receives: cannot happen, as every message
            // took a receive of ours.
            self.close_locked(st, errno::EPROTO());
        }
    }

    /// Owes the peer the disconnect that [`Conn::defer_hang_up`] put off,
    /// once nothing it waited for is in flight. `st` held.
    pub(super) fn hang_up_when_done(&self, st: &mut St) {
        if st.msg.sends_inflight == 0
            && self.op_steps.load(Ordering::Acquire) == 0
            && core::mem::take(&mut st.msg.hang_up_when_sent)
        {
            st.msg.hang_up = true;
        }
    }

    /// A SEND of the message protocol completed: its buffer goes.
    pub(super) fn complete_send(&self, st: &mut St, wc: &Wc) {
        st.msg.sends_inflight = st.msg.sends_inflight.saturating_sub(1);
        self.hang_up_when_done(st);
        if !wc.ok() {
            st.msg.send_failed = true;
            if !wc.flushed() {
                pr_debug!("send failed: {}\n", wc.status_msg().to_str().unwrap_or("?"));
            }
            self.close_locked(st, wc.errno());
        }
    }
}
