// SPDX-License-Identifier: GPL-2.0
// expect: error[E0308]
//
// An id names the module whose code its handler is (its THIS_MODULE), so
// that its events stop reaching that code when the module goes: a name
// alone, as C's rdma_create_id() takes KBUILD_MODNAME, does not do.

use kernel::prelude::*;
use kernel::rdma::cm::{CmEvent, CmHandler, CmId, HandlerId, PortSpace};
use kernel::sync::Arc;

struct H;

impl CmHandler for H {
    fn event(_this: &Arc<Self>, _id: &HandlerId<'_, Self>, _event: &CmEvent) {}
}

#[allow(dead_code)]
fn by_name(h: Arc<H>) -> Result<CmId<H>> {
    CmId::new(h, PortSpace::Tcp, kernel::c_str!("my_ulp"))
}
