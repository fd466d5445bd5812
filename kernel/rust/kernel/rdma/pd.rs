// SPDX-License-Identifier: GPL-2.0

//! Protection domains.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! A protection domain (`struct ib_pd`) groups the queue pairs and memory
//! regions that may be used together. Whatever is created on a PD keeps it
//! (an `Arc<Pd>`), so the PD is deallocated after the last of them.

use super::bindings;
use super::device::{might_sleep, DeviceRef};
use super::owner::Name;
use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, str::CStr};

/// A protection domain, deallocated on drop.
///
/// `IB_PD_UNSAFE_GLOBAL_RKEY` is never asked for: remote access goes
/// through memory regions registered for it, never through a key that
/// covers all memory.
///
/// # Examples
///
/// ```
/// use kernel::{c_str, rdma::{device::DeviceRef, pd::Pd}};
///
/// /// A consumer's PD on a device it was given in its client's `add`.
/// fn domain(dev: &DeviceRef) -> Result<Pd> {
///     let pd = Pd::new(dev, c_str!("my_ulp"))?;
///     // Local SGEs of kmalloc memory mapped on `dev` may use this key.
///     let _lkey = pd.local_dma_lkey();
///     Ok(pd)
/// }
/// ```
///
/// # Invariants
///
/// `ptr` is a PD allocated on `dev` by `__ib_alloc_pd()`.
pub struct Pd {
    ptr: NonNull<bindings::ib_pd>,
    dev: DeviceRef,
    /// The name ib_core's record of the PD points to.
    _name: Name,
}

// SAFETY: a PD may be used and deallocated from any thread.
unsafe impl Send for Pd {}
// SAFETY: `&Pd` allows only reads of fields fixed at allocation.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a PD on `dev`. `owner` is the name `rdma resource show`
    /// lists as the PD's user, `KBUILD_MODNAME` for the C macro
    /// `ib_alloc_pd()`; the PD keeps a copy, which lives as long as the PD
    /// (leaked, longer than the module whose string `owner` is).
    pub fn new(dev: &DeviceRef, owner: &'static CStr) -> Result<Self> {
        might_sleep();
        let name = Name::new(owner)?;
        // SAFETY: `dev` is a valid device (type invariant of `Device`);
        // `name` lives as long as the PD (it is a field of `Self`).
        let ptr =
            from_err_ptr(unsafe { bindings::__ib_alloc_pd(dev.as_raw(), 0, name.as_char_ptr()) })?;
        // INVARIANT: allocated on `dev` just above.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            dev: dev.clone(),
            _name: name,
        })
    }

    /// The lkey that covers all local memory for local access (never
    /// remote): the key of SGEs that name memory mapped on the PD's device.
    pub fn local_dma_lkey(&self) -> u32 {
        // SAFETY: the PD is valid (type invariant); the field is set at
        // allocation and never changes.
        unsafe { (*self.ptr.as_ptr()).local_dma_lkey }
    }

    /// The device the PD is on.
    pub fn device(&self) -> &DeviceRef {
        &self.dev
    }

    /// The raw `struct ib_pd`, for creating objects on the PD. Whatever is
    /// created on it must be destroyed before the `Pd` is dropped.
    pub fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        might_sleep();
        // SAFETY: allocated in `new` (type invariant) and deallocated once,
        // here; the objects created on it hold the PD, so they are gone.
        unsafe { bindings::ib_dealloc_pd(self.ptr.as_ptr()) };
    }
}
