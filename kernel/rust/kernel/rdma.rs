// SPDX-License-Identifier: GPL-2.0

//! RDMA: kernel consumers of the verbs and the RDMA/CM.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h).
//!
//! An upper-layer protocol learns of RDMA devices through a
//! [`device::Client`] and keeps the devices it uses with a
//! [`device::DeviceRef`], which it drops in the client's `remove`.

use crate::bindings;

pub mod device;
