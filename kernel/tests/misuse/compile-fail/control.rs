// SPDX-License-Identifier: GPL-2.0
// expect: builds
//
// The control: the same kind of module, used rightly, builds; so a failure
// of the others is theirs, not the build's.

use kernel::prelude::*;
use kernel::rdma::cm::{CmEvent, CmHandler, CmId, HandlerId, SockAddr};
use kernel::rdma::device::{Client, Device};
use kernel::sync::Arc;

struct H;

impl CmHandler for H {
    fn event(_this: &Arc<Self>, _id: &HandlerId<'_, Self>, _event: &CmEvent) {}
}

struct C;

impl Client for C {
    type DeviceData = ();

    fn add(&self, _dev: &Device) -> Result {
        Ok(())
    }

    fn remove(&self, _dev: &Device, _data: ()) {}
}

kernel::rdma_client_slot!(C);

#[allow(dead_code)]
fn owned(id: &mut CmId<H>) -> Result {
    id.listen(&SockAddr::v4([0; 4], 7), 1)
}
