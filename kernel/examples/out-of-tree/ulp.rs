// SPDX-License-Identifier: GPL-2.0

//! The skeleton of an out-of-tree RDMA upper-layer protocol in Rust: an
//! `ib_client` that keeps a protection domain on every RDMA device.
//!
//! It builds against `kernel::rdma` from the kernel where the kernel has
//! it (`cfg(kernel_rdma)`, set by Kbuild), and against its own copy of the
//! same files otherwise: the code below names `crate::rdma` either way.

use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The kernel's kernel::rdma and its macro, at the paths the copy has.
#[cfg(kernel_rdma)]
use kernel::rdma;
#[cfg(kernel_rdma)]
use kernel::rdma_client_slot;

// The copy: its bindings, the error codes 6.12 lacks, and the files, whose
// `pub` items are the kernel crate's API, of which the module uses a part.
// Its `#[macro_export]`ed `rdma_client_slot!` is at this crate's root, and
// names its items `$crate::rdma::...`: the module below.
#[cfg(not(kernel_rdma))]
mod bindings;
#[cfg(not(kernel_rdma))]
mod errno;
#[cfg(not(kernel_rdma))]
#[allow(unreachable_pub, dead_code)]
mod rdma;

use rdma::{
    device::{Client, ClientRegistration, Device, DeviceRef},
    pd::Pd,
};

module! {
    type: RustRdmaUlp,
    name: "rust_rdma_ulp",
    author: "rdma-krust developers",
    description: "Skeleton of an out-of-tree kernel::rdma user",
    license: "GPL",
}

/// The name `rdma resource show` lists for what the module makes.
const OWNER: &CStr = c_str!("rust_rdma_ulp");

/// What the module keeps on each device: a PD, which holds the device.
struct PerDevice {
    pd: Pd,
}

/// The client.
struct Ulp;

crate::rdma_client_slot!(Ulp);

impl Client for Ulp {
    type DeviceData = KBox<PerDevice>;

    fn add(&self, dev: &Device) -> Result<KBox<PerDevice>> {
        let dev = DeviceRef::from(dev);
        let pd = Pd::new(&dev, OWNER)?;
        pr_info!("device {}: a PD\n", dev.index());
        Ok(KBox::new(PerDevice { pd }, GFP_KERNEL)?)
    }

    fn remove(&self, dev: &Device, data: KBox<PerDevice>) {
        // The PD, and its count of the device, go before `remove` returns.
        pr_info!(
            "device {}: local key {:#x} dropped\n",
            dev.index(),
            data.pd.local_dma_lkey()
        );
        drop(data);
    }
}

struct RustRdmaUlp {
    _client: ClientRegistration<Ulp>,
}

impl kernel::Module for RustRdmaUlp {
    fn init(module: &'static ThisModule) -> Result<Self> {
        Ok(Self {
            _client: ClientRegistration::new(module, OWNER, Ulp)?,
        })
    }
}
