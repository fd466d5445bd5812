// SPDX-License-Identifier: GPL-2.0
// expect: error[E0596]
//
// Listening binds the id: through a shared reference it does not
// compile.

use kernel::prelude::*;
use kernel::rdma::cm::{CmEvent, CmHandler, CmId, HandlerId, SockAddr};
use kernel::sync::Arc;

struct H;

impl CmHandler for H {
    fn event(_this: &Arc<Self>, _id: &HandlerId<'_, Self>, _event: &CmEvent) {}
}

#[allow(dead_code)]
fn shared(id: &CmId<H>) -> Result {
    id.listen(&SockAddr::v4([0; 4], 7), 1)
}
