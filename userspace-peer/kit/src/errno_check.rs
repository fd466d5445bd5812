// SPDX-License-Identifier: GPL-2.0

//! The table of invalid ioctls and the errno each must return.
//!
//! `Documentation/ioctl-abi.rst` lists the same rows. `rdma-krust-kit
//! errno-check` runs them against the loaded module.

use anyhow::{bail, Context, Result};
use krust::abi::{self, ioc, IOC_MAGIC, IOC_READ, IOC_WRITE};
use krust::errno::errno_name;
use krust::kdev::KrustDev;
use std::mem::size_of;

/// A kernel address: never a valid user pointer.
const KERNEL_ADDR: u64 = 0xffff_8880_0000_0000;

/// What the ioctl's argument points at.
#[derive(Clone, Debug)]
enum Arg {
    /// A NULL pointer.
    Null,
    /// A kernel address.
    Kernel,
    /// A writable, zeroed buffer of this size.
    Buffer(usize),
    /// A `DeviceList` with these fields, in writable memory.
    List {
        devices: u64,
        capacity: u32,
        reserved: u64,
    },
    /// A valid `DeviceList` in a read-only page.
    ReadOnlyList,
    /// These bytes (an ABI structure), in writable memory.
    Bytes(Vec<u8>),
}

/// The bytes of an ABI structure.
fn bytes<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: the ABI structures are `repr(C)` integers without padding, so
    // every byte is initialized; the slice lives only for the copy.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

struct Case {
    name: &'static str,
    cmd: u32,
    arg: Arg,
    errno: i32,
}

fn cases(device_count: u32) -> Vec<Case> {
    let version_size = size_of::<abi::Version>();
    let list_size = size_of::<abi::DeviceList>();
    let mut v = vec![
        Case {
            name: "unknown command number",
            cmd: ioc(IOC_READ, IOC_MAGIC, 0x7f, 8),
            arg: Arg::Buffer(8),
            errno: libc::ENOTTY,
        },
        Case {
            name: "another driver's command (TCGETS)",
            cmd: libc::TCGETS as u32,
            arg: Arg::Buffer(64),
            errno: libc::ENOTTY,
        },
        Case {
            name: "VERSION with a wrong size",
            cmd: ioc(IOC_READ, IOC_MAGIC, 0x00, 4),
            arg: Arg::Buffer(version_size),
            errno: libc::EINVAL,
        },
        Case {
            name: "VERSION with a wrong direction",
            cmd: ioc(IOC_WRITE, IOC_MAGIC, 0x00, version_size),
            arg: Arg::Buffer(version_size),
            errno: libc::EINVAL,
        },
        Case {
            name: "VERSION to NULL",
            cmd: abi::IOCTL_VERSION,
            arg: Arg::Null,
            errno: libc::EFAULT,
        },
        Case {
            name: "VERSION to a kernel address",
            cmd: abi::IOCTL_VERSION,
            arg: Arg::Kernel,
            errno: libc::EFAULT,
        },
        Case {
            name: "LIST_DEVICES with a wrong size",
            cmd: ioc(IOC_READ | IOC_WRITE, IOC_MAGIC, 0x01, list_size + 8),
            arg: Arg::Buffer(list_size + 8),
            errno: libc::EINVAL,
        },
        Case {
            name: "LIST_DEVICES from NULL",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::Null,
            errno: libc::EFAULT,
        },
        Case {
            name: "LIST_DEVICES from a kernel address",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::Kernel,
            errno: libc::EFAULT,
        },
        Case {
            name: "LIST_DEVICES with reserved set",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::List {
                devices: 0,
                capacity: 0,
                reserved: 1,
            },
            errno: libc::EINVAL,
        },
        Case {
            name: "LIST_DEVICES with capacity over the limit",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::List {
                devices: 0,
                capacity: abi::MAX_LIST_CAPACITY + 1,
                reserved: 0,
            },
            errno: libc::EINVAL,
        },
        Case {
            name: "LIST_DEVICES result to a read-only page",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::ReadOnlyList,
            errno: libc::EFAULT,
        },
    ];
    // Connection commands on a fresh, unconnected fd.
    let x = abi::Xfer {
        len: 8,
        ..Default::default()
    };
    let rdma = abi::Rdma {
        len: 8,
        ..Default::default()
    };
    let atomic = abi::AtomicOp::default();
    let misaligned = abi::AtomicOp {
        remote_addr: 4,
        ..Default::default()
    };
    let bad_family = abi::ConnectReq {
        dst: abi::Addr {
            family: 1,
            port: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let v4 = abi::Addr {
        family: abi::AF_INET,
        port: 7999,
        addr: [192, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    let connect_with = |transport| abi::ConnectReq {
        dst: v4,
        transport,
        ..Default::default()
    };
    let spin_alone = abi::ConnectReq {
        flags: abi::CONN_SPIN,
        ..connect_with(abi::Transport::default())
    };
    let unknown_flag = abi::ConnectReq {
        flags: abi::CONN_SPIN << 1,
        ..connect_with(abi::Transport::default())
    };
    let unknown_bit = connect_with(abi::Transport {
        set: abi::TRANSPORT_ALL + 1,
        ..Default::default()
    });
    let no_ack_timer = connect_with(abi::Transport {
        set: abi::TRANSPORT_ACK_TIMEOUT,
        ack_timeout: 0,
        ..Default::default()
    });
    let depth_1 = connect_with(abi::Transport {
        set: abi::TRANSPORT_RECV_DEPTH,
        recv_depth: abi::MIN_RECV_DEPTH - 1,
        ..Default::default()
    });
    let depth_41 = connect_with(abi::Transport {
        set: abi::TRANSPORT_RECV_DEPTH,
        recv_depth: abi::RECV_DEPTH + 1,
        ..Default::default()
    });
    let retry_8 = connect_with(abi::Transport {
        set: abi::TRANSPORT_RETRY_COUNT,
        retry_count: 8,
        ..Default::default()
    });
    let listen_retry = abi::ListenReq {
        addr: v4,
        transport: abi::Transport {
            set: abi::TRANSPORT_RETRY_COUNT,
            retry_count: 3,
            ..Default::default()
        },
        ..Default::default()
    };
    let expose = abi::Expose {
        len: 4096,
        access: abi::ACCESS_READ,
        ..Default::default()
    };
    let no_access = abi::Expose {
        len: 4096,
        ..Default::default()
    };
    let too_big = abi::Xfer {
        len: abi::MAX_MSG_SIZE + 1,
        ..Default::default()
    };
    let unconnected = [
        (
            "SEND on an unconnected fd",
            abi::IOCTL_SEND,
            bytes(&x),
            libc::ENOTCONN,
        ),
        (
            "RECV on an unconnected fd",
            abi::IOCTL_RECV,
            bytes(&x),
            libc::ENOTCONN,
        ),
        (
            "RDMA_READ on an unconnected fd",
            abi::IOCTL_RDMA_READ,
            bytes(&rdma),
            libc::ENOTCONN,
        ),
        (
            "RDMA_WRITE on an unconnected fd",
            abi::IOCTL_RDMA_WRITE,
            bytes(&rdma),
            libc::ENOTCONN,
        ),
        (
            "ATOMIC on an unconnected fd",
            abi::IOCTL_ATOMIC,
            bytes(&atomic),
            libc::ENOTCONN,
        ),
        (
            "EXPOSE on an unconnected fd",
            abi::IOCTL_EXPOSE,
            bytes(&expose),
            libc::ENOTCONN,
        ),
        (
            "DISCONNECT on an unconnected fd",
            abi::IOCTL_DISCONNECT,
            Vec::new(),
            libc::ENOTCONN,
        ),
        (
            "ATOMIC at a misaligned address",
            abi::IOCTL_ATOMIC,
            bytes(&misaligned),
            libc::EINVAL,
        ),
        (
            "ACCEPT without LISTEN",
            abi::IOCTL_ACCEPT,
            bytes(&abi::AcceptReq::default()),
            libc::EINVAL,
        ),
        (
            "CONNECT to an unknown address family",
            abi::IOCTL_CONNECT,
            bytes(&bad_family),
            libc::EINVAL,
        ),
        (
            "CONNECT with an unknown transport bit",
            abi::IOCTL_CONNECT,
            bytes(&unknown_bit),
            libc::EINVAL,
        ),
        (
            "CONNECT with an ACK timeout of 0",
            abi::IOCTL_CONNECT,
            bytes(&no_ack_timer),
            libc::EINVAL,
        ),
        (
            "CONNECT with a retry count over 7",
            abi::IOCTL_CONNECT,
            bytes(&retry_8),
            libc::EINVAL,
        ),
        (
            "CONNECT with a receive depth of 1",
            abi::IOCTL_CONNECT,
            bytes(&depth_1),
            libc::EINVAL,
        ),
        (
            "CONNECT with a receive depth over 40",
            abi::IOCTL_CONNECT,
            bytes(&depth_41),
            libc::EINVAL,
        ),
        (
            "CONNECT with CONN_SPIN, not CONN_POLL",
            abi::IOCTL_CONNECT,
            bytes(&spin_alone),
            libc::EINVAL,
        ),
        (
            "CONNECT with an unknown flag",
            abi::IOCTL_CONNECT,
            bytes(&unknown_flag),
            libc::EINVAL,
        ),
        (
            "LISTEN setting the retry count",
            abi::IOCTL_LISTEN,
            bytes(&listen_retry),
            libc::EINVAL,
        ),
        (
            "EXPOSE with no access",
            abi::IOCTL_EXPOSE,
            bytes(&no_access),
            libc::EINVAL,
        ),
        (
            "REVOKE of an unknown window",
            abi::IOCTL_REVOKE,
            bytes(&abi::Revoke::default()),
            libc::ENOENT,
        ),
        (
            "SEND over MAX_MSG_SIZE",
            abi::IOCTL_SEND,
            bytes(&too_big),
            libc::EMSGSIZE,
        ),
    ];
    for (name, cmd, b, errno) in unconnected {
        v.push(Case {
            name,
            cmd,
            arg: Arg::Bytes(b),
            errno,
        });
    }
    // Writing entries only happens when there is a device to write.
    if device_count > 0 {
        v.push(Case {
            name: "LIST_DEVICES array at NULL",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::List {
                devices: 0,
                capacity: 1,
                reserved: 0,
            },
            errno: libc::EFAULT,
        });
        v.push(Case {
            name: "LIST_DEVICES array at a kernel address",
            cmd: abi::IOCTL_LIST_DEVICES,
            arg: Arg::List {
                devices: KERNEL_ADDR,
                capacity: 1,
                reserved: 0,
            },
            errno: libc::EFAULT,
        });
    }
    v
}

/// A page mapped read-only holding a valid `DeviceList`.
struct ReadOnlyPage(*mut libc::c_void, usize);

/// A new private anonymous mapping of `len` bytes, readable and writable,
/// for tests that then change its protection; the caller unmaps it.
pub fn map_anon(len: usize) -> std::io::Result<*mut libc::c_void> {
    // SAFETY: a new private anonymous mapping, no address hint; no existing
    // memory changes.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p)
}

impl ReadOnlyPage {
    fn new() -> Result<Self> {
        let len = 4096;
        let p = map_anon(len).context("mmap")?;
        let page = Self(p, len);
        // SAFETY: the mapping is writable, page-aligned and large enough.
        unsafe {
            p.cast::<abi::DeviceList>()
                .write(abi::DeviceList::default())
        };
        // SAFETY: `p` is the mapping made above.
        if unsafe { libc::mprotect(p, len, libc::PROT_READ) } != 0 {
            bail!("mprotect: {}", std::io::Error::last_os_error());
        }
        Ok(page)
    }
}

impl Drop for ReadOnlyPage {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `new`, once.
        unsafe { libc::munmap(self.0, self.1) };
    }
}

/// Runs every case; prints one `ok`/`FAIL` line each; returns the failures.
pub fn check_all(dev: &KrustDev) -> Result<usize> {
    let count = dev.list_devices()?.len() as u32;
    let ro = ReadOnlyPage::new()?;
    let mut failed = 0;
    for case in cases(count) {
        let mut buf = vec![0u8; 256];
        let mut list;
        let arg = match case.arg.clone() {
            Arg::Null => 0,
            Arg::Kernel => KERNEL_ADDR as usize,
            Arg::Buffer(n) => {
                buf.resize(n.max(1), 0);
                buf.as_mut_ptr() as usize
            }
            Arg::List {
                devices,
                capacity,
                reserved,
            } => {
                list = abi::DeviceList {
                    devices,
                    capacity,
                    reserved,
                    ..Default::default()
                };
                &mut list as *mut _ as usize
            }
            Arg::ReadOnlyList => ro.0 as usize,
            Arg::Bytes(b) => {
                buf = b;
                buf.push(0);
                buf.as_mut_ptr() as usize
            }
        };
        // SAFETY: `arg` is NULL, a kernel address, or memory of this process
        // that is large enough for the command's argument; the kernel writes
        // only there.
        let got = unsafe { dev.raw_ioctl(case.cmd, arg) };
        let got_errno = match &got {
            Ok(_) => 0,
            Err(e) => e.raw_os_error().unwrap_or(-1),
        };
        if got_errno == case.errno {
            println!("ok   {:<40} {}", case.name, errno_name(case.errno));
        } else {
            failed += 1;
            println!(
                "FAIL {:<40} expected {}, got {}",
                case.name,
                errno_name(case.errno),
                match got {
                    Ok(v) => format!("success ({v})"),
                    Err(e) => format!("{} ({e})", errno_name(got_errno)),
                }
            );
        }
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_a_distinct_invalid_input() {
        let all = cases(1);
        assert_eq!(all.len(), 35);
        assert_eq!(cases(0).len(), 33);
        let mut names: Vec<_> = all.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(all.iter().all(|c| c.errno != 0));
    }

    #[test]
    fn wrong_size_cases_share_the_number_of_a_real_command() {
        for c in cases(1).iter().filter(|c| c.name.contains("wrong")) {
            assert!(!abi::ALL_CMDS.contains(&c.cmd), "{}", c.name);
            assert!(abi::ALL_CMDS
                .iter()
                .any(|&k| abi::ioc_nr(k) == abi::ioc_nr(c.cmd)
                    && abi::ioc_type(k) == abi::ioc_type(c.cmd)));
        }
    }
}
