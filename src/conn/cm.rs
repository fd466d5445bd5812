// SPDX-License-Identifier: GPL-2.0

//! The connection's cm events: connecting (active side), listening and
//! accepting inside the CONNECT_REQUEST handler (passive side), and the
//! events that move the state (`Established`, `Disconnected`, ...).
//!
//! Rules: a handler never drops a `CmId` (that waits for the handler
//! itself): a request it will not keep goes back to rdma_cm with
//! `HandlerId::disown`. Ids are stored in `ep` only through
//! `Ep::install`, which refuses once shutdown sealed `ep` (see `Ep`).

use super::*;

impl Conn {
    /// Leaves the idle state for `next` (connecting or listening), with the
    /// connection flags of the request.
    pub(super) fn begin(&self, flags: u32, next: State) -> Result {
        if flags & !(abi::CONN_RAW | abi::CONN_POLL | abi::CONN_SPIN) != 0
            || flags & (abi::CONN_POLL | abi::CONN_SPIN) == abi::CONN_SPIN
        {
            return Err(EINVAL);
        }
        let mut st = self.st.lock();
        if st.state != State::Idle {
            return Err(errno::EISCONN());
        }
        st.state = next;
        st.msg.raw = flags & abi::CONN_RAW != 0;
        st.polled = flags & abi::CONN_POLL != 0;
        st.spin = flags & abi::CONN_SPIN != 0;
        Ok(())
    }

    /// `IOCTL_CONNECT`: resolve, create the QP, post receives, connect.
    pub(crate) fn connect(self: &Arc<Self>, req: &abi::ConnectReq) -> Result<abi::ConnInfo> {
        let dst = sockaddr(&req.dst)?;
        let t = transport_of(&req.transport, false, req.flags & abi::CONN_RAW != 0)?;
        self.begin(req.flags, State::Connecting)?;
        let r = self.connect_steps(&dst, req, &t);
        if let Err(e) = r {
            let mut st = self.st.lock();
            self.close_locked(&mut st, e);
            // The connect's own error, not what tearing down its QP caused
            // (its flushed receives may have closed the connection first).
            st.state = State::Closed(e);
            st.info.error = (-e.to_errno()) as u32;
        }
        r.map(|()| self.info())
    }

    pub(super) fn connect_steps(
        self: &Arc<Self>,
        dst: &SockAddr,
        req: &abi::ConnectReq,
        t: &abi::Transport,
    ) -> Result {
        let timeout = timeout_of(req.timeout_ms);
        // Owned here until established: an error or a signal drops it, which
        // destroys the QP and the id.
        let mut id = CmId::new(self.clone(), PortSpace::Tcp, &crate::THIS_MODULE)?;
        // Before route resolution: rdma_cm derives RoCE's packet lifetime,
        // and with it the CM's own timeouts, from the ACK timeout.
        id.set_ack_timeout(t.ack_timeout)?;
        id.set_min_rnr_timer(t.min_rnr_timer)?;
        id.resolve_addr(dst, RESOLVE_MS.min(timeout))?;
        self.wait_cm(timeout, CmEventKind::AddrResolved)?;
        id.resolve_route(RESOLVE_MS.min(timeout))?;
        self.wait_cm(timeout, CmEventKind::RouteResolved)?;

        let dev = id.device().ok_or(ENODEV)?;
        let attrs = dev.attrs();
        let resp = clamp_depth(req.responder_resources, attrs.max_qp_rd_atom);
        let init = clamp_depth(req.initiator_depth, attrs.max_qp_init_rd_atom);
        let param = self.prepare(&mut id, &dev, resp, init, t)?;
        id.connect(&param)?;
        self.wait(timeout, |st| match st.state {
            State::Connected => Some(Ok(())),
            State::Closed(e) => Some(Err(e)),
            _ => None,
        })?;
        if let Some(qp) = id.qp() {
            self.record_qp(qp)?;
        }
        let refused = {
            let mut ep = self.ep.lock();
            let r = ep.install(Slot::Connection, id);
            // A protocol fault since `ESTABLISHED` found no id to disconnect.
            self.hang_up_if_owed(&ep);
            r
        };
        // Shut down meanwhile (the device went): the id goes, outside `ep`.
        refused.map_err(|id| {
            drop(id);
            Self::closed_error(&self.st.lock())
        })
    }

    pub(super) fn wait_cm(&self, ms: u32, want: CmEventKind) -> Result {
        self.wait(ms, |st| {
            if let State::Closed(e) = st.state {
                return Some(Err(e));
            }
            match st.cm_event.take() {
                Some(e) if e == want => Some(Ok(())),
                Some(_) | None => None,
            }
        })
    }

    /// Both sides, before connecting or accepting: records what this side
    /// asks for, creates the QP, posts every receive and registers as a user
    /// of the device. Returns the parameters to connect or accept with.
    pub(super) fn prepare(
        self: &Arc<Self>,
        id: &mut CmId<Self>,
        dev: &DeviceRef,
        resp: u32,
        init: u32,
        t: &abi::Transport,
    ) -> Result<ConnParam> {
        let attrs = dev.attrs();
        // The registry's copy, taken before `st` (no lock nests in it):
        // reading the name here could race with a rename, which only `add`
        // and `remove` keep out.
        let name = self
            .registry
            .name(dev.index())
            .unwrap_or([0; abi::DEVICE_NAME_LEN]);
        // This side READs announced messages if it may issue READs at all
        // (an ORD asked, a device that READs into one entry): then it
        // tells the peer so in its setup data.
        let reads = init >= 1 && attrs.max_sge_rd >= 1 && attrs.max_qp_init_rd_atom >= 1;
        let (polled, raw) = {
            let mut st = self.st.lock();
            st.info.asked_responder_resources = resp;
            st.info.asked_initiator_depth = init;
            st.info.dev_max_qp_rd_atom = attrs.max_qp_rd_atom;
            st.info.dev_max_qp_init_rd_atom = attrs.max_qp_init_rd_atom;
            st.info.device = name;
            st.info.iwarp = u32::from(dev.is_iwarp());
            (st.polled, st.msg.raw)
        };
        let reads = reads && !raw;
        let caps = QpCaps {
            send_wr: SEND_DEPTH,
            recv_wr: t.recv_depth,
            send_sge: 1,
            recv_sge: 1,
            max_inline: MAX_INLINE,
        };
        let poll = if polled {
            PollContext::Direct
        } else {
            PollContext::Workqueue
        };
        let qp = id.create_qp(caps, poll, OWNER)?;
        self.post_initial_recvs(qp, dev, t.recv_depth, reads)?;
        self.attach(dev)?;
        let setup = abi::SetupData {
            recv_depth: t.recv_depth,
            reads,
        };
        Ok(ConnParam {
            responder_resources: resp as u8,
            initiator_depth: init as u8,
            retry_count: t.retry_count,
            rnr_retry_count: t.rnr_retry,
            private_data: PrivateData::new(&setup.encode())?,
        })
    }

    /// Posts the connection's `depth` receives, of [`MSG_RECV_BUF`] bytes
    /// ([`RECV_BUF`] on a raw connection); this side READs announces if
    /// `reads`. Its credits wait for the peer's depth
    /// ([`Self::learn_peer`]).
    pub(super) fn post_initial_recvs(
        self: &Arc<Self>,
        qp: &Qp,
        dev: &DeviceRef,
        depth: u32,
        reads: bool,
    ) -> Result {
        let size = {
            let mut st = self.st.lock();
            st.msg.depth = depth;
            st.msg.wire = abi::WireRx::new(abi::RECV_DEPTH, reads);
            st.info.recv_depth = depth;
            if st.msg.raw {
                RECV_BUF
            } else {
                MSG_RECV_BUF
            }
        };
        for _ in 0..depth {
            let buf = DeviceBuf::alloc(dev, size, Direction::FromDevice)?;
            self.post_recv_buf(qp, buf).map_err(|(e, _)| e)?;
        }
        Ok(())
    }

    /// Takes the peer's receive depth, and whether it READs announces,
    /// from the private data it connected or accepted with
    /// ([`abi::SetupData`]; [`abi::SetupData::FOREIGN`] if it sent none):
    /// the credits this side starts with. A peer could only have
    /// granted credits before this by breaking the protocol (nothing was
    /// sent to it yet), so any it did must still fit its depth. `EPROTO`
    /// for bad setup data or such a grant.
    pub(super) fn learn_peer(st: &mut St, private_data: &[u8]) -> Result {
        let peer = abi::SetupData::of_peer(private_data).map_err(|_| errno::EPROTO())?;
        let depth = peer.recv_depth;
        let credits = st
            .msg
            .credits
            .checked_add(depth)
            .filter(|c| *c <= depth)
            .ok_or(errno::EPROTO())?;
        st.msg.credits = credits;
        st.msg.peer_depth = depth;
        st.msg.peer_reads = peer.reads;
        st.msg.wire.set_peer_depth(depth);
        st.info.peer_recv_depth = depth;
        Ok(())
    }

    /// `IOCTL_LISTEN`: bind, listen, and take the first request.
    pub(crate) fn listen(self: &Arc<Self>, req: &abi::ListenReq) -> Result {
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        let addr = sockaddr(&req.addr)?;
        let t = transport_of(&req.transport, true, req.flags & abi::CONN_RAW != 0)?;
        self.begin(req.flags, State::Listening)?;
        {
            let mut st = self.st.lock();
            st.listen_caps = (req.responder_resources, req.initiator_depth);
            st.listen_transport = t;
        }
        let listener =
            CmId::new(self.clone(), PortSpace::Tcp, &crate::THIS_MODULE).and_then(|mut id| {
                id.listen(&addr, 4)?;
                Ok(id)
            });
        let l = match listener {
            Ok(l) => l,
            Err(e) => {
                self.st.lock().state = State::Idle;
                return Err(e);
            }
        };
        // Bound to one device's address, the listener is on that device:
        // rdma_cm's removal of the device waits until the id is destroyed,
        // so the device's removal must tear it down like a connection. (A
        // wildcard listener is on no device; rdma_cm handles its per-device
        // children itself.)
        let dev = l.device();
        let refused = self.ep.lock().install(Slot::Listener, l);
        if let Err(l) = refused {
            // Outside `ep`: destroying an id waits for its handlers.
            drop(l);
            return Err(Self::closed_error(&self.st.lock()));
        }
        if let Some(dev) = dev {
            if let Err(e) = self.attach(&dev) {
                // The listener was in `ep`: a request may have been taken
                // and accepted since, its child kept there. The connection
                // closes with the error, torn down as at release (`ep`
                // sealed, every id destroyed); going back to IDLE would
                // leave that child behind for a second LISTEN to overwrite.
                self.shutdown(e);
                return Err(e);
            }
        }
        Ok(())
    }

    /// `IOCTL_ACCEPT`: wait for the listened-for connection.
    pub(crate) fn accept(&self, timeout_ms: u32) -> Result<abi::ConnInfo> {
        {
            let st = self.st.lock();
            if st.state == State::Idle {
                return Err(EINVAL);
            }
        }
        let r = self.wait(timeout_of(timeout_ms), |st| match st.state {
            State::Connected => Some(Ok(())),
            State::Closed(e) => Some(Err(e)),
            _ => None,
        });
        if r.is_ok() {
            // One connection per fd: stop listening. Dropped outside the lock.
            let listener = self.ep.lock().listener.take();
            drop(listener);
            let ep = self.ep.lock();
            if let Some(qp) = ep.qp() {
                self.record_qp(qp)?;
            }
        }
        r.map(|()| self.info())
    }

    /// Records what the QP was given: the READ/atomic depths (the ground
    /// truth of the negotiation) and the transport settings, reported by
    /// `IOCTL_CONN_INFO`.
    pub(super) fn record_qp(&self, qp: &Qp) -> Result {
        let a = qp.attrs()?;
        let mut st = self.st.lock();
        let (init, resp) = reported_depths(
            (a.max_rd_atomic, a.max_dest_rd_atomic),
            (
                st.info.asked_initiator_depth,
                st.info.asked_responder_resources,
            ),
        );
        st.info.initiator_depth = init;
        st.info.responder_resources = resp;
        let recv_depth = st.msg.depth;
        st.info.transport = if st.info.iwarp != 0 {
            // iWARP runs over TCP, whose own timers retransmit: the IB
            // transport settings do not apply, and none is reported.
            abi::Transport {
                set: abi::TRANSPORT_RECV_DEPTH,
                recv_depth,
                ..Default::default()
            }
        } else {
            abi::Transport {
                set: abi::TRANSPORT_ALL,
                ack_timeout: a.ack_timeout,
                retry_count: a.retry_count,
                rnr_retry: a.rnr_retry,
                min_rnr_timer: a.min_rnr_timer,
                recv_depth,
            }
        };
        Ok(())
    }

    /// The passive side, inside the CONNECT_REQUEST handler.
    pub(super) fn on_request(self: &Arc<Self>, hid: &HandlerId<'_, Self>, ev: &CmEvent) {
        let (caps, t) = {
            let mut st = self.st.lock();
            if st.state != State::Listening {
                return; // Not adopted: rdma_cm rejects it.
            }
            st.state = State::Connecting;
            (st.listen_caps, st.listen_transport)
        };
        let r = hid.adopt().and_then(|mut child| {
            let param = match self.prepare_child(&mut child, ev, caps, &t) {
                Ok(param) => param,
                Err(e) => return Err(self.refuse(hid, child, e)),
            };
            // Accepted and kept in one step under `ep`: on iWARP a child
            // torn down inside its own handler waits for itself
            // (providers.rst, listener_close_races_connect).
            let mut ep = self.ep.lock();
            if ep.sealed() {
                drop(ep);
                let e = Self::closed_error(&self.st.lock());
                return Err(self.refuse(hid, child, e));
            }
            if let Err(e) = hid.accept(&param) {
                drop(ep);
                return Err(self.refuse(hid, child, e));
            }
            ep.keep(Slot::Connection, child);
            Ok(())
        });
        if let Err(e) = r {
            pr_debug!("accept failed: {:?}\n", e);
            let mut st = self.st.lock();
            self.close_locked(&mut st, e);
        }
    }

    /// A request this side will not take, not accepted: the peer is refused
    /// at once (best effort) instead of at its timeout, and rdma_cm destroys
    /// the child when the handler returns. Returns `e`.
    fn refuse(&self, hid: &HandlerId<'_, Self>, child: CmId<Self>, e: Error) -> Error {
        let _ = hid.reject();
        hid.disown(child);
        e
    }

    /// Sets an adopted child up (its QP, receives, the depths from the
    /// peer's request and the device): the parameters to accept it with.
    pub(super) fn prepare_child(
        self: &Arc<Self>,
        child: &mut CmId<Self>,
        ev: &CmEvent,
        caps: (u32, u32),
        t: &abi::Transport,
    ) -> Result<ConnParam> {
        let dev = child.device().ok_or(ENODEV)?;
        let attrs = dev.attrs();
        // Serve no more READs/atomics than the peer will issue, and issue no
        // more than the peer will serve; both within the device and the caps.
        let resp = clamp_depth(caps.0, attrs.max_qp_rd_atom).min(ev.responder_resources as u32);
        let init = clamp_depth(caps.1, attrs.max_qp_init_rd_atom).min(ev.initiator_depth as u32);
        {
            let mut st = self.st.lock();
            st.info.peer_responder_resources = ev.responder_resources as u32;
            st.info.peer_initiator_depth = ev.initiator_depth as u32;
        }
        child.set_ack_timeout(t.ack_timeout)?;
        child.set_min_rnr_timer(t.min_rnr_timer)?;
        let param = self.prepare(child, &dev, resp, init, t)?;
        let mut st = self.st.lock();
        Self::learn_peer(&mut st, ev.private_data.as_bytes()).inspect_err(|_| {
            if sched::ratelimit() {
                pr_warn!("peer sent bad setup data: refusing its connection\n");
            }
        })?;
        Ok(param)
    }

    /// `IOCTL_DISCONNECT`: `rdma_disconnect()`, then waits, interruptibly,
    /// until rdma_cm reports the end: the peer's reply (IB's DREP, iWARP's
    /// close), a disconnect of the peer's crossing this one, or the CM giving
    /// up after its retries (IB: `IB_CM_DREQ_ERROR`, a `DISCONNECTED` with
    /// `ETIMEDOUT`). The CM bounds the wait, as librdmacm's synchronous
    /// `rdma_disconnect()`. A signal ends the wait with `EINTR`; the
    /// disconnect goes on.
    pub(crate) fn disconnect(&self) -> Result {
        {
            let st = self.st.lock();
            if st.state != State::Connected {
                return Err(errno::ENOTCONN());
            }
        }
        self.linger();
        {
            let ep = self.ep.lock();
            match &ep.id {
                Some(id) => id.disconnect()?,
                None => return Err(errno::ENOTCONN()),
            }
        }
        // Outside `ep`: the wait ends in a cm handler.
        self.wait(UNTIL_VERDICT, |st| st.cm_closed.then_some(Ok(())))
    }
}

impl Conn {
    /// Before this side closes: waits for the peer to READ the messages
    /// this side announced (their DONEs), so that a message sent just
    /// before a close is still delivered, as a socket delivers its data
    /// before its FIN. It waits as long as the `IOCTL_SEND` that announced
    /// the last would have waited (its `timeout_ms`): a slow link that
    /// still delivers is not cut short by a wait of its own. Nothing to
    /// wait for on a closed connection or with no announce out; a signal
    /// ends the wait at once.
    pub(crate) fn linger(&self) {
        let ms = self.st.lock().msg.linger_ms;
        let _ = self.wait(ms, |st| {
            (st.msg.out.len() == 0 || st.state != State::Connected).then_some(Ok(()))
        });
    }
}

impl CmHandler for Conn {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, ev: &CmEvent) {
        if ev.kind == CmEventKind::ConnectRequest {
            this.on_request(id, ev);
            return;
        }
        if ev.kind == CmEventKind::Disconnected {
            if this.defer_hang_up() {
                // Paid by a waiter, the last completion, or at the latest
                // by the timer this queues.
                this.pay_deferred_hang_up();
            } else {
                // Flush what was posted now, not after retries that may
                // never run out: rdma_cm leaves the QP as it is. Fails
                // harmlessly if this side disconnected first.
                let _ = id.disconnect();
                // siw can close its stream and leave the QP in RTS, where
                // nothing completes (providers.rst). Under `ep`: the QP
                // stays.
                let ep = this.ep.lock();
                if let Some(qp) = ep.qp() {
                    let _ = qp.fail();
                }
            }
        }
        this.on_event(ev);
        if ev.kind == CmEventKind::Established {
            // The peer may have broken the protocol before this: a passive
            // side's QP receives once accepted, an active side's once the
            // reply came, both before this event.
            this.hang_up_if_owed(&this.ep.lock());
        }
    }
}

impl Conn {
    /// Whether the peer's `DISCONNECTED` leaves the QP up until the
    /// requests in flight (SENDs, and the steps of one-sided operations)
    /// have completed, and sets that debt if so. On IB and RoCE the peer
    /// may have answered them already: rxe drops the answers it has not
    /// processed once the QP is in the error state, so a SEND the peer
    /// received, or a WRITE it refused with a remote access error, would
    /// complete flushed, `ECONNRESET` to its caller (providers.rst). Left
    /// up, each completes with the peer's answer or the transport's verdict
    /// after its retries, but the wait is bounded: a peer that closed
    /// answers nothing new, and rxe never gives its verdict with a retry
    /// count of 7 (it retries forever, as for an RNR retry count of 7). So
    /// the disconnect is owed at the latest after the time the transport's
    /// retries take, `retry_count + 1` ACK timeouts, paid by a waiter
    /// ([`Conn::deferred_hang_up_due`]) or else by [`Conn::hang_up_timer`].
    /// iWARP's stream is closed by now: no.
    pub(super) fn defer_hang_up(&self) -> bool {
        let mut st = self.st.lock();
        let defer = st.info.iwarp == 0
            && (st.msg.sends_inflight > 0 || self.op_steps.load(Ordering::Acquire) > 0);
        if defer && !st.msg.hang_up_when_sent {
            let ms = st.info.transport.retries_ms();
            let grace = msecs_to_jiffies(u32::try_from(ms).unwrap_or(u32::MAX)).max(1);
            st.msg.hang_up_by = sched::jiffies().wrapping_add(grace);
        }
        st.msg.hang_up_when_sent |= defer;
        defer
    }

    /// Pays the disconnect [`Conn::defer_hang_up`] put off if its time is
    /// up, else queues [`Conn::hang_up_timer`] to come back then: so it is
    /// paid on time even if no waiter comes and nothing in flight
    /// completes (rxe retries forever with a retry count of 7). From a cm
    /// handler, or the timer; takes `ep`.
    pub(super) fn pay_deferred_hang_up(self: &Arc<Self>) {
        let ep = self.ep.lock();
        let due = Self::deferred_hang_up_due(&mut self.st.lock());
        match due {
            Some(0) => self.hang_up_if_owed(&ep),
            Some(left) => Delayed::<Conn>::queue(self, left),
            None => {}
        }
    }

    /// The disconnect [`Conn::defer_hang_up`] put off: owed now (moved to
    /// `Msg::hang_up`, returns `Some(0)`) once its time is up, else the
    /// jiffies left; `None` if none is put off. `st` held; the caller pays
    /// what is owed ([`Conn::hang_up_if_owed`], under `ep`).
    pub(super) fn deferred_hang_up_due(st: &mut St) -> Option<kernel::time::Jiffies> {
        if !st.msg.hang_up_when_sent {
            return None;
        }
        let left = st.msg.hang_up_by.wrapping_sub(sched::jiffies()) as isize;
        if left > 0 {
            return Some(left as kernel::time::Jiffies);
        }
        st.msg.hang_up_when_sent = false;
        st.msg.hang_up = true;
        Some(0)
    }

    pub(super) fn on_event(&self, ev: &CmEvent) {
        if ev.status != 0 {
            pr_debug!("cm event {:?}, status {}\n", ev.kind, ev.status);
        }
        let mut st = self.st.lock();
        match ev.kind {
            CmEventKind::AddrResolved | CmEventKind::RouteResolved => {
                st.cm_event = Some(ev.kind);
            }
            CmEventKind::Established => {
                st.established = true;
                // The active side learns the peer's depth from its reply
                // (the passive side did from the request).
                if st.msg.peer_depth == 0 {
                    if let Err(e) = Self::learn_peer(&mut st, ev.private_data.as_bytes()) {
                        if sched::ratelimit() {
                            pr_warn!("peer sent bad setup data: closing its connection\n");
                        }
                        st.msg.hang_up = true;
                        self.close_locked(&mut st, e);
                    }
                }
                if st.state == State::Connecting {
                    st.state = State::Connected;
                }
            }
            CmEventKind::AddrError | CmEventKind::RouteError => {
                self.close_locked(&mut st, errno::EHOSTUNREACH());
            }
            CmEventKind::Unreachable | CmEventKind::ConnectError => {
                self.close_locked(&mut st, errno::ENETUNREACH());
            }
            CmEventKind::Rejected => self.close_locked(&mut st, errno::ECONNREFUSED()),
            CmEventKind::Disconnected => {
                st.cm_closed = true;
                st.peer_closed = true;
                self.close_locked(&mut st, errno::ECONNRESET());
            }
            CmEventKind::DeviceRemoval => {
                st.cm_closed = true;
                self.close_locked(&mut st, ENODEV);
            }
            _ => {}
        }
        self.cv.notify_all();
    }
}

/// The transport settings of a connect (`passive` false) or a listen, with
/// the module's defaults for what `t.set` leaves out. `EINVAL` for unknown
/// bits, values out of range, an ACK timeout of 0 (no retransmission
/// timer), and a retry count on the passive side (the connecting side's
/// request decides it for both).
fn transport_of(t: &abi::Transport, passive: bool, raw: bool) -> Result<abi::Transport> {
    if t.set & !abi::TRANSPORT_ALL != 0 || (passive && t.set & abi::TRANSPORT_RETRY_COUNT != 0) {
        return Err(EINVAL);
    }
    let pick = |bit: u32, v: u8, default: u8| if t.set & bit != 0 { v } else { default };
    let r = abi::Transport {
        set: abi::TRANSPORT_ALL,
        ack_timeout: pick(
            abi::TRANSPORT_ACK_TIMEOUT,
            t.ack_timeout,
            abi::DEFAULT_ACK_TIMEOUT,
        ),
        retry_count: pick(
            abi::TRANSPORT_RETRY_COUNT,
            t.retry_count,
            abi::DEFAULT_RETRY_COUNT,
        ),
        rnr_retry: pick(
            abi::TRANSPORT_RNR_RETRY,
            t.rnr_retry,
            if raw {
                abi::DEFAULT_RNR_RETRY
            } else {
                abi::DEFAULT_MSG_RNR_RETRY
            },
        ),
        min_rnr_timer: pick(
            abi::TRANSPORT_MIN_RNR_TIMER,
            t.min_rnr_timer,
            abi::DEFAULT_MIN_RNR_TIMER,
        ),
        recv_depth: if t.set & abi::TRANSPORT_RECV_DEPTH != 0 {
            t.recv_depth
        } else if raw {
            abi::RECV_DEPTH
        } else {
            abi::MSG_RECV_DEPTH
        },
    };
    if !(1..=31).contains(&r.ack_timeout)
        || r.retry_count > 7
        || r.rnr_retry > 7
        || r.min_rnr_timer > 31
        || !(abi::MIN_RECV_DEPTH..=abi::RECV_DEPTH).contains(&r.recv_depth)
    {
        return Err(EINVAL);
    }
    Ok(r)
}

/// The depths a QP runs with, from what it reports, (ORD, IRD) =
/// (`max_rd_atomic`, `max_dest_rd_atomic`), and what this side asked for.
///
/// Negotiation never raises a side's ORD above what it asked; its IRD only
/// siw's relaxed negotiation raises (to the peer's ORD, `siw_accept()`).
/// siw 6.12 also reports the two swapped (`siw_query_qp()` fills
/// `max_rd_atomic` from its IRD queue and `max_dest_rd_atomic` from its ORD
/// queue, while enforcing them the right way). So a report that does not
/// fit what was asked but fits it swapped, or whose ORD exceeds what was
/// asked while its IRD would not, is read swapped. A report that fits both
/// ways is taken as it is: symmetric depths need nothing, and siw's
/// remaining cases cannot be told apart (`Documentation/providers.rst`).
pub(super) fn reported_depths(qp: (u32, u32), asked: (u32, u32)) -> (u32, u32) {
    let ((ord, ird), (asked_ord, asked_ird)) = (qp, asked);
    let fits = ord <= asked_ord && ird <= asked_ird;
    let fits_swapped = ird <= asked_ord && ord <= asked_ird;
    let raised_ird_swapped = ord > asked_ord && ird <= asked_ord;
    if !fits && (fits_swapped || raised_ird_swapped) {
        (ird, ord)
    } else {
        (ord, ird)
    }
}
