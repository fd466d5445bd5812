// SPDX-License-Identifier: GPL-2.0

//! bindgen's output for the ioctl ABI, `include/uapi/linux/rdma_krust.h`
//! (through `abi/uapi_helper.h`; Kbuild generates `uapi_generated.rs`).
//! `abi` names its items; nothing else uses them.

#![allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    unreachable_pub,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]

include!("uapi_generated.rs");
