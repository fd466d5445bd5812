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
//! - rdma_cm does not serialize resolving, binding, listening, connecting
//!   and the per-id settings on one id: those take `&mut CmId`;
//! - handlers of one id are serialized, run in process context and hold the
//!   id's handler mutex; `rdma_accept()` needs that mutex, so accepting is a
//!   method of [`HandlerId`], which only exists inside a handler;
//! - returning non-zero from a handler destroys the id: the trampoline does so
//!   for a connection request the handler did not adopt, and for an id its
//!   owner dropped during the call;
//! - `rdma_destroy_id()` and `rdma_connect()` take the handler mutex, which
//!   a handler of the id holds: a [`CmId`] dropped inside a handler that
//!   holds its mutex is destroyed when the handler returns, and
//!   [`CmId::connect`] there uses `rdma_connect_locked()`;
//! - the QP is destroyed before the id ([`CmId`] owns its [`Qp`]).

use super::bindings;
use super::cq::{Cq, PollContext, SrqQp};
use super::device::{current_task, might_sleep, Device, DeviceRef};
use super::owner::Owner;
use super::pd::Pd;
use super::qp::{Qp, QpCaps};
use super::srq::Srq;
use super::work::QpCell;
use core::{
    cell::Cell,
    ffi::c_void,
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, Ordering},
};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::c_int,
    new_mutex,
    prelude::*,
    str::CStr,
    sync::{Arc, Mutex},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
    ThisModule,
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
///
/// `initiator_depth` is 0 by default, as in C: a QP connected so issues no
/// RDMA READ or atomic, and posting one is refused (`EINVAL`) rather than
/// left to stall.
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
/// use kernel::{c_str, sync::Arc, ThisModule};
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
/// /// Starts resolving `addr:port`; `AddrResolved` follows. `module` is
/// /// the caller's `THIS_MODULE`.
/// fn start(module: &'static ThisModule, addr: [u8; 4], port: u16) -> Result<CmId<Client>> {
///     let client = Arc::new(Client, GFP_KERNEL)?;
///     let mut id = CmId::new(client, PortSpace::Tcp, module)?;
///     id.resolve_addr(&SockAddr::v4(addr, port), 2000)?;
///     Ok(id)
/// }
///
/// /// After `AddrResolved`: `RouteResolved` follows.
/// fn route(id: &mut CmId<Client>) -> Result {
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
/// Dropped inside a handler of its own (the connection the peer ended, a
/// request's child the handler will not keep), an id cannot be destroyed
/// there: `rdma_destroy_id()` waits for that very handler. Its QP goes at
/// once, and the id when the handler returns: rdma_cm destroys it then, or,
/// for a listener dropped in a request of one of its children, a work item.
///
/// A leaked id (`core::mem::forget`, an `Arc` cycle through its handler)
/// stays, and its handler runs, until its module goes: from then on its
/// events never reach the module ([`cm_gate`]).
///
/// # Invariants
///
/// `id` is a live cm id whose `context` is `ctx`, an [`IdCtx<H>`] this
/// object owns, whose handler is [`cm_gate`] and the header's trampoline
/// `handler_trampoline::<H>`.
pub struct CmId<H: CmHandler> {
    id: NonNull<bindings::rdma_cm_id>,
    ctx: NonNull<IdCtx<H>>,
    qp: Option<Qp>,
}

/// What the `context` of an id made here points to: its handler, and what
/// the trampoline tells [`CmId`]'s methods about the handler call running.
///
/// # Invariants
///
/// `running` is the task inside a handler call that holds this id's
/// handler mutex (a call for the id, or for a request to the listener it
/// is), set and cleared by the trampoline around the call; null otherwise.
/// `role` says which of the two. `header.state` leaves [`LIVE`] once the owner
/// dropped the id without destroying it: in that call ([`DROPPED`]: the
/// trampoline ends the id and frees this), or where only a work item can
/// end it ([`DEFERRED`]: the work item does, and frees this).
#[repr(C)]
struct IdCtx<H: CmHandler> {
    /// First, so that code that knows only the id reads it ([`IdHeader`]).
    header: IdHeader,
    handler: Arc<H>,
    running: AtomicPtr<c_void>,
    role: AtomicU8,
}

/// `IdCtx::state`: owned by a [`CmId`].
const LIVE: u8 = 0;
/// `IdCtx::state`: dropped by its owner in a handler call that holds its
/// mutex; the trampoline ends it when that call returns.
const DROPPED: u8 = 1;
/// `IdCtx::state`: dropped by its owner where it could not be destroyed
/// (a listener in a request of one of its children, a connection in a
/// completion handler of its own CQ): a work item ends it, and its events
/// are ignored until then.
const DEFERRED: u8 = 2;

/// What [`IdCtx`] starts with, whatever its handler type: what the event
/// gate ([`cm_gate`]) and a queue pair, which know the id and not the
/// handler, read of it.
pub(super) struct IdHeader {
    /// The READs and atomics the id's QP may have outstanding
    /// (`initiator_depth` of its connect or accept), or
    /// [`DEPTH_UNKNOWN`] before either.
    pub(super) initiator_depth: AtomicU32,
    /// [`LIVE`], [`DROPPED`] or [`DEFERRED`].
    state: AtomicU8,
    /// The module whose code the handler is.
    pub(super) owner: Arc<Owner>,
    /// The handler's trampoline, `handler_trampoline::<H>`, which the gate
    /// calls inside the owner's code.
    event: EventFn,
}

/// The type of `rdma_cm_id::event_handler`.
type EventFn =
    unsafe extern "C" fn(*mut bindings::rdma_cm_id, *mut bindings::rdma_cm_event) -> c_int;

/// `IdHeader::initiator_depth` before a connect or an accept.
pub(super) const DEPTH_UNKNOWN: u32 = u32::MAX;

/// The [`IdHeader`] of an id made here.
///
/// # Safety
///
/// `id` is a live id made by [`CmId::new`] (or adopted), whose owner
/// outlives the returned reference.
pub(super) unsafe fn id_header<'a>(id: NonNull<bindings::rdma_cm_id>) -> &'a IdHeader {
    // SAFETY: the id's context is an `IdCtx<H>` (`#[repr(C)]`, its header
    // first), alive while the owner is (the caller).
    unsafe { &*(*id.as_ptr()).context.cast::<IdHeader>() }
}

/// `IdCtx::role`: the call is an event of the id itself.
const ROLE_OWN: u8 = 0;
/// `IdCtx::role`: the call is a connection request's, the id its new child.
const ROLE_REQUEST: u8 = 1;
/// `IdCtx::role`: the call is a request to this listener, for a child.
const ROLE_LISTENER: u8 = 2;

impl<H: CmHandler> IdCtx<H> {
    /// A context for `handler`, in a box whose pointer becomes the id's.
    fn new(handler: Arc<H>, owner: Arc<Owner>) -> Result<NonNull<Self>> {
        let b = KBox::new(
            Self {
                header: IdHeader {
                    initiator_depth: AtomicU32::new(DEPTH_UNKNOWN),
                    state: AtomicU8::new(LIVE),
                    owner,
                    event: handler_trampoline::<H>,
                },
                handler,
                running: AtomicPtr::new(core::ptr::null_mut()),
                role: AtomicU8::new(ROLE_OWN),
            },
            GFP_KERNEL,
        )?;
        Ok(NonNull::from(KBox::leak(b)))
    }

    /// Frees a context made by [`IdCtx::new`].
    ///
    /// # Safety
    ///
    /// `ctx` came from [`IdCtx::new`], no id names it any more (or none
    /// will use it: destroyed, or about to be, with no handler left), and
    /// it is not used after.
    unsafe fn free(ctx: NonNull<Self>) {
        // SAFETY: a leaked `KBox` (`new`), given back once (the caller).
        drop(unsafe { KBox::from_raw(ctx.as_ptr()) });
    }

    /// Whether the calling task is inside a handler call that holds this
    /// id's handler mutex.
    fn held_here(&self) -> bool {
        self.running.load(Ordering::Acquire) == current_task()
    }
}

// SAFETY: the cm calls used here may be made from any thread; `H` is
// `Send + Sync`.
unsafe impl<H: CmHandler> Send for CmId<H> {}
// SAFETY: `&CmId` allows only what may run on several threads at once:
// reading the device ([`CmId::device`]), posting on the QP (ib_core's
// post calls are thread-safe) and `rdma_disconnect()`, which takes the
// locks it needs. The calls rdma_cm leaves to its caller to serialize
// (resolving, binding, listening, connecting, the per-id settings: ucma
// runs each under its file's mutex) take `&mut self`.
unsafe impl<H: CmHandler> Sync for CmId<H> {}

impl<H: CmHandler> CmId<H> {
    /// Creates an id for reliable-connected QPs in the port space `ps`, in
    /// the initial network namespace, whose events go to `handler`, code of
    /// `module` (the caller's `THIS_MODULE`), whose name `rdma resource
    /// show` lists. `ENODEV` if `module` is going.
    pub fn new(handler: Arc<H>, ps: PortSpace, module: &'static ThisModule) -> Result<Self> {
        might_sleep();
        let ps = match ps {
            PortSpace::Tcp => bindings::rdma_ucm_port_space_RDMA_PS_TCP,
            PortSpace::Ib => bindings::rdma_ucm_port_space_RDMA_PS_IB,
        };
        let ctx = IdCtx::new(handler, Owner::of(module)?)?;
        // SAFETY: `ctx` is new and ours.
        let name = unsafe { ctx.as_ref() }.header.owner.name();
        // SAFETY: `init_net` is a valid namespace; the gate, the context
        // and the name it holds stay valid for the id's lifetime (this
        // object owns the context, or leaks it with the id).
        let id = unsafe {
            bindings::__rdma_create_kernel_id(
                core::ptr::addr_of_mut!(bindings::init_net),
                Some(cm_gate),
                ctx.as_ptr().cast(),
                ps,
                bindings::ib_qp_type_IB_QPT_RC,
                name,
            )
        };
        match from_err_ptr(id).ok().and_then(NonNull::new) {
            // INVARIANT: created with the trampoline and the context above.
            Some(id) => Ok(Self { id, ctx, qp: None }),
            None => {
                // SAFETY: the id was not created, so nothing names `ctx`.
                unsafe { IdCtx::free(ctx) };
                Err(from_err_ptr(id).err().unwrap_or(ENOMEM))
            }
        }
    }

    /// Starts address resolution to `dst`; `AddrResolved` or `AddrError`
    /// follows.
    pub fn resolve_addr(&mut self, dst: &SockAddr, timeout_ms: u32) -> Result {
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
    pub fn set_ack_timeout(&mut self, exp: u8) -> Result {
        // SAFETY: the id is live (type invariant); the call only records the
        // value under the id's own mutex.
        to_result(unsafe { bindings::rdma_set_ack_timeout(self.id.as_ptr(), exp) })
    }

    /// Sets the RNR NAK timer code (0 to 31) this side's QP asks its peer to
    /// wait; before connecting or accepting.
    pub fn set_min_rnr_timer(&mut self, code: u8) -> Result {
        // SAFETY: as in `set_ack_timeout`.
        to_result(unsafe { bindings::rdma_set_min_rnr_timer(self.id.as_ptr(), code) })
    }

    /// Starts route resolution; `RouteResolved` or `RouteError` follows.
    pub fn resolve_route(&mut self, timeout_ms: u32) -> Result {
        // SAFETY: the id is live (type invariant).
        to_result(unsafe { bindings::rdma_resolve_route(self.id.as_ptr(), timeout_ms as _) })
    }

    /// Binds to `addr` and listens; requests arrive as `ConnectRequest`.
    pub fn listen(&mut self, addr: &SockAddr, backlog: i32) -> Result {
        // SAFETY: the id is live (type invariant); `addr` is valid.
        to_result(unsafe { bindings::rdma_bind_addr(self.id.as_ptr(), addr.as_raw()) })?;
        // SAFETY: the id is live and bound.
        to_result(unsafe { bindings::rdma_listen(self.id.as_ptr(), backlog) })
    }

    /// The device the id is bound to, once an address is resolved.
    pub fn device(&self) -> Option<DeviceRef> {
        // SAFETY: the id is live (type invariant). `id->device` is written
        // by rdma_cm's resolution work while this may run (null to a
        // device, when the address resolves), and cleared only by a failed
        // bind inside `listen`/`resolve_addr`, which take `&mut self` and
        // so cannot run now, or by `rdma_destroy_id()`: a volatile read (the kernel's
        // `READ_ONCE()`) sees null or a device rdma_cm holds until the id
        // is destroyed.
        let dev = unsafe { core::ptr::addr_of!((*self.id.as_ptr()).device).read_volatile() };
        if dev.is_null() {
            return None;
        }
        // SAFETY: non-null, so held by rdma_cm for the id (see above), which
        // `&self` keeps alive for this call.
        unsafe { Device::from_raw(dev) }.try_get()
    }

    /// Creates the RC QP of this id with a PD and a CQ of its own on the
    /// id's device, the CQ reaped in `poll` (not [`PollContext::Softirq`]:
    /// completion handlers may sleep). `owner` is the name `rdma resource
    /// show` lists for them (the PD and the CQ keep a copy). `EBUSY` if
    /// the id has a QP, `ENODEV` if it has no device yet (its address is
    /// not resolved, or it is not a request's child).
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
        let qp = unsafe { Qp::create(self.id, pd.clone(), cq.clone(), caps, None) }?;
        Ok(self.qp.insert(qp))
    }

    /// Creates the RC QP of this id on the shared receive queue `srq`: it
    /// receives from the SRQ, in its PD, and both its queues complete on a
    /// CQ of its own, reaped in `poll` (not [`PollContext::Softirq`]), with
    /// room for every request of the SRQ. `caps.recv_wr` must be 0.
    /// `tag` names the QP in the completions of the SRQ's receives that
    /// land on it ([`super::wc::Wc::qp_tag`]): the owner's choice, unique
    /// among the SRQ's QPs as it needs. `EINVAL` if `srq` is on another
    /// device than the id, or for a receive queue in `caps`; `EBUSY` and
    /// `ENODEV` as for [`CmId::create_qp`].
    pub fn create_qp_on_srq(
        &mut self,
        srq: &Arc<Srq>,
        caps: QpCaps,
        poll: PollContext,
        tag: u64,
        owner: &'static CStr,
    ) -> Result<&Qp> {
        if self.qp.is_some() {
            return Err(EBUSY);
        }
        if poll == PollContext::Softirq || caps.recv_wr != 0 {
            return Err(EINVAL);
        }
        let dev = self.device().ok_or(ENODEV)?;
        let pd = srq.pd();
        if pd.device().as_raw() != dev.as_raw() {
            return Err(EINVAL);
        }
        let cell = QpCell::new()?;
        let entries = caps.cq_entries()?.checked_add(srq.depth()).ok_or(EINVAL)?;
        let srq_qp = SrqQp {
            tag,
            cell: cell.clone(),
        };
        let cq = Cq::new_for(
            &dev,
            entries,
            None,
            poll,
            owner,
            Some(srq_qp),
            Some(srq.clone()),
        )?;
        let cq = Arc::new(cq, GFP_KERNEL)?;
        // SAFETY: the id is live and bound to `dev`, the device of `srq`'s
        // PD and of `cq` (checked above, made on it); the QP is dropped
        // before the id (see `Drop`).
        let qp = unsafe { Qp::create(self.id, pd.clone(), cq, caps, Some((srq.clone(), cell))) }?;
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

    /// Connects (active side); `Established`, `Rejected`, `Unreachable`
    /// or `ConnectError` follows. From a thread, or from a handler of the
    /// id itself (after `RouteResolved`, as nvme-rdma connects), where
    /// rdma_cm's handler mutex is held already (`rdma_connect_locked()`).
    pub fn connect(&mut self, param: &ConnParam) -> Result {
        let mut raw = param.raw();
        // SAFETY: the id is live (type invariant), and `ctx` with it.
        let ctx = unsafe { self.ctx.as_ref() };
        let locked = ctx.held_here();
        ctx.header
            .initiator_depth
            .store(u32::from(param.initiator_depth), Ordering::Release);
        // SAFETY: the id is live; `raw` is valid for the call. In a handler
        // call of this id the handler mutex is held, as
        // `rdma_connect_locked()` needs; elsewhere `rdma_connect()` takes it.
        to_result(unsafe {
            if locked {
                bindings::rdma_connect_locked(self.id.as_ptr(), &mut raw)
            } else {
                bindings::rdma_connect(self.id.as_ptr(), &mut raw)
            }
        })
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
    ///
    /// In a completion handler of the QP's CQ run by ib_core's workqueue,
    /// where the drain would wait for that very work item, the QP is only
    /// disconnected and moved to the error state; it is drained and
    /// destroyed with the id.
    pub fn close_qp(&mut self) {
        if self.qp.as_ref().is_some_and(Qp::in_own_completion) {
            let _ = self.disconnect();
            if let Some(qp) = &self.qp {
                let _ = qp.fail();
            }
            return;
        }
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
        might_sleep();
        // SAFETY: the id is live (type invariant), and `ctx` with it.
        let ctx = unsafe { self.ctx.as_ref() };
        if ctx.held_here() {
            // Inside a handler call that holds this id's mutex, which
            // `rdma_destroy_id()` would wait for.
            let role = ctx.role.load(Ordering::Acquire);
            if role == ROLE_REQUEST {
                // A request's child has no connection to end: its QP goes
                // (drained, like any); rdma_cm rejects the request. On
                // iWARP a child whose accept went out cannot be dropped
                // here: both `rdma_disconnect()` and destroying its QP wait
                // for the accept's ESTABLISHED, which iw_cm delivers from
                // the workqueue running this handler.
                drop(self.qp.take());
            } else {
                self.close_qp();
            }
            if role == ROLE_LISTENER {
                // A listener dropped in a request of one of its children:
                // rdma_cm holds its mutex until that request's handler is
                // done, and then only a work item can end it.
                defer_destroy::<H>(self.id, self.ctx, None);
            } else {
                // The trampoline returns non-zero, and rdma_cm destroys the
                // id when the handler returns; the trampoline frees `ctx`.
                ctx.header.state.store(DROPPED, Ordering::Release);
            }
            return;
        }
        if self.qp.as_ref().is_some_and(Qp::in_own_completion) {
            // In a completion handler of the QP's own CQ, reaped by ib_core's
            // workqueue: draining the QP would wait for the completions of
            // its markers, which that very work item delivers. A work item
            // of the system workqueue ends the connection and the id.
            let qp = self.qp.take();
            defer_destroy::<H>(self.id, self.ctx, qp);
            return;
        }
        // The connection first: disconnected, drained, QP and CQ destroyed.
        self.close_qp();
        // SAFETY: the id is live (type invariant). This waits for running
        // handlers, after which none runs again.
        unsafe { bindings::rdma_destroy_id(self.id.as_ptr()) };
        // SAFETY: the id is gone, and its context with it (type invariant:
        // this object owned it).
        unsafe { IdCtx::free(self.ctx) };
    }
}

/// The destruction of an id its owner dropped where it could not be
/// destroyed: a listener in a request handler of one of its children, a
/// connection in a completion handler of its own CQ. Its code is this
/// crate's (made and queued by [`defer_destroy_raw`]), so it may run after
/// the id's module went; the context, whose drop is the module's code, is
/// then leaked.
///
/// # Invariants
///
/// `id` is a live cm id nobody owns any more, whose `context` is `ctx`, an
/// [`IdCtx`] of the type `free` frees, and whose QP, if it has one, is
/// `qp`'s.
#[pin_data]
struct Deferred {
    id: NonNull<bindings::rdma_cm_id>,
    ctx: NonNull<c_void>,
    free: unsafe fn(NonNull<c_void>),
    #[pin]
    qp: Mutex<Option<Qp>>,
    #[pin]
    work: Work<Deferred>,
}

// SAFETY: an id may be destroyed, and its context freed, on any thread.
unsafe impl Send for Deferred {}
// SAFETY: `&Deferred` gives no access to the id (only `run`, by value).
unsafe impl Sync for Deferred {}

impl_has_work! {
    impl HasWork<Self> for Deferred { self.work }
}

impl WorkItem for Deferred {
    type Pointer = Arc<Deferred>;

    fn run(this: Arc<Deferred>) {
        let qp = this.qp.lock().take();
        if let Some(qp) = qp {
            // As `CmId::close_qp`: the peer is told, then the QP drained
            // and destroyed, before the id.
            // SAFETY: the id is live (type invariant).
            let _ = unsafe { bindings::rdma_disconnect(this.id.as_ptr()) };
            drop(qp);
        }
        // SAFETY: a live id nobody else owns (type invariant); this waits
        // for a handler of it that is still running to return.
        unsafe { bindings::rdma_destroy_id(this.id.as_ptr()) };
        // SAFETY: `ctx` is an `IdCtx` (type invariant), whose header comes
        // first; nothing frees it but the call below.
        let header = unsafe { this.ctx.cast::<IdHeader>().as_ref() };
        if let Some(_entered) = header.owner.enter() {
            // SAFETY: the id is gone; `ctx` was its context, of `free`'s
            // type, whose code is the owner's, entered above.
            unsafe { (this.free)(this.ctx) };
        }
    }
}

/// Frees an [`IdCtx<H>`] behind a type-erased pointer.
///
/// # Safety
///
/// As [`IdCtx::free`], for a context of type `IdCtx<H>`.
unsafe fn free_ctx<H: CmHandler>(ctx: NonNull<c_void>) {
    // SAFETY: the caller's guarantee.
    unsafe { IdCtx::<H>::free(ctx.cast()) };
}

/// Ends `id` (its QP `qp` first, if any) from a work item of the system
/// workqueue. If that work item cannot be allocated, the id and the QP are
/// leaked (with a message): the id's handler ignores every later event.
fn defer_destroy<H: CmHandler>(
    id: NonNull<bindings::rdma_cm_id>,
    ctx: NonNull<IdCtx<H>>,
    qp: Option<Qp>,
) {
    // SAFETY: `ctx` is the live context of `id`. Its later events are
    // ignored from now on (the trampoline checks `state`).
    unsafe { ctx.as_ref() }
        .header
        .state
        .store(DEFERRED, Ordering::Release);
    // SAFETY: `ctx` is an `IdCtx<H>`, as `free_ctx::<H>` frees.
    unsafe { defer_destroy_raw(id, ctx.cast(), free_ctx::<H>, qp) };
}

/// [`defer_destroy`] without the handler type: the work item's code is
/// this crate's, not the caller's module's.
///
/// # Safety
///
/// `id` is a live id about to be owned by nobody, whose context is `ctx`,
/// an `IdCtx` that `free` frees, and whose QP, if any, is `qp`.
#[inline(never)]
unsafe fn defer_destroy_raw(
    id: NonNull<bindings::rdma_cm_id>,
    ctx: NonNull<c_void>,
    free: unsafe fn(NonNull<c_void>),
    qp: Option<Qp>,
) {
    let work = Arc::pin_init(
        pin_init!(Deferred {
            id,
            ctx,
            free,
            qp <- new_mutex!(qp),
            work <- new_work!("rdma_cm_deferred_destroy"),
        }),
        GFP_KERNEL,
    );
    match work {
        // INVARIANT: `id` is owned by nobody: its `CmId` is being dropped.
        Ok(work) => {
            let _ = workqueue::system().enqueue(work);
        }
        Err(_) => pr_err!("rdma_cm: no memory to end an id: id leaked\n"),
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
/// whether a [`CmId`] was made for it.
pub struct HandlerId<'a, H: CmHandler + ?Sized> {
    id: NonNull<bindings::rdma_cm_id>,
    request: bool,
    adopted: Cell<bool>,
    _life: PhantomData<&'a H>,
}

impl<H: CmHandler> HandlerId<'_, H> {
    /// Takes ownership of the child id of a connection request.
    ///
    /// The child gets a context of its own, with the listener's handler.
    /// Fails with `EINVAL` for other events or if called twice, `ENOMEM`
    /// if the context cannot be allocated (the request is then rejected).
    /// Dropping the child in this handler, an early return after a failed
    /// setup say, rejects the request and destroys the child when the
    /// handler returns.
    pub fn adopt(&self) -> Result<CmId<H>> {
        if !self.request || self.adopted.get() {
            return Err(EINVAL);
        }
        // SAFETY: the child's context is still the listener's, whose
        // handler mutex rdma_cm holds during this event: alive.
        let listener = unsafe { &*(*self.id.as_ptr()).context.cast::<IdCtx<H>>() };
        let ctx = IdCtx::new(listener.handler.clone(), listener.header.owner.clone())?;
        // SAFETY: `ctx` is new and ours.
        let c = unsafe { ctx.as_ref() };
        // INVARIANT: this task is inside the request's handler call, which
        // holds the child's mutex.
        c.role.store(ROLE_REQUEST, Ordering::Relaxed);
        c.running.store(current_task(), Ordering::Release);
        // SAFETY: the id is live, and its mutex held: rdma_cm reads the
        // context under it only (C consumers set it here, as nvmet does).
        unsafe { (*self.id.as_ptr()).context = ctx.as_ptr().cast() };
        self.adopted.set(true);
        // INVARIANT: the child's handler is the trampoline, its context
        // `ctx`, now owned by the new object.
        Ok(CmId {
            id: self.id,
            ctx,
            qp: None,
        })
    }

    /// Gives up `child`, for a request the handler will not keep: the same
    /// as dropping it. The request is rejected (unless it was already), and
    /// the child destroyed when the handler returns. Kept for callers that
    /// read better with a verb.
    pub fn disown(&self, child: CmId<H>) {
        drop(child);
    }

    /// Gives `id`, the id this event is for, back to rdma_cm, which
    /// destroys it when the handler returns: the same as dropping it here.
    /// Another id is handed back untouched, as `Err`.
    pub fn release(&self, id: CmId<H>) -> core::result::Result<(), CmId<H>> {
        if id.id != self.id {
            return Err(id);
        }
        drop(id);
        Ok(())
    }

    /// Whether the adopted child was dropped during this call.
    fn child_released(&self) -> bool {
        // SAFETY: adopted (callers check): the id's context is the child's
        // `IdCtx<H>`, which only the trampoline frees, after this call.
        let ctx = unsafe { &*(*self.id.as_ptr()).context.cast::<IdCtx<H>>() };
        ctx.header.state.load(Ordering::Acquire) != LIVE
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
        if !self.request || !self.adopted.get() || self.child_released() {
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
        if !self.request || !self.adopted.get() || self.child_released() {
            return Err(EINVAL);
        }
        let mut raw = param.raw();
        // SAFETY: adopted and not dropped (checked above): the id's
        // context is the child's, owned by its `CmId`.
        unsafe { id_header(self.id) }
            .initiator_depth
            .store(u32::from(param.initiator_depth), Ordering::Release);
        // SAFETY: inside the handler, so the handler mutex is held, as
        // `rdma_accept()` requires; the id is live.
        to_result(unsafe { bindings::rdma_accept(self.id.as_ptr(), &mut raw) })
    }
}

/// `rdma_cm_id::event_handler` of every id made through [`CmId::new`]:
/// calls the id's handler trampoline inside its owner's code; once the
/// owner's module is gone (it leaked the id), answers for it: a connection
/// request is refused, the peer's disconnect answered, a device removal
/// lets rdma_cm destroy the id, other events are ignored. This crate's
/// code, never the module's.
///
/// # Safety
///
/// Called by rdma_cm only, with a live id whose context is an [`IdCtx`].
#[inline(never)]
unsafe extern "C" fn cm_gate(
    id: *mut bindings::rdma_cm_id,
    event: *mut bindings::rdma_cm_event,
) -> c_int {
    // SAFETY: the id's context is an `IdCtx` (`#[repr(C)]`, its header
    // first), alive during the call (as in `handler_trampoline`).
    let header = unsafe { &*(*id).context.cast::<IdHeader>() };
    // Read before the call, which may free the context.
    let trampoline = header.event;
    if let Some(_entered) = header.owner.enter() {
        // SAFETY: rdma_cm's arguments, for the trampoline of the id's
        // handler type, whose module's code stays while `_entered` does.
        return unsafe { trampoline(id, event) };
    }
    // SAFETY: rdma_cm passes a valid event.
    match unsafe { (*event).event } {
        // The child is nobody's: rdma_cm rejects and destroys it.
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => ECONNREFUSED.to_errno(),
        // Nobody will destroy a leaked id but rdma_cm (a deferred one's
        // work item does, itself).
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL
            if header.state.load(Ordering::Acquire) != DEFERRED =>
        {
            ENODEV.to_errno()
        }
        // The peer ended the connection: answered as a handler would
        // (`HandlerId::disconnect`), so the peer does not wait out its
        // timeouts; the QP's requests flush, their completions dropped.
        bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => {
            // SAFETY: rdma_cm's live id, in its handler; `rdma_disconnect()`
            // takes no lock the handler holds.
            let _ = unsafe { bindings::rdma_disconnect(id) };
            0
        }
        _ => 0,
    }
}

/// The handler of an id of handler type `H`: [`cm_gate`] calls it.
///
/// # Safety
///
/// Called by [`cm_gate`] only, with rdma_cm's arguments, for a live id
/// whose context is an `IdCtx<H>`, inside its owner's code.
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
    // SAFETY: the context is the `IdCtx<H>` of the id's owner, alive while
    // the owner is (it frees it only after destroying the id, which waits
    // for this call), or, for a connection request, the listener's, whose
    // handler mutex rdma_cm holds during the event.
    let ctx = unsafe { &*(*id).context.cast::<IdCtx<H>>() };
    let request = kind == CmEventKind::ConnectRequest;
    if ctx.header.state.load(Ordering::Acquire) == DEFERRED {
        // An id whose owner dropped it: its destruction is queued. A
        // request to it is refused.
        return if request { ECONNREFUSED.to_errno() } else { 0 };
    }
    // INVARIANT: this task holds the handler mutex of `id` (and, for a
    // request, of the listener whose context this is) until the call ends.
    ctx.role.store(
        if request { ROLE_LISTENER } else { ROLE_OWN },
        Ordering::Relaxed,
    );
    ctx.running.store(current_task(), Ordering::Release);
    // A count of the handler's own: the owner may drop the id, and with it
    // its context, during the call.
    let handler = ctx.handler.clone();
    let hid = HandlerId::<H> {
        // SAFETY: rdma_cm passes a valid id.
        id: unsafe { NonNull::new_unchecked(id) },
        request,
        adopted: Cell::new(false),
        _life: PhantomData,
    };
    H::event(&handler, &hid, &event);
    // SAFETY: the id is live until this returns; its context is now the
    // child's own if the request's child was adopted.
    let now = unsafe { (*id).context }.cast::<IdCtx<H>>();
    if request {
        // The listener's call is over. (If its owner dropped it, its
        // `Deferred` destroys it and frees `ctx` once rdma_cm has let go of
        // the listener's mutex, after this returns.)
        if ctx.header.state.load(Ordering::Acquire) == LIVE {
            ctx.running.store(core::ptr::null_mut(), Ordering::Release);
        }
        if !hid.adopted.get() {
            // Nobody adopted the child: rdma_cm rejects and destroys it.
            return ECONNREFUSED.to_errno();
        }
    }
    // SAFETY: `now` is the id's own context: the owner's, or the adopted
    // child's; this call holds the id's mutex, so it is alive.
    let own = unsafe { &*now };
    match own.header.state.load(Ordering::Acquire) {
        DROPPED => {
            // The owner dropped the id in this call: nobody uses the
            // context any more, and rdma_cm destroys the id when this
            // returns non-zero.
            // SAFETY: made by `IdCtx::new`; the id is about to go.
            unsafe { IdCtx::free(NonNull::new_unchecked(now)) };
            ECONNREFUSED.to_errno()
        }
        // Dropped meanwhile from a completion handler: its work item ends
        // the id once this returns.
        DEFERRED => 0,
        _ => {
            own.running.store(core::ptr::null_mut(), Ordering::Release);
            own.role.store(ROLE_OWN, Ordering::Relaxed);
            0
        }
    }
}
