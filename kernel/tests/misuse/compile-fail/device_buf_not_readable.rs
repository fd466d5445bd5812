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

module! {
    type: M,
    name: "misuse_cf",
    author: "rdma-krust developers",
    description: "compile-fail check",
    license: "GPL",
}

struct M;

impl kernel::Module for M {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(M)
    }
}
