// SPDX-License-Identifier: GPL-2.0

//! The userspace view of RDMA devices, through libibverbs (rdma-sys).

use crate::abi;
use anyhow::{bail, Result};
use rdma_sys::*;
use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;

/// Every RDMA device libibverbs sees, in the module's [`abi::DeviceInfo`]
/// form so both views print and compare the same way.
pub fn list_devices() -> Result<Vec<abi::DeviceInfo>> {
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer.
    let list = unsafe { ibv_get_device_list(&mut n) };
    if list.is_null() {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOSYS) {
            // libibverbs found no uverbs in sysfs.
            bail!(
                "ibv_get_device_list: {e}: libibverbs sees no RDMA device: \
                 load ib_uverbs (modprobe ib_uverbs) and {}",
                crate::exit::ADD_DEVICE
            );
        }
        bail!("ibv_get_device_list: {e}");
    }
    let mut out = Vec::new();
    let mut result = Ok(());
    for i in 0..n.max(0) as usize {
        // SAFETY: the list holds `n` valid device pointers.
        let dev = unsafe { *list.add(i) };
        match describe(dev) {
            Ok(info) => out.push(info),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // SAFETY: `list` came from `ibv_get_device_list` and is freed once.
    unsafe { ibv_free_device_list(list) };
    result.map(|()| out)
}

fn describe(dev: *mut ibv_device) -> Result<abi::DeviceInfo> {
    let mut info = abi::DeviceInfo::default();
    // SAFETY: `dev` is a valid device of the list; the name is a
    // NUL-terminated string owned by it.
    let name = unsafe { CStr::from_ptr(ibv_get_device_name(dev)) };
    let bytes = name.to_bytes();
    let len = bytes.len().min(abi::DEVICE_NAME_LEN - 1);
    info.name[..len].copy_from_slice(&bytes[..len]);
    // SAFETY: `dev` is valid.
    info.node_guid = u64::from_be(unsafe { ibv_get_device_guid(dev) });

    // SAFETY: `dev` is valid.
    let ctx = unsafe { ibv_open_device(dev) };
    if ctx.is_null() {
        bail!(
            "ibv_open_device({}): {}",
            name.to_string_lossy(),
            io::Error::last_os_error()
        );
    }
    let r = query(ctx, &mut info);
    // SAFETY: `ctx` was opened above and is closed once.
    unsafe { ibv_close_device(ctx) };
    r.map(|()| info)
}

fn query(ctx: *mut ibv_context, info: &mut abi::DeviceInfo) -> Result<()> {
    let mut attr = MaybeUninit::<ibv_device_attr>::zeroed();
    // SAFETY: `ctx` is open and `attr` is writable.
    let ret = unsafe { ibv_query_device(ctx, attr.as_mut_ptr()) };
    if ret != 0 {
        bail!("ibv_query_device: {}", io::Error::from_raw_os_error(ret));
    }
    // SAFETY: filled by `ibv_query_device`.
    let attr = unsafe { attr.assume_init() };
    info.max_mr_size = attr.max_mr_size;
    info.max_qp_rd_atom = attr.max_qp_rd_atom.max(0) as u32;
    info.max_qp_init_rd_atom = attr.max_qp_init_rd_atom.max(0) as u32;
    info.atomic_cap = attr.atomic_cap;
    info.num_ports = attr.phys_port_cnt as u32;
    for (slot, port) in info.ports.iter_mut().zip(1..=attr.phys_port_cnt) {
        let mut pattr = MaybeUninit::<ibv_port_attr>::zeroed();
        // SAFETY: `ctx` is open, `port` is one of its ports, `pattr` is
        // writable.
        let ret = unsafe { ibv_query_port(ctx, port, pattr.as_mut_ptr() as *mut _) };
        if ret != 0 {
            bail!(
                "ibv_query_port({port}): {}",
                io::Error::from_raw_os_error(ret)
            );
        }
        // SAFETY: filled by `ibv_query_port`.
        let pattr = unsafe { pattr.assume_init() };
        slot.port_num = port as u32;
        slot.state = pattr.state;
        slot.active_mtu = pattr.active_mtu;
        slot.link_layer = pattr.link_layer as u32;
    }
    Ok(())
}
