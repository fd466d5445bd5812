// SPDX-License-Identifier: GPL-2.0

//! Protection domains and completion queues.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::bindings;
use super::device::DeviceRef;
use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*};

/// A protection domain; deallocated on drop.
///
/// # Invariants
///
/// `ptr` is a PD allocated on `dev` by `ib_alloc_pd()`.
pub(crate) struct Pd {
    ptr: NonNull<bindings::ib_pd>,
    dev: DeviceRef,
}

// SAFETY: a PD may be used and freed from any thread.
unsafe impl Send for Pd {}
// SAFETY: `&Pd` allows only reads of immutable fields.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a PD on `dev`. `IB_PD_UNSAFE_GLOBAL_RKEY` is never asked for.
    pub(crate) fn new(dev: &DeviceRef) -> Result<Self> {
        // SAFETY: `dev` is a valid device (type invariant of `DeviceRef`).
        let ptr = from_err_ptr(unsafe {
            bindings::__ib_alloc_pd(dev.as_raw(), 0, super::OWNER.as_char_ptr())
        })?;
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            dev: dev.clone(),
        })
    }

    /// The lkey that covers all local memory for local access (never remote).
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: the PD is valid (type invariant); the field is immutable.
        unsafe { (*self.ptr.as_ptr()).local_dma_lkey }
    }

    /// The device the PD is on.
    pub(crate) fn device(&self) -> &DeviceRef {
        &self.dev
    }

    pub(super) fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`; everything created on it is gone first
        // (owners drop the QP and MRs before the PD).
        unsafe { bindings::ib_dealloc_pd(self.ptr.as_ptr()) };
    }
}

/// How a CQ's completions are reaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reaping {
    /// ib_core's completion workqueue runs the handlers (`IB_POLL_WORKQUEUE`).
    Workqueue,
    /// Nobody but the owner: handlers run in the thread that calls
    /// [`Qp::reap`] (`IB_POLL_DIRECT`), as a busy-polling ULP does.
    Direct,
}

/// A completion queue; freed on drop.
///
/// # Invariants
///
/// `ptr` came from `ib_alloc_cq()` on `_dev` with the poll context `mode`
/// names.
pub(crate) struct Cq {
    pub(super) ptr: NonNull<bindings::ib_cq>,
    pub(super) mode: Reaping,
    _dev: DeviceRef,
}

// SAFETY: a CQ may be used and freed from any thread.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` gives no access to the CQ's state.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `depth` entries on `dev`.
    pub(crate) fn new(dev: &DeviceRef, depth: u32, mode: Reaping) -> Result<Self> {
        let depth = i32::try_from(depth).map_err(|_| EINVAL)?;
        let ctx = match mode {
            Reaping::Workqueue => bindings::ib_poll_context_IB_POLL_WORKQUEUE,
            Reaping::Direct => bindings::ib_poll_context_IB_POLL_DIRECT,
        };
        // SAFETY: `dev` is valid; a null private pointer is allowed.
        let ptr = from_err_ptr(unsafe {
            bindings::__ib_alloc_cq(
                dev.as_raw(),
                core::ptr::null_mut(),
                depth,
                0,
                ctx,
                super::OWNER.as_char_ptr(),
            )
        })?;
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            mode,
            _dev: dev.clone(),
        })
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`; the QP using it is destroyed first.
        unsafe { bindings::ib_free_cq(self.ptr.as_ptr()) };
    }
}
