// SPDX-License-Identifier: GPL-2.0

//! rdma-krust: in-kernel RDMA from Rust.
//!
//! The crate is layered (see `Documentation/design.rst`):
//!
//! - `helpers.c` and `bindings/`: one-line C wrappers and the bindgen output,
//!   private to
//! - [`kapi`]: safe abstractions (RDMA devices, `ib_client`, misc device),
//!   on which the module logic is built:
//! - [`registry`]: the RDMA devices the module's `ib_client` has seen;
//! - [`chardev`]: `/dev/rdma_krust` and its ioctls, whose ABI is [`abi`].

use kernel::{c_str, prelude::*};

// The ioctl ABI: the uapi header's items (`uapi`) under Rust names, with
// the wire protocol's checks. The tools' cargo crate `rdma-krust-abi` is
// built from the same files; Kbuild cannot link a cargo crate.
#[allow(dead_code, unreachable_pub)]
#[path = "abi/src/abi/mod.rs"]
mod abi;
#[path = "src/chardev.rs"]
mod chardev;
#[path = "src/conn/mod.rs"]
mod conn;
#[path = "src/kapi/mod.rs"]
mod kapi;
#[path = "src/registry.rs"]
mod registry;
#[path = "bindings/uapi.rs"]
mod uapi;

// Where kernel::rdma's macros, built into this crate on a kernel without
// the series, find its items (`$crate::rdma`).
#[cfg(not(rkrust_kernel_rdma))]
use kapi::rdma;

use kapi::{device::ClientRegistration, misc::MiscRegistration};

module! {
    type: RdmaKrust,
    name: "rdma_krust",
    author: "rdma-krust developers",
    description: "In-kernel RDMA verbs and rdma_cm in Rust, driven through /dev/rdma_krust",
    license: "GPL",
}

/// Root-only: the node gives access to RDMA devices and, later, to remote
/// memory (see `Documentation/ioctl-abi.rst`).
const DEVICE_MODE: u16 = 0o600;

struct RdmaKrust {
    // Fields drop in declaration order. The char device goes first: no new
    // opens, and open files pin the module, so none are left. Then the
    // ib_client: ib_core calls `remove` for every device.
    _misc: MiscRegistration<chardev::RdmaKrustDev>,
    _client: ClientRegistration<registry::DeviceClient>,
}

impl kernel::Module for RdmaKrust {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let registry = registry::Registry::new()?;
        let client = ClientRegistration::new(
            module,
            c_str!("rdma_krust"),
            registry::DeviceClient::new(registry.clone()),
        )?;
        let misc = MiscRegistration::new(c_str!("rdma_krust"), DEVICE_MODE, module, registry)?;
        pr_info!("loaded, ABI version {}\n", abi::ABI_VERSION);
        Ok(Self {
            _misc: misc,
            _client: client,
        })
    }
}

impl Drop for RdmaKrust {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
