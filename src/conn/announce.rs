// SPDX-License-Identifier: GPL-2.0

//! Announced messages (`Documentation/flow-control.rst`): a message longer
//! than `abi::MAX_INLINE_MSG` goes as an announce naming regions of the
//! sender's, registered for remote READ only; the receiver READs it, ahead
//! of its caller (`read_work`) or in `IOCTL_RECV`, and answers with DONE;
//! the sender deregisters the regions once no resent READ can still come
//! for them (`retire_work`). The inline path and the credits are in
//! `msg.rs`.

use super::*;

impl Conn {
    /// An announced message: its data in regions of at most
    /// `abi::READ_SEG_SIZE` bytes, each new (a fresh key per message) and
    /// registered for remote READ only, and the announce's SEND buffer
    /// naming them, its header left blank. `TURN_SEND` held; `TURN_MSG_OP` is
    /// taken for the registrations.
    pub(super) fn stage_announce(
        self: &Arc<Self>,
        x: &abi::Xfer,
        end: i64,
    ) -> Result<(KVec<u8>, KVec<Arc<Region>>)> {
        let len = x.len as usize;
        // All of it into kernel memory first, holding nothing of the
        // device: a copy that waits on a page (userfaultfd) must not hold
        // up the device's removal, and a region holds its device.
        let mut data = KVVec::from_elem(0u8, len, GFP_KERNEL)?;
        UserSlice::new(x.buf as usize, len)
            .reader()
            .read_slice(&mut data)?;
        let mut regions = KVec::new();
        {
            let pd = self.op_pd()?;
            let mut off = 0;
            for seg in abi::ReadSeg::lens(len as u32) {
                let seg = seg as usize;
                let region = Region::new(&pd, seg, 0)?;
                region.write(0, data.get(off..off + seg).ok_or(EINVAL)?)?;
                regions.push(region, GFP_KERNEL)?;
                off += seg;
            }
        }
        drop(data);
        {
            let _turn = self.take_turns(TURN_MSG_OP, end)?;
            let mut steps = KVec::with_capacity(regions.len(), GFP_KERNEL)?;
            for r in regions.iter() {
                steps.push(Step::Reg(r.clone(), Access::REMOTE_READ), GFP_KERNEL)?;
            }
            self.run_op_on(true, ms_until(end)?, steps)?;
        }
        let seg_size = abi::READ_SEG_WIRE_SIZE as usize;
        let mut data = KVec::from_elem(0u8, HDR + regions.len() * seg_size, GFP_KERNEL)?;
        for (i, r) in regions.iter().enumerate() {
            let seg = abi::ReadSeg {
                addr: r.iova(),
                rkey: r.rkey(),
                len: r.len() as u32,
            };
            let at = HDR + i * seg_size;
            data.get_mut(at..at + seg_size)
                .ok_or(EINVAL)?
                .copy_from_slice(&seg.encode());
        }
        Ok((data, regions))
    }

    /// The message the peer announced at the front of the queue
    /// (`msg_len` bytes, which fit the caller's buffer), into user memory:
    /// READ ahead already ([`Self::read_ahead`]), or READ now. A READ that
    /// fails leaves the announce queued for the next call, unless the
    /// peer's side refused it: then the peer named memory it does not
    /// expose, and the connection closes with `EPROTO`
    /// (`Conn::complete_op`).
    pub(super) fn recv_announce(
        self: &Arc<Self>,
        x: &abi::Xfer,
        msg_len: usize,
        end: i64,
    ) -> Result<u64> {
        let chunks = loop {
            let segs = self.wait(ms_until(end)?, |st| {
                if st.msg.body.is_some() {
                    return Some(Ok(None));
                }
                if !st.msg.reading {
                    let segs = Self::front_segs(st).map(Some);
                    st.msg.reading = segs.is_ok();
                    return Some(segs);
                }
                Self::receiver_closed(st).map(Err)
            })?;
            // The announce leaves the queue in the same hold of `st` that
            // takes its body or ends this READ: `read_ahead` must never
            // find it there, READ it again and owe a second DONE.
            let Some(segs) = segs else {
                let mut st = self.st.lock();
                let Some(body) = st.msg.body.take() else {
                    continue;
                };
                Self::pop_announce(&mut st)?;
                break body;
            };
            let r = self
                .take_turns(TURN_MSG_OP, end)
                .and_then(|_turn| self.read_body(&segs, ms_until(end)?));
            let mut st = self.st.lock();
            st.msg.reading = false;
            // A READ that failed because the connection closed reports the
            // close's errno, as every other call on it does.
            let body = r.map_err(|e| Self::closed_error_or(&st, e))?;
            Self::pop_announce(&mut st)?;
            break body;
        };
        // The next announce, if one waits, is READ ahead in turn.
        Delayed::<Conn, READ_WORK>::queue(self, 0);
        let mut writer = UserSlice::new(x.buf as usize, msg_len).writer();
        let mut r = Ok(());
        for c in chunks.iter() {
            r = r.and_then(|()| writer.write_slice(c));
        }
        // The message is the caller's now, whatever the DONE does (as in
        // `recv_one`).
        let _ = self.pump();
        r.map(|()| msg_len as u64)
    }

    /// Takes the announce whose message was READ off the queue and gives
    /// its receive back; the connection's errno if the queue was emptied
    /// under us (torn down).
    fn pop_announce(st: &mut St) -> Result {
        let Some(f) = st.msg.rx.pop() else {
            return Err(Self::closed_error(st));
        };
        st.keep_for_repost(f.buf.into_device());
        Ok(())
    }

    /// The segments the announce at the front of the queue names; the
    /// connection's errno if the queue is empty.
    fn front_segs(st: &St) -> Result<KVec<(u64, u32, usize)>> {
        let f = st.msg.rx.front().ok_or_else(|| Self::closed_error(st))?;
        let mut segs = KVec::with_capacity(abi::READ_SEGS as usize, GFP_KERNEL)?;
        for s in abi::ReadSeg::parse(f.buf.get(HDR..f.len).unwrap_or(&[])) {
            segs.push((s.addr, s.rkey, s.len as usize), GFP_KERNEL)?;
        }
        Ok(segs)
    }

    /// READs an announced message's `segs`; once it is here, DONE is owed.
    /// `TURN_MSG_OP` held.
    fn read_body(self: &Arc<Self>, segs: &[(u64, u32, usize)], ms: u32) -> Result<KVec<KVec<u8>>> {
        self.require_initiator(true)?;
        self.st.lock().msg_op.announce = true;
        let r = self.read_remote(true, ms, segs);
        let mut st = self.st.lock();
        st.msg_op.announce = false;
        if r.is_ok() {
            st.msg.done_owed += 1;
        }
        r
    }

    /// `read_work`: READs the message announced at the front of the queue
    /// ahead of the caller, and sends DONE, so that the peer may let its
    /// memory go, close, or announce the next. Only when nobody else is at
    /// it, no message READ ahead waits for its caller (which bounds what a
    /// connection holds to one message), and `TURN_MSG_OP` is free (a
    /// sender registering its regions holds it, and then the caller's
    /// `IOCTL_RECV` READs instead), on a connection that does not
    /// busy-poll. Queued by the completion that
    /// brings an announce and by a receive that takes one; on the system
    /// workqueue, which no lock holder waits for.
    pub(super) fn read_ahead(self: &Arc<Self>) {
        let (segs, turn) = {
            let mut st = self.st.lock();
            // A busy-polling connection's completions are its callers' to
            // reap, and this would spin for them on a shared workqueue.
            let ready = st.state == State::Connected
                && !st.polled
                && st.msg.body.is_none()
                && !st.msg.reading
                && st.turns & TURN_MSG_OP == 0
                && st
                    .msg
                    .rx
                    .front()
                    .is_some_and(|f| f.hdr.flags & abi::WIRE_READ != 0);
            if !ready {
                return;
            }
            let Ok(segs) = Self::front_segs(&st) else {
                return;
            };
            st.msg.reading = true;
            st.turns |= TURN_MSG_OP;
            (
                segs,
                Turn {
                    conn: self,
                    turns: TURN_MSG_OP,
                },
            )
        };
        let r = self.read_body(&segs, abi::DEFAULT_TIMEOUT_MS);
        drop(turn);
        {
            let mut st = self.st.lock();
            st.msg.reading = false;
            if let Ok(body) = r {
                if !st.torn_down {
                    st.msg.body = Some(body);
                }
            }
            self.cv.notify_all();
        }
        let _ = self.pump();
    }

    /// How long the regions of an announce the peer has READ stay
    /// registered after its DONE, in jiffies. On IB and RoCE a READ request
    /// the peer's transport resent can still arrive after the READ
    /// completed there (the response to the first copy got through): the
    /// responder serves a duplicate READ again, and with the key gone it is
    /// an access error, which moves this side's QP to the error state
    /// without a completion of its own (rxe's `rxe_recheck_mr()`, a class
    /// C error). So they stay
    /// for the peer's retry time (`retry_count + 1` ACK timeouts), and at
    /// least a second for what is still queued. iWARP's stream carries no
    /// duplicates: at once.
    pub(super) fn retire_grace(info: &abi::ConnInfo) -> kernel::time::Jiffies {
        if info.iwarp != 0 {
            return 1;
        }
        let ms = info.transport.retries_ms().saturating_add(1000);
        msecs_to_jiffies(u32::try_from(ms).unwrap_or(u32::MAX)).max(1)
    }

    /// `retire_work`: deregisters the regions of the announces the peer has
    /// READ once their grace ([`Self::retire_grace`]) is over, each on its
    /// own time, and comes back for the rest. (One deadline for all, moved
    /// on by every DONE, let a steady stream hold every region it ever
    /// sent: a 2 MiB message every few milliseconds never left a quiet
    /// grace, and the guest ran out of memory.)
    pub(super) fn retire(self: &Arc<Self>) {
        let now = sched::jiffies();
        let left = |by: kernel::time::Jiffies| by.wrapping_sub(now) as isize;
        let (gone, next) = {
            let mut st = self.st.lock();
            let old = core::mem::take(&mut st.msg.retired);
            let waiting = old.iter().filter(|(by, _)| left(*by) > 0).count();
            let split = KVec::with_capacity(waiting, GFP_KERNEL)
                .and_then(|keep| Ok((keep, KVec::with_capacity(old.len() - waiting, GFP_KERNEL)?)));
            let Ok((mut keep, mut gone)) = split else {
                // Out of memory: all stay until the next DONE or try.
                st.msg.retired = old;
                drop(st);
                Delayed::<Conn, RETIRE_WORK>::queue(self, 1);
                return;
            };
            let mut next = isize::MAX;
            for e in old {
                let l = left(e.0);
                // Both have room: neither push allocates.
                let _ = if l > 0 {
                    next = next.min(l);
                    keep.push(e, GFP_KERNEL)
                } else {
                    gone.push(e, GFP_KERNEL)
                };
            }
            st.msg.retired = keep;
            (gone, next)
        };
        drop(gone);
        if next != isize::MAX {
            Delayed::<Conn, RETIRE_WORK>::queue(self, next as kernel::time::Jiffies);
        }
    }
}
