// SPDX-License-Identifier: GPL-2.0

//! Work completions as completion handlers see them ([`Wc`]), and moving a
//! QP to the error state.

use super::bindings;
use super::work::QpCell;
use core::ptr::NonNull;
use kernel::{error::to_result, prelude::*, str::CStr, sync::Arc};

/// A work completion, `struct ib_wc`, as a completion handler sees it.
///
/// It does not keep the `ib_wc`'s QP pointer: a handler earlier in the same
/// polled batch may have dropped the last owner of that QP, and a QP
/// destroyed under a direct CQ's batch leaves later completions naming it
/// (so does a QP on a shared receive queue, whose receives complete after
/// it went). [`Wc::fail_qp`] reaches the QP through a cell that knows
/// whether it still exists, and [`Wc::qp_tag`] names it.
pub struct Wc {
    /// `enum ib_wc_status`; 0 is success. Only the status is defined for a
    /// completion that failed: the fields below are then zero or `None`.
    pub status: u32,
    /// `enum ib_wc_opcode`: the kind of request that completed
    /// (`IB_WC_RECV`, `IB_WC_RDMA_READ`, ...).
    pub opcode: u32,
    /// Bytes received (receive completions).
    pub byte_len: u32,
    /// `enum ib_wc_flags`.
    pub wc_flags: u32,
    /// The immediate data of a SEND or RDMA WRITE with immediate that
    /// landed here (`IB_WC_WITH_IMM`), in host byte order.
    pub imm_data: Option<u32>,
    /// The key a peer's SEND with invalidate invalidated here
    /// (`IB_WC_WITH_INVALIDATE`).
    pub invalidate_rkey: Option<u32>,
    qp: Option<Arc<QpCell>>,
    tag: Option<u64>,
}

impl core::fmt::Debug for Wc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Wc")
            .field("status", &self.status)
            .field("opcode", &self.opcode)
            .field("byte_len", &self.byte_len)
            .field("wc_flags", &self.wc_flags)
            .field("imm_data", &self.imm_data)
            .field("invalidate_rkey", &self.invalidate_rkey)
            .finish()
    }
}

impl Wc {
    /// The handler's view of `wc`, a completion on the QP of `qp`, whose
    /// tag, for a QP on a shared receive queue, is `tag`.
    pub(super) fn new(wc: &bindings::ib_wc, qp: Option<Arc<QpCell>>, tag: Option<u64>) -> Self {
        let ok = wc.status == bindings::ib_wc_status_IB_WC_SUCCESS;
        let flags = if ok { wc.wc_flags as u32 } else { 0 };
        let with = |flag: u32| flags & flag != 0;
        // SAFETY: both members of the union are plain integers, which any
        // bits are; the flags say which one, if any, was written.
        let (imm, inv) = unsafe { (wc.ex.imm_data, wc.ex.invalidate_rkey) };
        Self {
            status: wc.status,
            opcode: if ok { wc.opcode } else { 0 },
            byte_len: if ok { wc.byte_len } else { 0 },
            wc_flags: flags,
            imm_data: with(bindings::ib_wc_flags_IB_WC_WITH_IMM).then(|| u32::from_be(imm)),
            invalidate_rkey: with(bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE).then_some(inv),
            qp,
            tag,
        }
    }

    /// The tag the QP was given when it was created on a shared receive
    /// queue ([`super::cm::CmId::create_qp_on_srq`]), `None` for another
    /// QP: how the handler of the SRQ's receives, shared by its QPs, tells
    /// which connection a receive came on. A QP's tag is its owner's
    /// choice, and never changes: a receive that completes after its QP
    /// went still names that QP's, never another's.
    pub fn qp_tag(&self) -> Option<u64> {
        self.tag
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
    /// `ENODEV` if the QP is being destroyed (it was drained: nothing is
    /// posted any more). Handlers run in process context (ib_core's
    /// workqueue, or a thread reaping a polled CQ), where modifying a QP
    /// may sleep.
    pub fn fail_qp(&self) -> Result {
        self.qp.as_ref().ok_or(ENODEV)?.fail()
    }

    /// The errno a failed completion maps to.
    pub fn errno(&self) -> Error {
        match self.status {
            bindings::ib_wc_status_IB_WC_SUCCESS => EINVAL,
            bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR => ECONNRESET,
            bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR
            | bindings::ib_wc_status_IB_WC_LOC_PROT_ERR
            | bindings::ib_wc_status_IB_WC_MW_BIND_ERR => EACCES,
            bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR
            | bindings::ib_wc_status_IB_WC_LOC_LEN_ERR
            | bindings::ib_wc_status_IB_WC_REM_OP_ERR => EREMOTEIO,
            bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR
            | bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR => ETIMEDOUT,
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
