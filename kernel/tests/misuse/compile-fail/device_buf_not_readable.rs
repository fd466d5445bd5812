// SPDX-License-Identifier: GPL-2.0
// expect: error[E0608]
//
// The CPU reads a buffer the device owns only after the sync
// (DeviceBuf::into_cpu()): a DeviceBuf has no bytes to index.

use kernel::prelude::*;
use kernel::rdma::dma::DeviceBuf;

#[allow(dead_code)]
fn first_byte(buf: &DeviceBuf) -> u8 {
    buf[0]
}
