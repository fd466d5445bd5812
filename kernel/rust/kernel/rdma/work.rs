// SPDX-License-Identifier: GPL-2.0

//! Work requests and who owns them: the context each posted request
//! carries, the heap box whose `ib_cqe` is the request's `wr_cqe`, the
//! completion trampoline that gives the box back exactly once, the queue
//! slots a request holds while posted, and requests made ready to post
//! ([`PreparedSend`]). [`super::qp::Qp`] posts them.

use super::bindings;
use super::dma::DeviceBuf;
use super::errno;
use super::mr::Region;
use super::qp::SendOp;
use super::wc::Wc;
use core::{
    mem::ManuallyDrop,
    ptr::NonNull,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{prelude::*, sync::Arc};

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
    /// for a request without data. Its length must be within the QP's
    /// ([`QpCaps`]), or posting fails with `EINVAL`.
    ///
    /// [`QpCaps`]: super::qp::QpCaps
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

/// One posted work request: its `ib_cqe` first, so `container_of` is a cast.
///
/// # Invariants
///
/// Between its post and its completion a `Work` is a leaked `KBox` that the
/// device owns: its `cqe.done` is the completion trampoline of `H`, and the
/// only pointer to it is the `wr_cqe` of the posted request, through which
/// the trampoline (or the failed post) takes the box back, exactly once.
/// `#[repr(C)]` with `cqe` first makes the `ib_cqe` pointer the box's.
#[repr(C)]
pub(super) struct Work<H: CompletionHandler> {
    pub(super) cqe: bindings::ib_cqe,
    pub(super) handler: Arc<H>,
    pub(super) ctx: H::Ctx,
    /// The region the request names (registration, invalidation, a READ's
    /// sink), kept alive, memory and keys, until it completes.
    pub(super) region: Option<Arc<Region>>,
    /// The queue slot the request holds, given back when it completes.
    pub(super) slot: Slot,
}

/// The free slots of a QP's two queues.
pub(super) struct Slots {
    pub(super) send: AtomicU32,
    pub(super) recv: AtomicU32,
}

/// Which queue a posted request occupies, and its QP's [`Slots`].
pub(super) enum Slot {
    Send(Arc<Slots>),
    Recv(Arc<Slots>),
}

impl Slots {
    /// Takes a slot of the send queue (`send`) or the receive queue;
    /// `ENOBUFS` when it is full (requests of an operation that timed out,
    /// say, still hold theirs).
    pub(super) fn take(self: &Arc<Self>, send: bool) -> Result<Slot> {
        let counter = if send { &self.send } else { &self.recv };
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .map_err(|_| errno::ENOBUFS())?;
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
/// `work` is a live box from `Qp::box_work`, not posted, owned by this
/// object alone.
///
/// [`Qp::prepare_send`]: super::qp::Qp::prepare_send
/// [`Qp::post_prepared`]: super::qp::Qp::post_prepared
pub struct PreparedSend<H: CompletionHandler> {
    pub(super) work: NonNull<Work<H>>,
    pub(super) op: SendOp,
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
        let work = unsafe { KBox::from_raw(this.work.as_ptr()) };
        KBox::into_inner(work).ctx
    }
}

impl<H: CompletionHandler> Drop for PreparedSend<H> {
    fn drop(&mut self) {
        // SAFETY: a live, unposted box that `self` owns (type invariant),
        // taken back once, here.
        drop(unsafe { KBox::from_raw(self.work.as_ptr()) });
    }
}

/// `ib_cqe::done` of every work request posted through [`super::qp::Qp`].
///
/// # Safety
///
/// Called by ib_core only, with a completion whose `wr_cqe` is the `cqe`
/// field of a `Work<H>` leaked by [`Qp::post_send`](super::qp::Qp::post_send) or
/// [`Qp::post_recv`](super::qp::Qp::post_recv).
pub(super) unsafe extern "C" fn work_done<H: CompletionHandler>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: ib_core passes a valid completion.
    let wc = unsafe { &*wc };
    // SAFETY: the `wr_cqe` member is the one set when posting.
    let cqe = unsafe { wc.__bindgen_anon_1.wr_cqe };
    // SAFETY: `cqe` is the first field of a `Work<H>` (repr(C)) that was
    // leaked from a `KBox` when posted; each completes exactly once, so
    // ownership comes back here once.
    let work = unsafe { KBox::from_raw(cqe.cast::<Work<H>>()) };
    let Work {
        handler,
        ctx,
        region,
        slot,
        ..
    } = KBox::into_inner(work);
    drop(slot);
    // SAFETY: ib_core is handing `wc` to this callback; the handler gets
    // `&Wc` for the call only.
    let wc = unsafe { Wc::new(wc) };
    H::complete(&handler, &wc, ctx);
    drop(region);
}
