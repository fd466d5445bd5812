// SPDX-License-Identifier: GPL-2.0

//! `kernel::rdma`, built into the module for a kernel without the series:
//! the kernel's `rust/kernel/rdma.rs`, whose files Kbuild copies to
//! `rdma/`.

use crate::bindings;

pub mod cm;
pub mod cq;
pub mod device;
pub mod dma;
pub mod mr;
mod owner;
pub mod pd;
pub mod qp;
pub mod srq;
pub mod wc;
pub mod work;
