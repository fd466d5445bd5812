// SPDX-License-Identifier: GPL-2.0

//! One RC connection per open file of `/dev/rdma_krust`: its lifetime and
//! teardown, and its state. What it does is in the
//! children, one concern each:
//!
//! - [`cm`]: rdma_cm setup, active and passive, and the cm events;
//! - [`complete`]: the completion handler, which hands each completion to
//!   its path;
//! - [`msg`]: messages with credits, and the checks of what the peer sends;
//! - [`announce`]: messages announced and READ by the receiver, DONE, and
//!   the sender's regions retired;
//! - [`raw`]: raw connections, no header and no credits;
//! - [`fifo`]: the fixed-capacity queues `msg` keeps its fragments and
//!   buffers in;
//! - [`ops`]: one-sided operations (RDMA READ/WRITE, atomics, registrations);
//! - [`windows`]: memory exposed to the peer;
//! - [`wait`]: deadlines, and how a caller waits: sleeping on the
//!   condition variable or polling the CQ;
//! - [`bench`]: the in-kernel benchmark loops.
//!
//! Locking: `st` (a mutex) holds the state completions and cm events touch:
//! the connection state, `St::msg` (the message path's, [`msg::Msg`]) and
//! `St::op` (the one-sided path's, [`ops::Ops`]). The two are disjoint:
//! the message path and the completions of receives and SENDs touch only
//! `msg`, the operation path and its completions only `op`, and each path
//! has one caller at a time through its turn ([`TURN_SEND`],
//! [`TURN_RECV`], [`TURN_OP`]). Completions run on ib_core's workqueue (or,
//! on a busy-polling connection, in the waiting thread, under `ep`) and cm
//! handlers in rdma_cm's, all in process context. `ep` holds the cm ids and
//! is taken before `st`. A completion on the workqueue takes `ep` only to
//! disconnect after a protocol fault (`Conn::hang_up_if_owed`): no holder
//! of `ep` waits for a completion. `windows` is a lock of its own, taken
//! alone. No lock is ever held across a call that waits for a cm handler
//! (`rdma_destroy_id()`, via dropping a [`CmId`]), because handlers take
//! `ep` and `st` themselves, nor across a copy to or from user memory.
//!
//! Teardown ([`Conn::shutdown`]) follows nvme-rdma: close, seal `ep`,
//! destroy the listener, disconnect and drain, destroy the QP and CQ, the
//! windows, the id.

use crate::abi::{self, WireHdr};
use crate::kapi::{
    cm::{
        CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, PrivateData,
        SockAddr,
    },
    cq::PollContext,
    delayed::{Delayed, HasDelayed},
    device::DeviceRef,
    dma::{CpuBuf, DeviceBuf, Direction},
    errno,
    mr::{Access, Region},
    pd::Pd,
    qp::{Qp, QpCaps, SendOp},
    sched,
    wc::Wc,
    work::{CompletionHandler, SgeList, WorkCtx},
    OWNER,
};
use crate::registry::{DeviceUser, Registry};

mod announce;
mod bench;
mod cm;
mod complete;
mod fifo;
mod msg;
mod ops;
mod raw;
mod wait;
mod windows;

use msg::Msg;
use ops::{Ops, Step};
use wait::{deadline, ms_until, op_timeout, timeout_of, UNTIL_VERDICT};
use windows::Windows;

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, CondVarTimeoutResult, Mutex},
    time::{msecs_to_jiffies, Ktime},
    uaccess::UserSlice,
};

const RECV_DEPTH: u32 = abi::RECV_DEPTH;
/// A raw connection's receive buffers.
const RECV_BUF: usize = abi::RECV_BUF_SIZE as usize;
/// A message connection's receive buffers.
const MSG_RECV_BUF: usize = abi::MSG_RECV_BUF_SIZE as usize;
const HDR: usize = abi::WIRE_HDR_SIZE as usize;
const SEND_DEPTH: u32 = 2 * RECV_DEPTH;
/// Bytes a SEND or a WRITE carries inline (`QpCaps::max_inline`): a
/// message header and small payloads, as perftest's latency tests post
/// theirs. Within siw's 80 and rxe's limit.
const MAX_INLINE: u32 = 64;
const RESOLVE_MS: u32 = 2000;
/// Completions a busy-polling waiter handles per poll.
const POLL_BUDGET: u32 = 16;
/// One-sided operations move at most this much per work request.
const OP_CHUNK: usize = 256 * 1024;
const OP_MAX_CHUNKS: usize = (abi::MAX_MSG_SIZE as usize).div_ceil(OP_CHUNK);
/// Slots for the buffers completions hand back: enough for the largest
/// one-sided operation and for a benchmark's queue depth.
const OP_SLOTS: usize = if OP_MAX_CHUNKS > abi::BENCH_MAX_DEPTH as usize {
    OP_MAX_CHUNKS
} else {
    abi::BENCH_MAX_DEPTH as usize
};
/// Bytes a window copy moves through its bounce buffer at a time.
const WINDOW_IO_CHUNK: usize = 64 * 1024;

/// What a posted work request owns.
pub(crate) enum Work {
    /// A posted receive.
    Recv(DeviceBuf),
    /// A SEND of `len` bytes of the buffer.
    Send(DeviceBuf, usize),
    /// Step `idx` of one-sided operation number `gen` (RDMA READ/WRITE,
    /// atomic, registration, invalidation), with its buffer if any.
    Op {
        gen: u64,
        idx: usize,
        buf: Option<DeviceBuf>,
        len: usize,
        /// Of the message path's own operations (`St::msg_op`): the
        /// registrations and READs of announced messages.
        msg: bool,
    },
}

impl WorkCtx for Work {
    fn sges(&self) -> SgeList<'_> {
        match self {
            Work::Recv(b) => SgeList::one(b, b.len()),
            Work::Send(b, len) => SgeList::one(b, *len),
            Work::Op { buf, len, .. } => match buf {
                Some(b) => SgeList::one(b, *len),
                None => SgeList::new(),
            },
        }
    }
}

/// Where a connection is in its life; `ConnInfo::state` reports it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    /// `IOCTL_LISTEN` done, no connection adopted yet.
    Listening,
    /// Resolving, connecting or accepting.
    Connecting,
    /// Operations are allowed.
    Connected,
    /// For good, with the errno that closed it.
    Closed(Error),
}

impl State {
    /// The state's number in the ABI (`abi::state`).
    fn abi(self) -> u32 {
        match self {
            State::Idle => abi::state::IDLE,
            State::Listening => abi::state::LISTENING,
            State::Connecting => abi::state::CONNECTING,
            State::Connected => abi::state::CONNECTED,
            State::Closed(_) => abi::state::CLOSED,
        }
    }
}

/// State shared with completions and cm events.
struct St {
    state: State,
    /// The last cm event the connect path waits for.
    cm_event: Option<CmEventKind>,
    /// rdma_cm reported the connection's end (`DISCONNECTED`: the peer's
    /// reply to a disconnect, its own disconnect, or the CM giving up after
    /// its retries; `DEVICE_REMOVAL`), or the device is going. A
    /// `DISCONNECT` waits for it: closing the file at once would destroy
    /// the id, and ib_cm cancels the retries of a DREQ whose id is
    /// destroyed, so a peer whose DREQ was lost would never learn of it.
    cm_closed: bool,
    /// rdma_cm reported `DISCONNECTED`: the QP is in the error state, or
    /// will be once the SENDs in flight have completed
    /// (`Msg::hang_up_when_sent`), so every receive still posted completes
    /// (`Conn::receiver_closed`).
    peer_closed: bool,
    /// rdma_cm reported `ESTABLISHED`. Only then may this side disconnect
    /// on its own (`Conn::hang_up_if_owed`): iw_cm's `iw_cm_disconnect()`
    /// waits out a connect still in flight and BUG()s in its sent state,
    /// and on IB the CM sends no DREQ before.
    established: bool,
    /// The message path's state.
    msg: Msg,
    /// The one-sided path's state.
    op: Ops,
    /// The message path's own one-sided operations (`TURN_MSG_OP`): the
    /// registrations and READs of announced messages, apart from the
    /// caller's, so that neither waits for the other's turn.
    msg_op: Ops,
    info: abi::ConnInfo,
    /// Caps from `IOCTL_LISTEN` for the passive side.
    listen_caps: (u32, u32),
    /// The listener's transport settings for the connection it accepts.
    listen_transport: abi::Transport,
    /// The RDMA device index once bound, for the registry.
    device_index: Option<u32>,
    /// Busy polling (`abi::CONN_POLL`): waiters reap the completions.
    polled: bool,
    /// And spin without yielding (`abi::CONN_SPIN`). Then no thread ever
    /// sleeps on `cv`: every wait goes to `Conn::wait_polling`, which naps
    /// only when not spinning, and `polled` and `spin` are set once, in
    /// `Conn::begin`, before any wait. So completion handlers wake nobody.
    spin: bool,
    /// The [`Turn`]s taken.
    turns: u8,
    /// [`Conn::shutdown`] ran: the connection's queues were emptied for
    /// good, and nothing goes back into them ([`St::keep_for_repost`],
    /// [`Conn::complete_op`]). Otherwise a thread inside an ioctl at the
    /// time (between taking a receive buffer and giving it back, say)
    /// would put it where nothing drains it any more, and its mapping and
    /// `DeviceRef` would keep `ib_unregister_device()` waiting until the
    /// file is closed.
    torn_down: bool,
}

impl St {
    /// Keeps a receive buffer for reposting ([`Conn::pump`]), unless the
    /// connection was torn down: then it is freed here.
    fn keep_for_repost(&mut self, buf: DeviceBuf) {
        if !self.torn_down {
            // Never full: it holds at most the connection's receives.
            let _ = self.msg.repost.push(buf);
        }
    }
}

/// The cm ids of the connection.
///
/// An id's handler context is the connection, which owns the id here: a
/// reference cycle, by design, that [`Conn::shutdown`] breaks by sealing
/// this. A sealed `Ep` holds no id and takes none ([`Ep::install`] hands the
/// id back), so an id set up while the connection was being shut down (a
/// request handled as its listener closed, a connect that succeeded as the
/// device went) cannot slip in after the shutdown took the ids and keep the
/// connection, its QP and its device alive forever.
///
/// # Invariants
///
/// `sealed` implies `listener` and `id` are `None`.
struct Ep {
    listener: Option<CmId<Conn>>,
    id: Option<CmId<Conn>>,
    sealed: bool,
}

/// Which id of [`Ep`] to install.
enum Slot {
    Listener,
    Connection,
}

impl Ep {
    /// The connection's QP, if it has one.
    fn qp(&self) -> Option<&Qp> {
        self.id.as_ref().and_then(|id| id.qp())
    }

    /// Keeps `id` in `slot`, unless the connection was shut down: then the
    /// id comes back, for the caller to destroy (outside `ep`, or with
    /// [`HandlerId::disown`] inside its own handler).
    fn install(&mut self, slot: Slot, id: CmId<Conn>) -> core::result::Result<(), CmId<Conn>> {
        if self.sealed {
            return Err(id);
        }
        self.keep(slot, id);
        Ok(())
    }

    /// Keeps `id` in `slot`, for a caller that found `ep` unsealed
    /// ([`Ep::sealed`]) and has held it since.
    fn keep(&mut self, slot: Slot, id: CmId<Conn>) {
        // INVARIANT: not sealed (the caller checked, under the same guard).
        match slot {
            Slot::Listener => self.listener = Some(id),
            Slot::Connection => self.id = Some(id),
        }
    }

    /// Whether [`Ep::seal`] has run: `install` refuses from then on.
    fn sealed(&self) -> bool {
        self.sealed
    }

    /// Takes both ids and takes no more: the listener and the connection.
    fn seal(&mut self) -> (Option<CmId<Conn>>, Option<CmId<Conn>>) {
        self.sealed = true;
        // INVARIANT: sealed, and both taken.
        (self.listener.take(), self.id.take())
    }
}

/// One connection; the state of one open file of `/dev/rdma_krust`.
#[pin_data]
pub(crate) struct Conn {
    #[pin]
    st: Mutex<St>,
    #[pin]
    cv: CondVar,
    #[pin]
    ep: Mutex<Ep>,
    /// Exposed windows.
    #[pin]
    windows: Mutex<Windows>,
    /// Steps of one-sided operations posted and not yet completed, of any
    /// operation or benchmark: a peer's close waits for them on IB and RoCE
    /// ([`Conn::defer_hang_up`]). Counted from before each post, as its
    /// completion may be handled before the post returns; read under `st`
    /// where it decides.
    op_steps: AtomicU32,
    /// Pays the disconnect [`Conn::defer_hang_up`] put off once its time is
    /// up, if no waiter or completion has by then: a peer whose owner
    /// never calls in again would otherwise get no DREP, and its own
    /// `DISCONNECT` would wait for the CM to give up on its DREQ.
    #[pin]
    hang_up_timer: Delayed<Conn>,
    /// READs the message the peer announced as it arrives
    /// ([`Conn::read_ahead`]), so that what a peer sent before it closed is
    /// here even if the caller receives it later.
    #[pin]
    read_work: Delayed<Conn, READ_WORK>,
    /// Deregisters the regions of announces the peer has READ, after their
    /// grace ([`Conn::retire`]).
    #[pin]
    retire_work: Delayed<Conn, RETIRE_WORK>,
    registry: Arc<Registry>,
}

/// The `ID` of [`Conn::read_work`].
const READ_WORK: u8 = 1;
/// The `ID` of [`Conn::retire_work`].
const RETIRE_WORK: u8 = 2;

// SAFETY: `hang_up_timer` is a `Delayed<Conn>` field of `Conn`.
unsafe impl HasDelayed for Conn {
    const OFFSET: usize = core::mem::offset_of!(Conn, hang_up_timer);

    fn run(this: Arc<Self>) {
        this.pay_deferred_hang_up();
    }
}

// SAFETY: `retire_work` is a `Delayed<Conn, RETIRE_WORK>` field of `Conn`.
unsafe impl HasDelayed<RETIRE_WORK> for Conn {
    const OFFSET: usize = core::mem::offset_of!(Conn, retire_work);

    fn run(this: Arc<Self>) {
        this.retire();
    }
}

// SAFETY: `read_work` is a `Delayed<Conn, READ_WORK>` field of `Conn`.
unsafe impl HasDelayed<READ_WORK> for Conn {
    const OFFSET: usize = core::mem::offset_of!(Conn, read_work);

    fn run(this: Arc<Self>) {
        this.read_ahead();
    }
}

/// What one caller at a time may do on a connection: send a whole message
/// ([`TURN_SEND`]), receive one ([`TURN_RECV`]), or run a one-sided
/// operation, a window change or a benchmark ([`TURN_OP`]), or register
/// or READ an announced message ([`TURN_MSG_OP`], taken by a sender or
/// receiver inside its own turn, or by `read_work`). Unlike a mutex,
/// waiting for a turn is interruptible and has a deadline.
type Turns = u8;
const TURN_SEND: Turns = 1;
const TURN_RECV: Turns = 2;
const TURN_OP: Turns = 4;
const TURN_MSG_OP: Turns = 8;

/// Turns held; given back (and the next waiter woken) on drop.
struct Turn<'a> {
    conn: &'a Conn,
    turns: Turns,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut st = self.conn.st.lock();
        st.turns &= !self.turns;
        self.conn.cv.notify_all();
    }
}

fn sockaddr(a: &abi::Addr) -> Result<SockAddr> {
    if a.reserved != 0 {
        return Err(EINVAL);
    }
    match a.family {
        abi::AF_INET => Ok(SockAddr::v4(
            [a.addr[0], a.addr[1], a.addr[2], a.addr[3]],
            a.port,
        )),
        abi::AF_INET6 => Ok(SockAddr::v6(a.addr, a.port)),
        _ => Err(EINVAL),
    }
}

/// `0` means "the device's maximum"; anything else is clamped to it (and to
/// the 8 bits the CM carries).
fn clamp_depth(asked: u32, dev_max: u32) -> u32 {
    let max = dev_max.min(u8::MAX as u32);
    if asked == 0 {
        max
    } else {
        asked.min(max)
    }
}

impl Conn {
    /// A new, idle connection.
    pub(crate) fn new(registry: Arc<Registry>) -> Result<Arc<Self>> {
        let msg = Msg::new()?;
        let op = Ops::new()?;
        let msg_op = Ops::new()?;
        let windows = Windows::new()?;
        Arc::pin_init(
            pin_init!(Self {
                st <- new_mutex!(St {
                    state: State::Idle,
                    cm_event: None,
                    cm_closed: false,
                    peer_closed: false,
                    established: false,
                    msg,
                    op,
                    msg_op,
                    info: abi::ConnInfo {
                        recv_depth: RECV_DEPTH,
                        peer_recv_depth: RECV_DEPTH,
                        ..Default::default()
                    },
                    listen_caps: (0, 0),
                    listen_transport: abi::Transport::default(),
                    device_index: None,
                    polled: false,
                    spin: false,
                    turns: 0,
                    torn_down: false,
                }),
                cv <- new_condvar!(),
                ep <- new_mutex!(Ep {
                    listener: None,
                    id: None,
                    sealed: false,
                }),
                windows <- new_mutex!(windows),
                op_steps: AtomicU32::new(0),
                hang_up_timer <- Delayed::new(),
                read_work <- Delayed::new(),
                retire_work <- Delayed::new(),
                registry,
            }),
            GFP_KERNEL,
        )
    }

    /// Disconnects, if the peer broke the protocol (`Msg::hang_up`) and the
    /// connection was established, and moves the QP to the error state
    /// (`rdma_disconnect()` leaves it alone on iWARP once a close began).
    /// The peer gets `DISCONNECTED`, so its waits end instead of retrying
    /// into a QP that answers nothing. Called with `ep` held, where the
    /// debt can be paid: a completion on ib_core's workqueue, the polling
    /// reaper after its handlers, `ESTABLISHED`'s handler and the active
    /// side once its id is kept (the debt waits for whichever comes last).
    fn hang_up_if_owed(&self, ep: &Ep) {
        let Some(id) = ep.id.as_ref() else { return };
        {
            let mut st = self.st.lock();
            if !st.established || !core::mem::take(&mut st.msg.hang_up) {
                return;
            }
        }
        if let Err(e) = id.disconnect() {
            pr_debug!("disconnect after a protocol fault failed: {:?}\n", e);
        }
        if let Some(qp) = id.qp() {
            let _ = qp.fail();
        }
    }

    /// The error of an operation that found no QP: the connection's closing
    /// errno if it was closed (the QP goes away after the state says so),
    /// `ENOTCONN` if it never connected. Takes `st`, so it may be called
    /// with `ep` held, not with `st`.
    fn no_qp(&self) -> Error {
        Self::closed_error(&self.st.lock())
    }

    /// The error of a post that failed, `e`, with `ep` held. `ENOMEM` and
    /// `ENOBUFS` are this side's (a work box, a queue slot) and are the
    /// caller's to see. Anything else is the provider refusing work: it
    /// does that only for a QP that left RTS (siw's `ENOTCONN` while a
    /// state change holds the QP or once it closes, rxe's `EINVAL`), so
    /// the connection can carry nothing more. It closes with `ECONNRESET`,
    /// unless it closed already, and hangs up so the peer learns it; the
    /// caller gets the closing errno, never the provider's.
    fn post_failed(&self, ep: &Ep, e: Error) -> Error {
        if e == ENOMEM || e == errno::ENOBUFS() {
            return e;
        }
        let err = {
            let mut st = self.st.lock();
            match st.state {
                State::Connected => {
                    pr_debug!("the provider refused a post ({:?}): closing\n", e);
                    st.msg.hang_up = true;
                    self.close_locked(&mut st, errno::ECONNRESET());
                    Self::closed_error(&st)
                }
                State::Closed(closed) => closed,
                // Still connecting: the setup fails with it.
                _ => return e,
            }
        };
        self.hang_up_if_owed(ep);
        err
    }

    /// The errno that closed the connection, `ENOTCONN` if it is not
    /// closed.
    fn closed_error(st: &St) -> Error {
        Self::closed_error_or(st, errno::ENOTCONN())
    }

    /// The errno that closed the connection, `e` if it is not closed: what
    /// a call that failed because the connection closed under it reports.
    fn closed_error_or(st: &St, e: Error) -> Error {
        match st.state {
            State::Closed(closed) => closed,
            _ => e,
        }
    }

    fn close_locked(&self, st: &mut St, err: Error) {
        if !matches!(st.state, State::Closed(_)) {
            st.state = State::Closed(err);
            st.info.error = (-err.to_errno()) as u32;
        }
        self.cv.notify_all();
    }

    /// Waits, interruptibly and until `end`, until none of `turns` is held,
    /// then takes them all.
    fn take_turns(&self, turns: Turns, end: i64) -> Result<Turn<'_>> {
        self.wait(ms_until(end)?, |st| {
            if st.turns & turns != 0 {
                return None;
            }
            st.turns |= turns;
            Some(Ok(()))
        })?;
        Ok(Turn { conn: self, turns })
    }

    /// `IOCTL_CONN_INFO`.
    pub(crate) fn info(&self) -> abi::ConnInfo {
        let st = self.st.lock();
        let mut info = st.info;
        info.state = st.state.abi();
        info.credits = st.msg.credits;
        info
    }

    /// Registers as a user of `dev`, so that its removal tears this file's
    /// ids down first. Once per device: a listener bound to the device's
    /// address is attached already when its connection is set up.
    fn attach(self: &Arc<Self>, dev: &DeviceRef) -> Result {
        let index = dev.index();
        let old = self.st.lock().device_index;
        if old == Some(index) {
            return Ok(());
        }
        self.registry.attach(index, self.key(), self.clone())?;
        self.st.lock().device_index = Some(index);
        if let Some(old) = old {
            self.registry.detach(old, self.key());
        }
        Ok(())
    }

    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// Tears everything down: called when the file is released and when the
    /// connection's device goes away. Waiters get `err`.
    pub(crate) fn shutdown(&self, err: Error) {
        // Closed first, so that a caller who then finds no QP reports `err`.
        {
            let mut st = self.st.lock();
            st.torn_down = true;
            st.cm_closed = true;
            // The QP goes: a receiver waits for no more of its completions.
            st.peer_closed = false;
            self.close_locked(&mut st, err);
        }
        let (listener, mut id) = self.ep.lock().seal();
        // Outside the locks: these wait for running handlers and drain the QP
        // (whose completions take `st`). nvme-rdma's order: disconnect,
        // drain, destroy the QP and CQ; then the windows' MRs, the PD (with
        // the last of them), and the id.
        drop(listener);
        if let Some(id) = id.as_mut() {
            id.close_qp();
        }
        // With the QP gone no peer can reach a window: now they can go, and
        // no more come (a copy still running on one frees it when its chunk
        // is done: copies take a window per chunk).
        self.windows.lock().seal();
        drop(id);
        // Only a `DISCONNECTED` handler queues the timer, and with both ids
        // destroyed none runs any more (`rdma_destroy_id()` waits for a
        // running one; `ep` is sealed): cancelled now, it stays so, and the
        // module may go once the file is released.
        self.hang_up_timer.cancel();
        // Completions queue it: with the QP gone, none comes any more.
        self.read_work.cancel();
        // The regions it would free go with the queues below.
        self.retire_work.cancel();
        let index = self.st.lock().device_index.take();
        if let Some(index) = index {
            self.registry.detach(index, self.key());
        }
        // Buffers the drain gave back are freed with the queues.
        let mut st = self.st.lock();
        // A `DISCONNECTED` handled meanwhile set it again; the QP is gone.
        st.peer_closed = false;
        self.cv.notify_all();
        while st.msg.rx.pop().is_some() {}
        while st.msg.repost.pop().is_some() {}
        // An announced message's regions: the QP that exposed them is gone.
        while st.msg.out.pop().is_some() {}
        st.msg.retired = KVec::new();
        st.msg.body = None;
        for b in st.op.bufs.iter_mut() {
            *b = None;
        }
        for b in st.msg_op.bufs.iter_mut() {
            *b = None;
        }
    }

    fn require_connected(st: &St) -> Result {
        match st.state {
            State::Connected => Ok(()),
            _ => Err(Self::closed_error(st)),
        }
    }
}

impl DeviceUser for Conn {
    fn device_going(&self) {
        let mut st = self.st.lock();
        st.cm_closed = true;
        self.close_locked(&mut st, ENODEV);
    }

    fn device_removed(&self) {
        self.shutdown(ENODEV);
    }
}
