// SPDX-License-Identifier: GPL-2.0

//! The kernel side: `/dev/rdma_krust` and its ioctls.

use crate::abi;
use anyhow::{bail, Context, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;

/// Default path of the device node.
pub const DEV_PATH: &str = "/dev/rdma_krust";

/// What failed, for [`Failed`]: the steps whose errors the tool explains
/// (`crate::exit::hint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Opening the device node at this path.
    Open(String),
    /// `IOCTL_LISTEN` on this address.
    Listen(abi::Addr),
    /// `IOCTL_CONNECT` to this address.
    Connect(abi::Addr),
    /// `IOCTL_ACCEPT`.
    Accept,
}

/// An OS error of one of the [`Op`] steps. Printed as before (`open PATH`,
/// `ioctl IOCTL_CONNECT`, then the OS error, its source), so scripts that
/// look for the errno text still find it.
#[derive(Debug)]
pub struct Failed {
    /// The step.
    pub op: Op,
    /// Its error.
    pub err: io::Error,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.op {
            Op::Open(p) => write!(f, "open {p}"),
            Op::Listen(_) => f.write_str("ioctl IOCTL_LISTEN"),
            Op::Connect(_) => f.write_str("ioctl IOCTL_CONNECT"),
            Op::Accept => f.write_str("ioctl IOCTL_ACCEPT"),
        }
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.err)
    }
}

fn failed(op: Op) -> impl FnOnce(io::Error) -> anyhow::Error {
    move |err| anyhow::Error::new(Failed { op, err })
}

/// An open `/dev/rdma_krust`.
pub struct KrustDev {
    file: File,
    /// Transport settings its `connect` and `listen` ask for.
    transport: std::sync::Mutex<abi::Transport>,
    /// Milliseconds the scenarios wait for a message or for credits.
    msg_timeout_ms: std::sync::atomic::AtomicU32,
    /// The scenarios' one-sided operations' `timeout_ms` (0: until the
    /// transport's verdict).
    op_timeout_ms: std::sync::atomic::AtomicU32,
}

impl AsRawFd for KrustDev {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.file.as_raw_fd()
    }
}

impl KrustDev {
    /// Opens the device node at `path`.
    pub fn open(path: &str) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(failed(Op::Open(path.to_string())))?;
        Ok(Self {
            file,
            transport: Default::default(),
            msg_timeout_ms: std::sync::atomic::AtomicU32::new(20_000),
            op_timeout_ms: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// How long the scenarios' messages wait (for the message, or for
    /// credits); 20 s unless set.
    pub fn msg_timeout(&self) -> u32 {
        self.msg_timeout_ms
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The scenarios' one-sided operations' `timeout_ms`; 0 unless set.
    pub fn op_timeout(&self) -> u32 {
        self.op_timeout_ms
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets [`Self::op_timeout`].
    pub fn set_op_timeout(&self, ms: u32) {
        self.op_timeout_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sets [`Self::msg_timeout`].
    pub fn set_msg_timeout(&self, ms: u32) {
        self.msg_timeout_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The transport settings later `connect` and `listen` calls ask for
    /// (`abi::Transport`; none set: the module's defaults).
    pub fn set_transport(&self, t: abi::Transport) {
        *self.transport.lock().unwrap_or_else(|e| e.into_inner()) = t;
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

    /// The names of the RDMA devices the module has; an error that says
    /// how to add one when it has none (`bench` and `rping` would otherwise
    /// listen on no device, or fail to connect without saying why).
    pub fn device_names(&self) -> Result<Vec<String>> {
        let names: Vec<String> = self
            .list_devices()?
            .iter()
            .map(crate::table::name)
            .collect();
        if names.is_empty() {
            bail!(
                "no RDMA device: the module sees none; {}",
                crate::exit::ADD_DEVICE
            );
        }
        Ok(names)
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

    /// `IOCTL_CONNECT`.
    pub fn connect(
        &self,
        dst: abi::Addr,
        resp: u32,
        init: u32,
        timeout_ms: u32,
        flags: u32,
    ) -> Result<abi::ConnInfo> {
        let mut req = abi::ConnectReq {
            dst,
            timeout_ms,
            responder_resources: resp,
            initiator_depth: init,
            flags,
            transport: *self.transport.lock().unwrap_or_else(|e| e.into_inner()),
            ..Default::default()
        };
        // SAFETY: `req` is a `ConnectReq`, what the command expects.
        unsafe { self.raw_ioctl(abi::IOCTL_CONNECT, &mut req as *mut _ as usize) }
            .map_err(failed(Op::Connect(dst)))?;
        Ok(req.info)
    }

    /// `IOCTL_LISTEN`.
    pub fn listen(&self, addr: abi::Addr, resp: u32, init: u32, flags: u32) -> Result<()> {
        let req = abi::ListenReq {
            addr,
            responder_resources: resp,
            initiator_depth: init,
            flags,
            transport: *self.transport.lock().unwrap_or_else(|e| e.into_inner()),
            ..Default::default()
        };
        // SAFETY: `req` is a `ListenReq`, only read by the kernel.
        unsafe { self.raw_ioctl(abi::IOCTL_LISTEN, &req as *const _ as usize) }
            .map_err(failed(Op::Listen(addr)))?;
        Ok(())
    }

    /// `IOCTL_ACCEPT`.
    pub fn accept(&self, timeout_ms: u32) -> Result<abi::ConnInfo> {
        let mut req = abi::AcceptReq {
            timeout_ms,
            ..Default::default()
        };
        // SAFETY: `req` is an `AcceptReq`, what the command expects.
        unsafe { self.raw_ioctl(abi::IOCTL_ACCEPT, &mut req as *mut _ as usize) }
            .map_err(failed(Op::Accept))?;
        Ok(req.info)
    }

    /// `IOCTL_CONN_INFO`.
    pub fn conn_info(&self) -> Result<abi::ConnInfo> {
        let mut info = abi::ConnInfo::default();
        // SAFETY: `info` is a writable `ConnInfo`.
        unsafe { self.raw_ioctl(abi::IOCTL_CONN_INFO, &mut info as *mut _ as usize) }
            .context("ioctl IOCTL_CONN_INFO")?;
        Ok(info)
    }

    /// `IOCTL_DISCONNECT`.
    pub fn disconnect(&self) -> Result<()> {
        // SAFETY: the command takes no argument.
        unsafe { self.raw_ioctl(abi::IOCTL_DISCONNECT, 0) }.context("ioctl IOCTL_DISCONNECT")?;
        Ok(())
    }

    /// `IOCTL_SEND` of `data`.
    pub fn send(&self, data: &[u8], timeout_ms: u32) -> io::Result<()> {
        let x = abi::Xfer {
            buf: data.as_ptr() as u64,
            len: data.len() as u64,
            timeout_ms,
            flags: 0,
        };
        // SAFETY: `x` names `data`, which the kernel only reads.
        unsafe { self.raw_ioctl(abi::IOCTL_SEND, &x as *const _ as usize) }.map(|_| ())
    }

    /// `IOCTL_RECV` into `buf`; returns the message length.
    pub fn recv(&self, buf: &mut [u8], timeout_ms: u32) -> io::Result<usize> {
        let mut x = abi::Xfer {
            buf: buf.as_mut_ptr() as u64,
            len: buf.len() as u64,
            timeout_ms,
            flags: 0,
        };
        // SAFETY: `x` names `buf`, writable for its length.
        unsafe { self.raw_ioctl(abi::IOCTL_RECV, &mut x as *mut _ as usize) }?;
        Ok(x.len as usize)
    }

    /// `IOCTL_EXPOSE`: (address, rkey, id).
    pub fn expose(&self, len: u64, access: u32) -> io::Result<(u64, u32, u32)> {
        let mut e = abi::Expose {
            len,
            access,
            ..Default::default()
        };
        // SAFETY: `e` is an `Expose`, what the command expects.
        unsafe { self.raw_ioctl(abi::IOCTL_EXPOSE, &mut e as *mut _ as usize) }?;
        Ok((e.addr, e.rkey, e.id))
    }

    /// `IOCTL_EXPOSE`, its error in context: an `EMSGSIZE` says how large
    /// a window the connection's device takes (`DeviceInfo::max_window`).
    pub fn expose_explained(&self, len: u64, access: u32) -> Result<(u64, u32, u32)> {
        self.expose(len, access).map_err(|e| {
            let limit = (e.raw_os_error() == Some(libc::EMSGSIZE))
                .then(|| self.window_limit())
                .flatten();
            match limit {
                Some((name, max)) => anyhow::Error::new(e).context(format!(
                    "IOCTL_EXPOSE of {len} bytes: {name} registers windows of at most \
                     {max} bytes (its fast-registration page list, page sizes and \
                     largest DMA mapping; `rdma-krust devices`, MAX_WINDOW)"
                )),
                None => anyhow::Error::new(e).context("IOCTL_EXPOSE"),
            }
        })
    }

    /// The connection's device and the largest window it takes.
    fn window_limit(&self) -> Option<(String, u64)> {
        let info = self.conn_info().ok()?;
        let conn = abi::DeviceInfo {
            name: info.device,
            ..Default::default()
        };
        let name = crate::table::name(&conn);
        let max = self
            .list_devices()
            .ok()?
            .into_iter()
            .find(|d| crate::table::name(d) == name)?
            .max_window;
        Some((name, max))
    }

    /// `IOCTL_REVOKE`.
    pub fn revoke(&self, id: u32) -> io::Result<()> {
        let r = abi::Revoke { id, reserved: 0 };
        // SAFETY: `r` is a `Revoke`, only read.
        unsafe { self.raw_ioctl(abi::IOCTL_REVOKE, &r as *const _ as usize) }.map(|_| ())
    }

    /// `IOCTL_WINDOW_READ` (`to_user`) or `IOCTL_WINDOW_WRITE`.
    pub fn window_io(&self, id: u32, offset: u64, buf: &mut [u8], to_user: bool) -> io::Result<()> {
        let io = abi::WindowIo {
            id,
            reserved: 0,
            offset,
            buf: buf.as_mut_ptr() as u64,
            len: buf.len() as u64,
        };
        let cmd = if to_user {
            abi::IOCTL_WINDOW_READ
        } else {
            abi::IOCTL_WINDOW_WRITE
        };
        // SAFETY: `io` names `buf`, valid for its length both ways.
        unsafe { self.raw_ioctl(cmd, &io as *const _ as usize) }.map(|_| ())
    }

    /// `IOCTL_RDMA_WRITE` of `data`, or `IOCTL_RDMA_READ` into it, waiting
    /// for the transport's verdict.
    pub fn rdma(
        &self,
        remote_addr: u64,
        rkey: u32,
        data: &mut [u8],
        write: bool,
    ) -> io::Result<()> {
        self.rdma_within(remote_addr, rkey, data, write, 0)
    }

    /// [`Self::rdma`] within `timeout_ms` (0: the transport's verdict).
    pub fn rdma_within(
        &self,
        remote_addr: u64,
        rkey: u32,
        data: &mut [u8],
        write: bool,
        timeout_ms: u32,
    ) -> io::Result<()> {
        let r = abi::Rdma {
            remote_addr,
            rkey,
            timeout_ms,
            buf: data.as_mut_ptr() as u64,
            len: data.len() as u64,
        };
        let cmd = if write {
            abi::IOCTL_RDMA_WRITE
        } else {
            abi::IOCTL_RDMA_READ
        };
        // SAFETY: `r` names `data`, valid for its length both ways.
        unsafe { self.raw_ioctl(cmd, &r as *const _ as usize) }.map(|_| ())
    }

    /// `IOCTL_ATOMIC` within `timeout_ms` (0: the transport's verdict): the
    /// remote value before the operation.
    pub fn atomic_within(
        &self,
        remote_addr: u64,
        rkey: u32,
        op: u32,
        compare_add: u64,
        swap: u64,
        timeout_ms: u32,
    ) -> io::Result<u64> {
        let mut a = abi::AtomicOp {
            remote_addr,
            rkey,
            op,
            compare_add,
            swap,
            timeout_ms,
            ..Default::default()
        };
        // SAFETY: `a` is an `AtomicOp`, what the command expects.
        unsafe { self.raw_ioctl(abi::IOCTL_ATOMIC, &mut a as *mut _ as usize) }?;
        Ok(a.result)
    }

    /// `IOCTL_BENCH`; for latency, `samples` (one per iteration) is filled.
    pub fn bench(&self, b: &mut abi::Bench, samples: &mut Vec<u64>) -> io::Result<()> {
        samples.clear();
        if matches!(b.mode, abi::BENCH_LAT | abi::BENCH_PINGPONG) {
            samples.resize(b.iters as usize, 0);
            b.samples = samples.as_mut_ptr() as u64;
        } else if b.mode == abi::BENCH_BW && b.iters <= crate::bench::PEAK_MAX_ITERS {
            // Each message's post and completion time, for the peak.
            samples.resize(2 * b.iters as usize, 0);
            b.samples = samples.as_mut_ptr() as u64;
        }
        // SAFETY: `b` is a `Bench`; `samples` has room for what its mode
        // fills in (`iters` values, or `2 * iters` for bandwidth).
        unsafe { self.raw_ioctl(abi::IOCTL_BENCH, b as *mut _ as usize) }.map(|_| ())
    }
}
