// SPDX-License-Identifier: GPL-2.0

//! One RC connection per open file: rdma_cm setup on both sides, and
//! messages (SEND/RECV) with credit-based flow control.
//!
//! Locking: `st` (a mutex) holds everything completions and cm events touch;
//! completions run on ib_core's workqueue (or, on a busy-polling connection,
//! in the waiting thread, under `ep`) and cm handlers in rdma_cm's, all in
//! process context. `ep` holds the cm ids and is taken before `st`. Neither
//! lock is ever held across a call that waits for a cm handler
//! (`rdma_destroy_id()`, via dropping a [`CmId`]), because handlers take
//! `ep` and `st` themselves.
//!
//! Flow control (`Documentation/flow-control.rst`): each side keeps
//! [`abi::RECV_DEPTH`] receives posted; a credit is one posted receive of the
//! peer. Every message carries in its header the receives its sender has
//! reposted since its last message (`grant`), and a LOW flag when the sender
//! is down to its last credit. A data fragment needs two credits (one stays
//! in reserve), a credit-only message needs one. So the sender never posts a
//! SEND the peer has no receive for, and never sees an RNR.

use crate::abi::{self, WireHdr};
use crate::kapi::{
    cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, SockAddr},
    dma::{CpuBuf, DeviceBuf, Direction},
    errno,
    ib::DeviceRef,
    misc,
    verbs::{Access, CompletionHandler, Qp, QpCaps, Reaping, SendOp, Wc, Window, WorkCtx},
};
use crate::registry::{DeviceUser, Registry};
#[path = "bench.rs"]
mod bench;

use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, CondVarTimeoutResult, Mutex},
    time::{msecs_to_jiffies, Ktime},
    uaccess::UserSlice,
};

const RECV_DEPTH: u32 = abi::RECV_DEPTH;
const RECV_BUF: usize = abi::RECV_BUF_SIZE as usize;
const HDR: usize = abi::WIRE_HDR_SIZE as usize;
const FRAG: usize = RECV_BUF - HDR;
const SEND_DEPTH: u32 = 2 * RECV_DEPTH;
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
    },
}

impl WorkCtx for Work {
    fn sge(&self) -> Option<(&DeviceBuf, usize)> {
        match self {
            Work::Recv(b) => Some((b, b.len())),
            Work::Send(b, len) => Some((b, *len)),
            Work::Op { buf, len, .. } => buf.as_ref().map(|b| (b, *len)),
        }
    }
}

/// One step of a one-sided operation.
enum Step {
    /// A send-queue operation with its buffer.
    Send(SendOp, Option<DeviceBuf>, usize),
    /// Register a window's region.
    Reg(Arc<Window>, Access),
    /// Invalidate a window's key.
    Inv(Arc<Window>),
}

/// A window exposed to the peer, in its slot of [`Conn::windows`] (the
/// slot's index is the window's id).
struct Exposed {
    /// Memory and region together; copies to and from user memory hold a
    /// count of their own, so they run without the `windows` lock.
    mem: Arc<Window>,
    /// Registered and not revoked. A window whose registration or revocation
    /// did not finish stays here, unusable, until the connection is torn
    /// down (its memory must outlive any key the peer might still use).
    live: bool,
}

/// A received data fragment waiting for `IOCTL_RECV`.
struct Fragment {
    hdr: WireHdr,
    buf: CpuBuf,
    len: usize,
    /// When its completion was handled (`ktime_get()`, ns).
    stamp: i64,
}

/// A fixed-capacity FIFO (6.12's `KVec` has no `remove`).
struct Fifo<T> {
    slots: KVec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Fifo<T> {
    fn new(cap: usize) -> Result<Self> {
        let mut slots = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            head: 0,
            len: 0,
        })
    }

    fn push(&mut self, v: T) -> core::result::Result<(), T> {
        let cap = self.slots.len();
        if self.len == cap {
            return Err(v);
        }
        let at = (self.head + self.len).checked_rem(cap).unwrap_or(0);
        match self.slots.get_mut(at) {
            Some(slot) => {
                *slot = Some(v);
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.slots.get_mut(self.head)?.take();
        self.head = (self.head + 1).checked_rem(self.slots.len()).unwrap_or(0);
        self.len -= 1;
        v
    }

    fn front(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        self.slots.get(self.head)?.as_ref()
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// State shared with completions and cm events.
struct St {
    state: u32,
    error: Option<Error>,
    /// The last cm event the connect path waits for.
    cm_event: Option<CmEventKind>,
    /// Data fragments received, in order; only whole messages and the
    /// start of the next one, each checked by `wire`.
    rx: Fifo<Fragment>,
    /// The peer's message stream as checked so far.
    wire: abi::WireRx,
    /// The peer broke the protocol: later receives are dropped unread.
    wire_broken: bool,
    /// Receive buffers that are free to repost (credit-only messages).
    repost: Fifo<DeviceBuf>,
    /// SENDs the peer has receives for.
    credits: u32,
    /// Receives reposted and not yet announced to the peer.
    pending_grant: u32,
    /// The peer said it is down to its last credit.
    peer_low: bool,
    /// SENDs posted and not completed.
    sends_inflight: u32,
    /// Number of the current one-sided operation.
    op_gen: u64,
    /// Its steps not completed yet.
    op_pending: u32,
    /// Its first failure.
    op_error: Option<Error>,
    /// Its buffers, given back by completions, by step.
    op_bufs: KVec<Option<DeviceBuf>>,
    /// When each step's completion was handled (`ktime_get()`, ns).
    op_stamps: KVec<i64>,
    info: abi::ConnInfo,
    /// Caps from `IOCTL_LISTEN` for the passive side.
    listen_caps: (u32, u32),
    /// The RDMA device index once bound, for the registry.
    device_index: Option<u32>,
    /// Raw messages (`abi::CONN_RAW`): no header, no credits.
    raw: bool,
    /// Busy polling (`abi::CONN_POLL`): waiters reap the completions.
    polled: bool,
    /// The [`Turn`]s taken.
    turns: u8,
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
        match slot {
            Slot::Listener => self.listener = Some(id),
            Slot::Connection => self.id = Some(id),
        }
        Ok(())
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
    /// Exposed windows: [`abi::MAX_WINDOWS`] slots, allocated up front, so
    /// that removing one never allocates (and cannot fail).
    #[pin]
    windows: Mutex<KVec<Option<Exposed>>>,
    registry: Arc<Registry>,
}

/// What one caller at a time may do on a connection: send a whole message
/// ([`TURN_SEND`]), receive one ([`TURN_RECV`]), or run a one-sided
/// operation, a window change or a benchmark ([`TURN_OP`]). Unlike a mutex,
/// waiting for a turn is interruptible and has a deadline.
type Turns = u8;
const TURN_SEND: Turns = 1;
const TURN_RECV: Turns = 2;
const TURN_OP: Turns = 4;

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

/// The `ktime_get()` time (ns) `ms` milliseconds from now.
fn deadline(ms: u32) -> i64 {
    Ktime::ktime_get().to_ns() + i64::from(ms) * 1_000_000
}

/// Milliseconds left until `end` (rounded up); `ETIMEDOUT` once it passed.
/// Loops that wait more than once wait against one deadline, so that an
/// ioctl's `timeout_ms` bounds the whole call.
fn ms_until(end: i64) -> Result<u32> {
    let left = end - Ktime::ktime_get().to_ns();
    if left <= 0 {
        return Err(errno::ETIMEDOUT());
    }
    Ok(u32::try_from((left + 999_999) / 1_000_000).unwrap_or(u32::MAX))
}

fn timeout_of(ms: u32) -> u32 {
    if ms == 0 {
        abi::DEFAULT_TIMEOUT_MS
    } else {
        ms
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
        let rx = Fifo::new(RECV_DEPTH as usize)?;
        let repost = Fifo::new(RECV_DEPTH as usize)?;
        let mut op_bufs = KVec::with_capacity(OP_SLOTS, GFP_KERNEL)?;
        let mut op_stamps = KVec::with_capacity(OP_SLOTS, GFP_KERNEL)?;
        for _ in 0..OP_SLOTS {
            op_bufs.push(None, GFP_KERNEL)?;
            op_stamps.push(0, GFP_KERNEL)?;
        }
        let mut windows = KVec::with_capacity(abi::MAX_WINDOWS as usize, GFP_KERNEL)?;
        for _ in 0..abi::MAX_WINDOWS {
            windows.push(None, GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Self {
                st <- new_mutex!(St {
                    state: abi::state::IDLE,
                    error: None,
                    cm_event: None,
                    rx,
                    wire: abi::WireRx::default(),
                    wire_broken: false,
                    repost,
                    credits: 0,
                    pending_grant: 0,
                    peer_low: false,
                    sends_inflight: 0,
                    op_gen: 0,
                    op_pending: 0,
                    op_error: None,
                    op_bufs,
                    op_stamps,
                    info: abi::ConnInfo {
                        recv_depth: RECV_DEPTH,
                        ..Default::default()
                    },
                    listen_caps: (0, 0),
                    device_index: None,
                    raw: false,
                    polled: false,
                    turns: 0,
                }),
                cv <- new_condvar!(),
                ep <- new_mutex!(Ep {
                    listener: None,
                    id: None,
                    sealed: false,
                }),
                windows <- new_mutex!(windows),
                registry,
            }),
            GFP_KERNEL,
        )
    }

    /// Waits until `f` returns `Some`, for at most `ms` milliseconds.
    /// A signal gives `EINTR`, the timeout `ETIMEDOUT`.
    fn wait<T>(&self, ms: u32, mut f: impl FnMut(&mut St) -> Option<Result<T>>) -> Result<T> {
        let mut left = msecs_to_jiffies(ms);
        let mut st = self.st.lock();
        if st.polled {
            drop(st);
            return self.wait_polling(ms, f);
        }
        loop {
            if let Some(r) = f(&mut st) {
                return r;
            }
            match self.cv.wait_interruptible_timeout(&mut st, left) {
                CondVarTimeoutResult::Timeout => return Err(errno::ETIMEDOUT()),
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
                CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
            }
        }
    }

    /// [`Self::wait`] on a busy-polling connection (`abi::CONN_POLL`): this
    /// thread reaps the completions. It spins while completions come, and
    /// after [`abi::POLL_SPIN_US`] without one naps a jiffy between polls
    /// (a cm event or another waiter's completion ends the nap early).
    fn wait_polling<T>(
        &self,
        ms: u32,
        mut f: impl FnMut(&mut St) -> Option<Result<T>>,
    ) -> Result<T> {
        // Jiffies, not ktime: this runs on every pass of the loop, and
        // ktime_get() reads the clocksource (the emulated HPET under TCG).
        let start = misc::jiffies();
        let timeout = msecs_to_jiffies(ms);
        let spin = msecs_to_jiffies(abi::POLL_SPIN_US.div_ceil(1000)).max(1);
        let mut last_seen = start;
        loop {
            let reaped = self.reap();
            let mut st = self.st.lock();
            if let Some(r) = f(&mut st) {
                return r;
            }
            let now = misc::jiffies();
            if now.wrapping_sub(start) >= timeout {
                return Err(errno::ETIMEDOUT());
            }
            if reaped > 0 {
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
            misc::yield_now();
        }
    }

    /// Runs the handlers of the completions waiting in a busy-polling
    /// connection's CQ; returns how many ran. `ep` serializes the reapers,
    /// so messages are handled in the order they arrived.
    fn reap(&self) -> u32 {
        let ep = self.ep.lock();
        // Each handler notifies `cv`, waking waiters that nap.
        ep.qp().map_or(0, |qp| qp.reap(POLL_BUDGET).unwrap_or(0))
    }

    /// The error of an operation that found no QP: the connection's closing
    /// errno if it was closed (the QP goes away after the state says so),
    /// `ENOTCONN` if it never connected. Takes `st`, so it may be called
    /// with `ep` held, not with `st`.
    fn no_qp(&self) -> Error {
        let st = self.st.lock();
        match st.state {
            abi::state::CLOSED => Self::closed_error(&st),
            _ => errno::ENOTCONN(),
        }
    }

    fn closed_error(st: &St) -> Error {
        st.error.unwrap_or(errno::ENOTCONN())
    }

    fn close_locked(&self, st: &mut St, err: Error) {
        if st.state != abi::state::CLOSED {
            st.state = abi::state::CLOSED;
            st.error = Some(err);
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
        info.state = st.state;
        info.credits = st.credits;
        info
    }

    /// Leaves the idle state for `next` (connecting or listening), with the
    /// connection flags of the request.
    fn begin(&self, flags: u32, next: u32) -> Result {
        if flags & !(abi::CONN_RAW | abi::CONN_POLL) != 0 {
            return Err(EINVAL);
        }
        let mut st = self.st.lock();
        if st.state != abi::state::IDLE {
            return Err(errno::EISCONN());
        }
        st.state = next;
        st.raw = flags & abi::CONN_RAW != 0;
        st.polled = flags & abi::CONN_POLL != 0;
        Ok(())
    }

    /// `IOCTL_CONNECT`: resolve, create the QP, post receives, connect.
    pub(crate) fn connect(self: &Arc<Self>, req: &abi::ConnectReq) -> Result<abi::ConnInfo> {
        let dst = sockaddr(&req.dst)?;
        self.begin(req.flags, abi::state::CONNECTING)?;
        let r = self.connect_steps(&dst, req);
        if let Err(e) = r {
            let mut st = self.st.lock();
            self.close_locked(&mut st, e);
            // The connect's own error, not what tearing down its QP caused
            // (its flushed receives may have closed the connection first).
            st.error = Some(e);
            st.info.error = (-e.to_errno()) as u32;
        }
        r.map(|()| self.info())
    }

    fn connect_steps(self: &Arc<Self>, dst: &SockAddr, req: &abi::ConnectReq) -> Result {
        let timeout = timeout_of(req.timeout_ms);
        // Owned here until established: an error or a signal drops it, which
        // destroys the QP and the id.
        let mut id = CmId::new(self.clone())?;
        id.resolve_addr(dst, RESOLVE_MS.min(timeout))?;
        self.wait_cm(timeout, CmEventKind::AddrResolved)?;
        id.resolve_route(RESOLVE_MS.min(timeout))?;
        self.wait_cm(timeout, CmEventKind::RouteResolved)?;

        let dev = id.device().ok_or(ENODEV)?;
        let attrs = dev.attrs();
        let resp = clamp_depth(req.responder_resources, attrs.max_qp_rd_atom);
        let init = clamp_depth(req.initiator_depth, attrs.max_qp_init_rd_atom);
        let param = self.prepare(&mut id, &dev, resp, init)?;
        id.connect(&param)?;
        self.wait(timeout, |st| match st.state {
            abi::state::CONNECTED => Some(Ok(())),
            abi::state::CLOSED => Some(Err(Self::closed_error(st))),
            _ => None,
        })?;
        if let Some(qp) = id.qp() {
            self.record_depths(qp)?;
        }
        let refused = self.ep.lock().install(Slot::Connection, id);
        // Shut down meanwhile (the device went): the id goes, outside `ep`.
        refused.map_err(|id| {
            drop(id);
            Self::closed_error(&self.st.lock())
        })
    }

    fn wait_cm(&self, ms: u32, want: CmEventKind) -> Result {
        self.wait(ms, |st| {
            if st.state == abi::state::CLOSED {
                return Some(Err(Self::closed_error(st)));
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
    fn prepare(
        self: &Arc<Self>,
        id: &mut CmId<Self>,
        dev: &DeviceRef,
        resp: u32,
        init: u32,
    ) -> Result<ConnParam> {
        let attrs = dev.attrs();
        let polled = {
            let mut st = self.st.lock();
            st.info.asked_responder_resources = resp;
            st.info.asked_initiator_depth = init;
            st.info.dev_max_qp_rd_atom = attrs.max_qp_rd_atom;
            st.info.dev_max_qp_init_rd_atom = attrs.max_qp_init_rd_atom;
            st.info.device = dev.name();
            st.polled
        };
        let qp = id.create_qp(QpCaps {
            send_wr: SEND_DEPTH,
            recv_wr: RECV_DEPTH,
            reaping: if polled {
                Reaping::Direct
            } else {
                Reaping::Workqueue
            },
        })?;
        self.post_initial_recvs(qp, dev)?;
        self.attach(dev)?;
        Ok(ConnParam {
            responder_resources: resp as u8,
            initiator_depth: init as u8,
            retry_count: 7,
            rnr_retry_count: 7,
        })
    }

    fn post_initial_recvs(self: &Arc<Self>, qp: &Qp, dev: &DeviceRef) -> Result {
        for _ in 0..RECV_DEPTH {
            let buf = DeviceBuf::alloc(dev, RECV_BUF, Direction::FromDevice)?;
            qp.post_recv(self, Work::Recv(buf)).map_err(|(e, _)| e)?;
        }
        self.st.lock().credits = RECV_DEPTH;
        Ok(())
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

    /// `IOCTL_LISTEN`: bind, listen, and take the first request.
    pub(crate) fn listen(self: &Arc<Self>, req: &abi::ListenReq) -> Result {
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        let addr = sockaddr(&req.addr)?;
        self.begin(req.flags, abi::state::LISTENING)?;
        self.st.lock().listen_caps = (req.responder_resources, req.initiator_depth);
        let listener = CmId::new(self.clone()).and_then(|id| {
            id.listen(&addr, 4)?;
            Ok(id)
        });
        let l = match listener {
            Ok(l) => l,
            Err(e) => {
                self.st.lock().state = abi::state::IDLE;
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
                let l = self.ep.lock().listener.take();
                drop(l);
                self.st.lock().state = abi::state::IDLE;
                return Err(e);
            }
        }
        Ok(())
    }

    /// `IOCTL_ACCEPT`: wait for the listened-for connection.
    pub(crate) fn accept(&self, timeout_ms: u32) -> Result<abi::ConnInfo> {
        {
            let st = self.st.lock();
            if st.state == abi::state::IDLE {
                return Err(EINVAL);
            }
        }
        let r = self.wait(timeout_of(timeout_ms), |st| match st.state {
            abi::state::CONNECTED => Some(Ok(())),
            abi::state::CLOSED => Some(Err(Self::closed_error(st))),
            _ => None,
        });
        if r.is_ok() {
            // One connection per fd: stop listening. Dropped outside the lock.
            let listener = self.ep.lock().listener.take();
            drop(listener);
            let ep = self.ep.lock();
            if let Some(qp) = ep.qp() {
                self.record_depths(qp)?;
            }
        }
        r.map(|()| self.info())
    }

    /// Records the READ/atomic depths the QP was given: the ground truth of
    /// the negotiation, reported by `IOCTL_CONN_INFO`.
    fn record_depths(&self, qp: &Qp) -> Result {
        let (issue, serve) = qp.rd_atomic()?;
        let mut st = self.st.lock();
        st.info.initiator_depth = issue;
        st.info.responder_resources = serve;
        Ok(())
    }

    /// The passive side, inside the CONNECT_REQUEST handler.
    fn on_request(self: &Arc<Self>, hid: &HandlerId<'_, Self>, ev: &CmEvent) {
        let caps = {
            let mut st = self.st.lock();
            if st.state != abi::state::LISTENING {
                return; // Not adopted: rdma_cm rejects it.
            }
            st.state = abi::state::CONNECTING;
            st.listen_caps
        };
        let r = hid.adopt().and_then(|mut child| {
            let r = self.accept_child(hid, &mut child, ev, caps);
            if r.is_err() {
                // Best effort: the peer then fails at once with
                // ECONNREFUSED instead of waiting for its timeout.
                let _ = hid.reject();
                hid.disown(child);
                return r;
            }
            // Shut down while this request was set up (the file closed, the
            // device went): rdma_cm destroys the child, the peer is refused.
            let refused = self.ep.lock().install(Slot::Connection, child);
            refused.map_err(|child| {
                hid.disown(child);
                Self::closed_error(&self.st.lock())
            })
        });
        if let Err(e) = r {
            pr_debug!("accept failed: {:?}\n", e);
            let mut st = self.st.lock();
            self.close_locked(&mut st, e);
        }
    }

    fn accept_child(
        self: &Arc<Self>,
        hid: &HandlerId<'_, Self>,
        child: &mut CmId<Self>,
        ev: &CmEvent,
        caps: (u32, u32),
    ) -> Result {
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
        let param = self.prepare(child, &dev, resp, init)?;
        hid.accept(&param)
    }

    /// `IOCTL_DISCONNECT`.
    pub(crate) fn disconnect(&self) -> Result {
        {
            let st = self.st.lock();
            if st.state != abi::state::CONNECTED {
                return Err(errno::ENOTCONN());
            }
        }
        let ep = self.ep.lock();
        match &ep.id {
            Some(id) => id.disconnect(),
            None => Err(errno::ENOTCONN()),
        }
    }

    /// Tears everything down: called when the file is released and when the
    /// connection's device goes away. Waiters get `err`.
    pub(crate) fn shutdown(&self, err: Error) {
        // Closed first, so that a caller who then finds no QP reports `err`.
        {
            let mut st = self.st.lock();
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
        // With the QP gone no peer can reach a window: now they can go (a
        // copy still running on one frees it when it ends).
        for w in self.windows.lock().iter_mut() {
            *w = None;
        }
        drop(id);
        let index = self.st.lock().device_index.take();
        if let Some(index) = index {
            self.registry.detach(index, self.key());
        }
        // Buffers the drain gave back are freed with the queues.
        let mut st = self.st.lock();
        while st.rx.pop().is_some() {}
        while st.repost.pop().is_some() {}
        for b in st.op_bufs.iter_mut() {
            *b = None;
        }
    }

    fn require_connected(st: &St) -> Result {
        match st.state {
            abi::state::CONNECTED => Ok(()),
            abi::state::CLOSED => Err(Self::closed_error(st)),
            _ => Err(errno::ENOTCONN()),
        }
    }

    /// Reposts free receive buffers and, when the peer needs them, sends the
    /// credits back. Process context, `ep` not held.
    fn pump(self: &Arc<Self>) -> Result {
        let ep = self.ep.lock();
        let Some(qp) = ep.qp() else {
            return Err(self.no_qp());
        };
        loop {
            let buf = self.st.lock().repost.pop();
            let Some(buf) = buf else { break };
            qp.post_recv(self, Work::Recv(buf)).map_err(|(e, _)| e)?;
            self.st.lock().pending_grant += 1;
        }
        let (grant, low) = {
            let mut st = self.st.lock();
            let due = !st.raw
                && st.pending_grant > 0
                && (st.peer_low || st.pending_grant >= abi::GRANT_BATCH)
                && st.credits >= 1;
            if !due {
                return Ok(());
            }
            st.credits -= 1;
            st.peer_low = false;
            st.sends_inflight += 1;
            let grant = core::mem::take(&mut st.pending_grant);
            (grant, st.credits < 2)
        };
        let hdr = WireHdr {
            flags: abi::WIRE_CREDIT | if low { abi::WIRE_LOW } else { 0 },
            grant,
            msg_len: 0,
            offset: 0,
        };
        let dev = qp.pd().device().clone();
        let r = DeviceBuf::alloc(&dev, HDR, Direction::ToDevice).and_then(|buf| {
            let mut cpu = buf.into_cpu();
            cpu.get_mut(..HDR)
                .ok_or(EINVAL)?
                .copy_from_slice(&hdr.encode());
            qp.post_send(self, Work::Send(cpu.into_device(), HDR), SendOp::Send)
                .map_err(|(e, _)| e)
        });
        if r.is_err() {
            let mut st = self.st.lock();
            st.sends_inflight -= 1;
            st.pending_grant += grant;
        }
        r
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
        let frags = len.div_ceil(FRAG).max(1);
        let timeout = timeout_of(x.timeout_ms);
        let end = deadline(timeout);
        let _turn = self.take_turns(TURN_SEND, end)?;
        let raw = {
            let st = self.st.lock();
            Self::require_connected(&st)?;
            st.raw
        };
        if raw {
            return self.send_raw(x, ms_until(end)?);
        }

        // Take every credit the message needs before sending any fragment,
        // so a signal or timeout never leaves half a message on the wire.
        loop {
            self.pump()?;
            let got = self.wait(ms_until(end)?, |st| {
                if let Err(e) = Self::require_connected(st) {
                    return Some(Err(e));
                }
                if st.credits as usize > frags {
                    st.credits -= frags as u32;
                    return Some(Ok(true));
                }
                // Free receives to repost: go back and pump.
                if st.repost.len() > 0 {
                    return Some(Ok(false));
                }
                None
            })?;
            if got {
                break;
            }
        }

        // Copy the whole message in first: a fault in the user buffer then
        // costs nothing on the wire (a half-sent message would stall the
        // peer's IOCTL_RECV forever).
        let bufs = match self.stage_message(x, len, frags) {
            Ok(b) => b,
            Err(e) => {
                self.st.lock().credits += frags as u32;
                return Err(e);
            }
        };
        let mut result = Ok(());
        for (i, cpu) in bufs.into_iter().enumerate() {
            let chunk = (len - i * FRAG).min(FRAG);
            if let Err(e) = self.send_fragment(cpu, i, frags, chunk, len) {
                // Credits of fragments never posted go back.
                self.st.lock().credits += (frags - i) as u32;
                result = Err(e);
                break;
            }
        }
        // Every posted fragment completes (a failure closes the connection).
        let done = self.wait(timeout.max(abi::DEFAULT_TIMEOUT_MS), |st| {
            if st.sends_inflight == 0 {
                return Some(Ok(()));
            }
            if st.state == abi::state::CLOSED {
                return Some(Err(Self::closed_error(st)));
            }
            None
        });
        result.and(done)
    }

    /// The fragments of a message, headers left blank, data copied in.
    fn stage_message(&self, x: &abi::Xfer, len: usize, frags: usize) -> Result<KVec<CpuBuf>> {
        let dev = self.op_device()?;
        let mut reader = UserSlice::new(x.buf as usize, len).reader();
        let mut bufs = KVec::with_capacity(frags, GFP_KERNEL)?;
        for i in 0..frags {
            let chunk = (len - i * FRAG).min(FRAG);
            let buf = DeviceBuf::alloc(&dev, HDR + chunk.max(1), Direction::ToDevice)?;
            let mut cpu = buf.into_cpu();
            reader.read_slice(cpu.get_mut(HDR..HDR + chunk).ok_or(EINVAL)?)?;
            bufs.push(cpu, GFP_KERNEL)?;
        }
        Ok(bufs)
    }

    /// A raw SEND: exactly the caller's bytes, then wait for it.
    fn send_raw(self: &Arc<Self>, x: &abi::Xfer, timeout: u32) -> Result {
        let len = x.len as usize;
        if len > RECV_BUF {
            return Err(errno::EMSGSIZE());
        }
        let dev = self.op_device()?;
        let mut cpu = DeviceBuf::alloc(&dev, len.max(1), Direction::ToDevice)?.into_cpu();
        UserSlice::new(x.buf as usize, len)
            .reader()
            .read_slice(cpu.get_mut(..len).ok_or(EINVAL)?)?;
        self.st.lock().sends_inflight += 1;
        let r = {
            let ep = self.ep.lock();
            match ep.qp() {
                Some(qp) => qp
                    .post_send(self, Work::Send(cpu.into_device(), len), SendOp::Send)
                    .map_err(|(e, _)| e),
                None => Err(self.no_qp()),
            }
        };
        if let Err(e) = r {
            self.st.lock().sends_inflight -= 1;
            return Err(e);
        }
        self.wait(timeout, |st| {
            if st.sends_inflight == 0 {
                return Some(Ok(()));
            }
            if st.state == abi::state::CLOSED {
                return Some(Err(Self::closed_error(st)));
            }
            None
        })
    }

    fn send_fragment(
        self: &Arc<Self>,
        mut cpu: CpuBuf,
        i: usize,
        frags: usize,
        chunk: usize,
        len: usize,
    ) -> Result {
        let (grant, low) = {
            let mut st = self.st.lock();
            st.peer_low = false;
            st.sends_inflight += 1;
            (core::mem::take(&mut st.pending_grant), st.credits < 2)
        };
        let mut flags = 0;
        if i == 0 {
            flags |= abi::WIRE_FIRST;
        }
        if i + 1 == frags {
            flags |= abi::WIRE_LAST;
        }
        if low {
            flags |= abi::WIRE_LOW;
        }
        let hdr = WireHdr {
            flags,
            grant,
            msg_len: len as u32,
            offset: (i * FRAG) as u32,
        };
        cpu.get_mut(..HDR)
            .ok_or(EINVAL)?
            .copy_from_slice(&hdr.encode());
        let ep = self.ep.lock();
        let r = match ep.qp() {
            Some(qp) => qp
                .post_send(
                    self,
                    Work::Send(cpu.into_device(), HDR + chunk),
                    SendOp::Send,
                )
                .map_err(|(e, _)| e),
            None => Err(self.no_qp()),
        };
        if r.is_err() {
            let mut st = self.st.lock();
            st.sends_inflight -= 1;
            st.pending_grant += grant;
        }
        r
    }

    /// `IOCTL_RECV`: the next message, into user memory. Returns its length.
    pub(crate) fn recv(self: &Arc<Self>, x: &abi::Xfer) -> Result<u64> {
        if x.flags != 0 {
            return Err(EINVAL);
        }
        let end = deadline(timeout_of(x.timeout_ms));
        // One receiver at a time takes fragments off the queue.
        let _turn = self.take_turns(TURN_RECV, end)?;
        if self.st.lock().raw {
            return self.recv_raw(x, ms_until(end)?);
        }
        // Wait until a whole message is here; nothing is taken before that,
        // so a signal or a timeout leaves the queue as it was.
        let msg_len = loop {
            self.pump()?;
            let r = self.wait(ms_until(end)?, |st| {
                if let Some(f) = st.rx.front() {
                    let msg_len = f.hdr.msg_len as usize;
                    let frags = msg_len.div_ceil(FRAG).max(1);
                    if st.rx.len() >= frags {
                        return Some(Ok(Some(msg_len)));
                    }
                }
                if st.repost.len() > 0 {
                    return Some(Ok(None));
                }
                if let Err(e) = Self::require_connected(st) {
                    return Some(Err(e));
                }
                None
            })?;
            if let Some(n) = r {
                break n;
            }
        };
        if msg_len as u64 > x.len {
            return Err(errno::EMSGSIZE());
        }
        let frags = msg_len.div_ceil(FRAG).max(1);
        let mut writer = UserSlice::new(x.buf as usize, msg_len).writer();
        let mut result = Ok(());
        for _ in 0..frags {
            let f = self.st.lock().rx.pop();
            let Some(f) = f else { break };
            if result.is_ok() {
                result = match f.buf.get(HDR..f.len.max(HDR)) {
                    Some(payload) => writer.write_slice(payload),
                    None => Err(errno::EPROTO()),
                };
            }
            // The buffer goes back to the device and is reposted.
            let _ = self.st.lock().repost.push(f.buf.into_device());
        }
        // The message is the caller's now: reposting and returning credits
        // is best effort here, and a connection that broke meanwhile (the
        // peer closing after its last message) fails the next call instead.
        let _ = self.pump();
        result.map(|()| msg_len as u64)
    }
}

impl Conn {
    /// Posts `steps` as one operation and waits for all of them. Returns
    /// the buffers the completions gave back, by step.
    fn run_op(
        self: &Arc<Self>,
        timeout_ms: u32,
        steps: KVec<Step>,
    ) -> Result<KVec<Option<DeviceBuf>>> {
        let n = steps.len();
        if n == 0 || n > OP_MAX_CHUNKS {
            return Err(EINVAL);
        }
        let gen = {
            let mut st = self.st.lock();
            Self::require_connected(&st)?;
            st.op_gen += 1;
            st.op_pending = n as u32;
            st.op_error = None;
            for b in st.op_bufs.iter_mut() {
                *b = None;
            }
            st.op_gen
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
            st.op_pending -= (n - posted) as u32;
        }
        // Posted steps always complete: successfully, with an error, or
        // flushed when the connection goes down.
        let done = self.wait(timeout_of(timeout_ms), |st| {
            (st.op_pending == 0).then(|| st.op_error.map_or(Ok(()), Err))
        });
        result?;
        done?;
        let mut st = self.st.lock();
        let mut out = KVec::with_capacity(n, GFP_KERNEL)?;
        for b in st.op_bufs.iter_mut().take(n) {
            out.push(b.take(), GFP_KERNEL)?;
        }
        Ok(out)
    }

    /// Connected, and for READs and atomics (`rd_atomic`), allowed to issue
    /// them: a connection that negotiated `initiator_depth` 0 cannot.
    fn require_initiator(&self, rd_atomic: bool) -> Result {
        let st = self.st.lock();
        Self::require_connected(&st)?;
        if rd_atomic && st.info.initiator_depth == 0 {
            return Err(errno::EOPNOTSUPP());
        }
        Ok(())
    }

    fn op_device(&self) -> Result<DeviceRef> {
        let ep = self.ep.lock();
        let qp = ep.qp().ok_or_else(|| self.no_qp())?;
        Ok(qp.pd().device().clone())
    }

    /// `IOCTL_RDMA_WRITE` and `IOCTL_RDMA_READ`.
    pub(crate) fn rdma(self: &Arc<Self>, r: &abi::Rdma, write: bool) -> Result {
        if r.len == 0 || r.len > abi::MAX_MSG_SIZE {
            return Err(EINVAL);
        }
        let _turn = self.take_turns(TURN_OP, deadline(timeout_of(r.timeout_ms)))?;
        self.require_initiator(!write)?;
        let dev = self.op_device()?;
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
        let _turn = self.take_turns(TURN_OP, deadline(timeout_of(a.timeout_ms)))?;
        self.require_initiator(true)?;
        let buf = DeviceBuf::alloc(&self.op_device()?, 8, Direction::FromDevice)?;
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

    /// `IOCTL_EXPOSE`: a zeroed buffer the peer may access as asked, and no
    /// more. Returns (address, rkey, id).
    pub(crate) fn expose(self: &Arc<Self>, e: &abi::Expose) -> Result<(u64, u32, u32)> {
        let known = abi::ACCESS_READ | abi::ACCESS_WRITE | abi::ACCESS_ATOMIC;
        if e.reserved != 0 || e.access == 0 || e.access & !known != 0 {
            return Err(EINVAL);
        }
        if e.len == 0 || e.len > abi::MAX_WINDOW_SIZE {
            return Err(EINVAL);
        }
        let mut access = Access::NONE;
        if e.access & abi::ACCESS_READ != 0 {
            access = access.union(Access::REMOTE_READ);
        }
        if e.access & abi::ACCESS_WRITE != 0 {
            access = access.union(Access::REMOTE_WRITE);
        }
        if e.access & abi::ACCESS_ATOMIC != 0 {
            access = access.union(Access::REMOTE_ATOMIC);
        }
        let _turn = self.take_turns(TURN_OP, deadline(abi::DEFAULT_TIMEOUT_MS))?;
        Self::require_connected(&self.st.lock())?;
        let pd = {
            let ep = self.ep.lock();
            let qp = ep.qp().ok_or_else(|| self.no_qp())?;
            qp.pd().clone()
        };
        // The turn keeps other exposes and revokes out until this one is in
        // its slot.
        let id = self
            .windows
            .lock()
            .iter()
            .position(Option::is_none)
            .ok_or(ENOSPC)?;
        // Not a kernel address: the window id in the high bits.
        let mem = Arc::new(
            Window::new(&pd, e.len as usize, (id as u64 + 1) << 32)?,
            GFP_KERNEL,
        )?;
        let (addr, rkey) = (mem.iova(), mem.rkey());
        if let Some(slot) = self.windows.lock().get_mut(id) {
            *slot = Some(Exposed {
                mem: mem.clone(),
                live: false,
            });
        }
        let mut steps = KVec::new();
        steps.push(Step::Reg(mem, access), GFP_KERNEL)?;
        self.run_op(abi::DEFAULT_TIMEOUT_MS, steps)?;
        if let Some(Some(w)) = self.windows.lock().get_mut(id) {
            w.live = true;
        }
        Ok((addr, rkey, id as u32))
    }

    /// The memory of live window `id`, if it has at least `len` bytes.
    fn window(&self, id: u32, len: usize) -> Result<Arc<Window>> {
        let windows = self.windows.lock();
        let w = windows
            .get(id as usize)
            .and_then(Option::as_ref)
            .filter(|w| w.live)
            .ok_or(ENOENT)?;
        if w.mem.len() < len {
            return Err(EINVAL);
        }
        Ok(w.mem.clone())
    }

    /// `IOCTL_REVOKE`: invalidate the key, then free the window.
    pub(crate) fn revoke(self: &Arc<Self>, id: u32) -> Result {
        let _turn = self.take_turns(TURN_OP, deadline(abi::DEFAULT_TIMEOUT_MS))?;
        let mem = self.window(id, 0)?;
        let mut steps = KVec::new();
        steps.push(Step::Inv(mem), GFP_KERNEL)?;
        let r = self.run_op(abi::DEFAULT_TIMEOUT_MS, steps);
        let mut windows = self.windows.lock();
        if let Some(slot) = windows.get_mut(id as usize) {
            match r {
                // The key is dead: the window can go now.
                Ok(_) => *slot = None,
                // Perhaps still valid: kept, unusable, until teardown.
                Err(_) => {
                    if let Some(w) = slot.as_mut() {
                        w.live = false;
                    }
                }
            }
        }
        r.map(|_| ())
    }

    /// `IOCTL_WINDOW_READ` / `IOCTL_WINDOW_WRITE`: copy between a window and
    /// user memory, through a kernel bounce buffer (the window is only ever
    /// copied by range, see [`Window`]), without the `windows` lock: a
    /// user copy that stalls (userfaultfd) holds up nothing else.
    pub(crate) fn window_io(&self, io: &abi::WindowIo, to_user: bool) -> Result {
        if io.reserved != 0 {
            return Err(EINVAL);
        }
        let mem = self.window(io.id, 0)?;
        let end = io.offset.checked_add(io.len).ok_or(EINVAL)?;
        if end > mem.len() as u64 {
            return Err(EINVAL);
        }
        let (off, len) = (io.offset as usize, io.len as usize);
        let mut bounce = KVec::with_capacity(len.min(WINDOW_IO_CHUNK), GFP_KERNEL)?;
        bounce.extend_with(len.min(WINDOW_IO_CHUNK), 0u8, GFP_KERNEL)?;
        let (mut reader, mut writer) = UserSlice::new(io.buf as usize, len).reader_writer();
        let mut done = 0;
        while done < len {
            let n = (len - done).min(WINDOW_IO_CHUNK);
            let chunk = bounce.get_mut(..n).ok_or(EINVAL)?;
            if to_user {
                mem.read(off + done, chunk)?;
                writer.write_slice(chunk)?;
            } else {
                reader.read_slice(chunk)?;
                mem.write(off + done, chunk)?;
            }
            done += n;
        }
        Ok(())
    }
}

impl Conn {
    /// A raw RECV: the next received buffer as it came.
    fn recv_raw(self: &Arc<Self>, x: &abi::Xfer, timeout: u32) -> Result<u64> {
        self.pump()?;
        let len = self.wait(timeout, |st| {
            if let Some(f) = st.rx.front() {
                return Some(Ok(f.len));
            }
            Self::require_connected(st).err().map(Err)
        })?;
        if len as u64 > x.len {
            return Err(errno::EMSGSIZE());
        }
        let f = self.st.lock().rx.pop().ok_or(EIO)?;
        let r = match f.buf.get(..len) {
            Some(data) => UserSlice::new(x.buf as usize, len)
                .writer()
                .write_slice(data),
            None => Err(EIO),
        };
        let _ = self.st.lock().repost.push(f.buf.into_device());
        // As in `recv`: the buffer is the caller's, whatever the repost does.
        let _ = self.pump();
        r.map(|()| len as u64)
    }
}

impl CompletionHandler for Conn {
    type Ctx = Work;

    fn complete(&self, wc: &Wc, ctx: Work) {
        let mut st = self.st.lock();
        match ctx {
            Work::Recv(buf) => {
                if !wc.ok() {
                    if !wc.flushed() {
                        pr_debug!(
                            "receive failed: {}\n",
                            wc.status_msg().to_str().unwrap_or("?")
                        );
                    }
                    self.close_locked(&mut st, wc.errno());
                    return;
                }
                let cpu = buf.into_cpu();
                let len = (wc.byte_len as usize).min(cpu.len());
                if st.raw {
                    let hdr = WireHdr::default();
                    let stamp = Ktime::ktime_get().to_ns();
                    if let Err(f) = st.rx.push(Fragment {
                        hdr,
                        buf: cpu,
                        len,
                        stamp,
                    }) {
                        drop(f);
                        self.close_locked(&mut st, errno::EPROTO());
                        return;
                    }
                    self.cv.notify_all();
                    return;
                }
                if st.wire_broken {
                    return;
                }
                let credits = st.credits;
                let checked = match cpu.get(..len) {
                    Some(b) => st.wire.check(b, credits),
                    None => Err(abi::WireFault::Header),
                };
                let hdr = match checked {
                    Ok((hdr, credits)) => {
                        st.credits = credits;
                        hdr
                    }
                    Err(fault) => {
                        self.wire_fault(&mut st, fault);
                        return;
                    }
                };
                st.peer_low = hdr.flags & abi::WIRE_LOW != 0;
                if hdr.flags & abi::WIRE_CREDIT != 0 {
                    let _ = st.repost.push(cpu.into_device());
                } else if let Err(f) = st.rx.push(Fragment {
                    hdr,
                    buf: cpu,
                    len,
                    stamp: 0,
                }) {
                    // More fragments than receives: cannot happen, as
                    // every fragment took a receive of ours.
                    drop(f);
                    self.close_locked(&mut st, errno::EPROTO());
                    return;
                }
            }
            Work::Op { gen, idx, buf, .. } => {
                if gen != st.op_gen {
                    // An interrupted earlier operation: its buffer just goes.
                    drop(buf);
                    return;
                }
                if let Some(slot) = st.op_bufs.get_mut(idx) {
                    *slot = buf;
                }
                if let Some(t) = st.op_stamps.get_mut(idx) {
                    *t = Ktime::ktime_get().to_ns();
                }
                st.op_pending = st.op_pending.saturating_sub(1);
                if !wc.ok() && st.op_error.is_none() {
                    if !wc.flushed() {
                        pr_debug!(
                            "one-sided step failed: {}\n",
                            wc.status_msg().to_str().unwrap_or("?")
                        );
                    }
                    st.op_error = Some(wc.errno());
                }
            }
            Work::Send(buf, _) => {
                drop(buf);
                st.sends_inflight = st.sends_inflight.saturating_sub(1);
                if !wc.ok() {
                    if !wc.flushed() {
                        pr_debug!("send failed: {}\n", wc.status_msg().to_str().unwrap_or("?"));
                    }
                    self.close_locked(&mut st, wc.errno());
                    return;
                }
            }
        }
        self.cv.notify_all();
    }
}

impl Conn {
    /// The peer broke the message protocol: this connection closes with
    /// `EPROTO` and reads nothing more it sent; no other connection is
    /// touched. One log line, rate-limited (a peer could send millions).
    fn wire_fault(&self, st: &mut St, fault: abi::WireFault) {
        st.wire_broken = true;
        if misc::ratelimit() {
            pr_warn!(
                "peer broke the message protocol ({}): closing its connection\n",
                fault.as_str()
            );
        }
        self.close_locked(st, errno::EPROTO());
    }
}

impl CmHandler for Conn {
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, ev: &CmEvent) {
        if ev.kind == CmEventKind::ConnectRequest {
            this.on_request(id, ev);
            return;
        }
        this.on_event(ev);
    }
}

impl Conn {
    fn on_event(&self, ev: &CmEvent) {
        if ev.status != 0 {
            pr_debug!("cm event {:?}, status {}\n", ev.kind, ev.status);
        }
        let mut st = self.st.lock();
        match ev.kind {
            CmEventKind::AddrResolved | CmEventKind::RouteResolved => {
                st.cm_event = Some(ev.kind);
            }
            CmEventKind::Established => {
                if st.state == abi::state::CONNECTING {
                    st.state = abi::state::CONNECTED;
                }
            }
            CmEventKind::AddrError | CmEventKind::RouteError => {
                self.close_locked(&mut st, errno::EHOSTUNREACH());
            }
            CmEventKind::Unreachable | CmEventKind::ConnectError => {
                self.close_locked(&mut st, errno::ENETUNREACH());
            }
            CmEventKind::Rejected => self.close_locked(&mut st, errno::ECONNREFUSED()),
            CmEventKind::Disconnected => self.close_locked(&mut st, errno::ECONNRESET()),
            CmEventKind::DeviceRemoval => self.close_locked(&mut st, ENODEV),
            _ => {}
        }
        self.cv.notify_all();
    }
}

impl DeviceUser for Conn {
    fn device_going(&self) {
        let mut st = self.st.lock();
        self.close_locked(&mut st, ENODEV);
    }

    fn device_removed(&self) {
        self.shutdown(ENODEV);
    }
}
