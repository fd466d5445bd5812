// SPDX-License-Identifier: GPL-2.0
// expect: error[E0599]
//
// No CQ comes from ib_core's shared pool: ib_core frees the pool right
// after the clients' remove, before it waits for the device's users, so a
// pooled CQ held any longer (leaked, or kept past remove) would meet
// ib_cq_pool_cleanup()'s WARN_ON and be leaked. Queue pairs share a Cq of
// their own through an Arc instead.

use kernel::prelude::*;
use kernel::rdma::cq::{Cq, PollContext};
use kernel::rdma::device::DeviceRef;

#[allow(dead_code)]
fn pooled(dev: &DeviceRef) -> Result<Cq> {
    Cq::from_pool(dev, 16, None, PollContext::Workqueue)
}
