// SPDX-License-Identifier: GPL-2.0

//! The module behind an object's callbacks.
//!
//! rdma_cm and ib_core call back into the code of whoever made a cm id, a
//! work request or an `ib_client`. Dropping the object stops the callbacks;
//! but leaking it (`core::mem::forget`, an `Arc` cycle between a handler
//! and its ids) is safe Rust, and must not leave ib_core calling into a
//! module that is gone, nor `rdma resource show` reading its name there.
//! So each such object keeps the [`Owner`] of the module that made it:
//!
//! - its C callback is a function of this crate, which enters the module's
//!   code only inside [`Owner::enter`];
//! - when the module goes (`MODULE_STATE_GOING`, after its exit function
//!   returned), the registrations it leaked are ended as if dropped
//!   (`remove` runs for each device), then the owner is marked gone and
//!   the calls still inside its code are waited for. From then on a leaked
//!   id refuses connection requests and lets rdma_cm destroy it on device
//!   removal, and a leaked request's completion is dropped, its memory
//!   leaked: no code of the module runs again;
//! - names that ib_core keeps a pointer to are copies the object owns.
//!
//! A leaked object still holds what it was made on: a device it holds
//! cannot finish its removal, as with a leaked reference in C.
//!
//! Built into a module (`cfg(MODULE)`: a module that carries its own copy
//! of these files on a kernel without them), every callback is that
//! module's code anyway, and the module must not leak: the owner is then
//! never gone.

#[cfg(all(CONFIG_MODULES, not(MODULE)))]
use super::bindings;
use core::{ptr, sync::atomic::AtomicBool};
use kernel::{
    ffi::c_char,
    new_mutex,
    prelude::*,
    str::CStr,
    sync::{Arc, Mutex},
    ThisModule,
};

/// The longest name kept, NUL included (`MODULE_NAME_LEN` on 64-bit).
const NAME_LEN: usize = 56;

/// A copy of a name that ib_core keeps a pointer to (the `kern_name` that
/// `rdma resource show` prints), owned by the object it names, so that it
/// lives as long as the object, leaked or not. Longer names are cut.
pub(crate) struct Name(KBox<[u8; NAME_LEN]>);

impl Name {
    /// A copy of `name`.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        Self::from_bytes(name.as_bytes())
    }

    fn from_bytes(name: &[u8]) -> Result<Self> {
        let mut copy = KBox::new([0u8; NAME_LEN], GFP_KERNEL)?;
        let n = name.len().min(NAME_LEN - 1);
        copy[..n].copy_from_slice(&name[..n]);
        Ok(Self(copy))
    }

    /// The name, NUL-terminated, valid while `self` is.
    pub(crate) fn as_char_ptr(&self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

/// What ends an object its module leaked, when the module goes: a client
/// registration unregisters.
pub(crate) trait End: Send + Sync {
    /// Ends the object as its drop would, unless it was ended already.
    /// Runs while the module's code is still there.
    fn end(&self);
}

/// The module that made an object whose callbacks run its code.
///
/// # Invariants
///
/// `module` is the module's `struct module`, or null for code built in.
/// Once `gone` is set (after the module's exit function), no call enters
/// the module through [`Owner::enter`], and when the module's memory is
/// freed no call is inside it any more.
#[pin_data]
pub(crate) struct Owner {
    module: *mut kernel::bindings::module,
    name: Name,
    gone: AtomicBool,
    /// Objects to end if the module leaves them: entries go when the
    /// object is dropped (`None`), or all at once when the module goes.
    #[pin]
    ends: Mutex<KVec<Option<Arc<dyn End>>>>,
}

// SAFETY: `module` is only compared, and read while the module is live
// (its name, in `Owner::of`); the rest is `Send` and `Sync`.
unsafe impl Send for Owner {}
// SAFETY: as for `Send`; every field is read through atomics or a lock.
unsafe impl Sync for Owner {}

/// A call inside an owner's code: while it exists, the module stays.
pub(crate) struct Entered {
    #[cfg(all(CONFIG_MODULES, not(MODULE)))]
    idx: core::ffi::c_int,
}

impl Drop for Entered {
    fn drop(&mut self) {
        #[cfg(all(CONFIG_MODULES, not(MODULE)))]
        // SAFETY: `idx` is the SRCU read section this object opened.
        unsafe {
            bindings::rdma_owner_read_unlock(self.idx)
        };
    }
}

impl Owner {
    /// The owner of `module`'s objects: one per loaded module, made on
    /// first use. `ENODEV` once the module is going (its exit function
    /// runs, or its init failed): its objects are ended, not made.
    pub(crate) fn of(module: &'static ThisModule) -> Result<Arc<Self>> {
        let m = module.as_ptr();
        #[cfg(all(CONFIG_MODULES, not(MODULE)))]
        if !m.is_null() {
            return registry::owner_of(m);
        }
        Self::new(m, Name::new(kernel::c_str!("kernel"))?)
    }

    fn new(module: *mut kernel::bindings::module, name: Name) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                module,
                name,
                gone: AtomicBool::new(false),
                ends <- new_mutex!(KVec::new(), "rdma_owner_ends"),
            }),
            GFP_KERNEL,
        )
    }

    /// The module's name, for ib_core's records of what it made.
    pub(crate) fn name(&self) -> *const c_char {
        self.name.as_char_ptr()
    }

    /// Enters the module's code for one call: `None` if the module is
    /// gone, and then its code must not run (nor its types be dropped).
    /// Any context; the call may sleep.
    pub(crate) fn enter(&self) -> Option<Entered> {
        #[cfg(all(CONFIG_MODULES, not(MODULE)))]
        {
            // SAFETY: no requirement; the section ends with `Entered`.
            let idx = unsafe { bindings::rdma_owner_read_lock() };
            let entered = Entered { idx };
            // Set before `registry::going` waits for the read sections:
            // a section that misses it began after the wait did, and then
            // reads it (SRCU's grace-period guarantee).
            if self.gone.load(core::sync::atomic::Ordering::Acquire) {
                return None;
            }
            Some(entered)
        }
        #[cfg(not(all(CONFIG_MODULES, not(MODULE))))]
        Some(Entered {})
    }

    /// Ends `obj` when the module goes, if it is still there then.
    pub(crate) fn keep(&self, obj: Arc<dyn End>) -> Result {
        let mut ends = self.ends.lock();
        if let Some(free) = ends.as_mut_slice().iter_mut().find(|e| e.is_none()) {
            *free = Some(obj);
            return Ok(());
        }
        ends.push(Some(obj), GFP_KERNEL)?;
        Ok(())
    }

    /// Forgets `obj`, ended by its owner.
    pub(crate) fn forget(&self, obj: &dyn End) {
        let obj = ptr::from_ref(obj);
        for e in self.ends.lock().as_mut_slice() {
            if e.as_deref()
                .is_some_and(|o| ptr::addr_eq(ptr::from_ref(o), obj))
            {
                *e = None;
            }
        }
    }

    /// Ends what the module left, and marks it gone.
    #[cfg(all(CONFIG_MODULES, not(MODULE)))]
    fn end_all(&self) {
        let left = core::mem::take(&mut *self.ends.lock());
        for obj in left.as_slice().iter().flatten() {
            obj.end();
        }
        self.gone.store(true, core::sync::atomic::Ordering::Release);
    }
}

/// The owners of the loaded modules, and the notifier that ends each one's
/// leftovers when it goes. Made on first use, never freed.
#[cfg(all(CONFIG_MODULES, not(MODULE)))]
mod registry {
    use super::*;
    use core::sync::atomic::{AtomicPtr, Ordering};
    use kernel::{
        error::to_result,
        ffi::{c_int, c_ulong, c_void},
        types::Opaque,
    };

    #[pin_data]
    struct Registry {
        #[pin]
        owners: Mutex<KVec<Option<Arc<Owner>>>>,
        #[pin]
        nb: Opaque<bindings::notifier_block>,
    }

    static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

    /// The registry, made and its notifier registered on first use.
    fn registry() -> Result<&'static Registry> {
        let r = REGISTRY.load(Ordering::Acquire);
        if !r.is_null() {
            // SAFETY: published once, never freed.
            return Ok(unsafe { &*r });
        }
        // SAFETY: zero is a valid `notifier_block` (no next, priority 0).
        let mut nb: bindings::notifier_block = unsafe { core::mem::zeroed() };
        nb.notifier_call = Some(going);
        let new = KBox::pin_init(
            pin_init!(Registry {
                owners <- new_mutex!(KVec::new(), "rdma_owners"),
                nb: Opaque::new(nb),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: the box is never moved out of: it is either freed below
        // or published and never freed.
        let new = KBox::into_raw(unsafe { Pin::into_inner_unchecked(new) });
        // Registered before it is published: a module going in between
        // finds no owner in it. SAFETY: `new` is valid and stays put.
        if let Err(e) = to_result(unsafe { bindings::register_module_notifier((*new).nb.get()) }) {
            // SAFETY: from `into_raw` above, not registered, not published.
            drop(unsafe { KBox::from_raw(new) });
            return Err(e);
        }
        match REGISTRY.compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: published, never freed.
            Ok(_) => Ok(unsafe { &*new }),
            Err(first) => {
                // Another caller's came first.
                // SAFETY: registered above and not published: nobody else
                // knows it once the notifier is gone.
                unsafe {
                    bindings::unregister_module_notifier((*new).nb.get());
                    drop(KBox::from_raw(new));
                }
                // SAFETY: published, never freed.
                Ok(unsafe { &*first })
            }
        }
    }

    /// The owner of the live module `m`.
    pub(super) fn owner_of(m: *mut bindings::module) -> Result<Arc<Owner>> {
        let reg = registry()?;
        let mut owners = reg.owners.lock();
        if let Some(o) = owners.as_slice().iter().flatten().find(|o| o.module == m) {
            return Ok(o.clone());
        }
        // Checked under the lock `going` takes: an owner made after the
        // module started going would never be marked gone.
        // SAFETY: `m` is the module of the caller's `&'static ThisModule`,
        // whose code is running: its memory is there.
        if !unsafe { bindings::module_is_live(m) } {
            return Err(ENODEV);
        }
        // SAFETY: as above; `name` is NUL-terminated within its array.
        let name = unsafe { CStr::from_char_ptr((*m).name.as_ptr()) };
        let owner = Owner::new(m, Name::new(name)?)?;
        if let Some(free) = owners.as_mut_slice().iter_mut().find(|o| o.is_none()) {
            *free = Some(owner.clone());
        } else {
            owners.push(Some(owner.clone()), GFP_KERNEL)?;
        }
        Ok(owner)
    }

    /// The module notifier: when a module goes, after its exit function,
    /// its leftovers are ended, its owner marked gone, and the calls still
    /// in its code waited for, before its memory is freed.
    ///
    /// # Safety
    ///
    /// Called by the module notifier chain only: `data` is the `struct
    /// module` whose state changes to `action`.
    #[inline(never)]
    unsafe extern "C" fn going(
        _nb: *mut bindings::notifier_block,
        action: c_ulong,
        data: *mut c_void,
    ) -> c_int {
        if action != bindings::module_state_MODULE_STATE_GOING as c_ulong {
            return 0;
        }
        let r = REGISTRY.load(Ordering::Acquire);
        if r.is_null() {
            return 0;
        }
        // SAFETY: published, never freed.
        let reg = unsafe { &*r };
        let m = data.cast::<bindings::module>();
        let owner = reg
            .owners
            .lock()
            .as_mut_slice()
            .iter_mut()
            .find(|o| o.as_ref().is_some_and(|o| o.module == m))
            .and_then(Option::take);
        if let Some(owner) = owner {
            owner.end_all();
            // SAFETY: no requirement; waits for every call that entered
            // before `gone` was set.
            unsafe { bindings::rdma_owner_synchronize() };
        }
        0
    }
}
