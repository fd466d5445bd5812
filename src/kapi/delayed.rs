// SPDX-License-Identifier: GPL-2.0

//! A delayed work item for an object that lives in an [`Arc`]: what 6.12's
//! `kernel::workqueue` does not offer (it queues work to run at once).
//!
//! The item runs on the system workqueue, in process context, once its
//! delay has passed. While it is queued it holds a reference to its object,
//! so the object outlives it; [`Delayed::cancel`] takes it back and waits
//! for a run in progress. The object's owner must cancel before the module
//! can go (the function the item runs is the module's): a file's release,
//! say, after the last thing that could queue it is gone.

use super::sys as bindings;
use core::marker::PhantomData;
use kernel::{prelude::*, sync::Arc, types::Opaque};

/// An object with a [`Delayed`] in it, and what it runs. An object with
/// several implements this once per item, each with its own `ID`.
///
/// # Safety
///
/// `OFFSET` is the offset, in bytes, of a field of type `Delayed<Self, ID>`
/// in `Self`.
pub(crate) unsafe trait HasDelayed<const ID: u8 = 0>: Send + Sync + Sized {
    /// Where the `Delayed<Self, ID>` is (`core::mem::offset_of!`).
    const OFFSET: usize;

    /// Runs once the delay has passed, in process context on the system
    /// workqueue, with the reference the queued item held. It may queue the
    /// item again.
    fn run(this: Arc<Self>);
}

/// A `struct delayed_work` inside a `T`.
///
/// # Invariants
///
/// `dw` was initialised with `INIT_DELAYED_WORK()` to run
/// [`Delayed::run_raw`]. It is queued only by [`Delayed::queue`], with a
/// reference to the `Arc<T>` that holds it (from [`Arc::into_raw`]), which
/// the run or [`Delayed::cancel`] gives back: at most one at a time, as a
/// queued item cannot be queued again.
#[repr(transparent)]
#[pin_data]
pub(crate) struct Delayed<T: HasDelayed<ID>, const ID: u8 = 0> {
    #[pin]
    dw: Opaque<bindings::delayed_work>,
    _t: PhantomData<T>,
}

// SAFETY: the item is queued and cancelled by the workqueue's own locking;
// it hands the `T` (`Send + Sync`) to another thread only as an `Arc`.
unsafe impl<T: HasDelayed<ID>, const ID: u8> Send for Delayed<T, ID> {}
// SAFETY: every method takes `&self` and goes through the workqueue's API,
// which may be called from any thread at once.
unsafe impl<T: HasDelayed<ID>, const ID: u8> Sync for Delayed<T, ID> {}

// `run_raw` finds the `delayed_work` from its `work_struct`: the first field.
const _: () = assert!(core::mem::offset_of!(bindings::delayed_work, work) == 0);

impl<T: HasDelayed<ID>, const ID: u8> Delayed<T, ID> {
    /// An item that is not queued.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `p` is valid for writes, and pinned: the item's timer
            // and list heads point into it once queued.
            dw <- Opaque::ffi_init(|p| unsafe {
                bindings::rkrust_init_delayed_work(p, Some(Self::run_raw))
            }),
            _t: PhantomData,
        })
    }

    /// The `Delayed<T, ID>` of `this`.
    fn of(this: &T) -> &Self {
        let p = core::ptr::from_ref(this).cast::<u8>();
        // SAFETY: by `HasDelayed`'s contract a `Delayed<T, ID>` lies `OFFSET`
        // bytes into `*this`, and lives as long as it.
        unsafe { &*p.add(<T as HasDelayed<ID>>::OFFSET).cast::<Self>() }
    }

    /// Queues `this`'s item to run `delay` jiffies from now (0: at once, on
    /// the system workqueue), unless it is queued already, or being
    /// cancelled.
    pub(crate) fn queue(this: &Arc<T>, delay: kernel::time::Jiffies) {
        let d = Self::of(this);
        let raw = Arc::into_raw(this.clone());
        // SAFETY: `dw` was initialised (type invariant) and is pinned inside
        // `*this`, which the reference just taken keeps alive while queued.
        let queued = unsafe { bindings::rkrust_schedule_delayed_work(d.dw.get(), delay) };
        if !queued {
            // SAFETY: `raw` came from `Arc::into_raw` just above, and the
            // workqueue did not take it: the item was queued already.
            drop(unsafe { Arc::from_raw(raw) });
        }
    }

    /// Cancels the item if it is queued, and waits for a run in progress to
    /// return; a run that queues the item again is cancelled too. Sleeps:
    /// not from the item's own run, nor holding a lock that run takes.
    pub(crate) fn cancel(&self) {
        // SAFETY: `dw` was initialised (type invariant).
        if unsafe { bindings::cancel_delayed_work_sync(self.dw.get()) } {
            let t = core::ptr::from_ref(self)
                .cast::<u8>()
                .wrapping_sub(<T as HasDelayed<ID>>::OFFSET)
                .cast::<T>();
            // SAFETY: it was queued, so it held the reference `queue` took
            // from `Arc::into_raw` on the `Arc<T>` around `self` (type
            // invariant). The caller's borrow of `self` came from another
            // reference, which outlives the borrow: this drop frees nothing.
            drop(unsafe { Arc::from_raw(t) });
        }
    }

    /// The item's function: gives its reference to [`HasDelayed::run`].
    ///
    /// # Safety
    ///
    /// Called by the workqueue with the `work_struct` of a `Delayed<T, ID>`
    /// queued by [`Delayed::queue`].
    unsafe extern "C" fn run_raw(work: *mut bindings::work_struct) {
        // The `work_struct` is the `delayed_work`'s first field (asserted
        // above), which is the `Delayed<T, ID>`'s only one (`repr(transparent)`).
        let d = work.cast::<Self>().cast_const();
        let t = d
            .cast::<u8>()
            .wrapping_sub(<T as HasDelayed<ID>>::OFFSET)
            .cast::<T>();
        // SAFETY: `d` is a queued `Delayed<T, ID>`, inside a `T` in an `Arc`, and
        // the item held a reference from `Arc::into_raw` (type invariant),
        // which the workqueue hands over now that it no longer is queued.
        let this = unsafe { Arc::from_raw(t) };
        <T as HasDelayed<ID>>::run(this);
    }
}
