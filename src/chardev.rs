// SPDX-License-Identifier: GPL-2.0

//! `/dev/rdma_krust`: the ioctl interface (see `src/abi.rs`).

use crate::abi;
use crate::kapi::misc::MiscDevice;
use crate::registry::Registry;
use core::mem::size_of;
use kernel::{
    prelude::*,
    sync::Arc,
    types::{AsBytes, FromBytes},
    uaccess::UserSlice,
};

// SAFETY: the ABI structures are `#[repr(C)]`, made only of integers and
// arrays of integers, with no padding (their sizes are asserted in `abi.rs`):
// every bit pattern is valid and no byte is uninitialised.
unsafe impl FromBytes for abi::DeviceList {}
// SAFETY: as above.
unsafe impl AsBytes for abi::DeviceList {}
// SAFETY: as above.
unsafe impl AsBytes for abi::DeviceInfo {}
// SAFETY: as above.
unsafe impl AsBytes for abi::Version {}

/// The misc device's file operations.
pub(crate) struct RdmaKrustDev;

/// The state of one open file.
pub(crate) struct Session {
    registry: Arc<Registry>,
}

#[vtable]
impl MiscDevice for RdmaKrustDev {
    type Context = Arc<Registry>;
    type Ptr = KBox<Session>;

    fn open(registry: &Arc<Registry>) -> Result<KBox<Session>> {
        Ok(KBox::new(
            Session {
                registry: registry.clone(),
            },
            GFP_KERNEL,
        )?)
    }

    fn ioctl(session: &Session, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            abi::IOCTL_VERSION => session.version(arg),
            abi::IOCTL_LIST_DEVICES => session.list_devices(arg),
            // A command of ours with another size or direction: a caller built
            // against a different ABI.
            _ if abi::ioc_type(cmd) == abi::IOC_MAGIC
                && abi::ALL_CMDS
                    .iter()
                    .any(|&c| abi::ioc_nr(c) == abi::ioc_nr(cmd)) =>
            {
                Err(EINVAL)
            }
            _ => Err(ENOTTY),
        }
    }
}

impl Session {
    fn version(&self, arg: usize) -> Result<isize> {
        let mut v = abi::Version {
            abi_version: abi::ABI_VERSION,
            n_cmds: abi::ALL_CMDS.len() as u32,
            ..Default::default()
        };
        for (slot, &cmd) in v.cmds.iter_mut().zip(abi::ALL_CMDS) {
            *slot = cmd;
        }
        UserSlice::new(arg, size_of::<abi::Version>())
            .writer()
            .write(&v)?;
        Ok(0)
    }

    fn list_devices(&self, arg: usize) -> Result<isize> {
        let (mut reader, mut writer) =
            UserSlice::new(arg, size_of::<abi::DeviceList>()).reader_writer();
        let mut req: abi::DeviceList = reader.read()?;
        if req.reserved != 0 || req.capacity > abi::MAX_LIST_CAPACITY {
            return Err(EINVAL);
        }

        let devices = self.registry.devices()?;
        let n = devices.len().min(req.capacity as usize);
        if n > 0 {
            let mut out =
                UserSlice::new(req.devices as usize, n * size_of::<abi::DeviceInfo>()).writer();
            for dev in &devices[..n] {
                out.write(dev.info())?;
            }
        }
        req.count = devices.len() as u32;
        writer.write(&req)?;
        Ok(0)
    }
}
