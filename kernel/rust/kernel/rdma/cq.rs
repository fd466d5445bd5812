// SPDX-License-Identifier: GPL-2.0

//! Completion queues.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! A completion queue (`struct ib_cq`) is where the device reports finished
//! work requests. Its completions are reaped by ib_core, which calls the
//! `done` callback of each request's `struct ib_cqe`, in the context the
//! CQ was allocated with ([`PollContext`]): a softirq, a workqueue, or the
//! owner's own thread ([`Cq::process_direct`]). Whoever posts work requests
//! whose completions land on a CQ must give them callbacks fit for that
//! context: a softirq callback must not sleep.

use super::bindings;
use super::device::DeviceRef;
use super::owner::Name;
use super::srq::Srq;
use super::work::QpCell;
use core::ptr::NonNull;
use core::{
    ffi::c_void,
    sync::atomic::{AtomicPtr, AtomicU32, Ordering},
};
use kernel::{error::from_err_ptr, prelude::*, str::CStr, sync::Arc};

use super::device::{current_task, might_sleep};

/// Where a CQ's completions are reaped, `enum ib_poll_context`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollContext {
    /// In softirq context (`IB_POLL_SOFTIRQ`): callbacks must not sleep.
    Softirq,
    /// On ib_core's completion workqueue (`IB_POLL_WORKQUEUE`): callbacks
    /// may sleep and take mutexes, but should not block for long.
    Workqueue,
    /// On ib_core's unbound completion workqueue
    /// (`IB_POLL_UNBOUND_WORKQUEUE`).
    UnboundWorkqueue,
    /// Only when the owner calls [`Cq::process_direct`], in its thread
    /// (`IB_POLL_DIRECT`), as a busy-polling consumer does. The device
    /// raises no completion interrupt for such a CQ.
    Direct,
}

impl PollContext {
    fn raw(self) -> bindings::ib_poll_context {
        match self {
            PollContext::Softirq => bindings::ib_poll_context_IB_POLL_SOFTIRQ,
            PollContext::Workqueue => bindings::ib_poll_context_IB_POLL_WORKQUEUE,
            PollContext::UnboundWorkqueue => bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE,
            PollContext::Direct => bindings::ib_poll_context_IB_POLL_DIRECT,
        }
    }
}

/// A completion queue: allocated for its owner ([`Cq::new`]) and freed on
/// drop. Several queue pairs may share one (an `Arc<Cq>` given to each,
/// [`super::cm::CmId::create_qp_on`]).
///
/// A queue pair put on the CQ reserves its entries
/// ([`super::qp::QpCaps::cq_entries`]) for as long as it lives and holds
/// the CQ; one that would not fit is refused with `ENOSPC`.
///
/// ib_core's shared pool (`ib_cq_pool_get()`) is not offered: when a device
/// goes, ib_core frees its pool right after the clients' `remove`, before
/// it waits for the device's last users, so a pooled CQ still held then
/// (leaked, or kept past `remove`) meets `ib_cq_pool_cleanup()`'s warning
/// and is leaked. A CQ of its own is freed by its last holder, whenever.
///
/// # Examples
///
/// ```
/// use kernel::c_str;
/// use kernel::rdma::{cq::{Cq, PollContext}, device::DeviceRef};
///
/// /// A CQ for a connection whose thread polls it, and one reaped on the
/// /// workqueue, which quiet connections share.
/// fn cqs(dev: &DeviceRef) -> Result<(Cq, Cq)> {
///     let busy = Cq::new(dev, 256, None, PollContext::Direct, c_str!("my_ulp"))?;
///     let quiet = Cq::new(dev, 64, None, PollContext::Workqueue, c_str!("my_ulp"))?;
///     assert_eq!(busy.poll_context(), PollContext::Direct);
///     // A thread reaps up to 16 completions at a time, running their
///     // callbacks itself.
///     let _reaped = busy.process_direct(16)?;
///     Ok((busy, quiet))
/// }
/// ```
///
/// # Invariants
///
/// `ptr` is a CQ on `dev` with the poll context `poll`, allocated by
/// `__ib_alloc_cq()` or `__ib_alloc_cq_any()` for this object, whose
/// `cq_context` is `ctx`.
pub struct Cq {
    ptr: NonNull<bindings::ib_cq>,
    poll: PollContext,
    dev: DeviceRef,
    /// The entries asked for: what the queue pairs on it may fill.
    entries: u32,
    /// The entries the queue pairs on it have reserved
    /// ([`Cq::reserve`]), at most `entries`.
    reserved: AtomicU32,
    /// What the completion trampoline finds through the `ib_cq`.
    ctx: KBox<CqCtx>,
    /// The name ib_core's record of the CQ points to.
    _name: Name,
    /// For the CQ of a QP on a shared receive queue: the SRQ, whose
    /// receives may still complete here after the QP went, kept until the
    /// CQ is freed (fields drop after `Drop::drop`).
    _srq: Option<Arc<Srq>>,
}

/// The QP of a CQ made for one QP on a shared receive queue
/// ([`super::cm::CmId::create_qp_on_srq`]): the SRQ's receives that
/// complete on the CQ are that QP's.
pub(super) struct SrqQp {
    /// The QP's tag ([`super::wc::Wc::qp_tag`]).
    pub(super) tag: u64,
    /// The QP, while it may be modified.
    pub(super) cell: Arc<QpCell>,
}

/// A CQ's `cq_context`: what the completion trampoline reaches through the
/// `ib_cq` a request completed on.
pub(super) struct CqCtx {
    /// The task running a completion handler of the CQ, or null: set by
    /// the completion trampoline around each handler.
    pub(super) reaper: AtomicPtr<c_void>,
    /// The one QP of a CQ made for a QP on a shared receive queue.
    pub(super) srq_qp: Option<SrqQp>,
}

impl CqCtx {
    /// The context of `cq`.
    ///
    /// # Safety
    ///
    /// `cq` is a live CQ of a [`Cq`], valid for `'a`.
    pub(super) unsafe fn of<'a>(cq: *mut bindings::ib_cq) -> &'a Self {
        // SAFETY: a `Cq`'s `ib_cq` has its `ctx` as `cq_context`, a box that
        // lives as long as the `ib_cq` (type invariant of `Cq`), which the
        // caller guarantees for `'a`.
        unsafe { &*(*cq).cq_context.cast::<CqCtx>() }
    }
}

/// Entries of a [`Cq`] that a queue pair on it holds: given back on drop.
///
/// # Invariants
///
/// `n` entries of `cq.reserved` are this object's.
pub(super) struct CqReservation {
    cq: Arc<Cq>,
    n: u32,
}

impl CqReservation {
    /// The CQ the entries are on.
    pub(super) fn cq(&self) -> &Arc<Cq> {
        &self.cq
    }
}

impl Drop for CqReservation {
    fn drop(&mut self) {
        self.cq.reserved.fetch_sub(self.n, Ordering::AcqRel);
    }
}

// SAFETY: a CQ may be used, freed and given back from any thread.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` allows reading the poll context and `process_direct()`,
// which ib_core makes safe to call from several threads (each completion
// is handed out once, by the provider's poll under its CQ lock).
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `nr_cqe` entries on `dev`, reaped in `poll`.
    ///
    /// `comp_vector` is the completion vector (interrupt) to use, below
    /// the device's `num_comp_vectors`; `None` lets ib_core spread CQs over
    /// the vectors (`ib_alloc_cq_any()`). `owner` is the name `rdma
    /// resource show` lists, `KBUILD_MODNAME` for the C macros; the CQ
    /// keeps a copy.
    pub fn new(
        dev: &DeviceRef,
        nr_cqe: u32,
        comp_vector: Option<u32>,
        poll: PollContext,
        owner: &'static CStr,
    ) -> Result<Self> {
        Self::new_for(dev, nr_cqe, comp_vector, poll, owner, None, None)
    }

    /// [`Cq::new`], for the one QP `srq_qp` on the shared receive queue
    /// `srq` if given.
    pub(super) fn new_for(
        dev: &DeviceRef,
        nr_cqe: u32,
        comp_vector: Option<u32>,
        poll: PollContext,
        owner: &'static CStr,
        srq_qp: Option<SrqQp>,
        srq: Option<Arc<Srq>>,
    ) -> Result<Self> {
        might_sleep();
        let nr_cqe = i32::try_from(nr_cqe).map_err(|_| EINVAL)?;
        let name = Name::new(owner)?;
        let ctx = KBox::new(
            CqCtx {
                reaper: AtomicPtr::new(core::ptr::null_mut()),
                srq_qp,
            },
            GFP_KERNEL,
        )?;
        let private: *mut c_void = core::ptr::from_ref::<CqCtx>(&ctx).cast_mut().cast();
        let ptr = match comp_vector {
            Some(vector) => {
                let vector = i32::try_from(vector).map_err(|_| EINVAL)?;
                // SAFETY: `dev` is valid (type invariant of `Device`);
                // `private` (`ctx`) and `name` live as long as the CQ
                // (fields of `Self`).
                from_err_ptr(unsafe {
                    bindings::__ib_alloc_cq(
                        dev.as_raw(),
                        private,
                        nr_cqe,
                        vector,
                        poll.raw(),
                        name.as_char_ptr(),
                    )
                })?
            }
            // SAFETY: as above.
            None => from_err_ptr(unsafe {
                bindings::__ib_alloc_cq_any(
                    dev.as_raw(),
                    private,
                    nr_cqe,
                    poll.raw(),
                    name.as_char_ptr(),
                )
            })?,
        };
        // INVARIANT: allocated on `dev` with `poll` just above.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            poll,
            dev: dev.clone(),
            entries: nr_cqe as u32,
            reserved: AtomicU32::new(0),
            ctx,
            _name: name,
            _srq: srq,
        })
    }

    /// The device the CQ is on.
    pub fn device(&self) -> &DeviceRef {
        &self.dev
    }

    /// The context the CQ's completions are reaped in.
    pub fn poll_context(&self) -> PollContext {
        self.poll
    }

    /// Reaps up to `budget` completions in this thread, running their
    /// callbacks here, and returns how many it reaped
    /// (`ib_process_cq_direct()`). Only for a [`PollContext::Direct`] CQ,
    /// `EINVAL` otherwise: on any other the reaping context would run
    /// callbacks at the same time. Callers that need completions handled in
    /// the order the device produced them call it from one thread at a time.
    pub fn process_direct(&self, budget: u32) -> Result<u32> {
        if self.poll != PollContext::Direct {
            return Err(EINVAL);
        }
        let budget = i32::try_from(budget).map_err(|_| EINVAL)?;
        // SAFETY: the CQ is valid and reaped by nobody else (type invariant
        // and the check above); the callbacks of a direct CQ are written for
        // the caller's process context.
        let n = unsafe { bindings::ib_process_cq_direct(self.ptr.as_ptr(), budget) };
        Ok(n.max(0) as u32)
    }

    /// The entries it was asked for ([`Cq::new`]).
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// Reserves `n` entries for a queue pair put on the CQ; `ENOSPC` if the
    /// queue pairs on it hold more than it has then: its completions would
    /// overflow it, and be lost.
    pub(super) fn reserve(self: &Arc<Self>, n: u32) -> Result<CqReservation> {
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                r.checked_add(n).filter(|&t| t <= self.entries)
            })
            .map_err(|_| ENOSPC)?;
        // INVARIANT: `n` entries were added to `reserved` just above.
        Ok(CqReservation {
            cq: self.clone(),
            n,
        })
    }

    /// Whether the calling task is inside a completion handler of this CQ
    /// that ib_core's workqueue runs: there, draining a QP on the CQ would
    /// wait for that very work item.
    pub(super) fn reaping_here(&self) -> bool {
        self.poll != PollContext::Direct
            && self.ctx.reaper.load(Ordering::Acquire) == current_task()
    }

    /// The raw `struct ib_cq`, for creating a queue pair on it.
    pub fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        might_sleep();
        // SAFETY: allocated for this object (type invariant) and freed
        // once, here; whatever used it was destroyed first. Completions
        // still in it are dropped unhandled (a shared receive queue's
        // receives: its SRQ, kept until now, reclaims their requests).
        unsafe { bindings::ib_free_cq(self.ptr.as_ptr()) };
    }
}
