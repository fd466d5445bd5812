// SPDX-License-Identifier: GPL-2.0

//! `kernel::rdma` built into the module, for a kernel without the rust-rdma
//! series: the same files as the kernel's (`kernel/rust/kernel/rdma/`),
//! declared as the kernel's `rust/kernel/rdma.rs` declares them.

// `super::bindings` of the files below, as `crate::bindings` is in the
// kernel's `rdma.rs`.
use super::bindings;

// The files themselves, as Kbuild copies them to src/kapi/rdma/ from
// kernel/rust/kernel/rdma/ with one change: the error codes the series
// adds to `kernel::error::code`, which 6.12 lacks, are the module's
// (`super::errno`); `rustfmt` checks them where they are written. `device`,
// which names no such code, is built from where it is written: a
// `rustfmt::skip` on its `mod` would make its `macro_export`ed macro one
// that `crate::rdma_client_slot` may not name.
#[rustfmt::skip]
pub mod cm;
#[rustfmt::skip]
pub mod cq;
#[path = "../../kernel/rust/kernel/rdma/device.rs"]
pub mod device;
#[rustfmt::skip]
pub mod dma;
#[rustfmt::skip]
pub mod mr;
#[rustfmt::skip]
mod owner;
#[rustfmt::skip]
pub mod pd;
#[rustfmt::skip]
pub mod qp;
#[rustfmt::skip]
pub mod srq;
#[rustfmt::skip]
pub mod wc;
#[rustfmt::skip]
pub mod work;
