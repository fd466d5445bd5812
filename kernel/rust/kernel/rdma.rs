// SPDX-License-Identifier: GPL-2.0

//! RDMA: kernel consumers of the verbs and the RDMA/CM.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h).
//!
//! An upper-layer protocol learns of RDMA devices through a
//! [`device::Client`] and keeps the devices it uses with a
//! [`device::DeviceRef`], which it drops in the client's `remove`. On a
//! device it uses:
//!
//! - [`pd`]: protection domains;
//! - [`cq`]: completion queues, which queue pairs may share;
//! - [`dma`]: DMA-mapped buffers whose owner, CPU or device, is their type;
//! - [`mr`]: fast-registration regions over memory a peer may access;
//! - [`cm`]: RDMA/CM ids, active and passive, each owning the queue pair of
//!   its connection;
//! - [`qp`], [`work`], [`wc`]: reliable-connected queue pairs and the work
//!   requests posted on them, whose context the completion hands back once;
//! - [`srq`]: shared receive queues, whose receives any of their queue
//!   pairs takes.
//!
//! Each object keeps what it was created on (a PD or a CQ its device), so
//! dropping a consumer's objects in any order never frees one under
//! another: what a C consumer orders by hand, the owners order in `Drop`.

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
