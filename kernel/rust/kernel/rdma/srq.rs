// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! A shared receive queue (`struct ib_srq`) holds receives for every queue
//! pair created on it ([`super::cm::CmId::create_qp_on_srq`]): a peer's
//! SEND on any of them consumes the next receive of the SRQ, so idle
//! connections hold no receive buffers of their own. The receives are
//! posted with [`Srq::post_recv`], like a QP's, and complete on the CQ of
//! the QP that consumed them, where [`super::wc::Wc::qp_tag`] names that QP.
//!
//! What the verbs leave to the consumer, this type does:
//!
//! - a QP on an SRQ cannot be drained of its receives (the "last WQE
//!   reached" event `ib_drain_qp()` waits for is never raised by siw, and
//!   rxe loses a receive it had started filling when its QP fails), and
//!   the provider frees the receives still queued when the SRQ is
//!   destroyed, without completing them. So the SRQ lists every receive it
//!   has posted until its completion, and frees what is still listed once
//!   no completion can come any more: after the SRQ is destroyed and every
//!   CQ of its QPs is freed (each holds the SRQ until then);
//! - a receive may complete after its QP is gone, so each QP on an SRQ has
//!   a CQ of its own (sized for every receive of the SRQ): the completion
//!   names the QP by its CQ, whose tag and QP are known for as long as it
//!   exists, never through the `ib_wc`'s QP pointer.
//!
//! The limit event (`IB_EVENT_SRQ_LIMIT_REACHED`) is counted
//! ([`Srq::limit_events`]) once armed ([`Srq::arm_limit`]): it comes in
//! the provider's receive path, in a softirq on siw, where no consumer code
//! may run.

use super::bindings;
use super::device::might_sleep;
use super::owner::Owner;
use super::pd::Pd;
use super::qp::{sges_of, BufUse};
use super::work::{self, BoxCache, CompletionHandler, Slot, SrqSlot, Work, WorkHead};
use core::{
    alloc::Layout,
    ffi::c_void,
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    alloc::{allocator::Kmalloc, Allocator},
    error::{from_err_ptr, to_result},
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
    ThisModule,
};

/// What the provider's event handler reaches (`srq_context`).
struct SrqEvents {
    /// Limit events since creation.
    limit: AtomicU32,
}

/// A request the SRQ posted and has not had back: its box, and how to
/// drop it if it never completes.
#[derive(Clone, Copy)]
struct Listed {
    work: NonNull<u8>,
    reclaim: unsafe fn(NonNull<u8>),
}

/// The requests of an SRQ between their post and their completion.
///
/// # Invariants
///
/// `entries` has one entry per slot of the SRQ; `unused` lists the indices
/// of its `None` entries. Each `Some` entry is a live box from the SRQ's
/// cache holding a `Work` whose slot is an [`SrqSlot`] of this SRQ at that
/// index, which `reclaim` drops.
struct Posted {
    entries: KVec<Option<Listed>>,
    unused: KVec<usize>,
}

impl Posted {
    /// An unused index, taken.
    fn take_unused(&mut self) -> Option<usize> {
        let n = self.unused.len();
        let idx = *self.unused.as_slice().get(n.checked_sub(1)?)?;
        // SAFETY: one fewer entry, all of which stay initialized (`usize`
        // drops nothing).
        unsafe { self.unused.set_len(n - 1) };
        Some(idx)
    }
}

/// A shared receive queue in a protection domain: created by
/// [`Srq::new`], destroyed when the last of its holders goes (its owner,
/// the QPs created on it, their CQs), and then the receives it still holds
/// are dropped, their buffers with them.
///
/// # Examples
///
/// ```
/// use kernel::c_str;
/// use kernel::rdma::{
///     cm::CmId,
///     cq::PollContext,
///     dma::{DeviceBuf, Direction},
///     pd::Pd,
///     qp::QpCaps,
///     srq::Srq,
///     wc::Wc,
///     work::{CompletionHandler, SgeList, WorkCtx},
/// };
/// use kernel::{sync::Arc, ThisModule};
///
/// /// A receive's context: the buffer the device writes.
/// struct Rx(DeviceBuf);
///
/// impl WorkCtx for Rx {
///     fn sges(&self) -> SgeList<'_> {
///         SgeList::one(&self.0, self.0.len())
///     }
/// }
///
/// /// The handler of every receive of the SRQ, whichever QP took it.
/// struct Receiver;
///
/// impl CompletionHandler for Receiver {
///     type Ctx = Rx;
///
///     fn complete(_this: &Arc<Self>, wc: &Wc, rx: Rx) {
///         // The QP the receive came on, as its creator tagged it.
///         let Some(conn) = wc.qp_tag() else { return };
///         if wc.ok() {
///             let data = rx.0.into_cpu();
///             let len = (wc.byte_len as usize).min(data.len());
///             pr_info!("connection {conn}: {len} bytes\n");
///         }
///     }
/// }
///
/// /// 64 receives of 4 KiB in `pd`, shared by every connection made on it,
/// /// for `module`, the caller's `THIS_MODULE`.
/// fn shared(pd: &Arc<Pd>, rx: &Arc<Receiver>, module: &'static ThisModule) -> Result<Arc<Srq>> {
///     let srq = Srq::new(pd, 64, 1, module)?;
///     for _ in 0..64 {
///         let buf = DeviceBuf::alloc(pd.device(), 4096, Direction::FromDevice)?;
///         srq.post_recv(rx, Rx(buf)).map_err(|(e, _)| e)?;
///     }
///     // Told when fewer than 8 are left.
///     srq.arm_limit(8)?;
///     Ok(srq)
/// }
///
/// /// The QP of connection `n`, receiving from `srq`.
/// fn connect<H: kernel::rdma::cm::CmHandler>(
///     id: &mut CmId<H>,
///     srq: &Arc<Srq>,
///     n: u64,
/// ) -> Result {
///     let caps = QpCaps { send_wr: 16, recv_wr: 0, send_sge: 1, recv_sge: 1, max_inline: 0 };
///     id.create_qp_on_srq(srq, caps, PollContext::Workqueue, n, c_str!("my_ulp"))?;
///     Ok(())
/// }
/// ```
///
/// # Invariants
///
/// `ptr` is a basic SRQ in `pd` of `depth` requests of up to `sge` entries,
/// created by `ib_create_srq_user()` for this object, whose `srq_context`
/// is `events`. `free` counts the slots of `depth` no posted request
/// holds. `owner` is the module that made it.
#[pin_data(PinnedDrop)]
pub struct Srq {
    ptr: NonNull<bindings::ib_srq>,
    pd: Arc<Pd>,
    depth: u32,
    sge: u32,
    pub(super) free: AtomicU32,
    #[pin]
    pub(super) boxes: SpinLock<BoxCache>,
    #[pin]
    posted: SpinLock<Posted>,
    events: KBox<SrqEvents>,
    owner: Arc<Owner>,
}

// SAFETY: an SRQ may be posted to, modified and destroyed from any thread;
// the rest is atomics, locks and immutable fields.
unsafe impl Send for Srq {}
// SAFETY: as above.
unsafe impl Sync for Srq {}

/// `ib_srq_init_attr::event_handler` of every SRQ: counts limit events.
/// Called by the provider in its receive path, a softirq on siw: it only
/// counts.
///
/// # Safety
///
/// `ev` is a valid event; `ctx` is the `srq_context` given at creation, an
/// `SrqEvents` that outlives the SRQ.
unsafe extern "C" fn srq_event(ev: *mut bindings::ib_event, ctx: *mut c_void) {
    // SAFETY: `ev` is valid for the call (provider).
    let event = unsafe { (*ev).event };
    if event == bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED {
        // SAFETY: `ctx` is the SRQ's live `SrqEvents` (function's safety).
        unsafe { &*ctx.cast::<SrqEvents>() }
            .limit
            .fetch_add(1, Ordering::AcqRel);
    }
}

impl Srq {
    /// Creates an SRQ in `pd` holding up to `depth` receives of up to `sge`
    /// scatter/gather entries (1 to [`work::MAX_SGE`]), for the module
    /// `module`, whose code its receives' handlers are. `EINVAL` for a
    /// depth of 0 or a bad `sge`; the provider's error for more than it
    /// offers, `EOPNOTSUPP` from a device without SRQs.
    pub fn new(
        pd: &Arc<Pd>,
        depth: u32,
        sge: u32,
        module: &'static ThisModule,
    ) -> Result<Arc<Self>> {
        might_sleep();
        if depth == 0 || !(1..=work::MAX_SGE as u32).contains(&sge) {
            return Err(EINVAL);
        }
        let n = usize::try_from(depth)?;
        let owner = Owner::of(module)?;
        let events = KBox::new(
            SrqEvents {
                limit: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?;
        let mut entries = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut unused = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            entries.push(None, GFP_KERNEL)?;
            unused.push(n - 1 - i, GFP_KERNEL)?;
        }
        let cache = BoxCache::with_room(n)?;
        // SAFETY: zero is a valid `ib_srq_init_attr` (a basic SRQ).
        let mut attr: bindings::ib_srq_init_attr = unsafe { core::mem::zeroed() };
        attr.event_handler = Some(srq_event);
        attr.srq_context = core::ptr::from_ref::<SrqEvents>(&events).cast_mut().cast();
        attr.attr.max_wr = depth;
        attr.attr.max_sge = sge;
        attr.srq_type = bindings::ib_srq_type_IB_SRQT_BASIC;
        // SAFETY: `pd` is valid; `attr` is valid for the call; a kernel SRQ
        // has no user data. `events` outlives the SRQ (a field of `Self`,
        // or freed below only after it is destroyed).
        let ptr = from_err_ptr(unsafe {
            bindings::ib_create_srq_user(
                pd.as_raw(),
                &mut attr,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
            )
        })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        let slots = depth;
        let srq = Arc::pin_init(
            // INVARIANT: created just above in `pd` with `depth` and `sge`,
            // `events` its context; no request posted yet.
            pin_init!(Self {
                ptr,
                pd: pd.clone(),
                depth,
                sge,
                free: AtomicU32::new(slots),
                boxes <- new_spinlock!(cache, "rdma_srq_boxes"),
                posted <- new_spinlock!(Posted { entries, unused }, "rdma_srq_posted"),
                events,
                owner,
            }),
            GFP_KERNEL,
        );
        if srq.is_err() {
            // SAFETY: created above and used by nothing: no QP is on it, so
            // no event can come for it (`events` went with the failed
            // initializer).
            unsafe { bindings::ib_destroy_srq_user(ptr.as_ptr(), core::ptr::null_mut()) };
        }
        srq
    }

    /// The PD the SRQ is in.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// How many receives it holds at most.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// How many more receives may be posted now.
    pub fn room(&self) -> u32 {
        self.free.load(Ordering::Acquire)
    }

    /// Limit events so far: each came when fewer receives than the armed
    /// limit were left, and disarmed it.
    pub fn limit_events(&self) -> u32 {
        self.events.limit.load(Ordering::Acquire)
    }

    /// Arms the limit event for when fewer than `limit` receives are left
    /// (`ib_modify_srq()`, `IB_SRQ_LIMIT`); it fires once, then is armed
    /// again by another call. `EINVAL` for a limit of 0 or not below the
    /// depth.
    pub fn arm_limit(&self, limit: u32) -> Result {
        if limit == 0 || limit >= self.depth {
            return Err(EINVAL);
        }
        // SAFETY: zero is a valid `ib_srq_attr`.
        let mut attr: bindings::ib_srq_attr = unsafe { core::mem::zeroed() };
        attr.srq_limit = limit;
        // SAFETY: the SRQ is valid (type invariant); `attr` is valid for
        // the call and the mask names only the limit.
        to_result(unsafe {
            bindings::ib_modify_srq(
                self.ptr.as_ptr(),
                &mut attr,
                bindings::ib_srq_attr_mask_IB_SRQ_LIMIT,
            )
        })
    }

    /// The raw `struct ib_srq`, for creating a queue pair on it.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_srq {
        self.ptr.as_ptr()
    }

    /// Posts a receive into `ctx`'s buffers, which must be mapped on the
    /// SRQ's device for the device to write: `EINVAL` otherwise, as for a
    /// list longer than the SRQ's entries; `ENOBUFS` when it holds
    /// [`Srq::depth`] receives. It completes on whichever QP of the SRQ
    /// takes it, to `handler`. On failure `ctx` is given back. May sleep.
    pub fn post_recv<H: CompletionHandler>(
        self: &Arc<Self>,
        handler: &Arc<H>,
        ctx: H::Ctx,
    ) -> core::result::Result<(), (Error, H::Ctx)> {
        might_sleep();
        let mut sges = match sges_of(&ctx, &self.pd, self.sge, BufUse::Receive, 0) {
            Ok(sges) => sges,
            Err(e) => return Err((e, ctx)),
        };
        if self
            .free
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_err()
        {
            return Err((ENOBUFS, ctx));
        }
        // A slot is taken: an unused index exists (type invariant of
        // `Posted`: one entry per slot).
        let Some(idx) = self.posted.lock().take_unused() else {
            self.free.fetch_add(1, Ordering::AcqRel);
            return Err((ENOBUFS, ctx));
        };
        // INVARIANT: `idx` is listed below before the request is posted,
        // and this SRQ outlives it (`Srq`'s drop reclaims what is listed).
        let slot = Slot::Srq(SrqSlot {
            srq: NonNull::from(&**self),
            idx,
        });
        let work = match Work::boxed(
            &self.boxes,
            WorkHead::of_owner::<H>(&self.owner),
            handler,
            ctx,
            slot,
        ) {
            Ok(work) => work,
            Err(e) => {
                // The slot was given back; `idx` is unused again.
                self.posted.lock().unused.push(idx, GFP_NOWAIT).ok();
                return Err(e);
            }
        };
        {
            let mut posted = self.posted.lock();
            if let Some(e) = posted.entries.get_mut(idx) {
                *e = Some(Listed {
                    work: work.cast(),
                    reclaim: reclaim::<H>,
                });
            }
        }
        // SAFETY: zero is a valid `ib_recv_wr`.
        let mut wr: bindings::ib_recv_wr = unsafe { core::mem::zeroed() };
        // SAFETY: `work` is a live box (written above).
        wr.__bindgen_anon_1.wr_cqe = unsafe { core::ptr::addr_of_mut!((*work.as_ptr()).head.cqe) };
        let (list, n) = sges.list_mut();
        if n > 0 {
            wr.sg_list = list;
            wr.num_sge = n as i32;
        }
        let mut bad = core::ptr::null();
        // SAFETY: the SRQ is valid (type invariant); the WR and its entries
        // are valid for the call; the buffers they name are owned by
        // `work`'s context, which the device owns until the completion (or
        // the SRQ's drop) hands it back.
        let ret = unsafe { bindings::ib_post_srq_recv(self.ptr.as_ptr(), &wr, &mut bad) };
        if ret == 0 {
            return Ok(());
        }
        // SAFETY: not posted, so still ours; `take` unlists it.
        let work = unsafe { Work::take(work) };
        Err((Error::from_errno(ret), work.ctx))
    }

    /// Takes the request at `idx` off the list: it completed, or was not
    /// posted.
    pub(super) fn unlist(&self, idx: usize) {
        let mut posted = self.posted.lock();
        if let Some(e) = posted.entries.get_mut(idx) {
            *e = None;
            // Never fails: there is room for an index per entry.
            let _ = posted.unused.push(idx, GFP_NOWAIT);
        }
    }
}

/// Drops a request of handler type `H` that never completed, and frees its
/// box.
///
/// # Safety
///
/// `work` is a live box of an SRQ's cache holding a `Work<H>` that no
/// completion can reach any more, owned by the caller and not used after;
/// its SRQ is being dropped.
unsafe fn reclaim<H: CompletionHandler>(work: NonNull<u8>) {
    // SAFETY: a live `Work<H>` the caller owns, moved out once.
    let w = unsafe { work.cast::<Work<H>>().as_ptr().read() };
    let Work {
        handler,
        ctx,
        region,
        slot,
        ..
    } = w;
    // Its SRQ is going: nothing to give the slot back to.
    core::mem::forget(slot);
    drop((ctx, region, handler));
    // SAFETY: a `Kmalloc` allocation for a `Work<H>` (the SRQ's cache
    // allocates so), given up by the caller.
    unsafe { Kmalloc::free(work, Layout::new::<Work<H>>()) };
}

#[pinned_drop]
impl PinnedDrop for Srq {
    fn drop(self: Pin<&mut Self>) {
        might_sleep();
        // No QP uses it any more, and every CQ where one of its receives
        // could complete is freed: each held the SRQ. Destroying it frees
        // the receives still queued, without completions.
        // SAFETY: created for this object (type invariant), destroyed once,
        // here.
        unsafe { bindings::ib_destroy_srq_user(self.ptr.as_ptr(), core::ptr::null_mut()) };
        // What is still listed never completes now: queued above, taken by
        // a QP that failed before completing it (rxe), or completed on a
        // CQ freed before it was reaped.
        let listed = core::mem::take(&mut self.posted.lock().entries);
        // Their drop is the owner's code: leaked if the owner is gone.
        if let Some(_entered) = self.owner.enter() {
            for l in listed.iter().flatten() {
                // SAFETY: a listed box (type invariant of `Posted`), off the
                // list now, which no completion reaches any more (above).
                unsafe { (l.reclaim)(l.work) };
            }
        }
    }
}
