// SPDX-License-Identifier: GPL-2.0

//! The `rdma_krust` ioctl ABI and wire protocol for cargo: the crate root
//! around [`abi`](self), which the kernel module compiles as its own
//! `crate::abi` (Kbuild cannot link a cargo crate). `uapi` is bindgen's
//! output for `include/uapi/linux/rdma_krust.h` (`build.rs`), as the
//! module's Kbuild makes `bindings/uapi_generated.rs`.

#![no_std]

#[allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    clippy::all
)]
mod uapi {
    include!(concat!(env!("OUT_DIR"), "/uapi.rs"));
}

mod abi;
pub use abi::*;
