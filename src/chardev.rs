// SPDX-License-Identifier: GPL-2.0

//! `/dev/rdma_krust`: the ioctl interface (its ABI: `crate::abi`, from
//! `include/uapi/linux/rdma_krust.h`).

use crate::abi;
use crate::conn::Conn;
use crate::kapi::{errno, misc::MiscDevice};
use crate::registry::Registry;
use core::mem::size_of;
use kernel::{
    prelude::*,
    sync::Arc,
    types::{AsBytes, FromBytes},
    uaccess::UserSlice,
};

/// Lets the ABI structures be read from and written to user memory.
macro_rules! abi_bytes {
    ($($t:ident),* $(,)?) => {$(
        // SAFETY: the ABI structures are the uapi header's, `#[repr(C)]`,
        // made only of integers and arrays of integers, with no padding
        // (the header is checked for padding by cargo's uapi_header test):
        // every bit pattern is valid and no byte is uninitialised.
        unsafe impl FromBytes for abi::$t {}
        // SAFETY: as above.
        unsafe impl AsBytes for abi::$t {}
    )*};
}

abi_bytes!(
    Version, DeviceList, DeviceInfo, ConnectReq, ListenReq, AcceptReq, ConnInfo, Xfer, Expose,
    Revoke, WindowIo, Rdma, AtomicOp, Bench,
);

/// The misc device's file operations.
pub(crate) struct RdmaKrustDev;

/// The state of one open file: the device list, and one connection.
pub(crate) struct Session {
    registry: Arc<Registry>,
    conn: Arc<Conn>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.conn.linger();
        self.conn.shutdown(errno::ECONNABORTED());
    }
}

#[vtable]
impl MiscDevice for RdmaKrustDev {
    type Context = Arc<Registry>;
    type Ptr = KBox<Session>;

    fn open(registry: &Arc<Registry>) -> Result<KBox<Session>> {
        Ok(KBox::new(
            Session {
                registry: registry.clone(),
                conn: Conn::new(registry.clone())?,
            },
            GFP_KERNEL,
        )?)
    }

    fn ioctl(session: &Session, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            abi::IOCTL_VERSION => session.version(arg),
            abi::IOCTL_LIST_DEVICES => session.list_devices(arg),
            abi::IOCTL_CONNECT => session.connect(arg),
            abi::IOCTL_LISTEN => session.listen(arg),
            abi::IOCTL_ACCEPT => session.accept(arg),
            abi::IOCTL_CONN_INFO => session.conn_info(arg),
            abi::IOCTL_DISCONNECT => session.conn.disconnect().map(|()| 0),
            abi::IOCTL_SEND => session.send(arg),
            abi::IOCTL_RECV => session.recv(arg),
            abi::IOCTL_EXPOSE => session.expose(arg),
            abi::IOCTL_REVOKE => {
                let r: abi::Revoke = read_arg(arg)?;
                if r.reserved != 0 {
                    return Err(EINVAL);
                }
                session.conn.revoke(r.id).map(|()| 0)
            }
            abi::IOCTL_WINDOW_READ => session.conn.window_io(&read_arg(arg)?, true).map(|()| 0),
            abi::IOCTL_WINDOW_WRITE => session.conn.window_io(&read_arg(arg)?, false).map(|()| 0),
            abi::IOCTL_RDMA_WRITE => session.conn.rdma(&read_arg(arg)?, true).map(|()| 0),
            abi::IOCTL_RDMA_READ => session.conn.rdma(&read_arg(arg)?, false).map(|()| 0),
            abi::IOCTL_ATOMIC => session.atomic(arg),
            abi::IOCTL_BENCH => session.bench(arg),
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

/// Reads an ioctl's argument structure.
fn read_arg<T: FromBytes>(arg: usize) -> Result<T> {
    UserSlice::new(arg, size_of::<T>()).reader().read()
}

/// Writes an ioctl's result structure.
fn write_arg<T: AsBytes>(arg: usize, v: &T) -> Result<isize> {
    UserSlice::new(arg, size_of::<T>()).writer().write(v)?;
    Ok(0)
}

/// An `_IOWR` command: reads its structure, lets `f` fill in the outputs,
/// and writes the structure back only if `f` succeeded.
fn inout<T: FromBytes + AsBytes>(arg: usize, f: impl FnOnce(&mut T) -> Result) -> Result<isize> {
    let (mut r, mut w) = UserSlice::new(arg, size_of::<T>()).reader_writer();
    let mut v: T = r.read()?;
    f(&mut v)?;
    w.write(&v)?;
    Ok(0)
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
        write_arg(arg, &v)
    }

    fn list_devices(&self, arg: usize) -> Result<isize> {
        inout(arg, |req: &mut abi::DeviceList| {
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
            Ok(())
        })
    }

    fn connect(&self, arg: usize) -> Result<isize> {
        inout(arg, |req: &mut abi::ConnectReq| {
            req.info = self.conn.connect(req)?;
            Ok(())
        })
    }

    fn listen(&self, arg: usize) -> Result<isize> {
        self.conn.listen(&read_arg(arg)?)?;
        Ok(0)
    }

    fn accept(&self, arg: usize) -> Result<isize> {
        inout(arg, |req: &mut abi::AcceptReq| {
            if req.reserved != 0 {
                return Err(EINVAL);
            }
            req.info = self.conn.accept(req.timeout_ms)?;
            Ok(())
        })
    }

    fn conn_info(&self, arg: usize) -> Result<isize> {
        write_arg(arg, &self.conn.info())
    }

    fn send(&self, arg: usize) -> Result<isize> {
        self.conn.send(&read_arg(arg)?)?;
        Ok(0)
    }

    fn recv(&self, arg: usize) -> Result<isize> {
        inout(arg, |x: &mut abi::Xfer| {
            x.len = self.conn.recv(x)?;
            Ok(())
        })
    }

    fn expose(&self, arg: usize) -> Result<isize> {
        inout(arg, |e: &mut abi::Expose| {
            (e.addr, e.rkey, e.id) = self.conn.expose(e)?;
            Ok(())
        })
    }

    fn atomic(&self, arg: usize) -> Result<isize> {
        inout(arg, |a: &mut abi::AtomicOp| {
            a.result = self.conn.atomic(a)?;
            Ok(())
        })
    }

    fn bench(&self, arg: usize) -> Result<isize> {
        inout(arg, |b: &mut abi::Bench| self.conn.bench(b))
    }
}
