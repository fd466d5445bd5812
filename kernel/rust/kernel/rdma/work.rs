// SPDX-License-Identifier: GPL-2.0

//! Work requests and who owns them: the context each posted request
//! carries, the box whose `ib_cqe` is the request's `wr_cqe`, the
//! completion trampoline that gives the box back exactly once, the queue
//! slots a request holds while posted, and requests made ready to post
//! ([`PreparedSend`]). [`super::qp::Qp`] posts them.
//!
//! The boxes are the QP's: a completed request's box is kept for the next
//! post ([`Slots`]), so that once a QP has had its requests in flight,
//! posting and completing allocate nothing.

use super::bindings;
use super::cq::{Cq, CqCtx};
use super::device::current_task;
use super::dma::DeviceBuf;
use super::mr::Region;
use super::owner::Owner;
use super::qp::{SendOp, Sges};
use super::srq::Srq;
use super::wc::{modify_qp_err, Wc};
use core::{
    alloc::Layout,
    mem::ManuallyDrop,
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{
    alloc::{allocator::Kmalloc, Allocator},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
};

/// The most scatter/gather entries one request may have here.
pub const MAX_SGE: usize = 4;

/// A request's scatter/gather list: up to [`MAX_SGE`] buffers, in order,
/// each with how many of its bytes to use (at most its length).
///
/// # Examples
///
/// ```
/// use kernel::rdma::work::{SgeList, MAX_SGE};
///
/// let empty = SgeList::new();
/// assert_eq!(empty.len(), 0);
/// assert!(MAX_SGE >= 2);
/// ```
pub struct SgeList<'a> {
    entries: [Option<(&'a DeviceBuf, usize)>; MAX_SGE],
    len: usize,
}

impl<'a> SgeList<'a> {
    /// An empty list: a request without data.
    pub const fn new() -> Self {
        Self {
            entries: [None; MAX_SGE],
            len: 0,
        }
    }

    /// A list of one entry: the first `len` bytes of `buf`.
    pub fn one(buf: &'a DeviceBuf, len: usize) -> Self {
        let mut list = Self::new();
        list.entries[0] = Some((buf, len));
        list.len = 1;
        list
    }

    /// Appends the first `len` bytes of `buf`; `EINVAL` if the list holds
    /// [`MAX_SGE`] entries already.
    pub fn push(&mut self, buf: &'a DeviceBuf, len: usize) -> Result {
        let slot = self.entries.get_mut(self.len).ok_or(EINVAL)?;
        *slot = Some((buf, len));
        self.len += 1;
        Ok(())
    }

    /// How many entries the list has.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a DeviceBuf, usize)> + '_ {
        self.entries.iter().flatten().copied()
    }
}

impl Default for SgeList<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// The context a posted work request carries: it owns the request's
/// buffers.
pub trait WorkCtx: Send {
    /// The request's scatter/gather list, buffers this context owns; empty
    /// for a request without data. Posting fails with `EINVAL` if the list
    /// is longer than the QP's ([`QpCaps`]), or names a buffer mapped on
    /// another device than the QP's, or mapped the wrong way for the
    /// request ([`Direction`]). Posting calls it once, and posts what it
    /// checked.
    ///
    /// [`QpCaps`]: super::qp::QpCaps
    /// [`Direction`]: super::dma::Direction
    fn sges(&self) -> SgeList<'_>;
}

/// Receives completions of the work requests posted with it.
///
/// # Examples
///
/// ```
/// use kernel::rdma::{
///     dma::DeviceBuf,
///     wc::Wc,
///     work::{CompletionHandler, SgeList, WorkCtx},
/// };
/// use kernel::sync::Arc;
///
/// /// A receive's context: it owns the buffer the device writes.
/// struct Rx(DeviceBuf);
///
/// impl WorkCtx for Rx {
///     fn sges(&self) -> SgeList<'_> {
///         SgeList::one(&self.0, self.0.len())
///     }
/// }
///
/// struct Receiver;
///
/// impl CompletionHandler for Receiver {
///     type Ctx = Rx;
///
///     fn complete(_this: &Arc<Self>, wc: &Wc, rx: Rx) {
///         if !wc.ok() {
///             // Flushed, or failed: the buffer is unmapped and freed here.
///             return;
///         }
///         // The sync for the CPU: only now may the bytes be read.
///         let data = rx.0.into_cpu();
///         let len = (wc.byte_len as usize).min(data.len());
///         pr_info!("received {} bytes\n", data[..len].len());
///     }
/// }
/// ```
pub trait CompletionHandler: Send + Sync + 'static {
    /// What travels with each work request.
    type Ctx: WorkCtx;

    /// A work request completed (successfully, with an error, or flushed).
    /// Runs in process context, on ib_core's completion workqueue or in a
    /// thread reaping a direct CQ ([`super::qp::Qp::reap`]): may take
    /// mutexes, must not block for long.
    fn complete(this: &Arc<Self>, wc: &Wc, ctx: Self::Ctx);
}

/// What every posted request starts with, whatever its handler type: what
/// the completion gate ([`work_gate`]) reads.
///
/// # Invariants
///
/// `cqe.done` is [`work_gate`]; `owner` is the owner of the QP's id, kept
/// alive by the QP's [`Slots`], which the request's [`Slot`] holds, or the
/// owner of the shared receive queue the request's [`Slot`] names, which
/// outlives it; `done` is the completion trampoline of the request's
/// handler type, code of that owner.
#[repr(C)]
pub(super) struct WorkHead {
    pub(super) cqe: bindings::ib_cqe,
    owner: *const Owner,
    done: unsafe extern "C" fn(*mut bindings::ib_cq, *mut bindings::ib_wc),
}

impl WorkHead {
    /// The head of a request of handler type `H` on the QP of `slots`.
    pub(super) fn new<H: CompletionHandler>(slots: &Slots) -> Self {
        // INVARIANT: `slots` are the QP's, and keep its owner.
        Self::of_owner::<H>(&slots.owner)
    }

    /// The head of a request of handler type `H` whose owner is `owner`,
    /// which what the request's [`Slot`] names keeps alive.
    pub(super) fn of_owner<H: CompletionHandler>(owner: &Owner) -> Self {
        // SAFETY: a zero `ib_cqe` is valid; `done` is set right after.
        let mut cqe: bindings::ib_cqe = unsafe { core::mem::zeroed() };
        cqe.done = Some(work_gate);
        Self {
            cqe,
            owner,
            done: work_done::<H>,
        }
    }
}

/// One posted work request: its `ib_cqe` first, so `container_of` is a cast.
///
/// # Invariants
///
/// Between its post and its completion a `Work` lives in a box of its QP's
/// [`Slots`] ([`Work::boxed`]), or of its shared receive queue, that
/// the device owns: its head's `done`
/// is the completion trampoline of `H`, and the only pointer to it is the
/// `wr_cqe` of the posted request, through which the trampoline (or the
/// failed post) takes it out ([`Work::take`]), exactly once; a receive of
/// a shared receive queue is also listed there, and taken out from the
/// list only once no completion can come for it any more. `#[repr(C)]`
/// with the head (and in it `cqe`) first makes the `ib_cqe` pointer the
/// box's.
#[repr(C)]
pub(super) struct Work<H: CompletionHandler> {
    pub(super) head: WorkHead,
    pub(super) handler: Arc<H>,
    pub(super) ctx: H::Ctx,
    /// The region the request names (registration, invalidation, a READ's
    /// sink), kept alive, memory and keys, until it completes.
    pub(super) region: Option<Arc<Region>>,
    /// The queue slot the request holds, given back when it completes.
    pub(super) slot: Slot,
}

impl<H: CompletionHandler> Work<H> {
    /// Boxes a request holding `slot`, in a box from `boxes`: one a
    /// completed request left, or a new one. Every post comes from process
    /// context with no spinlock held (ioctls, cm handlers, the waiters that
    /// reap), so the allocation may sleep. If it fails, `slot` is dropped,
    /// and so given back, and `ctx` is handed back untouched.
    pub(super) fn boxed(
        boxes: &SpinLock<BoxCache>,
        head: WorkHead,
        handler: &Arc<H>,
        ctx: H::Ctx,
        slot: Slot,
    ) -> core::result::Result<NonNull<Self>, (Error, H::Ctx)> {
        let Ok(work) = new_box::<Self>(boxes) else {
            drop(slot);
            return Err((ENOMEM, ctx));
        };
        // SAFETY: an uninitialized box for a `Work<H>`, ours alone.
        unsafe {
            work.as_ptr().write(Work {
                head,
                handler: handler.clone(),
                ctx,
                region: None,
                slot,
            })
        };
        Ok(work)
    }

    /// Moves the request out of its box, and gives the box back to the
    /// QP's cache ([`Slots::recycle`]).
    ///
    /// # Safety
    ///
    /// `work` is a live box from [`Work::boxed`] holding a `Work<H>`,
    /// owned by the caller (not posted, or completed), and not used after.
    pub(super) unsafe fn take(work: NonNull<Self>) -> Self {
        // SAFETY: a live, initialized `Work<H>` the caller owns; the box is
        // not read again, so the value is moved out once.
        let w = unsafe { work.as_ptr().read() };
        match &w.slot {
            // SAFETY: a box from `new_box` with this layout, whose value was
            // moved out above; `s` is its QP's (the request's slot says so).
            Slot::Send(s) | Slot::Recv(s) => unsafe {
                s.recycle(work.cast(), Layout::new::<Self>())
            },
            Slot::Srq(s) => {
                let srq = s.srq();
                srq.unlist(s.idx);
                // SAFETY: as above, a box of the SRQ's cache.
                unsafe { recycle(&srq.boxes, work.cast(), Layout::new::<Self>()) };
            }
        }
        w
    }
}

/// A free box: memory for a `Work`, from `Kmalloc`, uninitialized.
#[derive(Clone, Copy)]
pub(super) struct FreeBox(NonNull<u8>);

// SAFETY: plain memory, which any thread may use or free.
unsafe impl Send for FreeBox {}

/// The boxes of a QP's (or a shared receive queue's) completed requests,
/// kept for its next posts.
///
/// # Invariants
///
/// Every entry of `free` is a `Kmalloc` allocation of `layout`, owned by
/// this cache alone. `free` has room for as many boxes as the QP has queue
/// slots, reserved at creation: a request holds its slot as long as its
/// box, so returning a box never allocates.
pub(super) struct BoxCache {
    /// The layout of the boxes kept: that of the first request boxed on the
    /// QP (a QP's requests have one handler type, as a rule; another's
    /// boxes are allocated and freed each time).
    layout: Option<Layout>,
    free: KVec<FreeBox>,
}

impl BoxCache {
    /// An empty cache with room for `room` boxes.
    pub(super) fn with_room(room: usize) -> Result<Self> {
        // INVARIANT: empty, with room for a box per slot.
        Ok(Self {
            layout: None,
            free: KVec::with_capacity(room, GFP_KERNEL)?,
        })
    }
}

/// A box for a `T` from `boxes`: one a completed request left, or a new one
/// (which may sleep). Uninitialized.
pub(super) fn new_box<T>(boxes: &SpinLock<BoxCache>) -> Result<NonNull<T>> {
    let layout = Layout::new::<T>();
    let cached = {
        let mut c = boxes.lock();
        // The first box asked for sets the layout the cache keeps.
        let kept = *c.layout.get_or_insert(layout) == layout;
        let n = c.free.len();
        if kept && n > 0 {
            let b = c.free.as_slice()[n - 1];
            // SAFETY: one fewer entry, all of which stay initialized;
            // `FreeBox` is `Copy`, so nothing is dropped, and the box
            // taken is the caller's now (the cache no longer lists it).
            unsafe { c.free.set_len(n - 1) };
            Some(b)
        } else {
            None
        }
    };
    match cached {
        Some(b) => Ok(b.0.cast()),
        // Outside the lock: posts come from process context with no
        // spinlock held (see `Qp`), so the allocation may sleep.
        None => Ok(Kmalloc::alloc(layout, GFP_KERNEL)?.cast()),
    }
}

/// Keeps a box whose value was moved out in `boxes` for the next post, or
/// frees it (a layout the cache does not keep).
///
/// # Safety
///
/// `b` is a box from [`new_box`] of `boxes` for a type of `layout`, owned
/// by the caller, holding no value, and not used after.
pub(super) unsafe fn recycle(boxes: &SpinLock<BoxCache>, b: NonNull<u8>, layout: Layout) {
    {
        let mut c = boxes.lock();
        // Never fails for a kept layout: there is room for a box per
        // slot, and the request that had `b` held a slot until now.
        if c.layout == Some(layout) && c.free.push(FreeBox(b), GFP_NOWAIT).is_ok() {
            return;
        }
    }
    // SAFETY: a `Kmalloc` allocation of `layout` (from `new_box`) that
    // the caller gives up.
    unsafe { Kmalloc::free(b, layout) };
}

impl Drop for BoxCache {
    fn drop(&mut self) {
        let Some(layout) = self.layout else { return };
        for b in self.free.as_slice() {
            // SAFETY: a `Kmalloc` allocation of `layout` that the cache
            // owns (type invariant), freed once: the cache goes with it.
            unsafe { Kmalloc::free(b.0, layout) };
        }
    }
}

/// The free slots of a QP's two queues, and the boxes its completed
/// requests leave for the next posts. Every request holds an `Arc` of it
/// (its [`Slot`]), so it outlives the QP until the last box is back.
#[pin_data]
pub(super) struct Slots {
    pub(super) send: AtomicU32,
    pub(super) recv: AtomicU32,
    #[pin]
    boxes: SpinLock<BoxCache>,
    /// The QP, while it may be modified ([`QpCell`]).
    pub(super) qp: Arc<QpCell>,
    /// The CQ the QP's requests complete on.
    pub(super) cq: Arc<Cq>,
    /// The owner of the QP's id: the module whose code its completion
    /// handlers are.
    owner: Arc<Owner>,
}

/// The QP of a [`Slots`], or none once it is being destroyed.
pub(super) struct QpPtr(Option<NonNull<bindings::ib_qp>>);

// SAFETY: a QP may be modified from any thread.
unsafe impl Send for QpPtr {}

/// A QP, while it may be modified: from its creation until its `Drop` has
/// drained it, just before it is destroyed. A completion reaches its QP
/// through this ([`Wc::fail_qp`]), never through the pointer in the
/// `ib_wc`, which a handler of the same batch may have destroyed. The
/// QP's [`Slots`] hold it, and so does the CQ of a QP on a shared receive
/// queue, whose receives' requests are the SRQ's.
#[pin_data]
pub(super) struct QpCell {
    #[pin]
    qp: Mutex<QpPtr>,
}

impl QpCell {
    /// A cell with no QP yet.
    pub(super) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                qp <- new_mutex!(QpPtr(None), "rdma_qp_ptr"),
            }),
            GFP_KERNEL,
        )
    }

    /// Records the QP, once it exists.
    pub(super) fn set(&self, qp: NonNull<bindings::ib_qp>) {
        self.qp.lock().0 = Some(qp);
    }

    /// Forgets the QP, which is about to be destroyed: waits for a
    /// [`QpCell::fail`] that is modifying it.
    pub(super) fn clear(&self) {
        self.qp.lock().0 = None;
    }

    /// Moves the QP to the error state; `ENODEV` once it is being
    /// destroyed (drained: everything posted has completed already).
    pub(super) fn fail(&self) -> Result {
        let qp = self.qp.lock();
        match qp.0 {
            // SAFETY: the QP is valid until `clear`, which waits for the
            // lock held here.
            Some(ptr) => unsafe { modify_qp_err(ptr) },
            None => Err(ENODEV),
        }
    }
}

/// Which queue a posted request occupies: a queue of its QP (and the QP's
/// [`Slots`]), or a shared receive queue.
pub(super) enum Slot {
    Send(Arc<Slots>),
    Recv(Arc<Slots>),
    Srq(SrqSlot),
}

/// A receive's place on a shared receive queue: a slot of its depth, and
/// its entry in the SRQ's list of posted requests.
///
/// # Invariants
///
/// `srq` is live as long as this object: the box holding it is listed in
/// `srq` at `idx` ([`Srq::unlist`]) while posted, and the SRQ outlives
/// every request listed, and every CQ where one could complete (each such
/// CQ holds the SRQ, and frees itself before it lets go).
pub(super) struct SrqSlot {
    pub(super) srq: NonNull<Srq>,
    pub(super) idx: usize,
}

impl SrqSlot {
    /// The SRQ.
    pub(super) fn srq(&self) -> &Srq {
        // SAFETY: live as long as `self` (type invariant).
        unsafe { self.srq.as_ref() }
    }
}

impl Slots {
    /// Slots for `send` and `recv` requests, and room to keep a box for
    /// each.
    pub(super) fn new(
        send: u32,
        recv: u32,
        cq: Arc<Cq>,
        owner: Arc<Owner>,
        qp: Arc<QpCell>,
    ) -> Result<Arc<Self>> {
        let room = usize::try_from(send)?
            .checked_add(usize::try_from(recv)?)
            .ok_or(EINVAL)?;
        let cache = BoxCache::with_room(room)?;
        Arc::pin_init(
            pin_init!(Self {
                send: AtomicU32::new(send),
                recv: AtomicU32::new(recv),
                boxes <- new_spinlock!(cache, "rdma_qp_boxes"),
                qp,
                cq,
                owner,
            }),
            GFP_KERNEL,
        )
    }

    /// The boxes of the QP's completed requests, for [`Work::boxed`].
    pub(super) fn boxes(&self) -> &SpinLock<BoxCache> {
        &self.boxes
    }

    /// Keeps a box whose value was moved out for the next post, or frees
    /// it (a layout the cache does not keep).
    ///
    /// # Safety
    ///
    /// `b` is a box from [`Work::boxed`] of this object for a type of
    /// `layout`, owned by the caller, holding no value, and not used after.
    pub(super) unsafe fn recycle(&self, b: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller's guarantee.
        unsafe { recycle(&self.boxes, b, layout) }
    }

    /// Takes a slot of the send queue (`send`) or the receive queue;
    /// `ENOBUFS` when it is full (requests of an operation that timed out,
    /// say, still hold theirs).
    pub(super) fn take(self: &Arc<Self>, send: bool) -> Result<Slot> {
        let counter = if send { &self.send } else { &self.recv };
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .map_err(|_| ENOBUFS)?;
        Ok(if send {
            Slot::Send(self.clone())
        } else {
            Slot::Recv(self.clone())
        })
    }
}

impl Drop for Slot {
    /// The request completed, or was never posted: its slot is free again.
    fn drop(&mut self) {
        let counter = match self {
            Slot::Send(s) => &s.send,
            Slot::Recv(s) => &s.recv,
            Slot::Srq(s) => &s.srq().free,
        };
        counter.fetch_add(1, Ordering::AcqRel);
    }
}

/// A send-queue request made ready to post ([`Qp::prepare_send`]): its
/// queue slot is taken and its box allocated, so posting it
/// ([`Qp::post_prepared`]) allocates nothing and fails only where the
/// provider refuses the request (a QP in the error state). A caller that
/// must post several requests or none, the fragments of one message, say,
/// prepares them all first. Dropped unposted, it frees its slot and its
/// context.
///
/// # Invariants
///
/// `work` is a live box from `Qp::box_work` holding a `Work<H>`, not
/// posted, owned by this object alone.
///
/// [`Qp::prepare_send`]: super::qp::Qp::prepare_send
/// [`Qp::post_prepared`]: super::qp::Qp::post_prepared
pub struct PreparedSend<H: CompletionHandler> {
    pub(super) work: NonNull<Work<H>>,
    pub(super) op: SendOp,
    /// The request's entries, built when it was prepared.
    pub(super) sges: Sges,
}

// SAFETY: it owns the box, whose contents are `Send` (`CompletionHandler`
// is `Send + Sync`, its context `Send`).
unsafe impl<H: CompletionHandler> Send for PreparedSend<H> {}

impl<H: CompletionHandler> PreparedSend<H> {
    /// Gives the context back, unposted; the slot is freed.
    pub fn into_ctx(self) -> H::Ctx {
        let this = ManuallyDrop::new(self);
        // SAFETY: a live, unposted box that `this` owns (type invariant);
        // `this` is not dropped, so the box is taken back once.
        unsafe { Work::take(this.work) }.ctx
    }
}

impl<H: CompletionHandler> Drop for PreparedSend<H> {
    fn drop(&mut self) {
        // SAFETY: a live, unposted box that `self` owns (type invariant),
        // taken back once, here.
        drop(unsafe { Work::take(self.work) });
    }
}

/// `ib_cqe::done` of every work request posted through [`super::qp::Qp`]:
/// calls the request's completion trampoline inside its owner's code. Once
/// the owner's module is gone (it leaked the QP), the request, its context
/// and its box are leaked instead: their drop is the module's code. This
/// crate's code, never the module's.
///
/// # Safety
///
/// Called by ib_core only, with a completion whose `wr_cqe` is the `cqe`
/// of a [`WorkHead`], at the start of a posted `Work`.
#[inline(never)]
unsafe extern "C" fn work_gate(cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
    // SAFETY: ib_core passes a valid completion, whose `wr_cqe` is the one
    // set when posting: a `WorkHead`'s `cqe`, its first field.
    let head = unsafe { &*(*wc).__bindgen_anon_1.wr_cqe.cast::<WorkHead>() };
    // Read before the call, which frees the box.
    let done = head.done;
    // SAFETY: the owner is alive while the request is posted (invariant of
    // `WorkHead`).
    if let Some(_entered) = unsafe { &*head.owner }.enter() {
        // SAFETY: ib_core's arguments, for the trampoline of the request's
        // handler type, whose module's code stays while `_entered` does.
        unsafe { done(cq, wc) };
    }
}

/// The completion trampoline of a request of handler type `H`:
/// [`work_gate`] calls it.
///
/// # Safety
///
/// Called by [`work_gate`] only, inside the owner's code, with a completion
/// whose `wr_cqe` is the `cqe` of a `Work<H>` posted by
/// [`Qp::post_send`](super::qp::Qp::post_send) or
/// [`Qp::post_recv`](super::qp::Qp::post_recv).
unsafe extern "C" fn work_done<H: CompletionHandler>(
    cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: ib_core passes a valid completion.
    let wc = unsafe { &*wc };
    // SAFETY: the `wr_cqe` member is the one set when posting.
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe };
    // SAFETY: `cqe` is the first field of a `Work<H>` (repr(C)) in a box
    // from `Slots::new_box`, given to the device when posted; each request
    // completes exactly once, so ownership comes back here once. A posted
    // `cqe` is never null.
    let work = unsafe { Work::take(NonNull::new_unchecked(cqe.cast::<Work<H>>())) };
    let Work {
        handler,
        ctx,
        region,
        slot,
        ..
    } = work;
    // SAFETY: `cq` is the CQ the request completed on, live for the call:
    // one of `Cq`'s (requests are posted on QPs made on them, a receive of
    // a shared receive queue on a QP made on one for it).
    let cq = unsafe { CqCtx::of(cq) };
    // The slot is free again for the handler's own posts; the QP, for
    // `Wc::fail_qp`, stays: a QP's, or that of the CQ (a receive of a
    // shared receive queue, whose QP is the one whose CQ it completed on).
    let qp = match &slot {
        Slot::Send(s) | Slot::Recv(s) => Some(s.qp.clone()),
        Slot::Srq(_) => cq.srq_qp.as_ref().map(|q| q.cell.clone()),
    };
    drop(slot);
    let wc = Wc::new(wc, qp, cq.srq_qp.as_ref().map(|q| q.tag));
    // Which task runs the CQ's handlers: a connection dropped in one of
    // them is not drained there (`CmId`'s `Drop`).
    let reaper = &cq.reaper;
    let prev = reaper.swap(current_task(), Ordering::AcqRel);
    H::complete(&handler, &wc, ctx);
    reaper.store(prev, Ordering::Release);
    drop(region);
}
