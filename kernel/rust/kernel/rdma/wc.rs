// SPDX-License-Identifier: GPL-2.0

//! Work completions as completion handlers see them ([`Wc`]), and moving a
//! QP to the error state.

use super::bindings;
use super::errno;
use core::ptr::NonNull;
use kernel::{error::to_result, prelude::*, str::CStr};

/// A work completion, `struct ib_wc`, as a completion handler sees it.
///
/// # Invariants
///
/// `qp` is the QP the request was posted on (ib_core always names it). It
/// is valid for as long as the `Wc` is reachable: a handler is given `&Wc`
/// for the duration of the call only (the type is neither `Clone` nor
/// `Copy`), and a QP is destroyed only after it has been drained, that is,
/// after every handler of its requests has returned ([`Qp`]'s `Drop`).
#[derive(Debug)]
pub struct Wc {
    /// `enum ib_wc_status`; 0 is success.
    pub status: u32,
    /// Bytes received (receive completions).
    pub byte_len: u32,
    qp: Option<NonNull<bindings::ib_qp>>,
}

impl Wc {
    /// The handler's view of `wc`.
    ///
    /// # Safety
    ///
    /// `wc` must be a completion ib_core is handing to a `done` callback;
    /// the `Wc` must live no longer than that call.
    pub(super) unsafe fn new(wc: &bindings::ib_wc) -> Self {
        // INVARIANT: the QP is drained before it is destroyed, so it
        // outlives the call, and the `Wc` does not (the caller's guarantee).
        Self {
            status: wc.status,
            byte_len: wc.byte_len,
            qp: NonNull::new(wc.qp),
        }
    }

    /// Whether the work request succeeded.
    pub fn ok(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// Whether the request was flushed because the QP went to the error state.
    pub fn flushed(&self) -> bool {
        self.status == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }

    /// ib_core's text for the status, for logs.
    pub fn status_msg(&self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg()` returns a static string for any value.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self.status)) }
    }

    /// Moves the request's QP to the error state, for a consumer that gives
    /// up on the connection from a completion (the peer broke its
    /// protocol): every request still posted completes, flushed, and on
    /// iWARP the provider closes the stream, so the peer learns of it.
    /// Handlers run in process context (ib_core's workqueue, or a thread
    /// reaping a polled CQ), where modifying a QP may sleep.
    pub fn fail_qp(&self) -> Result {
        let qp = self.qp.ok_or(EINVAL)?;
        // SAFETY: `qp` is valid (type invariant).
        unsafe { modify_qp_err(qp) }
    }

    /// The errno a failed completion maps to.
    pub fn errno(&self) -> Error {
        match self.status {
            bindings::ib_wc_status_IB_WC_SUCCESS => EINVAL,
            bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR => errno::ECONNRESET(),
            bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR
            | bindings::ib_wc_status_IB_WC_LOC_PROT_ERR
            | bindings::ib_wc_status_IB_WC_MW_BIND_ERR => EACCES,
            bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR
            | bindings::ib_wc_status_IB_WC_LOC_LEN_ERR
            | bindings::ib_wc_status_IB_WC_REM_OP_ERR => errno::EREMOTEIO(),
            bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR
            | bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR => errno::ETIMEDOUT(),
            _ => EIO,
        }
    }
}

/// Moves `qp` to the error state.
///
/// # Safety
///
/// `qp` must be a valid QP for the duration of the call.
pub(super) unsafe fn modify_qp_err(qp: NonNull<bindings::ib_qp>) -> Result {
    // SAFETY: zero is a valid `ib_qp_attr`.
    let mut attr: bindings::ib_qp_attr = unsafe { core::mem::zeroed() };
    attr.qp_state = bindings::ib_qp_state_IB_QPS_ERR;
    // SAFETY: `qp` is valid (the caller's guarantee); `attr` is valid for
    // the call and the mask names only the state.
    to_result(unsafe {
        bindings::ib_modify_qp(
            qp.as_ptr(),
            &mut attr,
            bindings::ib_qp_attr_mask_IB_QP_STATE as i32,
        )
    })
}
