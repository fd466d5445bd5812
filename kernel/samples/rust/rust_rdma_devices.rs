// SPDX-License-Identifier: GPL-2.0

//! Rust RDMA sample: an `ib_client` that logs RDMA devices as they come
//! and go.

use core::ffi::CStr as RawCStr;
use kernel::c_str;
use kernel::prelude::*;
use kernel::rdma::device::{Client, ClientRegistration, Device};

module! {
    type: RustRdmaDevices,
    name: "rust_rdma_devices",
    author: "Rust for Linux Contributors",
    description: "Rust RDMA device client sample",
    license: "GPL",
}

/// The client: it keeps nothing, so `remove` has nothing to stop.
struct Watcher;

kernel::rdma_client_slot!(Watcher);

impl Client for Watcher {
    /// Nothing is kept per device.
    type DeviceData = ();

    fn add(&self, dev: &Device) -> Result {
        let name = dev.name();
        let attrs = dev.attrs();
        pr_info!(
            "add {}: {} port(s), {}, max_mr_size {:#x}, max_qp_rd_atom {}\n",
            printable(&name),
            dev.ports().count(),
            if dev.is_iwarp() { "iWARP" } else { "IB/RoCE" },
            attrs.max_mr_size,
            attrs.max_qp_rd_atom
        );
        Ok(())
    }

    fn remove(&self, dev: &Device, _data: ()) {
        pr_info!("remove {}\n", printable(&dev.name()));
    }
}

/// The name up to its NUL, or `?` if it is not UTF-8.
fn printable(name: &[u8]) -> &str {
    RawCStr::from_bytes_until_nul(name)
        .ok()
        .and_then(|s| s.to_str().ok())
        .unwrap_or("?")
}

struct RustRdmaDevices {
    _client: ClientRegistration<Watcher>,
}

impl kernel::Module for RustRdmaDevices {
    fn init(module: &'static ThisModule) -> Result<Self> {
        pr_info!("Rust RDMA device client sample (init)\n");
        Ok(Self {
            _client: ClientRegistration::new(module, c_str!("rust_rdma_devices"), Watcher)?,
        })
    }
}

impl Drop for RustRdmaDevices {
    fn drop(&mut self) {
        pr_info!("Rust RDMA device client sample (exit)\n");
    }
}
