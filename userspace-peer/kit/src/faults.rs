// SPDX-License-Identifier: GPL-2.0

//! Tests of what rxe and siw never do on their own: a user copy that stalls
//! while the device goes (`rdma-krust-kit stall`, with userfaultfd), and an
//! allocation that fails at each point in turn (`rdma-krust-kit fail-sweep`,
//! with the kernel's `fail-nth`, Documentation/fault-injection/).

use crate::stress::{addr_of, kernel_pair};
use anyhow::{bail, ensure, Context, Result};
use krust::abi;
use krust::kdev::KrustDev;
use krust::pattern;
use std::io;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Bytes each operation moves: half the largest message, so that the
/// window fits every provider (siw registers at most 1 MiB).
const LEN: usize = 1024 * 1024;
/// Where the stalled page starts: inside the second fragment of a message,
/// the second chunk of a window copy.
const STALL_AT: usize = 64 * 1024;
const PAGE: usize = 4096;

/// The operation whose user copy stalls.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallOp {
    /// `IOCTL_RECV` of a 1 MiB message, copied out.
    Recv,
    /// `IOCTL_SEND` of a 1 MiB message, copied in.
    Send,
    /// `IOCTL_RDMA_READ` of 1 MiB, copied out.
    Read,
    /// `IOCTL_RDMA_WRITE` of 1 MiB, copied in.
    Write,
    /// `IOCTL_WINDOW_READ` of a 1 MiB window, copied out.
    WindowRead,
    /// `IOCTL_WINDOW_WRITE` of a 1 MiB window, copied in.
    WindowWrite,
}

/// The arguments of `rdma-krust-kit stall`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct StallArgs {
    /// The operation.
    #[arg(long, value_enum)]
    pub op: StallOp,
    /// The address of the device under test (both files connect over it).
    #[arg(long, value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7960)]
    pub port: u16,
    /// The stalled page is filled once this file exists.
    #[arg(long)]
    pub release: PathBuf,
}

/// `struct uffdio_range` and the three requests used here
/// (`include/uapi/linux/userfaultfd.h`).
#[repr(C)]
struct UffdRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdRegister {
    range: UffdRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdZeropage {
    range: UffdRange,
    mode: u64,
    zeropage: i64,
}

const fn iowr(nr: u64, size: usize) -> u64 {
    (3 << 30) | ((size as u64) << 16) | (0xaa << 8) | nr
}
const UFFD_API: u64 = 0xaa;
const UFFDIO_API: u64 = iowr(0x3f, std::mem::size_of::<UffdApi>());
const UFFDIO_REGISTER: u64 = iowr(0x00, std::mem::size_of::<UffdRegister>());
const UFFDIO_ZEROPAGE: u64 = iowr(0x04, std::mem::size_of::<UffdZeropage>());
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;

/// An anonymous mapping of `len` bytes whose page at `at` is left to a
/// userfaultfd: a copy that reaches it waits until [`Stalled::release`].
struct Stalled {
    base: *mut u8,
    len: usize,
    uffd: i32,
    at: usize,
}

impl Stalled {
    fn new(len: usize, at: usize, fill: &[u8]) -> Result<Self> {
        let base = crate::errno_check::map_anon(len).context("mmap")?;
        let base = base.cast::<u8>();
        // Every page but the stalled one is present, with `fill`'s bytes.
        // SAFETY: `base` maps `len` writable bytes; `fill` is `len` long.
        unsafe {
            std::ptr::copy_nonoverlapping(fill.as_ptr(), base, at);
            std::ptr::copy_nonoverlapping(
                fill.as_ptr().add(at + PAGE),
                base.add(at + PAGE),
                len - at - PAGE,
            );
        }
        // SAFETY: the syscall takes flags only.
        let uffd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC) } as i32;
        ensure!(uffd >= 0, "userfaultfd: {}", io::Error::last_os_error());
        let mut api = UffdApi {
            api: UFFD_API,
            features: 0,
            ioctls: 0,
        };
        // SAFETY: `api` is the structure the request takes.
        ensure!(
            unsafe { libc::ioctl(uffd, UFFDIO_API as _, &mut api) } == 0,
            "UFFDIO_API: {}",
            io::Error::last_os_error()
        );
        let mut reg = UffdRegister {
            range: UffdRange {
                start: base as u64 + at as u64,
                len: PAGE as u64,
            },
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        // SAFETY: `reg` is the structure the request takes; the range is
        // one page of our mapping, not yet touched.
        ensure!(
            unsafe { libc::ioctl(uffd, UFFDIO_REGISTER as _, &mut reg) } == 0,
            "UFFDIO_REGISTER: {}",
            io::Error::last_os_error()
        );
        Ok(Self {
            base,
            len,
            uffd,
            at,
        })
    }

    /// Waits until a copy has reached the page and is waiting on it.
    fn wait_fault(&self) -> Result<()> {
        let mut pfd = libc::pollfd {
            fd: self.uffd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, 60_000) };
        ensure!(n == 1, "no fault on the stalled page in 60 s");
        let mut msg = [0u8; 32];
        // SAFETY: `msg` is a `struct uffd_msg`'s 32 bytes.
        let r = unsafe { libc::read(self.uffd, msg.as_mut_ptr().cast(), msg.len()) };
        ensure!(r == 32, "reading the fault: {}", io::Error::last_os_error());
        Ok(())
    }

    /// Maps a zero page at the stalled address: the copy goes on.
    fn release(&self) -> Result<()> {
        let mut z = UffdZeropage {
            range: UffdRange {
                start: self.base as u64 + self.at as u64,
                len: PAGE as u64,
            },
            mode: 0,
            zeropage: 0,
        };
        // SAFETY: `z` is the structure the request takes.
        ensure!(
            unsafe { libc::ioctl(self.uffd, UFFDIO_ZEROPAGE as _, &mut z) } == 0,
            "UFFDIO_ZEROPAGE: {}",
            io::Error::last_os_error()
        );
        Ok(())
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        // SAFETY: ours, unmapped and closed once.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
            libc::close(self.uffd);
        }
    }
}

// SAFETY: the mapping is plain memory; the threads that share it here
// synchronize through the kernel (the stalled copy) and `join`.
unsafe impl Send for Stalled {}
// SAFETY: as above.
unsafe impl Sync for Stalled {}

/// `rdma-krust-kit stall`: two files of the module connected over `--ip`, then
/// `--op` with a user buffer whose page at 64 KiB is missing and left to a
/// userfaultfd. Prints `stalled` once the module's copy waits on that page,
/// fills it once `--release` exists, and prints the operation's result,
/// `result: ok` or `result: <errno text>`.
pub fn stall(path: &str, a: &StallArgs) -> Result<()> {
    let (l, c) = kernel_pair(path, a.ip, a.port, 0)?;
    let mut data = vec![0u8; LEN];
    pattern::fill(&mut data, 11, 0);
    let s = Stalled::new(LEN, STALL_AT, &data)?;
    let mut window = 0;
    let mut remote = (0, 0);
    match a.op {
        StallOp::Recv => c.send(&data, 30_000).context("the peer's IOCTL_SEND")?,
        StallOp::Read | StallOp::Write => {
            let (addr, rkey, _) = l.expose(LEN as u64, abi::ACCESS_READ | abi::ACCESS_WRITE)?;
            remote = (addr, rkey);
        }
        StallOp::WindowRead | StallOp::WindowWrite => {
            window = l
                .expose(LEN as u64, abi::ACCESS_READ | abi::ACCESS_WRITE)?
                .2;
        }
        StallOp::Send => {}
    }
    // SAFETY: `s` maps `LEN` bytes until it drops, after the scope; only
    // the operation's thread uses them (and the kernel, through its ioctl).
    let buf = unsafe { std::slice::from_raw_parts_mut(s.base, s.len) };
    let r = std::thread::scope(|scope| -> Result<io::Result<()>> {
        let (l, c) = (&l, &c);
        let op = scope.spawn(move || -> io::Result<()> {
            match a.op {
                StallOp::Recv => l.recv(buf, 60_000).map(|_| ()),
                StallOp::Send => c.send(buf, 60_000),
                StallOp::Read => c.rdma(remote.0, remote.1, buf, false),
                StallOp::Write => c.rdma(remote.0, remote.1, buf, true),
                StallOp::WindowRead => l.window_io(window, 0, buf, true),
                StallOp::WindowWrite => l.window_io(window, 0, buf, false),
            }
        });
        s.wait_fault()?;
        println!("stalled");
        let t = Instant::now();
        while !a.release.exists() {
            ensure!(t.elapsed() < Duration::from_secs(120), "never released");
            std::thread::sleep(Duration::from_millis(20));
        }
        s.release()?;
        op.join()
            .map_err(|_| anyhow::anyhow!("the operation's thread panicked"))
    })?;
    match r {
        Ok(()) => println!("result: ok"),
        Err(e) => println!("result: {e}"),
    }
    Ok(())
}

/// What `fail-sweep` injects failures into.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepOp {
    /// `IOCTL_CONNECT` (its id, PD, CQ, QP, receives, and the device's
    /// user record), each time on a fresh pair of files.
    Connect,
    /// `IOCTL_SEND` of a `--len` message (its fragments, their slots and
    /// work requests, the credit messages it pumps).
    Send,
    /// `IOCTL_RECV` of a `--len` message (the receives it reposts, the
    /// credits it sends back).
    Recv,
}

/// The arguments of `rdma-krust-kit fail-sweep`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct SweepArgs {
    /// The call whose allocations fail in turn.
    #[arg(long, value_enum)]
    pub op: SweepOp,
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7965)]
    pub port: u16,
    /// Bytes of each SEND or RECV's message (the default is four
    /// fragments).
    #[arg(long, default_value_t = 200_000)]
    pub len: usize,
    /// Fail at most this many points (the sweep ends earlier once a call
    /// passes every point).
    #[arg(long, default_value_t = 400)]
    pub max: u32,
}

/// This thread's `/proc/thread-self/fail-nth`, open: reading and writing
/// an open file allocates nothing, so only the call under test meets the
/// armed fault point (opening the file would be one).
struct FailNth(std::fs::File);

impl FailNth {
    fn open() -> Result<Self> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/proc/thread-self/fail-nth")
            .context("/proc/thread-self/fail-nth (a kernel with CONFIG_FAULT_INJECTION)")?;
        Ok(Self(f))
    }

    /// Arms it: this thread's `n`-th fault-injection point fails.
    fn arm(&self, n: u32) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.0
            .write_at(n.to_string().as_bytes(), 0)
            .context("arming fail-nth")?;
        Ok(())
    }

    /// Disarms it; whether the failure was injected (the count had run
    /// down to 0).
    fn disarm(&self) -> Result<bool> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 16];
        let n = self.0.read_at(&mut buf, 0).context("reading fail-nth")?;
        let fired = std::str::from_utf8(&buf[..n]).map(str::trim) == Ok("0");
        self.0.write_at(b"0", 0).context("disarming fail-nth")?;
        Ok(fired)
    }
}

/// `rdma-krust-kit fail-sweep`: two files of the module connected over `--ip`;
/// for n = 1, 2, ... the n-th allocation of one `--op` call fails
/// (`fail-nth`, counting only allocations with the module on the stack when
/// `fail-nth`'s filters say so). The call must either succeed or fail with
/// an errno, leaving the connection as it was: the same message then goes
/// through, and every message the receiver gets is whole and right. Ends
/// once a call passes every point; prints how many failed and their errnos.
pub fn fail_sweep(path: &str, a: &SweepArgs) -> Result<()> {
    if a.op == SweepOp::Connect {
        return connect_sweep(path, a);
    }
    let nth = FailNth::open()?;
    let (rx, tx) = kernel_pair(path, a.ip, a.port, 0)?;
    // Touched now: a page first faulted in by the RECV would be an
    // allocation of the call (and its failure an EFAULT, which consumes
    // the message).
    let mut buf = vec![0xa5u8; a.len];
    let mut errnos = std::collections::BTreeMap::<String, u32>::new();
    let mut injected = 0;
    for n in 1..=a.max {
        let mut msg = vec![0u8; a.len];
        pattern::fill(&mut msg, 12, u64::from(n));
        let r = match a.op {
            SweepOp::Send | SweepOp::Connect => {
                nth.arm(n)?;
                let r = tx.send(&msg, 30_000);
                let fired = nth.disarm()?;
                (r.map(|_| a.len), fired)
            }
            SweepOp::Recv => {
                tx.send(&msg, 30_000)
                    .with_context(|| format!("point {n}: the sender's IOCTL_SEND"))?;
                nth.arm(n)?;
                let r = rx.recv(&mut buf, 30_000);
                let fired = nth.disarm()?;
                (r, fired)
            }
        };
        let (r, fired) = r;
        if !fired {
            r.with_context(|| format!("point {n}: nothing injected, and yet"))?;
            println!("fail-sweep: every one of {} point(s) failed in turn", n - 1);
            break;
        }
        injected += 1;
        let got = match r {
            Ok(len) if a.op == SweepOp::Recv => Some(len),
            Ok(_) => None,
            Err(e) => {
                let name = krust::errno::errno_name(e.raw_os_error().unwrap_or(0));
                *errnos.entry(name).or_default() += 1;
                // Nothing went out (SEND) or was taken (RECV): again, with
                // nothing injected, the message must go through whole.
                if a.op == SweepOp::Send {
                    tx.send(&msg, 30_000)
                        .with_context(|| format!("point {n}: IOCTL_SEND after {e}"))?;
                }
                None
            }
        };
        let len = match got {
            Some(len) => len,
            None => rx
                .recv(&mut buf, 30_000)
                .with_context(|| format!("point {n}: IOCTL_RECV"))?,
        };
        ensure!(
            len == a.len,
            "point {n}: received {len} bytes, sent {}",
            a.len
        );
        if let Some(off) = pattern::check(&buf, 12, u64::from(n)) {
            bail!("point {n}: the message differs at offset {off}");
        }
    }
    print_summary(injected, &errnos);
    let info = tx.conn_info()?;
    ensure!(
        info.state == abi::state::CONNECTED,
        "the connection did not survive: state {}",
        info.state
    );
    Ok(())
}

/// The sweep's last line: how many failures were injected, and the errnos
/// the calls failed with.
fn print_summary(injected: u32, errnos: &std::collections::BTreeMap<String, u32>) {
    let list: Vec<String> = errnos.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    let list = if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    };
    println!("fail-sweep: {injected} injected failure(s); calls failed with: {list}");
}

/// The raw errno of an error from `KrustDev`, if it carries one.
fn os_errno(e: &anyhow::Error) -> Option<i32> {
    e.chain()
        .find_map(|c| c.downcast_ref::<io::Error>())
        .and_then(io::Error::raw_os_error)
}

/// `fail-sweep --op connect`: for n = 1, 2, ... a listener on a fresh file,
/// and a fresh file whose `IOCTL_CONNECT` has its n-th allocation fail. A
/// connect that fails must fail with an errno and leave its file `CLOSED`;
/// one that succeeds (the failure was absorbed) must carry a message both
/// ways. Both files are closed each time, which tears down whatever the
/// failed connect had built.
fn connect_sweep(path: &str, a: &SweepArgs) -> Result<()> {
    let addr = addr_of(a.ip, a.port);
    let mut errnos = std::collections::BTreeMap::<String, u32>::new();
    let mut injected = 0;
    let mut msg = vec![0u8; 4096];
    let mut buf = vec![0xa5u8; 4096];
    let nth = FailNth::open()?;
    for n in 1..=a.max {
        let l = KrustDev::open(path)?;
        let c = KrustDev::open(path)?;
        l.listen(addr, 0, 0, 0)
            .with_context(|| format!("point {n}: listen"))?;
        nth.arm(n)?;
        let r = c.connect(addr, 0, 0, 10_000, 0);
        let fired = nth.disarm()?;
        match r {
            Err(e) => {
                ensure!(fired, "point {n}: nothing injected, and yet: {e:#}");
                let errno = os_errno(&e).with_context(|| format!("point {n}: {e:#}"))?;
                *errnos.entry(krust::errno::errno_name(errno)).or_default() += 1;
                let st = c.conn_info()?.state;
                ensure!(
                    st == abi::state::CLOSED,
                    "point {n}: connect failed ({e:#}) but the file is in state {st}"
                );
            }
            Ok(_) => {
                l.accept(10_000)
                    .with_context(|| format!("point {n}: accept"))?;
                pattern::fill(&mut msg, 13, u64::from(n));
                c.send(&msg, 10_000)
                    .with_context(|| format!("point {n}: IOCTL_SEND"))?;
                let len = l
                    .recv(&mut buf, 10_000)
                    .with_context(|| format!("point {n}: IOCTL_RECV"))?;
                ensure!(
                    len == msg.len() && buf == msg,
                    "point {n}: the message came through wrong"
                );
            }
        }
        if !fired {
            println!("fail-sweep: every one of {} point(s) failed in turn", n - 1);
            break;
        }
        injected += 1;
    }
    print_summary(injected, &errnos);
    Ok(())
}
