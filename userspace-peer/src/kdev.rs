// SPDX-License-Identifier: GPL-2.0

//! The kernel side: `/dev/rdma_krust` and its ioctls.

use crate::abi;
use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;

/// Default path of the device node.
pub const DEV_PATH: &str = "/dev/rdma_krust";

/// An open `/dev/rdma_krust`.
pub struct KrustDev {
    file: File,
}

impl KrustDev {
    /// Opens the device node at `path`.
    pub fn open(path: &str) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("open {path}"))?;
        Ok(Self { file })
    }

    /// Issues `ioctl(fd, cmd, arg)` and returns its value or the OS error.
    ///
    /// # Safety
    ///
    /// `arg` must be what `cmd` expects, or an address the caller wants the
    /// kernel to reject (the kernel never trusts it; the process's own memory
    /// is only written where `cmd` says).
    pub unsafe fn raw_ioctl(&self, cmd: u32, arg: usize) -> io::Result<i32> {
        // SAFETY: forwarded to the caller.
        let ret = unsafe { libc::ioctl(self.file.as_raw_fd(), cmd as libc::c_ulong, arg) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ret)
        }
    }

    /// `IOCTL_VERSION`.
    pub fn version(&self) -> Result<abi::Version> {
        let mut v = abi::Version::default();
        // SAFETY: `v` is a writable `Version`, what the command expects.
        unsafe { self.raw_ioctl(abi::IOCTL_VERSION, &mut v as *mut _ as usize) }
            .context("ioctl IOCTL_VERSION")?;
        Ok(v)
    }

    /// `IOCTL_LIST_DEVICES`, with the two-call pattern.
    pub fn list_devices(&self) -> Result<Vec<abi::DeviceInfo>> {
        // Devices may come and go between the calls: retry until the array
        // was large enough.
        let mut capacity = 0u32;
        loop {
            let mut devices = vec![abi::DeviceInfo::default(); capacity as usize];
            let mut req = abi::DeviceList {
                devices: devices.as_mut_ptr() as u64,
                capacity,
                ..Default::default()
            };
            // SAFETY: `req` is a `DeviceList` whose array has `capacity`
            // writable entries.
            unsafe { self.raw_ioctl(abi::IOCTL_LIST_DEVICES, &mut req as *mut _ as usize) }
                .context("ioctl IOCTL_LIST_DEVICES")?;
            if req.count <= capacity {
                devices.truncate(req.count as usize);
                return Ok(devices);
            }
            capacity = req.count.min(abi::MAX_LIST_CAPACITY);
            if capacity == abi::MAX_LIST_CAPACITY && req.count > capacity {
                devices.truncate(capacity as usize);
                return Ok(devices);
            }
        }
    }
}
