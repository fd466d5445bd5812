// SPDX-License-Identifier: GPL-2.0

//! The device registry: every RDMA device the module's `ib_client` was given.
//!
//! ib_core calls [`DeviceClient::add`] for each device and
//! [`DeviceClient::remove`] when it leaves. An entry is a snapshot of the
//! device's identity and limits, taken in `add`, behind an [`Arc`] so that
//! later users (connections) can hold on to it. `remove` marks the entry gone,
//! and will tear down everything that uses the device before it returns, as
//! ib_core requires; only then is the entry forgotten.

use crate::abi;
use crate::kapi::device as ib;
use crate::kapi::mr::max_region;
use kernel::{
    new_mutex,
    prelude::*,
    rbtree::RBTree,
    sync::{Arc, Mutex},
};

/// Something that uses an RDMA device and must stop before it goes away.
pub(crate) trait DeviceUser: Send + Sync {
    /// The device is going: from now on every operation and waiter fails
    /// with `ENODEV`. Called for all users before any is torn down, so the
    /// teardown of one (which its peers on the same device see as a
    /// disconnect) cannot change what another reports.
    fn device_going(&self);

    /// The device is being removed: stop using it, and release every
    /// reference to it, before returning.
    fn device_removed(&self);
}

/// One RDMA device known to the module.
#[pin_data]
pub(crate) struct RdmaDevice {
    /// The device as userspace sees it through `IOCTL_LIST_DEVICES`.
    info: abi::DeviceInfo,
    /// Who uses the device, by a key unique to each user.
    #[pin]
    users: Mutex<RBTree<usize, Arc<dyn DeviceUser>>>,
}

impl RdmaDevice {
    fn new(dev: &ib::Device) -> Result<Arc<Self>> {
        let attrs = dev.attrs();
        let mut info = abi::DeviceInfo {
            name: dev.name(),
            node_guid: dev.node_guid(),
            max_mr_size: attrs.max_mr_size,
            max_qp_rd_atom: attrs.max_qp_rd_atom,
            max_qp_init_rd_atom: attrs.max_qp_init_rd_atom,
            atomic_cap: attrs.atomic_cap,
            max_window: max_region(&attrs, abi::MAX_WINDOW_SIZE as usize) as u64,
            ..Default::default()
        };
        let ports = dev.ports();
        info.num_ports = ports.clone().count() as u32;
        for (slot, port) in info.ports.iter_mut().zip(ports) {
            slot.port_num = port;
            // A port that cannot be queried is reported with state 0 (NOP).
            if let Ok(p) = dev.query_port(port) {
                slot.state = p.state;
                slot.active_mtu = p.active_mtu;
                slot.link_layer = p.link_layer;
            }
        }
        Arc::pin_init(
            pin_init!(Self {
                info,
                users <- new_mutex!(RBTree::new(), "rdma_krust:device_users"),
            }),
            GFP_KERNEL,
        )
    }

    /// The device's description for userspace.
    pub(crate) fn info(&self) -> &abi::DeviceInfo {
        &self.info
    }
}

/// All devices, keyed by ib_core's device index.
#[pin_data]
pub(crate) struct Registry {
    #[pin]
    devices: Mutex<RBTree<u32, Arc<RdmaDevice>>>,
}

impl Registry {
    /// Creates an empty registry.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                devices <- new_mutex!(RBTree::new(), "rdma_krust:devices"),
            }),
            GFP_KERNEL,
        )
    }

    /// Records that `user` (known by `key`) uses device `index`. Fails with
    /// `ENODEV` if the device is gone or going.
    pub(crate) fn attach(&self, index: u32, key: usize, user: Arc<dyn DeviceUser>) -> Result {
        let devices = self.devices.lock();
        let dev = devices.get(&index).ok_or(ENODEV)?;
        dev.users
            .lock()
            .try_create_and_insert(key, user, GFP_KERNEL)?;
        Ok(())
    }

    /// The name device `index` had when it was added (read there, where
    /// ib_core keeps renames out), if it is still listed.
    pub(crate) fn name(&self, index: u32) -> Option<[u8; abi::DEVICE_NAME_LEN]> {
        let devices = self.devices.lock();
        devices.get(&index).map(|dev| dev.info().name)
    }

    /// Forgets `key` as a user of device `index`.
    pub(crate) fn detach(&self, index: u32, key: usize) {
        let user = {
            let devices = self.devices.lock();
            devices
                .get(&index)
                .and_then(|dev| dev.users.lock().remove(&key))
        };
        // The user may hold the last references to itself: dropped unlocked.
        drop(user);
    }

    /// The devices, in index order.
    pub(crate) fn devices(&self) -> Result<KVec<Arc<RdmaDevice>>> {
        let devices = self.devices.lock();
        let mut out = KVec::new();
        for dev in devices.values() {
            out.push(dev.clone(), GFP_KERNEL)?;
        }
        Ok(out)
    }
}

/// The module's `ib_client`.
pub(crate) struct DeviceClient {
    registry: Arc<Registry>,
}

impl DeviceClient {
    /// A client that records devices in `registry`.
    pub(crate) fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }
}

crate::kapi::rdma_client_slot!(DeviceClient);

impl ib::Client for DeviceClient {
    /// The registry's entry of the device.
    type DeviceData = Arc<RdmaDevice>;

    fn add(&self, dev: &ib::Device) -> Result<Arc<RdmaDevice>> {
        let entry = RdmaDevice::new(dev)?;
        let info = entry.info();
        pr_info!(
            "add {}: guid {:016x}, {} port(s), rd_atom {}/{}, atomic_cap {}\n",
            name_str(&info.name),
            info.node_guid,
            info.num_ports,
            info.max_qp_rd_atom,
            info.max_qp_init_rd_atom,
            info.atomic_cap
        );
        self.registry.devices.lock().try_create_and_insert(
            dev.index(),
            entry.clone(),
            GFP_KERNEL,
        )?;
        Ok(entry)
    }

    fn remove(&self, dev: &ib::Device, entry: Arc<RdmaDevice>) {
        // Unlisted first, so no new user can attach; then every user is torn
        // down before this returns, as ib_core requires.
        self.registry.devices.lock().remove(&dev.index());
        let users = core::mem::take(&mut *entry.users.lock());
        let n = users.iter().count();
        for user in users.values() {
            user.device_going();
        }
        for user in users.values() {
            user.device_removed();
        }
        pr_info!(
            "remove {}: {} connection(s) torn down\n",
            name_str(&entry.info().name),
            n
        );
    }
}

/// The printable part of a NUL-terminated name buffer.
fn name_str(name: &[u8]) -> &str {
    let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    core::str::from_utf8(&name[..len]).unwrap_or("?")
}
