// SPDX-License-Identifier: GPL-2.0

//! RDMA/CM ids whose event handler is a Rust trait.
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h).
//!
//! An id resolves a peer's address and route and connects to it (active
//! side), or listens and hands each connection request to its handler as a
//! new child id (passive side). The reliable-connected queue pair of a
//! connection is created on its id ([`CmId::create_qp`]) and owned by it.
//!
//! Rules of the kernel rdma_cm that the types encode:
//! - handlers of one id are serialized, run in process context and hold the
//!   id's handler mutex; `rdma_accept()` needs that mutex, so accepting is a
//!   method of [`HandlerId`], which only exists inside a handler;
//! - returning non-zero from a handler destroys the id: the trampoline does so
//!   only for a connection request the handler did not adopt, or gave back
//!   ([`HandlerId::disown`]);
//! - `rdma_destroy_id()` waits for running handlers, so a [`CmId`] must not be
//!   dropped inside its own handler (documented, not enforced);
//! - the QP is destroyed before the id ([`CmId`] owns its [`Qp`]).

use super::bindings;
use super::cq::{Cq, PollContext};
use super::device::{Device, DeviceRef};
use super::errno;
use super::pd::Pd;
use super::qp::{Qp, QpCaps};
use core::{cell::Cell, marker::PhantomData, mem::ManuallyDrop, ptr::NonNull};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::c_int,
    prelude::*,
    str::CStr,
    sync::Arc,
};

/// The port space of an id, `enum rdma_ucm_port_space`: which ports its
/// addresses name, and how connections are set up. Both carry
/// reliable-connected QPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortSpace {
    /// `RDMA_PS_TCP`: the TCP port space; the only one iWARP supports.
    Tcp,
    /// `RDMA_PS_IB`: InfiniBand's own port space (RoCE and InfiniBand).
    Ib,
}

/// An IPv4 or IPv6 address and port, as `struct sockaddr_storage`.
pub struct SockAddr(bindings::__kernel_sockaddr_storage);

impl SockAddr {
    /// `addr:port`, IPv4.
    pub fn v4(addr: [u8; 4], port: u16) -> Self {
        // SAFETY: zero is a valid `sockaddr_storage`.
        let mut ss: bindings::__kernel_sockaddr_storage = unsafe { core::mem::zeroed() };
        // SAFETY: `sockaddr_in` fits in and aligns with `sockaddr_storage`.
        let sin = unsafe { &mut *core::ptr::addr_of_mut!(ss).cast::<bindings::sockaddr_in>() };
        sin.sin_family = bindings::AF_INET as u16;
        sin.sin_port = port.to_be();
        sin.sin_addr.s_addr = u32::from_ne_bytes(addr);
        Self(ss)
    }

    /// `[addr]:port`, IPv6.
    pub fn v6(addr: [u8; 16], port: u16) -> Self {
        // SAFETY: zero is a valid `sockaddr_storage`.
        let mut ss: bindings::__kernel_sockaddr_storage = unsafe { core::mem::zeroed() };
        // SAFETY: `sockaddr_in6` fits in and aligns with `sockaddr_storage`.
        let sin6 = unsafe { &mut *core::ptr::addr_of_mut!(ss).cast::<bindings::sockaddr_in6>() };
        sin6.sin6_family = bindings::AF_INET6 as u16;
        sin6.sin6_port = port.to_be();
        sin6.sin6_addr.in6_u.u6_addr8 = addr;
        Self(ss)
    }

    fn as_raw(&self) -> *mut bindings::sockaddr {
        core::ptr::addr_of!(self.0).cast_mut().cast()
    }
}

/// The kind of an rdma_cm event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmEventKind {
    /// `rdma_resolve_addr()` finished.
    AddrResolved,
    /// Address resolution failed.
    AddrError,
    /// `rdma_resolve_route()` finished.
    RouteResolved,
    /// Route resolution failed.
    RouteError,
    /// A peer asks to connect (passive side; the id is a new child id).
    ConnectRequest,
    /// Connecting failed.
    ConnectError,
    /// The peer is unreachable.
    Unreachable,
    /// The peer rejected the connection.
    Rejected,
    /// The connection is up.
    Established,
    /// The connection went down.
    Disconnected,
    /// The RDMA device is going away.
    DeviceRemoval,
    /// The QP left the time-wait state.
    TimewaitExit,
    /// Anything else (address change, multicast, ...).
    Other(u32),
}

impl CmEventKind {
    fn from_raw(e: u32) -> Self {
        match e {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => Self::AddrResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => Self::AddrError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => Self::RouteResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => Self::RouteError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => Self::ConnectRequest,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => Self::ConnectError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => Self::Unreachable,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => Self::Rejected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => Self::Established,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => Self::Disconnected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => Self::DeviceRemoval,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => Self::TimewaitExit,
            other => Self::Other(other),
        }
    }
}

/// Most private data a ULP may put in a connect request: what IB and RoCE
/// leave after rdma_cm's own header (`IB_CM_REQ_PRIVATE_DATA_SIZE`, 92,
/// less 36); iWARP and the other messages carry more.
pub const MAX_PRIVATE_DATA: usize = 56;

/// The private data of a connect request or reply: what a ULP says to its
/// peer while connecting (nvme-rdma's queue sizes, RPC-over-RDMA's inline
/// thresholds). At most [`MAX_PRIVATE_DATA`] bytes.
///
/// # Invariants
///
/// `len <= MAX_PRIVATE_DATA`.
#[derive(Clone, Copy, Debug)]
pub struct PrivateData {
    len: u8,
    bytes: [u8; MAX_PRIVATE_DATA],
}

impl Default for PrivateData {
    fn default() -> Self {
        Self {
            len: 0,
            bytes: [0; MAX_PRIVATE_DATA],
        }
    }
}

impl PrivateData {
    /// `data` to send; `EINVAL` if longer than [`MAX_PRIVATE_DATA`].
    pub fn new(data: &[u8]) -> Result<Self> {
        let mut p = Self::default();
        p.bytes
            .get_mut(..data.len())
            .ok_or(EINVAL)?
            .copy_from_slice(data);
        // INVARIANT: `get_mut` succeeded, so `data.len() <= MAX_PRIVATE_DATA`.
        p.len = data.len() as u8;
        Ok(p)
    }

    /// The bytes: as sent, or as received. IB and RoCE deliver the whole
    /// field of their message, zero-padded after what the peer sent, and
    /// only its first [`MAX_PRIVATE_DATA`] bytes are kept here.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Copies what rdma_cm delivered.
    ///
    /// # Safety
    ///
    /// `data` is null or points to `len` readable bytes.
    unsafe fn from_raw(data: *const core::ffi::c_void, len: u8) -> Self {
        let mut p = Self::default();
        if data.is_null() {
            return p;
        }
        let n = usize::from(len).min(MAX_PRIVATE_DATA);
        // SAFETY: `data` has `len` bytes (the caller's promise), of which
        // `n` are read; `p.bytes` has room for `n`.
        unsafe { core::ptr::copy_nonoverlapping(data.cast::<u8>(), p.bytes.as_mut_ptr(), n) };
        // INVARIANT: `n <= MAX_PRIVATE_DATA`.
        p.len = n as u8;
        p
    }
}

/// An rdma_cm event, as the handler sees it.
#[derive(Clone, Copy, Debug)]
pub struct CmEvent {
    /// What happened.
    pub kind: CmEventKind,
    /// The event's status (a negative errno, or a reject reason).
    pub status: i32,
    /// Connection events: READ/atomic requests this side serves, from the
    /// peer's point of view already turned into ours.
    pub responder_resources: u8,
    /// Connection events: READ/atomic requests this side may issue.
    pub initiator_depth: u8,
    /// `ConnectRequest`: the request's private data; `Established` on the
    /// active side: the reply's; empty or zeros otherwise.
    pub private_data: PrivateData,
}

/// Parameters of `rdma_connect()` / `rdma_accept()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnParam {
    /// READ/atomic requests this side serves (becomes the QP's
    /// `max_dest_rd_atomic`).
    pub responder_resources: u8,
    /// READ/atomic requests this side may have outstanding (`max_rd_atomic`).
    pub initiator_depth: u8,
    /// Transport retries (connect only).
    pub retry_count: u8,
    /// RNR retries; 7 means "forever".
    pub rnr_retry_count: u8,
    /// Sent to the peer in the request or the reply.
    pub private_data: PrivateData,
}

impl ConnParam {
    /// The C parameters; they point into `self`'s private data, so they are
    /// used while `self` is borrowed (rdma_cm copies the bytes into its
    /// message before `rdma_connect()` or `rdma_accept()` returns).
    fn raw(&self) -> bindings::rdma_conn_param {
        // SAFETY: zero is a valid `rdma_conn_param` (no private data).
        let mut p: bindings::rdma_conn_param = unsafe { core::mem::zeroed() };
        p.responder_resources = self.responder_resources;
        p.initiator_depth = self.initiator_depth;
        p.retry_count = self.retry_count;
        p.rnr_retry_count = self.rnr_retry_count;
        p.flow_control = 1;
        if self.private_data.len != 0 {
            p.private_data = self.private_data.bytes.as_ptr().cast();
            p.private_data_len = self.private_data.len;
        }
        p
    }
}

/// Receives the events of ids created with it.
pub trait CmHandler: Send + Sync + 'static {
    /// An event on `id`. Runs in process context with the id's handler mutex
    /// held; may sleep; never concurrently for one id.
    ///
    /// For [`CmEventKind::ConnectRequest`] `id` is a new child id: keep it
    /// with [`HandlerId::adopt`] and accept it with [`HandlerId::accept`];
    /// an id that is not adopted is rejected and destroyed by rdma_cm.
    fn event(this: &Arc<Self>, id: &HandlerId<'_, Self>, event: &CmEvent);
}

/// An rdma_cm id and the QP created on it. Dropping it destroys the QP
/// (draining it first), then the id.
///
/// # Examples
///
/// The active side: each step starts when the handler saw the last one
/// finish; how the handler hands the id on is the consumer's business.
///
/// ```
/// use kernel::rdma::{
///     cm::{CmEvent, CmEventKind, CmHandler, CmId, ConnParam, HandlerId, PortSpace, SockAddr},
///     cq::PollContext,
///     qp::QpCaps,
/// };
/// use kernel::{c_str, sync::Arc};
///
/// struct Client;
///
/// impl CmHandler for Client {
///     fn event(_this: &Arc<Self>, _id: &HandlerId<'_, Self>, event: &CmEvent) {
///         if event.kind == CmEventKind::Established {
///             pr_info!("connected\n");
///         }
///     }
/// }
///
/// /// Starts resolving `addr:port`; `AddrResolved` follows.
/// fn start(addr: [u8; 4], port: u16) -> Result<CmId<Client>> {
///     let client = Arc::new(Client, GFP_KERNEL)?;
///     let id = CmId::new(client, PortSpace::Tcp, c_str!("my_ulp"))?;
///     id.resolve_addr(&SockAddr::v4(addr, port), 2000)?;
///     Ok(id)
/// }
///
/// /// After `AddrResolved`: `RouteResolved` follows.
/// fn route(id: &CmId<Client>) -> Result {
///     id.resolve_route(2000)
/// }
///
/// /// After `RouteResolved`: `Established` (or a failure) follows.
/// fn connect(id: &mut CmId<Client>) -> Result {
///     let caps = QpCaps {
///         send_wr: 16,
///         recv_wr: 16,
///         send_sge: 1,
///         recv_sge: 1,
///         // Small messages inline: no fetch by the device.
///         max_inline: 64,
///     };
///     id.create_qp(caps, PollContext::Workqueue, c_str!("my_ulp"))?;
///     id.connect(&ConnParam {
///         retry_count: 7,
///         rnr_retry_count: 7,
///         ..ConnParam::default()
///     })
/// }
/// ```
///
/// # Invariants
///
/// `id` is a live cm id whose `context` is an `Arc<H>` of which this object
/// owns one count, and whose handler is `handler_trampoline::<H>`.
pub struct CmId<H: CmHandler> {
    id: NonNull<bindings::rdma_cm_id>,
    qp: Option<Qp>,
    _handler: PhantomData<Arc<H>>,
}

// SAFETY: the cm calls used here may be made from any thread; `H` is
// `Send + Sync`.
unsafe impl<H: CmHandler> Send for CmId<H> {}
// SAFETY: `&CmId` allows only calls rdma_cm serializes itself.
unsafe impl<H: CmHandler> Sync for CmId<H> {}

impl<H: CmHandler> CmId<H> {
    /// Creates an id for reliable-connected QPs in the port space `ps`, in
    /// the initial network namespace, whose events go to `handler`.
    /// `owner` is the name `rdma resource show` lists, `KBUILD_MODNAME`
    /// for the C macro `rdma_create_id()`.
    pub fn new(handler: Arc<H>, ps: PortSpace, owner: &'static CStr) -> Result<Self> {
        let ps = match ps {
            PortSpace::Tcp => bindings::rdma_ucm_port_space_RDMA_PS_TCP,
            PortSpace::Ib => bindings::rdma_ucm_port_space_RDMA_PS_IB,
        };
        let ctx = Arc::into_raw(handler);
        // SAFETY: `init_net` is a valid namespace; the handler and context
        // stay valid for the id's lifetime (this object owns the context);
        // `owner` is static.
        let id = unsafe {
            bindings::__rdma_create_kernel_id(
                core::ptr::addr_of_mut!(bindings::init_net),
                Some(handler_trampoline::<H>),
                ctx.cast_mut().cast(),
                ps,
                bindings::ib_qp_type_IB_QPT_RC,
                owner.as_char_ptr(),
            )
        };
        match from_err_ptr(id).ok().and_then(NonNull::new) {
            // INVARIANT: created with the trampoline and the context above.
            Some(id) => Ok(Self {
                id,
                qp: None,
                _handler: PhantomData,
            }),
            None => {
                // SAFETY: the id was not created, so the count is still ours.
                drop(unsafe { Arc::from_raw(ctx) });
                Err(from_err_ptr(id).err().unwrap_or(ENOMEM))
            }
        }
    }

    /// Starts address resolution to `dst`; `AddrResolved` or `AddrError`
    /// follows.
    pub fn resolve_addr(&self, dst: &SockAddr, timeout_ms: u32) -> Result {
        // SAFETY: the id is live (type invariant); `dst` is valid.
        to_result(unsafe {
            bindings::rdma_resolve_addr(
                self.id.as_ptr(),
                core::ptr::null_mut(),
                dst.as_raw(),
                timeout_ms.min(i32::MAX as u32) as _,
            )
        })
    }

    /// Sets the QP's local ACK timeout (4.096 us * 2^`exp`). Before route
    /// resolution (active side) it also sets the path's packet lifetime
    /// that rdma_cm derives RoCE's CM timeouts from; on a request's child,
    /// call it before accepting.
    pub fn set_ack_timeout(&self, exp: u8) -> Result {
        // SAFETY: the id is live (type invariant); the call only records the
        // value under the id's own mutex.
        to_result(unsafe { bindings::rdma_set_ack_timeout(self.id.as_ptr(), exp) })
    }

    /// Sets the RNR NAK timer code (0 to 31) this side's QP asks its peer to
    /// wait; before connecting or accepting.
    pub fn set_min_rnr_timer(&self, code: u8) -> Result {
        // SAFETY: as in `set_ack_timeout`.
        to_result(unsafe { bindings::rdma_set_min_rnr_timer(self.id.as_ptr(), code) })
    }

    /// Starts route resolution; `RouteResolved` or `RouteError` follows.
    pub fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: the id is live (type invariant).
        to_result(unsafe { bindings::rdma_resolve_route(self.id.as_ptr(), timeout_ms as _) })
    }

    /// Binds to `addr` and listens; requests arrive as `ConnectRequest`.
    pub fn listen(&self, addr: &SockAddr, backlog: i32) -> Result {
        // SAFETY: the id is live (type invariant); `addr` is valid.
        to_result(unsafe { bindings::rdma_bind_addr(self.id.as_ptr(), addr.as_raw()) })?;
        // SAFETY: the id is live and bound.
        to_result(unsafe { bindings::rdma_listen(self.id.as_ptr(), backlog) })
    }

    /// The device the id is bound to, once an address is resolved.
    pub fn device(&self) -> Option<DeviceRef> {
        // SAFETY: the id is live; `device` is set when the id binds and stays
        // until the id is destroyed (rdma_cm holds the device meanwhile).
        let dev = unsafe { (*self.id.as_ptr()).device };
        if dev.is_null() {
            return None;
        }
        // SAFETY: non-null and held by rdma_cm (see above).
        DeviceRef::new(unsafe { Device::from_raw(dev) })
    }

    /// Creates the RC QP of this id with a PD and a CQ of its own on the
    /// id's device, the CQ reaped in `poll` (not [`PollContext::Softirq`]:
    /// completion handlers may sleep). `owner` names them, as in
    /// [`CmId::new`]. `EBUSY` if the id has a QP, `ENODEV` if it has no
    /// device yet (its address is not resolved, or it is not a request's
    /// child).
    pub fn create_qp(
        &mut self,
        caps: QpCaps,
        poll: PollContext,
        owner: &'static CStr,
    ) -> Result<&Qp> {
        if self.qp.is_some() {
            return Err(EBUSY);
        }
        if poll == PollContext::Softirq {
            return Err(EINVAL);
        }
        let dev = self.device().ok_or(ENODEV)?;
        let pd = Arc::new(Pd::new(&dev, owner)?, GFP_KERNEL)?;
        // The CQ's vector is ib_core's choice, spread over the device's.
        let cq = Cq::new(&dev, caps.cq_entries()?, None, poll, owner)?;
        self.create_qp_on(&pd, &Arc::new(cq, GFP_KERNEL)?, caps)
    }

    /// Creates the RC QP of this id in `pd`, both its queues completing on
    /// `cq`, which other QPs may share (its entries must cover each
    /// sharer's [`QpCaps::cq_entries`]). `EINVAL` if `pd` or `cq` is on
    /// another device than the id, or `cq` is reaped in a softirq; `EBUSY`
    /// and `ENODEV` as for [`CmId::create_qp`].
    pub fn create_qp_on(&mut self, pd: &Arc<Pd>, cq: &Arc<Cq>, caps: QpCaps) -> Result<&Qp> {
        if self.qp.is_some() {
            return Err(EBUSY);
        }
        let dev = self.device().ok_or(ENODEV)?;
        if pd.device().as_raw() != dev.as_raw() || cq.device().as_raw() != dev.as_raw() {
            return Err(EINVAL);
        }
        // SAFETY: the id is live and bound to `dev`, the device of `pd` and
        // `cq` (checked above); the QP is dropped before the id (see `Drop`).
        let qp = unsafe { Qp::create(self.id, pd.clone(), cq.clone(), caps) }?;
        Ok(self.qp.insert(qp))
    }

    /// Whether `id`, an event's, is this id: how a handler shared by
    /// several ids (a listener's and its children's) tells them apart.
    pub fn is(&self, id: &HandlerId<'_, H>) -> bool {
        self.id == id.id
    }

    /// The QP, once created.
    pub fn qp(&self) -> Option<&Qp> {
        self.qp.as_ref()
    }

    /// Connects (active side, outside the handler); `Established`,
    /// `Rejected`, `Unreachable` or `ConnectError` follows.
    pub fn connect(&self, param: &ConnParam) -> Result {
        let mut raw = param.raw();
        // SAFETY: the id is live with a QP; `raw` is valid for the call.
        to_result(unsafe { bindings::rdma_connect(self.id.as_ptr(), &mut raw) })
    }

    /// Starts a disconnect; `Disconnected` follows on both sides. May sleep:
    /// on iWARP it first waits out a connect or accept still in flight, so
    /// a consumer that must not wait calls it once `Established` came.
    pub fn disconnect(&self) -> Result {
        // SAFETY: the id is live (type invariant).
        to_result(unsafe { bindings::rdma_disconnect(self.id.as_ptr()) })
    }

    /// Ends the connection in nvme-rdma's order, up to the id: disconnect
    /// (the QP goes to the error state and the peer is told), drain, destroy
    /// the QP, free its CQ. The PD goes with the last memory region that
    /// holds it, so regions dropped after this and before the id go in the
    /// right order: MRs, PD, id. Idempotent; an id without a QP is left as
    /// it is.
    pub fn close_qp(&mut self) {
        if let Some(qp) = self.qp.take() {
            // An id that never connected, or was disconnected already,
            // refuses: there is nothing to tell the peer then.
            let _ = self.disconnect();
            drop(qp);
        }
    }
}

impl<H: CmHandler> Drop for CmId<H> {
    fn drop(&mut self) {
        // The connection first: disconnected, drained, QP and CQ destroyed.
        self.close_qp();
        // SAFETY: the id is live (type invariant). This waits for running
        // handlers, after which none runs again.
        let ctx = unsafe {
            let ctx = (*self.id.as_ptr()).context;
            bindings::rdma_destroy_id(self.id.as_ptr());
            ctx
        };
        // SAFETY: the id owned one count of the `Arc<H>` (type invariant),
        // and no handler can use it any more.
        drop(unsafe { Arc::from_raw(ctx.cast::<H>().cast_const()) });
    }
}

/// The id an event is for, valid only inside the handler.
///
/// # Invariants
///
/// `id` is the live id rdma_cm passed to the running handler, whose handler
/// mutex rdma_cm holds for as long as this object exists (the lifetime `'a`
/// ends with the handler call). `request` tells whether the event is a
/// connection request, in which case `id` is the new child and `adopted`
/// whether a [`CmId`] now owns it. Once `released`, no [`CmId`] owns `id`
/// and none may: rdma_cm destroys it when the handler returns.
pub struct HandlerId<'a, H: CmHandler + ?Sized> {
    id: NonNull<bindings::rdma_cm_id>,
    request: bool,
    adopted: Cell<bool>,
    released: Cell<bool>,
    _life: PhantomData<&'a H>,
}

impl<H: CmHandler> HandlerId<'_, H> {
    /// Takes ownership of the child id of a connection request.
    ///
    /// The child shares the listener's handler; the returned [`CmId`] holds
    /// its own count of it. Fails with `EINVAL` for other events, if called
    /// twice, or once the child was given back.
    pub fn adopt(&self) -> Result<CmId<H>> {
        if !self.request || self.adopted.get() || self.released.get() {
            return Err(EINVAL);
        }
        // SAFETY: the child's context is the listener's `Arc<H>`, alive while
        // the listener's handler mutex is held (it is, during this event).
        let ctx = unsafe { (*self.id.as_ptr()).context }
            .cast::<H>()
            .cast_const();
        // SAFETY: `ctx` is a live `Arc<H>`. Borrow it without consuming the
        // listener's count, and leak one new count for the child.
        let listener = ManuallyDrop::new(unsafe { Arc::from_raw(ctx) });
        let _ = Arc::into_raw(Arc::clone(&listener));
        self.adopted.set(true);
        // INVARIANT: the child's handler is the trampoline, its context an
        // `Arc<H>` with a count now owned by the new object.
        Ok(CmId {
            id: self.id,
            qp: None,
            _handler: PhantomData,
        })
    }

    /// Gives an adopted child back to rdma_cm, for a request the handler
    /// will not keep and has not accepted: its QP goes now (drained, like
    /// any), and rdma_cm destroys the id when the handler returns, rejecting
    /// the request if it was not rejected already. A `child` that is not
    /// this request's is dropped as usual.
    ///
    /// The QP is not disconnected first, as [`CmId::close_qp`] would: there
    /// is no connection to end. A child whose accept went out cannot be
    /// given back here on iWARP: both `rdma_disconnect()` and destroying its
    /// QP wait for the accept's ESTABLISHED event, which iw_cm delivers from
    /// its one ordered workqueue, the one running this handler.
    pub fn disown(&self, child: CmId<H>) {
        if !self.request {
            drop(child);
        } else if let Err(other) = self.release(child) {
            // Not this handler's child: an ordinary drop is safe.
            drop(other);
        }
    }

    /// Gives `id`, the id this event is for, back to rdma_cm, which
    /// destroys it when the handler returns: the way to drop an id inside
    /// its own handler, where dropping the [`CmId`] would wait for itself
    /// (a connection that the peer ended, say). Its connection ends first,
    /// as in [`CmId::close_qp`]: disconnected (unless it is a request's
    /// child, see [`HandlerId::disown`]), drained, QP and CQ destroyed.
    /// Another id is handed back untouched, as `Err`.
    ///
    /// rdma_cm destroys the id after this handler has returned, so a module
    /// that releases ids cannot know at unload that no handler of theirs is
    /// still returning: such a consumer is built in.
    pub fn release(&self, mut id: CmId<H>) -> core::result::Result<(), CmId<H>> {
        if id.id != self.id {
            return Err(id);
        }
        if self.request {
            drop(id.qp.take());
        } else {
            id.close_qp();
        }
        let id = ManuallyDrop::new(id);
        // SAFETY: the id's context is the `Arc<H>` whose count `id` owns
        // (type invariant of `CmId`); that count is released here, once,
        // instead of in `CmId::drop`, which is not run (`ManuallyDrop`).
        drop(unsafe { Arc::from_raw((*id.id.as_ptr()).context.cast::<H>().cast_const()) });
        // The trampoline now returns an error, and rdma_cm destroys the id;
        // nobody owns it, so it may not be accepted or rejected.
        self.adopted.set(false);
        self.released.set(true);
        Ok(())
    }

    /// Answers the peer's disconnect on this id (not a request's child):
    /// moves the QP to the error state, so what was posted and will never
    /// be acknowledged completes now, flushed, and replies to the peer.
    pub fn disconnect(&self) -> Result {
        if self.request {
            return Err(EINVAL);
        }
        // SAFETY: inside the handler of a live id; `rdma_disconnect()` takes
        // no lock the handler holds.
        to_result(unsafe { bindings::rdma_disconnect(self.id.as_ptr()) })
    }

    /// Rejects the connection request (passive side), on an adopted id whose
    /// setup failed: the peer learns at once, not at its own timeout.
    pub fn reject(&self) -> Result {
        if !self.request || !self.adopted.get() {
            return Err(EINVAL);
        }
        // SAFETY: inside the handler of a live request id.
        to_result(unsafe {
            bindings::rdma_reject(
                self.id.as_ptr(),
                core::ptr::null(),
                0,
                bindings::ib_cm_rej_reason_IB_CM_REJ_CONSUMER_DEFINED as u8,
            )
        })
    }

    /// Accepts the connection request (passive side). The QP must have been
    /// created on the adopted id.
    pub fn accept(&self, param: &ConnParam) -> Result {
        if !self.request || !self.adopted.get() {
            return Err(EINVAL);
        }
        let mut raw = param.raw();
        // SAFETY: inside the handler, so the handler mutex is held, as
        // `rdma_accept()` requires; the id is live.
        to_result(unsafe { bindings::rdma_accept(self.id.as_ptr(), &mut raw) })
    }
}

/// `rdma_cm_id::event_handler` of every id made through [`CmId::new`].
///
/// # Safety
///
/// Called by rdma_cm only, with a live id whose context is an `Arc<H>`.
unsafe extern "C" fn handler_trampoline<H: CmHandler>(
    id: *mut bindings::rdma_cm_id,
    event: *mut bindings::rdma_cm_event,
) -> c_int {
    // SAFETY: rdma_cm passes a valid event.
    let ev = unsafe { &*event };
    let kind = CmEventKind::from_raw(ev.event);
    // SAFETY: connection events carry `param.conn`; for others these bytes
    // are unused and zero or stale, and only read as plain integers.
    let conn = unsafe { ev.param.conn };
    let event = CmEvent {
        kind,
        status: ev.status,
        responder_resources: conn.responder_resources,
        initiator_depth: conn.initiator_depth,
        private_data: match kind {
            // SAFETY: a connection event's `private_data` is null or has
            // `private_data_len` bytes.
            CmEventKind::ConnectRequest | CmEventKind::Established => unsafe {
                PrivateData::from_raw(conn.private_data, conn.private_data_len)
            },
            _ => PrivateData::default(),
        },
    };
    // SAFETY: the context is an `Arc<H>` kept alive by the id's owner (or,
    // for a connection request, by the listener, whose handler mutex rdma_cm
    // holds during the event). Borrowed, and a count of the handler's own
    // taken from it: the handler may give the id, and with it the owner's
    // count, back (`HandlerId::release()`), and must not free itself.
    let handler = Arc::clone(&ManuallyDrop::new(unsafe {
        Arc::from_raw((*id).context.cast::<H>())
    }));
    let hid = HandlerId::<H> {
        // SAFETY: rdma_cm passes a valid id.
        id: unsafe { NonNull::new_unchecked(id) },
        request: kind == CmEventKind::ConnectRequest,
        adopted: Cell::new(false),
        released: Cell::new(false),
        _life: PhantomData,
    };
    H::event(&handler, &hid, &event);
    // An id given back, or a request nobody adopted (which is rejected):
    // rdma_cm destroys it.
    if hid.released.get() || (hid.request && !hid.adopted.get()) {
        return errno::ECONNREFUSED().to_errno();
    }
    0
}
