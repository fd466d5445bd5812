// SPDX-License-Identifier: GPL-2.0
// expect: error[E0596]
//
// Connecting takes &mut CmId: an id shared in an Arc cannot be
// connected from two threads at once.

use kernel::prelude::*;
use kernel::rdma::cm::{CmEvent, CmHandler, CmId, ConnParam, HandlerId};
use kernel::sync::Arc;

struct H;

impl CmHandler for H {
    fn event(_this: &Arc<Self>, _id: &HandlerId<'_, Self>, _event: &CmEvent) {}
}

#[allow(dead_code)]
fn shared(id: Arc<CmId<H>>) -> Result {
    id.connect(&ConnParam::default())
}
