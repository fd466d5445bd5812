// SPDX-License-Identifier: GPL-2.0
// expect: error[E0200]
//
// A client type names its slot only through an unsafe impl (or
// kernel::rdma_client_slot!, which declares a slot of its own): a safe
// impl could return another type's slot, which the trampolines trust.

use kernel::prelude::*;
use kernel::rdma::device::{Client, ClientSlot, ClientSlotOf, Device};

struct C;

impl Client for C {
    type DeviceData = ();

    fn add(&self, _dev: &Device) -> Result {
        Ok(())
    }

    fn remove(&self, _dev: &Device, _data: ()) {}
}

static SLOT: ClientSlot = ClientSlot::new();

impl ClientSlotOf for C {
    fn slot() -> &'static ClientSlot {
        &SLOT
    }
}
