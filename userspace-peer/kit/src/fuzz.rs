// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust-kit fuzz`: an ioctl fuzzer for `/dev/rdma_krust`.
//!
//! It issues, in random order across several open files, the real commands
//! of the ABI (`krust::abi`) and random command numbers, with arguments that are NULL,
//! unmapped, kernel addresses, misaligned, too short (ending at a page
//! followed by a `PROT_NONE` one), read-only, or valid structures filled
//! with random and boundary values. Now and then it connects two of its
//! files to each other over rxe (one listens on `--ip`, the other connects),
//! exposes windows on both, and then fuzzes the connected paths too; it
//! closes and reopens files at random, whatever they are doing.
//!
//! Every decision comes from one seeded generator ([`Rng`]), so a run is
//! reproducible from the seed it prints (up to the kernel's own timing).
//! Every wait gets a small `timeout_ms`, and a watchdog ends the process if
//! a call does not return within a minute.
//!
//! Any call may fail. What is checked:
//! - every errno is in [`SANE_ERRNOS`], what the module and the rdma_cm and
//!   verbs calls it passes errors from can return;
//! - random command numbers get exactly `ENOTTY`, or `EINVAL` for type
//!   `0xb9` with a known `nr`;
//! - an argument at NULL, an unmapped or a kernel address, or that runs into
//!   an inaccessible page, gets exactly `EFAULT`;
//! - a command that writes its structure back never succeeds when that
//!   structure is read-only;
//! - `IOCTL_VERSION` and `IOCTL_CONN_INFO` with a valid argument succeed,
//!   and the former reports this tool's command numbers;
//! - no call returns a positive value.
//!
//! The summary gives, per command, the calls and their errnos; the last line
//! is `fuzz: N calls, M commands, seed X` (M: distinct command numbers).

use anyhow::{bail, Context, Result};
use krust::abi;
use krust::errno::errno_name;
use krust::kdev::KrustDev;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::mem::size_of;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The arguments of `rdma-krust-kit fuzz`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct FuzzArgs {
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Stop after this many ioctls.
    #[arg(long, default_value_t = 10_000_000)]
    pub count: u64,
    /// Seed of the run; by default one from the clock. Printed first.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Files of the device kept open at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(2..=64))]
    pub fds: u64,
    /// Address to listen on and connect to (the guest's rxe0).
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// First port of the 256 the fuzzer listens on.
    #[arg(long, default_value_t = 20000)]
    pub port_base: u16,
    /// Print every call as it is made (to find the one that misbehaves).
    #[arg(long)]
    pub trace: bool,
}

/// splitmix64: small, fast, and the same seed gives the same decisions.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True once in `n` times on average.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// One element of `xs`, which must not be empty.
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// Errnos a call may return without that being a bug.
///
/// The module's own (`src/chardev.rs`, `src/conn/`,
/// `src/kapi/`): EINVAL, ENOTTY, EFAULT, ENOMEM, EIO, EBUSY, ENOENT, ENOSPC,
/// ENODEV, EINTR, EISCONN, ENOTCONN, ETIMEDOUT, EMSGSIZE, EPROTO,
/// EOPNOTSUPP, and the closing errnos ECONNREFUSED, ECONNRESET, ENETUNREACH,
/// EHOSTUNREACH; work completions give EACCES, EREMOTEIO, ETIMEDOUT,
/// ECONNRESET and EIO. Passed through from `rdma_bind_addr()`,
/// `rdma_listen()`, `rdma_resolve_addr()`/`_route()`, `rdma_connect()`,
/// `ib_post_*()` and the allocators: EADDRINUSE, EADDRNOTAVAIL,
/// EAFNOSUPPORT, ENETUNREACH, EHOSTUNREACH, ENETDOWN, ENODATA (no
/// neighbour), EAGAIN, ENOBUFS, EPERM and EACCES (prohibited routes),
/// ECONNABORTED. ERESTARTSYS, ENOSYS or EBADF would be bugs.
pub const SANE_ERRNOS: &[i32] = &[
    libc::EPERM,
    libc::ENOENT,
    libc::EINTR,
    libc::EIO,
    libc::EAGAIN,
    libc::ENOMEM,
    libc::EACCES,
    libc::EFAULT,
    libc::EBUSY,
    libc::ENODEV,
    libc::EINVAL,
    libc::ENOTTY,
    libc::ENOSPC,
    libc::ENODATA,
    libc::EPROTO,
    libc::EMSGSIZE,
    libc::EOPNOTSUPP,
    libc::EAFNOSUPPORT,
    libc::EADDRINUSE,
    libc::EADDRNOTAVAIL,
    libc::ENETDOWN,
    libc::ENETUNREACH,
    libc::ECONNABORTED,
    libc::ECONNRESET,
    libc::ENOBUFS,
    libc::EISCONN,
    libc::ENOTCONN,
    libc::ETIMEDOUT,
    libc::ECONNREFUSED,
    libc::EHOSTUNREACH,
    libc::EREMOTEIO,
];

/// An ABI structure: `#[repr(C)]` integers without padding.
///
/// # Safety
///
/// Every bit pattern must be a valid value and no byte may be padding.
unsafe trait Pod: Copy + Default {}
/// `Pod` for the ABI structures.
macro_rules! abi_pod {
    ($($t:ident),* $(,)?) => {$(
        // SAFETY: the ABI structures are the uapi header's, made only of
        // integers and arrays of integers with no padding (the header is
        // checked for padding by `abi/tests/uapi_header.rs`).
        unsafe impl Pod for abi::$t {}
    )*};
}

abi_pod!(
    Version, DeviceList, ConnectReq, ListenReq, AcceptReq, ConnInfo, Xfer, Expose, Revoke,
    WindowIo, Rdma, AtomicOp, Bench,
);

fn bytes_of<T: Pod>(v: &T) -> Vec<u8> {
    // SAFETY: `T: Pod`, so all `size_of::<T>()` bytes are initialised; the
    // slice lives only for the copy.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
}

fn from_bytes<T: Pod>(b: &[u8]) -> T {
    let mut v = T::default();
    let n = b.len().min(size_of::<T>());
    // SAFETY: `T: Pod` accepts any bytes; at most `size_of::<T>()` bytes are
    // written into `v`, from `b`, which has at least `n`.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), (&mut v as *mut T).cast::<u8>(), n) };
    v
}

/// An anonymous mapping of `rw` readable and writable bytes followed by
/// `guard` bytes of `PROT_NONE`. Only the fuzzer and, during its ioctls,
/// the kernel touch it.
struct Map {
    base: *mut u8,
    rw: usize,
    len: usize,
}

impl Map {
    fn new(rw: usize, guard: usize) -> Result<Self> {
        let len = rw + guard;
        let p = crate::errno_check::map_anon(len).context("mmap")?;
        let m = Self {
            base: p.cast(),
            rw,
            len,
        };
        if guard > 0 {
            m.protect(rw, guard, libc::PROT_NONE)?;
        }
        Ok(m)
    }

    fn protect(&self, off: usize, len: usize, prot: i32) -> Result<()> {
        assert!(off + len <= self.len);
        // SAFETY: the range is inside this mapping, which holds no Rust
        // objects: only bytes the fuzzer copies in and out explicitly.
        let r = unsafe { libc::mprotect(self.base.add(off).cast(), len, prot) };
        if r != 0 {
            return Err(io::Error::last_os_error()).context("mprotect");
        }
        Ok(())
    }

    fn addr(&self, off: usize) -> u64 {
        self.base as u64 + off as u64
    }

    /// Copies `b` to offset `off` of the writable part.
    fn write(&self, off: usize, b: &[u8]) {
        assert!(off + b.len() <= self.rw);
        // SAFETY: in bounds of the writable part (asserted); no ioctl runs
        // while the fuzzer copies, and no reference into the mapping exists.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.base.add(off), b.len()) };
    }

    /// Copies from offset `off` of the writable part into `out`.
    fn read(&self, off: usize, out: &mut [u8]) {
        assert!(off + out.len() <= self.rw);
        // SAFETY: as in `write`.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(off), out.as_mut_ptr(), out.len()) };
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: mapped in `new`, unmapped once; nothing refers into it.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Scratch memory for arguments and data buffers.
struct Mem {
    page: usize,
    /// One page for argument structures, then a `PROT_NONE` page.
    args: Map,
    /// One page kept read-only, for structures the kernel must not write.
    ro: Map,
    /// `DATA_LEN` bytes for data buffers, then a `PROT_NONE` page: any
    /// kernel copy that starts in the first half and moves at most
    /// `MAX_MSG_SIZE` bytes stays inside, and one starting further may run
    /// into the guard and fault, but never past it.
    data: Map,
    /// `PROT_NONE` pages: as good as unmapped, and never reused.
    hole: Map,
}

const DATA_LEN: usize = 2 * abi::MAX_MSG_SIZE as usize;
const HOLE_PAGES: usize = 16;

/// Addresses no user pointer may have.
const KERNEL_ADDRS: &[u64] = &[
    0xffff_8880_0000_0000, // direct map
    0xffff_c900_0000_0000, // vmalloc
    0xffff_ffff_8100_0000, // kernel text
    0xffff_ffff_ff60_0000, // vsyscall page
    0xffff_ffff_ffff_f000,
    0x8000_0000_0000_0000, // non-canonical
    0x0000_8000_0000_0000, // first byte past user space
    0x0000_7fff_ffff_fff8, // runs past the end of user space
    u64::MAX - 7,
];

impl Mem {
    fn new() -> Result<Self> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let ro = Map::new(page, 0)?;
        ro.protect(0, page, libc::PROT_READ)?;
        Ok(Self {
            page,
            args: Map::new(page, page)?,
            ro,
            data: Map::new(DATA_LEN, page)?,
            hole: Map::new(0, HOLE_PAGES * page)?,
        })
    }
}

/// Where an argument structure goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Writable memory, 8-byte aligned.
    Valid,
    /// Writable memory, not aligned.
    Misaligned,
    /// NULL.
    Null,
    /// A `PROT_NONE` page.
    Unmapped,
    /// A kernel or non-canonical address.
    Kernel,
    /// The structure's first bytes end a page; the next page is `PROT_NONE`.
    Short,
    /// A read-only page.
    ReadOnly,
}

/// What a call must give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Success or an errno of [`SANE_ERRNOS`].
    Sane,
    /// Exactly this errno.
    Errno(i32),
    /// An errno of [`SANE_ERRNOS`], not success.
    Fails,
    /// Success.
    Ok,
}

/// A real command of the ABI.
struct Real {
    cmd: u32,
    name: &'static str,
    /// It writes its structure back.
    writes: bool,
}

const REALS: &[Real] = &[
    Real {
        cmd: abi::IOCTL_VERSION,
        name: "VERSION",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_LIST_DEVICES,
        name: "LIST_DEVICES",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_CONNECT,
        name: "CONNECT",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_LISTEN,
        name: "LISTEN",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_ACCEPT,
        name: "ACCEPT",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_CONN_INFO,
        name: "CONN_INFO",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_DISCONNECT,
        name: "DISCONNECT",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_SEND,
        name: "SEND",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_RECV,
        name: "RECV",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_EXPOSE,
        name: "EXPOSE",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_REVOKE,
        name: "REVOKE",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_WINDOW_READ,
        name: "WINDOW_READ",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_WINDOW_WRITE,
        name: "WINDOW_WRITE",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_RDMA_WRITE,
        name: "RDMA_WRITE",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_RDMA_READ,
        name: "RDMA_READ",
        writes: false,
    },
    Real {
        cmd: abi::IOCTL_ATOMIC,
        name: "ATOMIC",
        writes: true,
    },
    Real {
        cmd: abi::IOCTL_BENCH,
        name: "BENCH",
        writes: true,
    },
];

const _: () = assert!(REALS.len() == abi::ALL_CMDS.len());

/// Table rows of random command numbers.
const ROW_OURS: &str = "random 0xb9";
const ROW_OTHER: &str = "random type";

/// Types of command numbers the VFS handles itself for any file
/// (`do_vfs_ioctl()`: FIOCLEX, FIONBIO, FIFREEZE, FICLONE, FS_IOC_*, ...).
/// They never reach the module, and some act on the file system: the
/// fuzzer leaves them alone.
const VFS_TYPES: &[u32] = &[0x00, 0x15, 0x54, 0x58, 0x66, 0x94];

const FRAG: u64 = (abi::RECV_BUF_SIZE - abi::WIRE_HDR_SIZE) as u64;
const RBUF: u64 = abi::RECV_BUF_SIZE as u64;
const MAXM: u64 = abi::MAX_MSG_SIZE;

/// Offset in `abi::Bench` of the `u32` after `rkey`.
const BENCH_WORD: usize = std::mem::offset_of!(abi::Bench, rkey) + 4;
const _: () = assert!(BENCH_WORD == 36);

/// Lengths around every limit of the ABI.
const LENS: &[u64] = &[
    0,
    1,
    2,
    7,
    8,
    9,
    16,
    64,
    4095,
    4096,
    4097,
    FRAG - 1,
    FRAG,
    FRAG + 1,
    RBUF - 1,
    RBUF,
    RBUF + 1,
    2 * FRAG,
    2 * FRAG + 1,
    MAXM - 1,
    MAXM,
    MAXM + 1,
    1 << 32,
    (1 << 32) + 8,
    i64::MAX as u64,
    u64::MAX - 7,
    u64::MAX,
];

const U32S: &[u32] = &[
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    15,
    16,
    17,
    40,
    64,
    65,
    127,
    128,
    255,
    256,
    4096,
    65535,
    65536,
    0x7fff_ffff,
    0x8000_0000,
    u32::MAX,
];

/// Waits: small, so nothing blocks for long.
const TIMEOUTS: &[u32] = &[1, 2, 5, 10, 20, 50, 100];

/// Calls and errnos of one table row.
#[derive(Default)]
struct Row {
    calls: u64,
    ok: u64,
    errs: BTreeMap<i32, u64>,
}

/// One open file and what the fuzzer believes about it (`IOCTL_CONN_INFO`
/// is the truth; the belief only steers the choices).
struct Slot {
    dev: KrustDev,
    connected: bool,
    peer: Option<usize>,
    /// Listened or connected with `CONN_RAW`.
    raw: bool,
    /// Windows exposed on this file: (id, len).
    windows: Vec<(u32, u64)>,
    /// The peer's windows: (addr, rkey, len).
    remote: Vec<(u64, u32, u64)>,
}

/// The watchdog's name for "closing a file" (not a command number).
const CLOSE: u32 = u32::MAX;

/// What the watchdog sees.
struct Watch {
    progress: AtomicU64,
    current: Mutex<(u32, usize)>,
    /// The descriptor of each slot's file, for the report of a hang.
    fds: Mutex<Vec<RawFd>>,
    done: AtomicBool,
}

impl Watch {
    fn set_fds(&self, slots: &[Slot]) {
        *self.fds.lock().unwrap_or_else(|e| e.into_inner()) =
            slots.iter().map(|s| s.dev.as_raw_fd()).collect();
    }

    /// What a hang leaves to look at, printed before the process ends: the
    /// command in `KRUST_FUZZ_ON_HANG` (run by `sh -c`, with `FUZZ_PID` set,
    /// while the call is still blocked), then `IOCTL_CONN_INFO` of every
    /// slot's file.
    fn report_hang(&self) {
        if let Ok(cmd) = std::env::var("KRUST_FUZZ_ON_HANG") {
            let _ = std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .env("FUZZ_PID", std::process::id().to_string())
                .status();
        }
        let fds = self.fds.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (i, fd) in fds.into_iter().enumerate() {
            let mut info = abi::ConnInfo::default();
            // SAFETY: `fd` is a slot's open file (the main thread, blocked
            // in a call, closes none); `info` is a writable `ConnInfo`.
            let r = unsafe {
                libc::ioctl(
                    fd,
                    abi::IOCTL_CONN_INFO as _,
                    &mut info as *mut abi::ConnInfo,
                )
            };
            if r == 0 {
                eprintln!("fuzz: fd{i}: {}", krust::table::conn_line(&info));
            } else {
                eprintln!(
                    "fuzz: fd{i}: IOCTL_CONN_INFO: {}",
                    io::Error::last_os_error()
                );
            }
        }
    }
}

struct Fuzzer {
    path: String,
    args: FuzzArgs,
    rng: Rng,
    mem: Mem,
    slots: Vec<Slot>,
    /// Listening port -> slot.
    listeners: HashMap<u16, usize>,
    rows: BTreeMap<&'static str, Row>,
    cmds_seen: HashSet<u32>,
    calls: u64,
    violations: u64,
    first_violations: Vec<String>,
    watch: Arc<Watch>,
}

fn ioctl_errno(r: &io::Result<i32>) -> Option<i32> {
    r.as_ref().err().map(|e| e.raw_os_error().unwrap_or(-1))
}

impl Fuzzer {
    fn open_slot(&self) -> Result<Slot> {
        Ok(Slot {
            dev: KrustDev::open(&self.path)?,
            connected: false,
            peer: None,
            raw: false,
            windows: Vec::new(),
            remote: Vec::new(),
        })
    }

    /// Closes slot `i`, whatever it is doing, and opens a new file there.
    fn reopen(&mut self, i: usize) -> Result<()> {
        *self.watch.current.lock().unwrap_or_else(|e| e.into_inner()) = (CLOSE, i);
        let fresh = self.open_slot()?;
        let old = std::mem::replace(&mut self.slots[i], fresh);
        drop(old);
        self.watch.set_fds(&self.slots);
        self.watch.progress.fetch_add(1, Ordering::Relaxed);
        self.listeners.retain(|_, s| *s != i);
        for s in &mut self.slots {
            if s.peer == Some(i) {
                s.peer = None;
            }
        }
        Ok(())
    }

    fn row(&mut self, name: &'static str) -> &mut Row {
        self.rows.entry(name).or_default()
    }

    /// Issues one ioctl, records it, and checks it against `expect`.
    fn issue(
        &mut self,
        slot: usize,
        row: &'static str,
        cmd: u32,
        arg: u64,
        expect: Expect,
        what: &str,
    ) -> io::Result<i32> {
        *self.watch.current.lock().unwrap_or_else(|e| e.into_inner()) = (cmd, slot);
        // SAFETY: `arg` is NULL, an address the kernel must reject, or points
        // into the fuzzer's own scratch mappings (`Mem`), which hold no Rust
        // objects; any structure or buffer there is only as large as the
        // fuzzer sized it, and what the kernel may write for `cmd` stays in
        // them or faults on their guard pages.
        let r = unsafe { self.slots[slot].dev.raw_ioctl(cmd, arg as usize) };
        self.watch.progress.fetch_add(1, Ordering::Relaxed);
        self.calls += 1;
        self.cmds_seen.insert(cmd);
        let e = ioctl_errno(&r);
        if self.args.trace {
            let res = match (&r, e) {
                (Ok(v), _) => format!("ok {v}"),
                (Err(_), Some(e)) => errno_name(e),
                _ => "?".into(),
            };
            println!(
                "call {} fd{slot} {row} cmd={cmd:#010x} arg={arg:#x} {what} -> {res}",
                self.calls
            );
        }
        {
            let row = self.row(row);
            row.calls += 1;
            match e {
                None => row.ok += 1,
                Some(e) => *row.errs.entry(e).or_default() += 1,
            }
        }
        let bad = match (&r, e, expect) {
            (Ok(v), _, _) if *v != 0 => Some(format!("returned {v}")),
            (_, Some(e), _) if !SANE_ERRNOS.contains(&e) => {
                Some(format!("errno {} outside the sane set", errno_name(e)))
            }
            (_, Some(e), Expect::Errno(want)) if e != want => Some(format!(
                "errno {}, expected {}",
                errno_name(e),
                errno_name(want)
            )),
            (Ok(_), _, Expect::Errno(want)) => {
                Some(format!("succeeded, expected {}", errno_name(want)))
            }
            (Ok(_), _, Expect::Fails) => Some("succeeded, expected a failure".into()),
            (_, Some(e), Expect::Ok) => Some(format!("failed with {}", errno_name(e))),
            _ => None,
        };
        if let Some(msg) = bad {
            self.violations += 1;
            let line = format!(
                "call {} fd{slot} {row} cmd={cmd:#010x} arg={arg:#x} {what}: {msg}",
                self.calls
            );
            if self.first_violations.len() < 50 {
                eprintln!("fuzz: VIOLATION {line}");
                self.first_violations.push(line);
            }
        }
        r
    }

    fn tmo(&mut self) -> u32 {
        self.rng.pick(TIMEOUTS)
    }

    fn len(&mut self) -> u64 {
        match self.rng.below(4) {
            0 => self.rng.below(256),
            1 => self.rng.below(MAXM + 2),
            _ => self.rng.pick(LENS),
        }
    }

    fn u32v(&mut self) -> u32 {
        if self.rng.one_in(4) {
            self.rng.next_u64() as u32
        } else {
            self.rng.pick(U32S)
        }
    }

    /// Mostly 0, sometimes not: for `reserved` and `flags` fields.
    fn mostly_zero(&mut self) -> u32 {
        if self.rng.one_in(8) {
            self.u32v()
        } else {
            0
        }
    }

    /// A data buffer pointer: mostly in the data arena (room for any copy the
    /// kernel makes), sometimes at its end, read-only, misaligned, or invalid.
    fn data_ptr(&mut self) -> u64 {
        let m = &self.mem;
        match self.rng.below(24) {
            0 => 0,
            1 => m
                .hole
                .addr(self.rng.below((HOLE_PAGES * m.page) as u64) as usize),
            2 => self.rng.pick(KERNEL_ADDRS),
            3 => m.ro.addr(self.rng.below(m.page as u64) as usize),
            4 => m
                .data
                .addr(DATA_LEN - 1 - self.rng.below(m.page as u64 * 2) as usize),
            5 => m.data.addr(DATA_LEN - m.page) - self.rng.below(FRAG + 64),
            6 => m.data.addr(1 + self.rng.below(7) as usize),
            _ => m.data.addr(self.rng.below(DATA_LEN as u64 / 2) as usize),
        }
    }

    fn place_of(&mut self) -> Place {
        match self.rng.below(40) {
            0..=2 => Place::Misaligned,
            3 | 4 => Place::Null,
            5 | 6 => Place::Unmapped,
            7 | 8 => Place::Kernel,
            9..=11 => Place::Short,
            12 | 13 => Place::ReadOnly,
            _ => Place::Valid,
        }
    }

    /// Puts `bytes` where `place` says; returns the argument and, for
    /// writable places, the offset in `args` to read the result back from.
    fn put(&mut self, place: Place, bytes: &[u8]) -> Result<(u64, Option<usize>)> {
        let page = self.mem.page;
        let n = bytes.len();
        Ok(match place {
            Place::Valid => {
                let off = (self.rng.below(((page - n) / 8) as u64 + 1) * 8) as usize;
                self.mem.args.write(off, bytes);
                (self.mem.args.addr(off), Some(off))
            }
            Place::Misaligned => {
                let slots = ((page - n - 8) / 8) as u64;
                let off = (self.rng.below(slots) * 8 + 1 + self.rng.below(7)) as usize;
                self.mem.args.write(off, bytes);
                (self.mem.args.addr(off), Some(off))
            }
            Place::Null => (0, None),
            Place::Unmapped => {
                let off = self.rng.below((HOLE_PAGES * page - n.max(1)) as u64) as usize;
                (self.mem.hole.addr(off), None)
            }
            Place::Kernel => (self.rng.pick(KERNEL_ADDRS), None),
            Place::Short => {
                let keep = self.rng.below(n.max(1) as u64) as usize;
                self.mem.args.write(page - keep, &bytes[..keep]);
                (self.mem.args.addr(page - keep), None)
            }
            Place::ReadOnly => {
                let off = (self.rng.below(((page - n) / 8) as u64 + 1) * 8) as usize;
                self.mem
                    .ro
                    .protect(0, page, libc::PROT_READ | libc::PROT_WRITE)?;
                self.mem.ro.write(off, bytes);
                self.mem.ro.protect(0, page, libc::PROT_READ)?;
                (self.mem.ro.addr(off), None)
            }
        })
    }

    /// A random `Addr`: mostly our IP and one of our ports, sometimes
    /// anything.
    fn addr(&mut self, listening: bool) -> abi::Addr {
        let mut a = abi::Addr {
            family: abi::AF_INET,
            port: self.args.port_base + self.rng.below(256) as u16,
            reserved: self.mostly_zero(),
            addr: [0; 16],
        };
        if !listening && !self.listeners.is_empty() && self.rng.one_in(2) {
            let ports: Vec<u16> = self.listeners.keys().copied().collect();
            a.port = self.rng.pick(&ports);
        }
        if self.rng.one_in(10) {
            let any = self.rng.next_u64() as u16;
            a.port = self.rng.pick(&[0, 1, 65535, any]);
        }
        let v4: [[u8; 4]; 8] = [
            self.args.ip.octets(),
            self.args.ip.octets(),
            self.args.ip.octets(),
            [192, 0, 2, 77], // on the subnet, nobody answers
            [127, 0, 0, 1],
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [10, 9, 8, 7], // no route
        ];
        match self.rng.below(12) {
            0 => {
                a.family = abi::AF_INET6;
                let v6: [[u8; 16]; 4] = [
                    [0; 16],
                    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    {
                        let mut m = [0u8; 16];
                        m[10] = 0xff;
                        m[11] = 0xff;
                        m[12..].copy_from_slice(&self.args.ip.octets());
                        m
                    },
                ];
                a.addr = self.rng.pick(&v6);
            }
            1 => {
                a.family = self.rng.pick(&[0, 1, 3, 27, 0xffff]);
                a.addr[..4].copy_from_slice(&self.args.ip.octets());
            }
            2 => {
                a.addr = (u128::from(self.rng.next_u64())
                    | (u128::from(self.rng.next_u64()) << 64))
                    .to_ne_bytes();
            }
            3 => {
                a.addr[..4].copy_from_slice(&[224, 0, 0, 1]);
            }
            _ => {
                let ip = self.rng.pick(&v4);
                a.addr[..4].copy_from_slice(&ip);
            }
        }
        a
    }

    /// Transport settings: mostly the defaults, often valid values, now and
    /// then anything.
    fn transport(&mut self) -> abi::Transport {
        match self.rng.below(10) {
            0..=5 => abi::Transport::default(),
            6..=8 => abi::Transport {
                set: self.rng.below(u64::from(abi::TRANSPORT_ALL) + 1) as u32,
                ack_timeout: 1 + self.rng.below(31) as u8,
                retry_count: self.rng.below(8) as u8,
                rnr_retry: self.rng.below(8) as u8,
                min_rnr_timer: self.rng.below(32) as u8,
                recv_depth: self.rng.below(u64::from(abi::RECV_DEPTH) + 2) as u32,
            },
            _ => {
                let b = self.rng.next_u64().to_le_bytes();
                abi::Transport {
                    set: self.u32v(),
                    ack_timeout: b[0],
                    retry_count: b[1],
                    rnr_retry: b[2],
                    min_rnr_timer: b[3],
                    recv_depth: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                }
            }
        }
    }

    fn flags(&mut self) -> u32 {
        match self.rng.below(10) {
            0..=3 => 0,
            4 | 5 => abi::CONN_RAW,
            6 => abi::CONN_POLL,
            7 => abi::CONN_RAW | abi::CONN_POLL,
            _ => self.u32v(),
        }
    }

    /// A window of the slot's peer, with an address in or around it.
    fn remote(&mut self, slot: usize) -> (u64, u32, u64) {
        let known = self.slots[slot].remote.clone();
        if known.is_empty() || self.rng.one_in(6) {
            let addr = if self.rng.one_in(2) {
                ((self.rng.below(17) + 1) << 32) | self.rng.below(8192)
            } else {
                self.rng.next_u64()
            };
            return (addr, self.rng.next_u64() as u32, self.len());
        }
        let (addr, rkey, len) = self.rng.pick(&known);
        let off = match self.rng.below(6) {
            0 => len,
            1 => len.saturating_sub(8),
            2 => self.rng.below(len.max(1)) & !7,
            3 => self.rng.below(len.max(1)),
            _ => 0,
        };
        (addr.wrapping_add(off), rkey, len - off.min(len))
    }

    fn window_id(&mut self, slot: usize) -> u32 {
        let ids: Vec<u32> = self.slots[slot].windows.iter().map(|w| w.0).collect();
        if !ids.is_empty() && self.rng.below(4) != 0 {
            self.rng.pick(&ids)
        } else if self.rng.one_in(2) {
            self.rng.below(abi::MAX_WINDOWS as u64 + 1) as u32
        } else {
            self.u32v()
        }
    }

    /// The argument structure of `cmd` on `slot`, random but plausible.
    fn build(&mut self, slot: usize, cmd: u32) -> Vec<u8> {
        let tmo = self.tmo();
        match cmd {
            abi::IOCTL_VERSION => bytes_of(&abi::Version::default()),
            abi::IOCTL_CONN_INFO => bytes_of(&abi::ConnInfo::default()),
            abi::IOCTL_LIST_DEVICES => bytes_of(&abi::DeviceList {
                devices: self.data_ptr(),
                capacity: self.rng.pick(&[0, 0, 1, 2, 4, 255, 256, 257, u32::MAX]),
                count: self.u32v(),
                reserved: u64::from(self.mostly_zero()),
            }),
            abi::IOCTL_CONNECT => {
                let info = abi::ConnInfo {
                    state: self.u32v(),
                    ..Default::default()
                };
                bytes_of(&abi::ConnectReq {
                    dst: self.addr(false),
                    timeout_ms: tmo * 4,
                    responder_resources: self.u32v(),
                    initiator_depth: self.u32v(),
                    flags: self.flags(),
                    transport: self.transport(),
                    info,
                })
            }
            abi::IOCTL_LISTEN => bytes_of(&abi::ListenReq {
                addr: self.addr(true),
                responder_resources: self.u32v(),
                initiator_depth: self.u32v(),
                flags: self.flags(),
                reserved: self.mostly_zero(),
                transport: self.transport(),
            }),
            abi::IOCTL_ACCEPT => bytes_of(&abi::AcceptReq {
                timeout_ms: tmo,
                reserved: self.mostly_zero(),
                info: abi::ConnInfo::default(),
            }),
            abi::IOCTL_SEND | abi::IOCTL_RECV => bytes_of(&abi::Xfer {
                buf: self.data_ptr(),
                // A raw connection takes at most one receive buffer.
                len: if self.slots[slot].raw && self.rng.one_in(2) {
                    self.rng.below(RBUF + 1)
                } else {
                    self.len()
                },
                timeout_ms: tmo,
                flags: self.mostly_zero(),
            }),
            abi::IOCTL_EXPOSE => {
                let len = match self.rng.below(4) {
                    0 => self.rng.pick(LENS),
                    _ => 1 + self.rng.below(65536),
                };
                bytes_of(&abi::Expose {
                    len,
                    access: if self.rng.one_in(6) {
                        self.u32v()
                    } else {
                        self.rng.below(8) as u32
                    },
                    reserved: self.mostly_zero(),
                    addr: self.rng.next_u64(),
                    rkey: self.rng.next_u64() as u32,
                    id: self.rng.next_u64() as u32,
                })
            }
            abi::IOCTL_REVOKE => bytes_of(&abi::Revoke {
                id: self.window_id(slot),
                reserved: self.mostly_zero(),
            }),
            abi::IOCTL_WINDOW_READ | abi::IOCTL_WINDOW_WRITE => {
                let id = self.window_id(slot);
                let wlen = self.slots[slot]
                    .windows
                    .iter()
                    .find(|w| w.0 == id)
                    .map_or(4096, |w| w.1);
                let (offset, len) = match self.rng.below(7) {
                    0 => (0, wlen),
                    1 => (wlen, 1),
                    2 => (wlen - 1, 1),
                    3 => (0, wlen + 1),
                    4 => (u64::MAX - 1, 2),
                    5 => (self.len(), self.len()),
                    _ => {
                        let off = self.rng.below(wlen);
                        (off, self.rng.below(wlen - off + 1))
                    }
                };
                bytes_of(&abi::WindowIo {
                    id,
                    reserved: self.mostly_zero(),
                    offset,
                    buf: self.data_ptr(),
                    len,
                })
            }
            abi::IOCTL_RDMA_WRITE | abi::IOCTL_RDMA_READ => {
                let (remote_addr, rkey, room) = self.remote(slot);
                let len = match self.rng.below(3) {
                    0 => self.len(),
                    _ => 1 + self.rng.below(room.clamp(1, MAXM)),
                };
                bytes_of(&abi::Rdma {
                    remote_addr,
                    rkey,
                    timeout_ms: tmo,
                    buf: self.data_ptr(),
                    len,
                })
            }
            abi::IOCTL_ATOMIC => {
                let (mut remote_addr, rkey, _) = self.remote(slot);
                if self.rng.below(4) != 0 {
                    remote_addr &= !7;
                }
                let op = match self.rng.below(8) {
                    0 => self.u32v(),
                    n => (n % 2) as u32,
                };
                bytes_of(&abi::AtomicOp {
                    remote_addr,
                    rkey,
                    op,
                    compare_add: self.rng.next_u64(),
                    swap: if op == 1 && self.rng.below(4) != 0 {
                        0
                    } else {
                        self.rng.next_u64()
                    },
                    timeout_ms: tmo,
                    reserved: self.mostly_zero(),
                    result: self.rng.next_u64(),
                })
            }
            abi::IOCTL_BENCH => {
                let (remote_addr, rkey, _) = self.remote(slot);
                let samples = if self.rng.one_in(2) {
                    0
                } else {
                    self.data_ptr()
                };
                let b = abi::Bench {
                    op: self.rng.below(6) as u32,
                    mode: self.rng.below(6) as u32,
                    size: self.rng.pick(&[
                        0,
                        1,
                        2,
                        8,
                        9,
                        64,
                        4096,
                        abi::RECV_BUF_SIZE,
                        abi::RECV_BUF_SIZE + 1,
                        abi::MAX_MSG_SIZE as u32,
                        abi::MAX_MSG_SIZE as u32 + 1,
                        u32::MAX,
                    ]),
                    iters: self.rng.pick(&[0, 1, 1, 2, 3, 10, 64, 1_000_001, u32::MAX]),
                    depth: self.rng.pick(&[0, 1, 2, 8, 64, 65, u32::MAX]),
                    timeout_ms: tmo,
                    remote_addr: if self.rng.below(4) != 0 {
                        remote_addr & !7
                    } else {
                        remote_addr
                    },
                    rkey,
                    samples,
                    total_ns: self.rng.next_u64(),
                    bytes: self.rng.next_u64(),
                    best_ns: self.rng.next_u64(),
                    ..Default::default()
                };
                let mut bytes = bytes_of(&b);
                // The u32 after `rkey` (reserved, or a window id): mostly 0,
                // sometimes one of this file's window ids, sometimes junk.
                let word = match self.rng.below(4) {
                    0 => self.window_id(slot),
                    1 => self.mostly_zero(),
                    _ => 0,
                };
                bytes[BENCH_WORD..BENCH_WORD + 4].copy_from_slice(&word.to_ne_bytes());
                bytes
            }
            _ => Vec::new(),
        }
    }

    /// One real command on `slot`, its argument placed at random.
    fn real(&mut self, slot: usize, ri: usize) -> Result<()> {
        let real = &REALS[ri];
        let (cmd, name, writes) = (real.cmd, real.name, real.writes);
        let bytes = self.build(slot, cmd);
        let place = if cmd == abi::IOCTL_DISCONNECT {
            Place::Null
        } else {
            self.place_of()
        };
        let (arg, back) = self.put(place, &bytes)?;
        let expect = match place {
            _ if cmd == abi::IOCTL_DISCONNECT => Expect::Sane,
            Place::Null | Place::Unmapped | Place::Kernel | Place::Short => {
                Expect::Errno(libc::EFAULT)
            }
            Place::ReadOnly if cmd == abi::IOCTL_VERSION || cmd == abi::IOCTL_CONN_INFO => {
                Expect::Errno(libc::EFAULT)
            }
            Place::ReadOnly if writes => Expect::Fails,
            Place::Valid | Place::Misaligned
                if cmd == abi::IOCTL_VERSION || cmd == abi::IOCTL_CONN_INFO =>
            {
                Expect::Ok
            }
            _ => Expect::Sane,
        };
        let r = self.issue(slot, name, cmd, arg, expect, &format!("{place:?}"));
        let Some(off) = back else { return Ok(()) };
        if r.is_err() {
            return Ok(());
        }
        let mut out = vec![0u8; bytes.len()];
        self.mem.args.read(off, &mut out);
        self.learn(slot, cmd, &bytes, &out);
        Ok(())
    }

    /// Updates the beliefs after a successful call with a readable argument.
    fn learn(&mut self, slot: usize, cmd: u32, sent: &[u8], got: &[u8]) {
        match cmd {
            abi::IOCTL_VERSION => {
                let v: abi::Version = from_bytes(got);
                let n = (v.n_cmds as usize).min(abi::MAX_CMDS);
                if v.abi_version != abi::ABI_VERSION || v.cmds[..n] != *abi::ALL_CMDS {
                    self.violation(slot, "VERSION reported other commands");
                }
            }
            abi::IOCTL_CONN_INFO => {
                let i: abi::ConnInfo = from_bytes(got);
                if i.state > abi::state::CLOSED {
                    self.violation(
                        slot,
                        &format!("CONN_INFO state {}", krust::table::state_name(i.state)),
                    );
                }
                self.slots[slot].connected = i.state == abi::state::CONNECTED;
            }
            abi::IOCTL_LISTEN => {
                let l: abi::ListenReq = from_bytes(sent);
                self.slots[slot].raw = l.flags & abi::CONN_RAW != 0;
                self.listeners.insert(l.addr.port, slot);
            }
            abi::IOCTL_CONNECT => {
                let c: abi::ConnectReq = from_bytes(got);
                self.slots[slot].connected = true;
                self.slots[slot].raw = c.flags & abi::CONN_RAW != 0;
                if let Some(&l) = self.listeners.get(&c.dst.port) {
                    if l != slot {
                        self.listeners.remove(&c.dst.port);
                        self.pair(slot, l);
                    }
                }
            }
            abi::IOCTL_ACCEPT => self.slots[slot].connected = true,
            abi::IOCTL_DISCONNECT => self.slots[slot].connected = false,
            abi::IOCTL_EXPOSE => {
                let e: abi::Expose = from_bytes(got);
                self.slots[slot].windows.push((e.id, e.len));
                if let Some(p) = self.slots[slot].peer {
                    self.slots[p].remote.push((e.addr, e.rkey, e.len));
                }
            }
            abi::IOCTL_REVOKE => {
                let r: abi::Revoke = from_bytes(sent);
                self.slots[slot].windows.retain(|w| w.0 != r.id);
            }
            _ => {}
        }
    }

    fn violation(&mut self, slot: usize, what: &str) {
        self.violations += 1;
        let line = format!("call {} fd{slot}: {what}", self.calls);
        if self.first_violations.len() < 50 {
            eprintln!("fuzz: VIOLATION {line}");
            self.first_violations.push(line);
        }
    }

    fn pair(&mut self, a: usize, b: usize) {
        self.slots[a].peer = Some(b);
        self.slots[b].peer = Some(a);
        self.slots[a].connected = true;
        self.slots[b].connected = true;
    }

    /// Issues a valid structure (in the argument page) and reads it back.
    fn valid<T: Pod>(&mut self, slot: usize, ri: usize, v: &mut T) -> io::Result<i32> {
        let bytes = bytes_of(v);
        self.mem.args.write(0, &bytes);
        let arg = self.mem.args.addr(0);
        let r = self.issue(
            slot,
            REALS[ri].name,
            REALS[ri].cmd,
            arg,
            Expect::Sane,
            "setup",
        );
        if r.is_ok() {
            let mut out = vec![0u8; bytes.len()];
            self.mem.args.read(0, &mut out);
            *v = from_bytes(&out);
            self.learn(slot, REALS[ri].cmd, &bytes, &out);
        }
        r
    }

    /// Connects two fresh files to each other over rxe and exposes a window
    /// on each, so that the connected paths get fuzzed too.
    fn establish(&mut self) -> Result<()> {
        let n = self.slots.len() as u64;
        let a = self.rng.below(n) as usize;
        let b = (a + 1 + self.rng.below(n - 1) as usize) % n as usize;
        self.reopen(a)?;
        self.reopen(b)?;
        let port = self.args.port_base + self.rng.below(256) as u16;
        let raw = if self.rng.one_in(3) { abi::CONN_RAW } else { 0 };
        // Closing a busy-polling connection takes ~200 ms (ib_drain_qp()
        // polls a direct CQ every HZ/10): not too many of them.
        let pick_poll = |rng: &mut Rng| {
            if rng.one_in(8) {
                abi::CONN_POLL
            } else {
                0
            }
        };
        let flags = raw | pick_poll(&mut self.rng);
        // Now and then the two ends disagree on the protocol; whether each
        // end busy-polls is its own business.
        let other = if self.rng.one_in(8) {
            raw ^ abi::CONN_RAW
        } else {
            raw
        } | pick_poll(&mut self.rng);
        let mut addr = abi::Addr {
            family: abi::AF_INET,
            port,
            ..Default::default()
        };
        addr.addr[..4].copy_from_slice(&self.args.ip.octets());
        let ri = |cmd| REALS.iter().position(|r| r.cmd == cmd).unwrap_or(0);
        let mut l = abi::ListenReq {
            addr,
            flags,
            ..Default::default()
        };
        if self.valid(a, ri(abi::IOCTL_LISTEN), &mut l).is_err() {
            return Ok(());
        }
        let mut c = abi::ConnectReq {
            dst: addr,
            timeout_ms: 1000,
            flags: other,
            ..Default::default()
        };
        if self.valid(b, ri(abi::IOCTL_CONNECT), &mut c).is_err() {
            return Ok(());
        }
        let mut acc = abi::AcceptReq {
            timeout_ms: 1000,
            ..Default::default()
        };
        if self.valid(a, ri(abi::IOCTL_ACCEPT), &mut acc).is_err() {
            return Ok(());
        }
        self.pair(a, b);
        for s in [a, b] {
            let mut e = abi::Expose {
                len: (8 + self.rng.below(65536)) & !7,
                access: abi::ACCESS_READ | abi::ACCESS_WRITE | abi::ACCESS_ATOMIC,
                ..Default::default()
            };
            let _ = self.valid(s, ri(abi::IOCTL_EXPOSE), &mut e);
        }
        Ok(())
    }

    /// A random command number (never one of the ABI's, never one the VFS
    /// takes for itself) and its expected errno.
    fn random_cmd(&mut self) -> (u32, &'static str, i32) {
        loop {
            let cmd = if self.rng.one_in(5) {
                self.rng.next_u64() as u32
            } else {
                let dir = self.rng.below(4) as u32;
                let ty = if self.rng.one_in(2) {
                    abi::IOC_MAGIC
                } else {
                    self.rng.below(256) as u32
                };
                let nr = if self.rng.one_in(2) {
                    abi::ioc_nr(self.rng.pick(abi::ALL_CMDS))
                } else {
                    self.rng.below(256) as u32
                };
                let size = if self.rng.one_in(2) {
                    self.rng
                        .pick(&[0, 1, 4, 8, 24, 32, 40, 48, 72, 112, 120, 136, 152, 160])
                } else {
                    self.rng.below(1 << 14) as usize
                };
                abi::ioc(dir, ty, nr, size)
            };
            let ty = abi::ioc_type(cmd);
            if abi::ALL_CMDS.contains(&cmd) || VFS_TYPES.contains(&ty) {
                continue;
            }
            if ty == abi::IOC_MAGIC {
                let known = abi::ALL_CMDS
                    .iter()
                    .any(|&c| abi::ioc_nr(c) == abi::ioc_nr(cmd));
                let e = if known { libc::EINVAL } else { libc::ENOTTY };
                return (cmd, ROW_OURS, e);
            }
            return (cmd, ROW_OTHER, libc::ENOTTY);
        }
    }

    fn step(&mut self) -> Result<()> {
        let n = self.slots.len() as u64;
        match self.rng.below(100) {
            0 | 1 => {
                let s = self.rng.below(n) as usize;
                self.reopen(s)
            }
            2..=5 => self.establish(),
            6..=15 => {
                let s = self.rng.below(n) as usize;
                let (cmd, row, e) = self.random_cmd();
                let arg = match self.rng.below(4) {
                    0 => 0,
                    1 => self.rng.pick(KERNEL_ADDRS),
                    _ => self.data_ptr(),
                };
                let _ = self.issue(s, row, cmd, arg, Expect::Errno(e), "random");
                Ok(())
            }
            _ => {
                let connected: Vec<usize> = (0..self.slots.len())
                    .filter(|&i| self.slots[i].connected)
                    .collect();
                let s = if !connected.is_empty() && self.rng.below(10) < 7 {
                    self.rng.pick(&connected)
                } else {
                    self.rng.below(n) as usize
                };
                let ri = self.rng.below(REALS.len() as u64) as usize;
                self.real(s, ri)
            }
        }
    }

    fn report(&self) {
        println!("{:<14} {:>8} {:>8}  errnos", "command", "calls", "ok");
        let order = REALS.iter().map(|r| r.name).chain([ROW_OURS, ROW_OTHER]);
        for name in order {
            let Some(row) = self.rows.get(name) else {
                println!("{name:<14} {:>8} {:>8}", 0, 0);
                continue;
            };
            let mut errs: Vec<(i32, u64)> = row.errs.iter().map(|(&e, &c)| (e, c)).collect();
            errs.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            let hist: Vec<String> = errs
                .iter()
                .map(|(e, c)| format!("{}:{c}", errno_name(*e)))
                .collect();
            println!(
                "{name:<14} {:>8} {:>8}  {}",
                row.calls,
                row.ok,
                hist.join(" ")
            );
        }
    }
}

/// Runs the fuzzer on the device node at `path`.
pub fn run(path: &str, args: FuzzArgs) -> Result<()> {
    let seed = args.seed.unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32)
    });
    println!(
        "fuzz: seed {seed}, {} fds, at most {} s and {} calls",
        args.fds, args.seconds, args.count
    );
    let watch = Arc::new(Watch {
        progress: AtomicU64::new(0),
        current: Mutex::new((0, 0)),
        fds: Mutex::new(Vec::new()),
        done: AtomicBool::new(false),
    });
    let mut f = Fuzzer {
        path: path.to_string(),
        args: args.clone(),
        rng: Rng::new(seed),
        mem: Mem::new()?,
        slots: Vec::new(),
        listeners: HashMap::new(),
        rows: BTreeMap::new(),
        cmds_seen: HashSet::new(),
        calls: 0,
        violations: 0,
        first_violations: Vec::new(),
        watch: watch.clone(),
    };
    for _ in 0..args.fds {
        let s = f.open_slot()?;
        f.slots.push(s);
    }
    watch.set_fds(&f.slots);
    // Every call waits briefly; one that does not return in a minute is a
    // hang in the module: say which, and end the process.
    let w = watch.clone();
    let dog = std::thread::spawn(move || {
        let mut last = u64::MAX;
        let mut still = 0;
        while !w.done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(250));
            let p = w.progress.load(Ordering::Relaxed);
            still = if p == last { still + 1 } else { 0 };
            last = p;
            if still >= 240 {
                let (cmd, slot) = *w.current.lock().unwrap_or_else(|e| e.into_inner());
                if cmd == CLOSE {
                    eprintln!("fuzz: closing fd{slot} has not finished in 60 s: hang");
                } else {
                    eprintln!("fuzz: call {cmd:#010x} on fd{slot} has not returned in 60 s: hang");
                }
                w.report_hang();
                std::process::exit(krust::exit::HANG.into());
            }
        }
    });
    let start = Instant::now();
    let limit = Duration::from_secs(args.seconds);
    while f.calls < args.count && start.elapsed() < limit {
        f.step()?;
    }
    let secs = start.elapsed().as_secs_f64();
    watch.done.store(true, Ordering::Relaxed);
    let _ = dog.join();
    f.slots.clear();
    f.report();
    let real_seen = abi::ALL_CMDS
        .iter()
        .filter(|c| f.cmds_seen.contains(c))
        .count();
    println!(
        "fuzz: {:.1} s, {:.0} calls/s, {real_seen} of {} ABI commands exercised, {} violation(s)",
        secs,
        f.calls as f64 / secs.max(0.001),
        abi::ALL_CMDS.len(),
        f.violations
    );
    if f.violations > 0 {
        for v in &f.first_violations {
            println!("violation: {v}");
        }
    }
    println!(
        "fuzz: {} calls, {} commands, seed {seed}",
        f.calls,
        f.cmds_seen.len()
    );
    if f.violations > 0 {
        bail!(
            "{} call(s) broke the ABI's rules (seed {seed})",
            f.violations
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_reproducible() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(43).next_u64(), xs[0]);
        assert!((0..1000).all(|_| a.below(7) < 7));
    }

    #[test]
    fn reals_match_the_abi() {
        let ours: Vec<u32> = REALS.iter().map(|r| r.cmd).collect();
        assert_eq!(ours, abi::ALL_CMDS);
    }
}
