// SPDX-License-Identifier: GPL-2.0

//! Reliable-connected queue pairs and the work requests posted on them.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! Completions use `struct ib_cqe`, never a raw CQ event handler: rxe calls
//! raw handlers with the CQ lock held, and polling or re-arming from there
//! deadlocks. A QP's CQ is reaped by ib_core's completion workqueue
//! ([`PollContext::Workqueue`], [`PollContext::UnboundWorkqueue`]) or by its
//! owner's threads ([`PollContext::Direct`], [`Qp::reap`]), never in a
//! softirq: completion handlers run in process context, so they may take
//! the mutexes the rest of their consumer takes.
//!
//! Ownership of a work request: posting moves a context (`H::Ctx`, which
//! owns the request's [`DeviceBuf`]) into a box whose `ib_cqe` is the
//! request's `wr_cqe`. The completion gives the context back to
//! [`CompletionHandler::complete`], and the box to the QP, which keeps it
//! for the next post: once a QP has had its requests in flight, posting and
//! completing allocate nothing. The queue pair is drained before it is
//! destroyed, so every posted context comes back exactly once, and no
//! buffer can be freed while the device may still touch it. The boxes,
//! their trampoline and the queue slots are in [`super::work`].
//!
//! [`DeviceBuf`]: super::dma::DeviceBuf

use super::bindings;
use core::{mem::ManuallyDrop, ptr::NonNull, sync::atomic::Ordering};
use kernel::{error::to_result, prelude::*, sync::Arc};

use super::cm::id_header;
use super::cq::{Cq, CqReservation, PollContext};
use super::device::might_sleep;
use super::mr::{Access, Region};
use super::pd::Pd;
use super::srq::Srq;
use super::wc::modify_qp_err;
use super::work::{
    CompletionHandler, PreparedSend, QpCell, Slot, Slots, Work, WorkCtx, WorkHead, MAX_SGE,
};

/// The operation of a send-queue work request.
#[derive(Clone, Copy, Debug)]
pub enum SendOp {
    /// A SEND of the context's buffer.
    Send,
    /// RDMA WRITE of the context's buffer to `remote_addr` under `rkey`.
    Write {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA READ from `remote_addr` under `rkey` into the context's buffer.
    Read {
        /// Remote virtual address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Compare-and-swap on 8 remote bytes; the original lands in the buffer.
    CompareSwap {
        /// Remote virtual address, 8-byte aligned.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value expected.
        compare: u64,
        /// Value stored if the remote equals `compare`.
        swap: u64,
    },
    /// Fetch-and-add on 8 remote bytes; the original lands in the buffer.
    FetchAdd {
        /// Remote virtual address, 8-byte aligned.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value added.
        add: u64,
    },
}

/// How a request's device uses the buffers of its context.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BufUse {
    /// A SEND's or an RDMA WRITE's sources: mapped for the device to read.
    DeviceReads,
    /// An RDMA READ's or an atomic's sinks: mapped for the device to write.
    DeviceWrites,
    /// A receive's sinks: as `DeviceWrites`, on the receive queue.
    Receive,
}

/// The scatter/gather entries of a request with context `ctx` posted in
/// `pd`, under the PD's local key, from one call of [`WorkCtx::sges`]: what
/// is checked is what is posted. `EINVAL` for a list longer than `max`, a
/// buffer mapped on another device than `pd`'s, or one mapped the wrong
/// way for `usage`. A list of at most `max_inline` bytes (0: never) of
/// buffers the device only reads is posted inline.
pub(super) fn sges_of<C: WorkCtx>(
    ctx: &C,
    pd: &Pd,
    max: u32,
    usage: BufUse,
    max_inline: u32,
) -> Result<Sges> {
    let list = ctx.sges();
    if list.len() > max as usize {
        return Err(EINVAL);
    }
    let dev = pd.device().as_raw();
    for (buf, _) in list.iter() {
        let dir = buf.direction();
        let fits = match usage {
            BufUse::DeviceReads => dir.device_reads(),
            BufUse::DeviceWrites | BufUse::Receive => dir.device_writes(),
        };
        if buf.device().as_raw() != dev || !fits {
            return Err(EINVAL);
        }
    }
    let total: usize = list.iter().map(|(buf, len)| len.min(buf.len())).sum();
    // Inline, the provider copies the bytes from their kernel address
    // while posting; only a buffer the device only reads qualifies.
    let inline = total > 0
        && total <= max_inline as usize
        && list.iter().all(|(buf, _)| buf.inline_addr().is_some());
    let lkey = pd.local_dma_lkey();
    let mut sges = Sges {
        // SAFETY: zero is a valid `ib_sge`.
        list: unsafe { core::mem::zeroed() },
        n: list.len(),
        inline,
    };
    for ((buf, len), sge) in list.iter().zip(sges.list.iter_mut()) {
        *sge = bindings::ib_sge {
            addr: match buf.inline_addr() {
                Some(addr) if inline => addr,
                _ => buf.dma_addr(),
            },
            length: len.min(buf.len()) as u32,
            // No key names inline data.
            lkey: if inline { 0 } else { lkey },
        };
    }
    Ok(sges)
}

impl Sges {
    /// The entries, for a request's `sg_list`, and how many.
    pub(super) fn list_mut(&mut self) -> (*mut bindings::ib_sge, usize) {
        (self.list.as_mut_ptr(), self.n)
    }
}

/// The scatter/gather entries of a request, built once from its context
/// ([`Qp::sges_of`]): plain values (bus or kernel addresses of heap
/// buffers), which stay true when the context moves into its box.
#[derive(Clone, Copy)]
pub(super) struct Sges {
    list: [bindings::ib_sge; MAX_SGE],
    n: usize,
    inline: bool,
}

/// Capacities of a queue pair: how many requests each queue holds, and
/// how many scatter/gather entries each request may have (1 to
/// [`MAX_SGE`]).
///
/// The QP reserves room on its CQ for both, plus the two completions of
/// `ib_drain_qp()`'s markers ([`QpCaps::cq_entries`]); a CQ shared by QPs
/// whose reservations do not fit refuses the last with `ENOSPC`. Posts are
/// counted against these depths ([`Qp::post_send`] fails with `ENOBUFS`
/// when the send queue is full), so the CQ never overflows.
#[derive(Clone, Copy, Debug)]
pub struct QpCaps {
    /// Send queue depth.
    pub send_wr: u32,
    /// Receive queue depth.
    pub recv_wr: u32,
    /// Scatter/gather entries of a send-queue request.
    pub send_sge: u32,
    /// Scatter/gather entries of a receive.
    pub recv_sge: u32,
    /// Bytes of data a SEND or an RDMA WRITE may carry inline: the
    /// provider copies them into the request when it is posted
    /// (`IB_SEND_INLINE`), so the device does not fetch them. A request no
    /// longer than what the provider granted ([`Qp::max_inline`]) is posted
    /// inline by [`Qp::post_prepared`]. 0 for none. Inline data is an
    /// optimization: a provider that refuses the size is asked again
    /// without.
    pub max_inline: u32,
}

impl QpCaps {
    /// The CQ entries a QP of these capacities needs: both queues and the
    /// drain markers.
    pub fn cq_entries(&self) -> Result<u32> {
        self.send_wr
            .checked_add(self.recv_wr)
            .and_then(|d| d.checked_add(2))
            .ok_or(EINVAL)
    }
}

/// An RC queue pair created through an rdma_cm id ([`super::cm::CmId`]),
/// with the CQ and PD it uses, which it keeps.
///
/// Dropping it drains the QP (every posted context completes, flushed if
/// need be), destroys the QP, then drops its hold on the CQ and the PD, in
/// that order.
///
/// # Examples
///
/// ```
/// use kernel::rdma::{
///     dma::{DeviceBuf, Direction},
///     qp::{Qp, SendOp},
///     wc::Wc,
///     work::{CompletionHandler, SgeList, WorkCtx},
/// };
/// use kernel::sync::Arc;
///
/// /// A SEND's context: it owns the buffer the device reads.
/// struct Tx(DeviceBuf);
///
/// impl WorkCtx for Tx {
///     fn sges(&self) -> SgeList<'_> {
///         SgeList::one(&self.0, self.0.len())
///     }
/// }
///
/// struct Sender;
///
/// impl CompletionHandler for Sender {
///     type Ctx = Tx;
///
///     fn complete(_this: &Arc<Self>, wc: &Wc, _tx: Tx) {
///         if !wc.ok() && !wc.flushed() {
///             pr_warn!("a SEND failed: {}\n", wc.status_msg());
///         }
///     }
/// }
///
/// /// Copies `msg` into a buffer of its own and SENDs it; the buffer comes
/// /// back to `Sender` when the SEND completed.
/// fn send(qp: &Qp, sender: &Arc<Sender>, msg: &[u8]) -> Result {
///     let mut bytes = KVec::new();
///     bytes.extend_from_slice(msg, GFP_KERNEL)?;
///     let buf = DeviceBuf::map(qp.pd().device(), bytes, Direction::ToDevice)?;
///     qp.post_send(sender, Tx(buf), SendOp::Send)
///         .map_err(|(e, _tx)| e)
/// }
/// ```
///
/// # Invariants
///
/// `qp` is the QP `rdma_create_qp()` created on `id` with `pd` and `cq`,
/// whose poll context is not [`PollContext::Softirq`]; `id` outlives this
/// object (the owner, [`super::cm::CmId`], drops the QP before destroying
/// the id).
pub struct Qp {
    qp: NonNull<bindings::ib_qp>,
    id: NonNull<bindings::rdma_cm_id>,
    /// Free slots of each queue, as asked for: what the CQ was sized for.
    slots: Arc<Slots>,
    /// Scatter/gather entries a request of each queue may have.
    send_sge: u32,
    recv_sge: u32,
    /// Inline bytes the provider granted ([`QpCaps::max_inline`]).
    max_inline: u32,
    // Dropped by hand after the QP is destroyed, CQ then PD (the PD lives on
    // while memory regions hold it).
    cq: ManuallyDrop<CqReservation>,
    pd: ManuallyDrop<Arc<Pd>>,
    /// The shared receive queue the QP receives from, if any; dropped
    /// after the QP is destroyed (fields drop after `Drop::drop`).
    srq: Option<Arc<Srq>>,
}

// SAFETY: posting and draining are thread-safe in ib_core; the fields are
// immutable after creation.
unsafe impl Send for Qp {}
// SAFETY: as above.
unsafe impl Sync for Qp {}

/// A QP's attributes as [`Qp::attrs`] reads them back.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpAttrs {
    /// READ/atomic requests it may have outstanding.
    pub max_rd_atomic: u32,
    /// READ/atomic requests it serves.
    pub max_dest_rd_atomic: u32,
    /// Local ACK timeout exponent (4.096 us * 2^n).
    pub ack_timeout: u8,
    /// Transport retries.
    pub retry_count: u8,
    /// RNR retries (7: forever).
    pub rnr_retry: u8,
    /// RNR NAK timer code it asks its peer to wait.
    pub min_rnr_timer: u8,
}

/// `ib_qp_init_attr::event_handler` of every QP: an asynchronous event of
/// the QP. `COMM_EST` (a receive completed on a QP still in RTR: on
/// InfiniBand the peer's data can overtake a lost RTU) goes to
/// `rdma_notify()`, so that the CM moves the connection to established
/// instead of waiting for the RTU it may never get. The others need
/// nothing here: a fatal error flushes every posted request, whose
/// completions close the connection.
///
/// # Safety
///
/// `ev` is a valid event; `ctx` is the `qp_context` given at creation: the
/// cm id, which outlives the QP (its events stop at `rdma_destroy_qp()`).
unsafe extern "C" fn qp_event(ev: *mut bindings::ib_event, ctx: *mut core::ffi::c_void) {
    // SAFETY: `ev` is valid for the call (ib_core).
    let event = unsafe { (*ev).event };
    if event == bindings::ib_event_type_IB_EVENT_COMM_EST {
        // SAFETY: `ctx` is the QP's live cm id (function's safety). Callable
        // from any context: it only queues the CM's work.
        let _ = unsafe { bindings::rdma_notify(ctx.cast(), event) };
    }
}

impl Qp {
    /// Creates the QP on `id`, its send and receive queues completing on
    /// `cq`. `EINVAL` for a softirq CQ: handlers may sleep. `ENOSPC` if
    /// `cq` has no room for `caps.cq_entries()` more entries.
    ///
    /// With `srq`, the QP receives from that shared receive queue (in
    /// `pd`), not a queue of its own: `caps.recv_wr` must be 0, and `cq`,
    /// whose one QP it is, has room for every request of the SRQ (any may
    /// complete on it), its `cell` the QP's.
    ///
    /// # Safety
    ///
    /// `id` must be a valid cm id made by [`super::cm::CmId`], bound to the
    /// device of `pd` and `cq`, that outlives the returned object.
    pub(super) unsafe fn create(
        id: NonNull<bindings::rdma_cm_id>,
        pd: Arc<Pd>,
        cq: Arc<Cq>,
        caps: QpCaps,
        srq: Option<(Arc<Srq>, Arc<QpCell>)>,
    ) -> Result<Self> {
        if cq.poll_context() == PollContext::Softirq {
            return Err(EINVAL);
        }
        // Room on the CQ for every completion of both queues and of the
        // drain's markers, held until the QP is destroyed: with a shared
        // receive queue, for every request of the SRQ.
        let entries = match &srq {
            None => caps.cq_entries()?,
            Some((srq, _)) if caps.recv_wr == 0 => {
                caps.cq_entries()?.checked_add(srq.depth()).ok_or(EINVAL)?
            }
            Some(_) => return Err(EINVAL),
        };
        let cq = cq.reserve(entries)?;
        // SAFETY: zero is a valid `ib_qp_init_attr` (no SRQ, no callbacks
        // until set below).
        let mut attr: bindings::ib_qp_init_attr = unsafe { core::mem::zeroed() };
        attr.send_cq = cq.cq().as_raw();
        attr.recv_cq = cq.cq().as_raw();
        // One more of each for `ib_drain_qp()`'s marker requests; none for
        // the receive queue an SRQ replaces.
        attr.cap.max_send_wr = caps.send_wr.checked_add(1).ok_or(EINVAL)?;
        attr.cap.max_recv_wr = match &srq {
            None => caps.recv_wr.checked_add(1).ok_or(EINVAL)?,
            Some((srq, _)) => {
                if srq.pd().as_raw() != pd.as_raw() {
                    return Err(EINVAL);
                }
                attr.srq = srq.as_raw();
                0
            }
        };
        let sges = 1..=MAX_SGE as u32;
        if !sges.contains(&caps.send_sge) || !sges.contains(&caps.recv_sge) {
            return Err(EINVAL);
        }
        attr.cap.max_send_sge = caps.send_sge;
        attr.cap.max_recv_sge = caps.recv_sge;
        attr.cap.max_inline_data = caps.max_inline;
        attr.sq_sig_type = bindings::ib_sig_type_IB_SIGNAL_REQ_WR;
        attr.qp_type = bindings::ib_qp_type_IB_QPT_RC;
        attr.event_handler = Some(qp_event);
        attr.qp_context = id.as_ptr().cast();
        // The provider may have rounded the queues up (`attr.cap` says by
        // how much), but the CQ holds only what was asked for: posts are
        // counted against that, so the CQ cannot overflow (`QpCaps`). Allocated before
        // the QP: once the QP exists nothing may fail before `Self` owns it
        // (the CQ and PD would be freed under it, and it never destroyed).
        // SAFETY: `id` is live and made by `CmId` (caller).
        let owner = unsafe { id_header(id) }.owner.clone();
        let (srq, cell) = match srq {
            Some((srq, cell)) => (Some(srq), cell),
            None => (None, QpCell::new()?),
        };
        let recv_slots = if srq.is_some() { 0 } else { caps.recv_wr };
        let slots = Slots::new(caps.send_wr, recv_slots, cq.cq().clone(), owner, cell)?;
        // SAFETY: `id` is valid (caller), `pd` and `attr` are valid.
        let mut ret = unsafe { bindings::rdma_create_qp(id.as_ptr(), pd.as_raw(), &mut attr) };
        if ret == EINVAL.to_errno() && attr.cap.max_inline_data > 0 {
            // Maybe more inline data than the provider takes (siw: 80
            // bytes): asked again without.
            attr.cap.max_inline_data = 0;
            // SAFETY: as above; the failed call created nothing.
            ret = unsafe { bindings::rdma_create_qp(id.as_ptr(), pd.as_raw(), &mut attr) };
        }
        to_result(ret)?;
        // SAFETY: on success rdma_cm stored the new QP in `id->qp`.
        let Some(qp) = NonNull::new(unsafe { (*id.as_ptr()).qp }) else {
            // Not a QP rdma_cm would return; if it ever did, the id's QP
            // is destroyed before the CQ and PD drop.
            // SAFETY: `id` is valid and `rdma_create_qp()` succeeded on it.
            unsafe { bindings::rdma_destroy_qp(id.as_ptr()) };
            return Err(EINVAL);
        };
        slots.qp.set(qp);
        // INVARIANT: `qp` was created on `id` with `pd` and `cq`.
        Ok(Self {
            qp,
            id,
            slots,
            send_sge: caps.send_sge,
            recv_sge: caps.recv_sge,
            // What the provider granted, which may be more than asked.
            max_inline: attr.cap.max_inline_data,
            cq: ManuallyDrop::new(cq),
            pd: ManuallyDrop::new(pd),
            srq,
        })
    }

    /// Bytes a SEND or an RDMA WRITE may carry inline ([`QpCaps::max_inline`]).
    pub fn max_inline(&self) -> u32 {
        self.max_inline
    }

    /// The PD the QP is in.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// Runs the handlers of up to `budget` completions in this thread;
    /// returns how many ran. Only for a [`PollContext::Direct`] CQ
    /// (`EINVAL` otherwise). Callers serialize it, so that completions are
    /// handled in the order the device produced them.
    pub fn reap(&self, budget: u32) -> Result<u32> {
        self.cq.cq().process_direct(budget)
    }

    /// Moves the QP to the error state: every request still posted
    /// completes, flushed, and later posts complete at once, flushed.
    pub fn fail(&self) -> Result {
        // SAFETY: the QP is valid (type invariant).
        unsafe { modify_qp_err(self.qp) }
    }

    /// What the QP was programmed with, read back (`ib_query_qp()`): the
    /// ground truth of the negotiation and of the transport settings.
    pub fn attrs(&self) -> Result<QpAttrs> {
        // SAFETY: zero is valid for both attribute structures.
        let mut attr: bindings::ib_qp_attr = unsafe { core::mem::zeroed() };
        // SAFETY: as above.
        let mut init: bindings::ib_qp_init_attr = unsafe { core::mem::zeroed() };
        let mask = bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC
            | bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC
            | bindings::ib_qp_attr_mask_IB_QP_TIMEOUT
            | bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT
            | bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY
            | bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER;
        // SAFETY: the QP is valid (type invariant); both out-structures are
        // writable.
        to_result(unsafe {
            bindings::ib_query_qp(self.qp.as_ptr(), &mut attr, mask as i32, &mut init)
        })?;
        Ok(QpAttrs {
            max_rd_atomic: u32::from(attr.max_rd_atomic),
            max_dest_rd_atomic: u32::from(attr.max_dest_rd_atomic),
            ack_timeout: attr.timeout,
            retry_count: attr.retry_cnt,
            rnr_retry: attr.rnr_retry,
            min_rnr_timer: attr.min_rnr_timer,
        })
    }

    /// Posts a receive into `ctx`'s buffers, which must be mapped on the
    /// QP's device for the device to write ([`Direction::FromDevice`] or
    /// [`Direction::Bidirectional`]): `EINVAL` otherwise, as for a list
    /// longer than [`QpCaps::recv_sge`]. On failure `ctx` is given back.
    /// May sleep.
    ///
    /// [`Direction::FromDevice`]: super::dma::Direction::FromDevice
    /// [`Direction::Bidirectional`]: super::dma::Direction::Bidirectional
    pub fn post_recv<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        might_sleep();
        if self.srq.is_some() {
            // Its receives are the shared receive queue's ([`Srq::post_recv`]).
            return Err((EINVAL, ctx));
        }
        let mut sges = match self.sges_of(&ctx, BufUse::Receive, false) {
            Ok(sges) => sges,
            Err(e) => return Err((e, ctx)),
        };
        let work = self.box_work(handler, ctx, false)?;
        // SAFETY: zero is a valid `ib_recv_wr`.
        let mut wr: bindings::ib_recv_wr = unsafe { core::mem::zeroed() };
        // SAFETY: `work` is a live box (see `box_work`).
        let cqe = unsafe { core::ptr::addr_of_mut!((*work.as_ptr()).head.cqe) };
        wr.__bindgen_anon_1.wr_cqe = cqe;
        if sges.n > 0 {
            wr.sg_list = sges.list.as_mut_ptr();
            wr.num_sge = sges.n as i32;
        }
        let mut bad = core::ptr::null();
        // SAFETY: the QP is valid (type invariant), the WR and SGE are valid
        // for the call; the buffers they name are owned by `work`'s context
        // (moving it into the box moved no byte they name), which the
        // device owns until the completion hands it back.
        let ret = unsafe { bindings::ib_post_recv(self.qp.as_ptr(), &wr, &mut bad) };
        // SAFETY: `work` was not posted if the call failed.
        unsafe { Self::reclaim_on_error(ret, work) }
    }

    /// Posts a send-queue request. On failure `ctx` is given back.
    ///
    /// Every request is signaled: `ctx` (its buffer, its mapping, a count
    /// of the handler) comes back only through a completion, and an
    /// unsignaled request that succeeds has none.
    pub fn post_send<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
        op: SendOp,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        self.post_prepared(self.prepare_send(handler, ctx, op)?)
    }

    /// Makes a send-queue request ready to post: takes its slot and
    /// allocates its box. On failure (`ENOBUFS`, `ENOMEM`) `ctx` is given
    /// back.
    pub fn prepare_send<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
        op: SendOp,
    ) -> core::result::Result<PreparedSend<H>, (Error, H::Ctx)> {
        might_sleep();
        if matches!(
            op,
            SendOp::Read { .. } | SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. }
        ) && !self.may_read()
        {
            return Err((EINVAL, ctx));
        }
        let sges = match op {
            SendOp::Send | SendOp::Write { .. } => self.sges_of(&ctx, BufUse::DeviceReads, true),
            SendOp::Read { .. } => self.sges_of(&ctx, BufUse::DeviceWrites, false),
            SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. } => self
                .sges_of(&ctx, BufUse::DeviceWrites, false)
                // An atomic's result is 8 bytes in one entry.
                .and_then(|s| {
                    if s.n == 1 && s.list[0].length == 8 {
                        Ok(s)
                    } else {
                        Err(EINVAL)
                    }
                }),
        };
        let sges = match sges {
            Ok(sges) => sges,
            Err(e) => return Err((e, ctx)),
        };
        let work = self.box_work(handler, ctx, true)?;
        // INVARIANT: a live box from `box_work`, not posted.
        Ok(PreparedSend { work, op, sges })
    }

    /// Posts a request [`Qp::prepare_send`] made ready on this QP (`EINVAL`
    /// for another QP's). Allocates nothing: it fails only where the
    /// provider refuses the request. On failure the context is given back.
    pub fn post_prepared<H: CompletionHandler>(
        &self,
        p: PreparedSend<H>,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        // SAFETY: a live box owned by `p` (type invariant of `PreparedSend`).
        let ours = match unsafe { &(*p.work.as_ptr()).slot } {
            Slot::Send(s) => Arc::ptr_eq(s, &self.slots),
            Slot::Recv(_) | Slot::Srq(_) => false,
        };
        if !ours {
            return Err((EINVAL, p.into_ctx()));
        }
        let p = ManuallyDrop::new(p);
        let (work, op, mut sges) = (p.work, p.op, p.sges);
        // From here `work` is posted or reclaimed below, once.
        // SAFETY: zero is valid for this plain C structure.
        let mut atomic: bindings::ib_atomic_wr = unsafe { core::mem::zeroed() };
        // `ib_rdma_wr` and `ib_atomic_wr` both start with the `ib_send_wr`;
        // the larger one is the storage for either.
        let rdma = core::ptr::addr_of_mut!(atomic).cast::<bindings::ib_rdma_wr>();
        let wr = &mut atomic.wr;
        // SAFETY: `work` is a live box (see `box_work`).
        wr.__bindgen_anon_1.wr_cqe = unsafe { core::ptr::addr_of_mut!((*work.as_ptr()).head.cqe) };
        wr.send_flags = bindings::ib_send_flags_IB_SEND_SIGNALED;
        if sges.n > 0 {
            wr.sg_list = sges.list.as_mut_ptr();
            wr.num_sge = sges.n as i32;
        }
        if sges.inline {
            wr.send_flags |= bindings::ib_send_flags_IB_SEND_INLINE;
        }
        match op {
            SendOp::Send => wr.opcode = bindings::ib_wr_opcode_IB_WR_SEND,
            SendOp::Write { remote_addr, rkey } | SendOp::Read { remote_addr, rkey } => {
                wr.opcode = if matches!(op, SendOp::Write { .. }) {
                    bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
                } else {
                    bindings::ib_wr_opcode_IB_WR_RDMA_READ
                };
                // SAFETY: `rdma` aliases the start of `atomic` (see above).
                unsafe {
                    (*rdma).remote_addr = remote_addr;
                    (*rdma).rkey = rkey;
                }
            }
            SendOp::CompareSwap {
                remote_addr,
                rkey,
                compare,
                swap,
            } => {
                wr.opcode = bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP;
                atomic.remote_addr = remote_addr;
                atomic.rkey = rkey;
                atomic.compare_add = compare;
                atomic.swap = swap;
            }
            SendOp::FetchAdd {
                remote_addr,
                rkey,
                add,
            } => {
                wr.opcode = bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD;
                atomic.remote_addr = remote_addr;
                atomic.rkey = rkey;
                atomic.compare_add = add;
            }
        }
        // SAFETY: `atomic.wr` heads a structure of the kind its opcode says,
        // naming `work`'s buffer and cqe.
        unsafe { self.post_send_wr(&atomic.wr, work) }
    }

    /// Posts the fast registration of `region` with the remote access
    /// `access`, under a new key ([`Region::rkey`] reads it from now on):
    /// every registration moves the key on (`ib_inc_rkey()`), so a key a
    /// peer kept from an earlier registration of the region, since
    /// invalidated, does not work again. `EINVAL` for a region of another
    /// PD than the QP's. On failure `ctx` is given back. May sleep.
    pub fn post_reg_mr<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
        region: &Arc<Region>,
        access: Access,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        might_sleep();
        if let Err(e) = self.check_region(region).and_then(|()| self.no_sges(&ctx)) {
            return Err((e, ctx));
        }
        let work = self.box_work(handler, ctx, true)?;
        // SAFETY: `work` is a live box; it keeps the region alive
        // until the request completes.
        unsafe { (*work.as_ptr()).region = Some(region.clone()) };
        // SAFETY: zero is a valid `ib_reg_wr`.
        let mut wr: bindings::ib_reg_wr = unsafe { core::mem::zeroed() };
        // SAFETY: `work` is a live box.
        wr.wr.__bindgen_anon_1.wr_cqe =
            unsafe { core::ptr::addr_of_mut!((*work.as_ptr()).head.cqe) };
        wr.wr.opcode = bindings::ib_wr_opcode_IB_WR_REG_MR;
        wr.wr.send_flags = bindings::ib_send_flags_IB_SEND_SIGNALED;
        wr.mr = region.mr_raw();
        wr.key = region.next_key();
        wr.access = access.reg_flags() as i32;
        // SAFETY: a registration request naming `work`'s cqe and an MR that
        // `work` keeps alive, with its memory.
        unsafe { self.post_send_wr(&wr.wr, work) }
    }

    /// Posts an RDMA READ of `len` bytes from `remote_addr` under `rkey`
    /// into the first `len` bytes of `region`, which must be registered
    /// with remote write access: the sink an iWARP READ needs
    /// ([`super::device::Device::is_iwarp`]). With `invalidate` the READ also
    /// invalidates the sink's key when it completes
    /// (`IB_WR_RDMA_READ_WITH_INV`, iWARP only), so the peer can no longer
    /// write there. `EINVAL` for a region of another PD than the QP's, or a
    /// context with buffers (the region is the sink). On failure `ctx` is
    /// given back. May sleep.
    #[allow(clippy::too_many_arguments)]
    pub fn post_read_into<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
        region: &Arc<Region>,
        len: usize,
        remote_addr: u64,
        rkey: u32,
        invalidate: bool,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        might_sleep();
        if len == 0 || len > region.len() || !self.may_read() {
            return Err((EINVAL, ctx));
        }
        if let Err(e) = self.check_region(region).and_then(|()| self.no_sges(&ctx)) {
            return Err((e, ctx));
        }
        let work = self.box_work(handler, ctx, true)?;
        // SAFETY: `work` is a live box; it keeps the region, memory
        // and keys, alive until the READ completes.
        unsafe { (*work.as_ptr()).region = Some(region.clone()) };
        let mut sge = bindings::ib_sge {
            addr: region.iova(),
            length: len as u32,
            lkey: region.lkey(),
        };
        // SAFETY: zero is a valid `ib_rdma_wr`.
        let mut wr: bindings::ib_rdma_wr = unsafe { core::mem::zeroed() };
        // SAFETY: `work` is a live box.
        wr.wr.__bindgen_anon_1.wr_cqe =
            unsafe { core::ptr::addr_of_mut!((*work.as_ptr()).head.cqe) };
        wr.wr.send_flags = bindings::ib_send_flags_IB_SEND_SIGNALED;
        wr.wr.sg_list = &mut sge;
        wr.wr.num_sge = 1;
        if invalidate {
            wr.wr.opcode = bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV;
            wr.wr.ex.invalidate_rkey = region.lkey();
        } else {
            wr.wr.opcode = bindings::ib_wr_opcode_IB_WR_RDMA_READ;
        }
        wr.remote_addr = remote_addr;
        wr.rkey = rkey;
        // SAFETY: a READ naming `work`'s cqe and, through the region's key,
        // memory that `work` keeps alive; `sge` outlives the call.
        unsafe { self.post_send_wr(&wr.wr, work) }
    }

    /// Posts a local invalidation of `region`'s current key: after it
    /// completes, no peer can use the key. `EINVAL` for a region of another
    /// PD than the QP's. On failure `ctx` is given back. May sleep.
    pub fn post_local_inv<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
        region: &Arc<Region>,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        might_sleep();
        if let Err(e) = self.check_region(region).and_then(|()| self.no_sges(&ctx)) {
            return Err((e, ctx));
        }
        let work = self.box_work(handler, ctx, true)?;
        // SAFETY: `work` is a live box; it keeps the region alive.
        unsafe { (*work.as_ptr()).region = Some(region.clone()) };
        // SAFETY: zero is a valid `ib_send_wr`.
        let mut wr: bindings::ib_send_wr = unsafe { core::mem::zeroed() };
        // SAFETY: `work` is a live box.
        wr.__bindgen_anon_1.wr_cqe = unsafe { core::ptr::addr_of_mut!((*work.as_ptr()).head.cqe) };
        wr.opcode = bindings::ib_wr_opcode_IB_WR_LOCAL_INV;
        wr.send_flags = bindings::ib_send_flags_IB_SEND_SIGNALED;
        wr.ex.invalidate_rkey = region.rkey();
        // SAFETY: an invalidation request naming `work`'s cqe.
        unsafe { self.post_send_wr(&wr, work) }
    }

    /// Posts `wr` on the send queue; on failure takes `work` back.
    ///
    /// # Safety
    ///
    /// `wr` must be a valid request (of the structure its opcode says) whose
    /// `wr_cqe` is `work`'s and whose SGE, if any, names `work`'s buffer;
    /// `work` must be a live box from `box_work`, not yet posted.
    unsafe fn post_send_wr<H: CompletionHandler>(
        &self,
        wr: &bindings::ib_send_wr,
        work: NonNull<Work<H>>,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        let mut bad = core::ptr::null();
        // SAFETY: the QP is valid (type invariant); the caller vouches for
        // the request and what it names.
        let ret = unsafe { bindings::ib_post_send(self.qp.as_ptr(), wr, &mut bad) };
        // SAFETY: `work` was not posted if the call failed.
        unsafe { Self::reclaim_on_error(ret, work) }
    }

    /// Boxes a request for the send queue (`send`) or the receive queue,
    /// taking a slot of that queue.
    fn box_work<H: CompletionHandler>(
        &self,
        handler: &Arc<H>,
        ctx: H::Ctx,
        send: bool,
    ) -> core::result::Result<NonNull<Work<H>>, (Error, H::Ctx)> {
        // Taken first; if the allocation below fails it is dropped, and so
        // given back.
        let slot = match self.slots.take(send) {
            Ok(slot) => slot,
            Err(e) => return Err((e, ctx)),
        };
        Work::boxed(
            self.slots.boxes(),
            WorkHead::new::<H>(&self.slots),
            handler,
            ctx,
            slot,
        )
    }

    /// The scatter/gather entries of a request with context `ctx` on this
    /// QP (see [`sges_of`]): the receive queue's limit for a receive, the
    /// send queue's for the rest.
    fn sges_of<C: WorkCtx>(&self, ctx: &C, usage: BufUse, may_inline: bool) -> Result<Sges> {
        let max = match usage {
            BufUse::Receive => self.recv_sge,
            BufUse::DeviceReads | BufUse::DeviceWrites => self.send_sge,
        };
        let max_inline = if may_inline { self.max_inline } else { 0 };
        sges_of(ctx, self.pd(), max, usage, max_inline)
    }

    /// Whether the QP receives from a shared receive queue.
    pub fn srq(&self) -> Option<&Arc<Srq>> {
        self.srq.as_ref()
    }

    /// Whether the calling task is inside a completion handler of the QP's
    /// CQ run by ib_core's workqueue, where the QP cannot be drained.
    pub(super) fn in_own_completion(&self) -> bool {
        self.cq.cq().reaping_here()
    }

    /// Whether the QP may issue RDMA READs and atomics: its connect or
    /// accept asked for an `initiator_depth` above 0 (or neither came yet,
    /// and the provider refuses the post).
    fn may_read(&self) -> bool {
        // SAFETY: the QP's id is live while the QP is (type invariant).
        let depth = unsafe { id_header(self.id) }
            .initiator_depth
            .load(Ordering::Acquire);
        depth != 0
    }

    /// `EINVAL` unless `region` is in the QP's PD: a region of another PD,
    /// or of another device, is not the provider's to register or name.
    fn check_region(&self, region: &Region) -> Result {
        if region.pd().as_raw() == self.pd().as_raw() {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// `EINVAL` unless `ctx` names no buffer: a request whose data is a
    /// region's, or none, posts no buffer of the context.
    fn no_sges<C: WorkCtx>(&self, ctx: &C) -> Result {
        if ctx.sges().is_empty() {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Takes back a work request that failed to post.
    ///
    /// # Safety
    ///
    /// `work` must be a live box from `box_work` that ib_core did not accept
    /// if `ret` is non-zero.
    unsafe fn reclaim_on_error<H: CompletionHandler>(
        ret: i32,
        work: NonNull<Work<H>>,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        if ret == 0 {
            return Ok(());
        }
        // SAFETY: not posted, so still ours (caller's guarantee).
        let work = unsafe { Work::take(work) };
        Err((Error::from_errno(ret), work.ctx))
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        might_sleep();
        if self.srq.is_some() {
            // The send queue only: its receives are the SRQ's, which
            // reclaims those that never complete. `ib_drain_qp()` would
            // wait for a "last WQE reached" event that siw never raises
            // (60 s), and then reap the CQ in this thread, beside the
            // workqueue reaping it.
            // SAFETY: the QP is valid (type invariant). Draining moves it
            // to the error state and waits until every request of its
            // send queue has completed.
            unsafe { bindings::ib_drain_sq(self.qp.as_ptr()) };
        } else {
            // SAFETY: the QP is valid (type invariant). Draining moves it
            // to the error state and waits until every posted request has
            // completed, so every `Work` box has been handed back.
            unsafe { bindings::ib_drain_qp(self.qp.as_ptr()) };
        }
        // No completion reaches the QP from here (`Wc::fail_qp`).
        self.slots.qp.clear();
        // SAFETY: `id` is valid and owns this QP (type invariant).
        unsafe { bindings::rdma_destroy_qp(self.id.as_ptr()) };
        // SAFETY: the QP that used them is gone; each is dropped once, here:
        // the CQ's entries are free again. The CQ and PD themselves go with
        // the last object holding them.
        unsafe {
            ManuallyDrop::drop(&mut self.cq);
            ManuallyDrop::drop(&mut self.pd);
        }
    }
}
