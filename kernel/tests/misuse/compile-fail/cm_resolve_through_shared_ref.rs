// SPDX-License-Identifier: GPL-2.0
// expect: error[E0596]
//
// The RDMA/CM does not serialize resolution on one id: resolving
// takes &mut CmId, so two threads sharing the id cannot both resolve.

use kernel::prelude::*;
use kernel::rdma::cm::{CmEvent, CmHandler, CmId, HandlerId, SockAddr};
use kernel::sync::Arc;

struct H;

impl CmHandler for H {
    fn event(_this: &Arc<Self>, _id: &HandlerId<'_, Self>, _event: &CmEvent) {}
}

#[allow(dead_code)]
fn shared(id: &CmId<H>) -> Result {
    id.resolve_addr(&SockAddr::v4([192, 0, 2, 1], 7), 1000)
}
