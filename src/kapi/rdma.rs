// SPDX-License-Identifier: GPL-2.0

//! `kernel::rdma` built into the module, for a kernel without the rust-rdma
//! series: the same files as the kernel's (`kernel/rust/kernel/rdma/`),
//! declared as the kernel's `rust/kernel/rdma.rs` declares them.

// `super::bindings` of the files below, as `crate::bindings` is in the
// kernel's `rdma.rs`.
use super::bindings;

#[path = "../../kernel/rust/kernel/rdma/cm.rs"]
pub mod cm;
#[path = "../../kernel/rust/kernel/rdma/cq.rs"]
pub mod cq;
#[path = "../../kernel/rust/kernel/rdma/device.rs"]
pub mod device;
#[path = "../../kernel/rust/kernel/rdma/dma.rs"]
pub mod dma;
#[path = "../../kernel/rust/kernel/rdma/errno.rs"]
mod errno;
#[path = "../../kernel/rust/kernel/rdma/mr.rs"]
pub mod mr;
#[path = "../../kernel/rust/kernel/rdma/owner.rs"]
mod owner;
#[path = "../../kernel/rust/kernel/rdma/pd.rs"]
pub mod pd;
#[path = "../../kernel/rust/kernel/rdma/qp.rs"]
pub mod qp;
#[path = "../../kernel/rust/kernel/rdma/wc.rs"]
pub mod wc;
#[path = "../../kernel/rust/kernel/rdma/work.rs"]
pub mod work;
