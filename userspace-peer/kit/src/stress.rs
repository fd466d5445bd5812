// SPDX-License-Identifier: GPL-2.0

//! Hardening runs of the module, each checking every result:
//!
//! - `rdma-krust-kit cycles`: connect, exchange one message, disconnect, close,
//!   over and over (the guest test measures slab growth around it);
//! - `rdma-krust-kit stress`: several connections, several threads on each of
//!   their files at once, mixing SEND/RECV, RDMA WRITE then READ back, and
//!   fetch-and-add; every message, byte and sum is verified;
//! - `rdma-krust-kit block`: puts one ioctl in one of the module's waits so a
//!   signal can interrupt it, then checks `EINTR` and what the file can do
//!   afterwards;
//! - `rdma-krust-kit recv-race`: two receivers on one file at once, each of
//!   which must get a whole message;
//! - `rdma-krust-kit credit-livelock`: two files that both SEND and never read,
//!   whose SENDs must time out.
//!
//! What the module allows concurrently on one file (`src/conn/`): SENDs
//! go one message at a time, RECVs one message at a time, and one-sided
//! operations, EXPOSE, REVOKE and BENCH one at a time, each a turn taken
//! through the connection's interruptible, timed wait (`block --case
//! send-queued` and `op-queued` check that a queued caller can be
//! interrupted); window copies hold the window list's lock. So concurrent
//! callers all succeed, one after the other, and each receiver gets whole
//! messages (`recv-race` checks it). `stress --concurrent-recv` lets the
//! threads of a file receive at once; without it they take turns in the
//! tool too.

use crate::fuzz::Rng;
use anyhow::{bail, Context, Result};
use krust::abi;
use krust::ctl::Advert;
use krust::errno::errno_name;
use krust::exit::mismatch;
use krust::kdev::KrustDev;
use krust::opts::DevArgs;
use krust::pattern;
use rdma_sys::*;
use std::collections::HashSet;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `ip:port` as an ABI address.
pub(crate) fn addr_of(ip: Ipv4Addr, port: u16) -> abi::Addr {
    let mut a = abi::Addr {
        family: abi::AF_INET,
        port,
        ..Default::default()
    };
    a.addr[..4].copy_from_slice(&ip.octets());
    a
}

/// The errno of an I/O error (0 if it has none).
fn errno_of(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// Locks `m`, also when another thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Two files of the module connected to each other over rxe: the first
/// listened on `ip:port`, the second connected to it.
pub(crate) fn kernel_pair(
    path: &str,
    ip: Ipv4Addr,
    port: u16,
    flags: u32,
) -> Result<(KrustDev, KrustDev)> {
    connect_pair(
        KrustDev::open(path)?,
        KrustDev::open(path)?,
        ip,
        port,
        flags,
    )
}

/// Connects two open files of the module: `l` listens on `ip:port`, `c`
/// connects to it.
fn connect_pair(
    l: KrustDev,
    c: KrustDev,
    ip: Ipv4Addr,
    port: u16,
    flags: u32,
) -> Result<(KrustDev, KrustDev)> {
    let a = addr_of(ip, port);
    l.listen(a, 0, 0, flags)
        .with_context(|| format!("listen on {ip}:{port}"))?;
    c.connect(a, 0, 0, 10_000, flags)
        .with_context(|| format!("connect to {ip}:{port}"))?;
    l.accept(10_000).context("accept")?;
    Ok((l, c))
}

/// Receives one message and checks it is pattern message `index` of `seed`
/// and `size` bytes long.
fn recv_check(dev: &KrustDev, buf: &mut [u8], size: usize, seed: u64, index: u64) -> Result<()> {
    let n = dev.recv(buf, 10_000).context("IOCTL_RECV")?;
    if n != size {
        bail!("received {n} bytes, expected {size}");
    }
    if let Some(off) = pattern::check(&buf[..n], seed, index) {
        return Err(mismatch(format!(
            "message {index} of seed {seed}: differs at offset {off}"
        )));
    }
    Ok(())
}

/// Polls every 10 ms until `dev`'s connection is `CLOSED`, for up to
/// `limit`; returns how long it took.
fn wait_closed(dev: &KrustDev, limit: Duration) -> Result<Duration> {
    let t = Instant::now();
    loop {
        if dev.conn_info()?.state == abi::state::CLOSED {
            return Ok(t.elapsed());
        }
        if t.elapsed() > limit {
            bail!("still not CLOSED after {} ms", limit.as_millis());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// --- cycles -------------------------------------------------------------------

/// The arguments of `rdma-krust-kit msg-bench`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct MsgBenchArgs {
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7980)]
    pub port: u16,
    /// Message sizes of the one-way streams.
    #[arg(long, value_delimiter = ',', default_value = "65536,1048576")]
    pub sizes: Vec<u64>,
    /// Messages per stream.
    #[arg(long, default_value_t = 200)]
    pub count: u32,
    /// Bytes of each ping-pong message.
    #[arg(long, default_value_t = 2)]
    pub lat_size: u64,
    /// Round trips of the ping-pong.
    #[arg(long, default_value_t = 2000)]
    pub lat_iters: u32,
}

/// The message path's own figures, `IOCTL_SEND` and `IOCTL_RECV` between
/// two files of the module (what `make bench`'s SEND rows do not measure:
/// they run raw connections): a ping-pong of `lat_size` bytes, its round
/// trips' median and 99th percentile halved, and for each size a one-way
/// stream of `count` messages, from the first SEND to the last RECV.
pub fn msg_bench(path: &str, a: &MsgBenchArgs) -> Result<()> {
    let (l, c) = kernel_pair(path, a.ip, a.port, 0)?;
    let (l, c) = (Arc::new(l), Arc::new(c));
    let most = a.sizes.iter().copied().max().unwrap_or(0).max(a.lat_size) as usize;
    let iters = a.lat_iters;
    let lat = a.lat_size as usize;
    let echo = {
        let l = l.clone();
        std::thread::spawn(move || -> Result<()> {
            let mut buf = vec![0u8; lat.max(1)];
            for _ in 0..iters {
                let n = l.recv(&mut buf, 10_000).context("ping-pong RECV")?;
                l.send(&buf[..n], 10_000).context("ping-pong SEND")?;
            }
            Ok(())
        })
    };
    let msg = vec![0x5au8; lat];
    let mut back = vec![0u8; lat.max(1)];
    let mut rtt = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        let t = Instant::now();
        c.send(&msg, 10_000).context("ping-pong SEND")?;
        c.recv(&mut back, 10_000).context("ping-pong RECV")?;
        rtt.push(t.elapsed().as_nanos() as u64);
    }
    echo.join()
        .map_err(|_| anyhow::anyhow!("echo panicked"))??;
    rtt.sort_unstable();
    let pick = |q: f64| rtt[((rtt.len() - 1) as f64 * q) as usize] as f64 / 2000.0;
    println!(
        "msg-bench: ping-pong {lat} bytes, {iters} round trips: half a round trip {:.2} us median, {:.2} us p99",
        pick(0.5),
        pick(0.99)
    );
    for &size in &a.sizes {
        let size = size as usize;
        let count = a.count;
        let sink = {
            let l = l.clone();
            std::thread::spawn(move || -> Result<Instant> {
                let mut buf = vec![0u8; most.max(1)];
                for _ in 0..count {
                    l.recv(&mut buf, 20_000).context("stream RECV")?;
                }
                Ok(Instant::now())
            })
        };
        let data = vec![0xa5u8; size];
        let t = Instant::now();
        for _ in 0..count {
            c.send(&data, 20_000).context("stream SEND")?;
        }
        let end = sink
            .join()
            .map_err(|_| anyhow::anyhow!("sink panicked"))??;
        let secs = end.duration_since(t).as_secs_f64().max(1e-9);
        println!(
            "msg-bench: stream {size} bytes, {count} messages: {:.1} MB/s ({:.0} ms)",
            (size as f64 * f64::from(count)) / secs / 1e6,
            secs * 1e3
        );
    }
    Ok(())
}

/// The arguments of `rdma-krust-kit many`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct ManyArgs {
    /// Connections, each between two files of the module.
    #[arg(long, default_value_t = 1024)]
    pub count: u32,
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// First port: connection `i` listens on `port + i`.
    #[arg(long, default_value_t = 20000)]
    pub port: u16,
    /// Seed of the messages.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Sizes the connections of `many` send, by turns: inline, the longest
/// inline, the shortest announced, 64 KiB, and every sixteenth 2 MiB.
fn many_size(i: usize) -> usize {
    if i % 16 == 15 {
        return abi::MAX_MSG_SIZE as usize;
    }
    let t = abi::MAX_INLINE_MSG as usize;
    [1, 4096, t, t + 1, 65536][i % 5]
}

/// `count` connections at once, each between two files of the module: all
/// connected, then on each a message out and back, every byte checked
/// (inline and announced, up to 2 MiB), then every one still connected,
/// then all closed. Prints how long each stage took and what the
/// connections held per connection end (both ends are on this machine).
pub fn many(path: &str, a: &ManyArgs) -> Result<()> {
    let n = a.count as usize;
    krust::host::raise_nofile(2 * u64::from(a.count) + 64)?;
    let (free0, slab0) = krust::host::meminfo()?;
    let t = Instant::now();
    let mut pairs = Vec::with_capacity(n);
    for i in 0..a.count {
        let port = u16::try_from(u32::from(a.port) + i).context("ports past 65535")?;
        pairs.push(kernel_pair(path, a.ip, port, 0).with_context(|| format!("connection {i}"))?);
    }
    let connect = t.elapsed();
    let (free1, slab1) = krust::host::meminfo()?;
    let ends = 2 * n.max(1) as u64;
    println!(
        "many: {n} connections in {} ms ({} us each); per connection end {} KiB (MemFree), slab {} KiB",
        connect.as_millis(),
        connect.as_micros() / n.max(1) as u128,
        free0.saturating_sub(free1) / ends,
        slab1.saturating_sub(slab0) / ends
    );
    let mut buf = vec![0u8; abi::MAX_MSG_SIZE as usize];
    let mut msg = Vec::new();
    let mut bytes = 0u64;
    let t = Instant::now();
    for (i, (l, c)) in pairs.iter().enumerate() {
        let size = many_size(i);
        msg.resize(size, 0);
        pattern::fill(&mut msg, a.seed, i as u64);
        c.send(&msg, 10_000)
            .with_context(|| format!("connection {i}: SEND of {size} bytes"))?;
        recv_check(l, &mut buf, size, a.seed, i as u64)
            .with_context(|| format!("connection {i}"))?;
        l.send(&buf[..size], 10_000)
            .with_context(|| format!("connection {i}: echo"))?;
        recv_check(c, &mut buf, size, a.seed, i as u64)
            .with_context(|| format!("connection {i}: the echo"))?;
        bytes += 2 * size as u64;
    }
    println!(
        "many: {} messages, {bytes} bytes, out and back on every connection, verified, in {} ms",
        2 * n,
        t.elapsed().as_millis()
    );
    for (i, (l, c)) in pairs.iter().enumerate() {
        for d in [l, c] {
            let info = d.conn_info()?;
            if info.state != abi::state::CONNECTED {
                bail!(
                    "connection {i}: state {} error {} after its messages",
                    krust::table::state_name(info.state),
                    info.error
                );
            }
        }
    }
    let t = Instant::now();
    drop(pairs);
    println!(
        "many: all {n} closed in {} ms, each still connected before",
        t.elapsed().as_millis()
    );
    Ok(())
}

/// The arguments of `rdma-krust-kit cycles`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct CyclesArgs {
    /// Connect/disconnect cycles.
    #[arg(long, default_value_t = 100)]
    pub count: u32,
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on, the same every cycle.
    #[arg(long, default_value_t = 7900)]
    pub port: u16,
    /// Bytes of the message each cycle sends and gets back.
    #[arg(long, default_value_t = 4096)]
    pub size: u64,
}

/// `count` cycles of: open two files, listen, connect, accept, send one
/// message and echo it back (both checked), end the connection, close.
/// The connection ends three ways in turn: the connecting side disconnects,
/// the listening side does, or both files are closed while connected.
pub fn cycles(path: &str, a: &CyclesArgs) -> Result<()> {
    let start = Instant::now();
    let mut buf = vec![0u8; a.size as usize];
    let mut msg = vec![0u8; a.size as usize];
    for i in 0..a.count {
        let what = || format!("cycle {i}");
        let (l, c) = kernel_pair(path, a.ip, a.port, 0).with_context(what)?;
        pattern::fill(&mut msg, 17, u64::from(i));
        c.send(&msg, 10_000)
            .context("IOCTL_SEND")
            .with_context(what)?;
        recv_check(&l, &mut buf, msg.len(), 17, u64::from(i)).with_context(what)?;
        l.send(&buf, 10_000)
            .context("IOCTL_SEND echo")
            .with_context(what)?;
        recv_check(&c, &mut buf, msg.len(), 17, u64::from(i)).with_context(what)?;
        match i % 3 {
            0 => {
                c.disconnect().with_context(what)?;
                wait_closed(&c, Duration::from_secs(2))
                    .context("after the disconnect")
                    .with_context(what)?;
                wait_closed(&l, Duration::from_secs(2))
                    .context("after the disconnect")
                    .with_context(what)?;
            }
            1 => {
                l.disconnect().with_context(what)?;
                wait_closed(&l, Duration::from_secs(2))
                    .context("after the disconnect")
                    .with_context(what)?;
                wait_closed(&c, Duration::from_secs(2))
                    .context("after the disconnect")
                    .with_context(what)?;
            }
            _ => {}
        }
        drop(c);
        drop(l);
    }
    let ms = start.elapsed().as_millis();
    println!(
        "cycles: {} connect/disconnect cycles, {} messages of {} bytes verified, {} ms ({} ms per cycle)",
        a.count,
        2 * a.count,
        a.size,
        ms,
        ms / u128::from(a.count.max(1))
    );
    Ok(())
}

// --- stress -------------------------------------------------------------------

/// The arguments of `rdma-krust-kit stress`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct StressArgs {
    /// Connections, each between a listening and a connecting file of the
    /// module.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub fds: u32,
    /// Threads on each file.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=32))]
    pub threads: u32,
    /// Seconds of mixed operations; then the queues are drained and
    /// everything is checked.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// First port; connection `i` uses `port + i`.
    #[arg(long, default_value_t = 7960)]
    pub port: u16,
    /// Largest message payload, in bytes (the default keeps every message
    /// in one fragment). With larger messages both ways, a SEND waits for
    /// credits until a thread on the other side receives; one that waits
    /// out its timeout is counted, not failed.
    #[arg(long, default_value_t = SINGLE_FRAG_PAYLOAD)]
    pub max_msg: u64,
    /// Connections, among the first, that busy-poll (`CONN_POLL`: the
    /// waiting threads reap the completions); the others use completion
    /// events.
    #[arg(long, default_value_t = 0)]
    pub polled: u32,
    /// Let the threads of one file call IOCTL_RECV at the same time instead
    /// of one at a time (the module gives each a whole message).
    #[arg(long)]
    pub concurrent_recv: bool,
    /// Seed of the operation mix.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Leave out the fetch-and-adds, and expose windows without atomic
    /// access: for a device without atomics (siw).
    #[arg(long)]
    pub no_atomics: bool,
}

/// Timeout of the mix's one-sided operations. Generous: they queue behind
/// the file's other threads and share the QP with multi-fragment SENDs, and
/// the debug kernel (KASAN, one CPU, kmemleak's scans) once took over the
/// module's default 10 s for one. A hang is what the 30 s no-progress watch
/// catches.
const OP_TIMEOUT_MS: u32 = 25_000;

/// The largest payload whose message fits one fragment.
const SINGLE_FRAG_PAYLOAD: u64 = (abi::RECV_BUF_SIZE - abi::WIRE_HDR_SIZE) as u64 - MSG_HDR as u64;

/// Each thread's part of the peer's window for RDMA WRITE and READ.
const SLOT: usize = 32 * 1024;
/// Message header: magic, thread, seq.
const MSG_HDR: usize = 24;
const MSG_MAGIC: &[u8; 8] = b"STRESS01";

/// Counts of operations, per file.
#[derive(Default)]
struct Counts {
    sends: AtomicU64,
    send_bytes: AtomicU64,
    send_timeouts: AtomicU64,
    recvs: AtomicU64,
    recv_timeouts: AtomicU64,
    rdma: AtomicU64,
    fadds: AtomicU64,
}

/// One file of a connection and what its threads did.
struct Side {
    name: String,
    dev: KrustDev,
    /// Id of the window this file exposed: its peer writes and adds there.
    win_id: u32,
    /// The peer's window.
    peer_win: Advert,
    recv_lock: Mutex<()>,
    /// Messages received from the peer: (thread, seq).
    got: Mutex<HashSet<(u32, u64)>>,
    /// Messages sent to the peer.
    sent: Mutex<HashSet<(u32, u64)>>,
    /// Messages whose SEND timed out: nothing or all of it was sent.
    maybe: Mutex<HashSet<(u32, u64)>>,
    /// Values this file's fetch-and-adds found in the peer's counter.
    olds: Mutex<Vec<u64>>,
    /// The last (length, pattern index) each thread wrote to its slot of
    /// the peer's window.
    last: Mutex<Vec<Option<(usize, u64)>>>,
    n: Counts,
    /// What each thread is doing now (`OP_*`), for the watchdog.
    busy: Vec<AtomicU32>,
}

const OP_IDLE: u32 = 0;
const OP_SEND: u32 = 1;
const OP_RECV_LOCK: u32 = 2;
const OP_RECV: u32 = 3;
const OP_WRITE: u32 = 4;
const OP_READ: u32 = 5;
const OP_FADD: u32 = 6;
const OP_NAMES: [&str; 7] = [
    "between calls",
    "IOCTL_SEND",
    "waiting for the file's receive turn",
    "IOCTL_RECV",
    "IOCTL_RDMA_WRITE",
    "IOCTL_RDMA_READ",
    "IOCTL_ATOMIC",
];

/// No operation finishing for this long is a hang: every call waits 10 s at
/// most.
const STALL: Duration = Duration::from_secs(30);

/// What a hang looks like from outside: each file's connection (twice, a
/// second apart: credits that move with nothing finishing mean a livelock)
/// and where each thread sleeps in the kernel.
fn dump_stall(sides: &[Arc<Side>]) {
    for round in 0..2 {
        if round > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        for side in sides {
            if let Ok(i) = side.dev.conn_info() {
                println!(
                    "stress: {}: state {} error {} credits {}",
                    side.name,
                    krust::table::state_name(i.state),
                    i.error,
                    i.credits
                );
            }
        }
    }
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for task in tasks.flatten() {
        let p = task.path();
        let wchan = std::fs::read_to_string(p.join("wchan")).unwrap_or_default();
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        // Fields after the command: state, ..., utime (12th), stime (13th).
        let rest: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(vec![], |(_, r)| r.split_whitespace().collect());
        println!(
            "stress: task {}: state {} wchan {} utime {} stime {}",
            task.file_name().to_string_lossy(),
            rest.first().unwrap_or(&"?"),
            wchan,
            rest.get(11).unwrap_or(&"?"),
            rest.get(12).unwrap_or(&"?")
        );
    }
}

/// Operations finished so far, on all files.
fn progress(sides: &[Arc<Side>]) -> u64 {
    sides
        .iter()
        .map(|s| {
            let n = &s.n;
            [
                &n.sends,
                &n.send_timeouts,
                &n.recvs,
                &n.recv_timeouts,
                &n.rdma,
                &n.fadds,
            ]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum::<u64>()
        })
        .sum()
}

fn msg_seed(side: usize, thread: u32) -> u64 {
    (side as u64) << 32 | u64::from(thread)
}

fn rdma_seed(side: usize, thread: u32) -> u64 {
    0x5244_4d41 << 32 | (side as u64) << 16 | u64::from(thread)
}

/// Checks a received message and records it; `from` is the sending side.
fn take_msg(me: &Side, from: usize, m: &[u8]) -> Result<()> {
    if m.len() < MSG_HDR || &m[..8] != MSG_MAGIC {
        bail!(
            "{}: received {} bytes that are not a message of the run",
            me.name,
            m.len()
        );
    }
    let thread = u32::from_ne_bytes(m[8..12].try_into()?);
    let seq = u64::from_ne_bytes(m[16..24].try_into()?);
    if let Some(off) = pattern::check(&m[MSG_HDR..], msg_seed(from, thread), seq) {
        return Err(mismatch(format!(
            "{}: message {seq} of thread {thread} ({} bytes): differs at offset {}",
            me.name,
            m.len(),
            MSG_HDR + off
        )));
    }
    if !lock(&me.got).insert((thread, seq)) {
        bail!(
            "{}: message {seq} of thread {thread} received twice",
            me.name
        );
    }
    me.n.recvs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// One thread on side `s`: mixed operations until `stop`.
fn worker(sides: &[Arc<Side>], s: usize, t: u32, a: &StressArgs, stop: &AtomicBool) -> Result<()> {
    let me = &sides[s];
    let peer_win = me.peer_win;
    let mut rng = Rng::new(a.seed ^ rdma_seed(s, t).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let max = a.max_msg as usize;
    let mut rbuf = vec![0u8; MSG_HDR + max];
    let mut wbuf = vec![0u8; SLOT];
    let mut back = vec![0u8; SLOT];
    let frag = (abi::RECV_BUF_SIZE - abi::WIRE_HDR_SIZE) as usize;
    let sizes = [
        0,
        1,
        100,
        4096,
        frag - MSG_HDR,
        frag - MSG_HDR + 1,
        65536,
        max,
    ];
    let (mut seq, mut iter) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let mut roll = rng.below(100);
        if a.no_atomics && roll >= 85 {
            // Without atomics (siw): the fetch-and-add share goes to RDMA.
            roll -= 25;
        }
        match roll {
            0..=29 => {
                let len = if rng.one_in(2) {
                    rng.pick(&sizes).min(max)
                } else {
                    rng.below(max as u64 + 1) as usize
                };
                let mut msg = vec![0u8; MSG_HDR + len];
                msg[..8].copy_from_slice(MSG_MAGIC);
                msg[8..12].copy_from_slice(&t.to_ne_bytes());
                msg[16..24].copy_from_slice(&seq.to_ne_bytes());
                pattern::fill(&mut msg[MSG_HDR..], msg_seed(s, t), seq);
                me.busy[t as usize].store(OP_SEND, Ordering::Relaxed);
                let r = me.dev.send(&msg, 200);
                me.busy[t as usize].store(OP_IDLE, Ordering::Relaxed);
                match r {
                    Ok(()) => {
                        lock(&me.sent).insert((t, seq));
                        me.n.sends.fetch_add(1, Ordering::Relaxed);
                        me.n.send_bytes
                            .fetch_add(msg.len() as u64, Ordering::Relaxed);
                    }
                    Err(e) if errno_of(&e) == libc::ETIMEDOUT => {
                        lock(&me.maybe).insert((t, seq));
                        me.n.send_timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => bail!("{} thread {t}: IOCTL_SEND: {e}", me.name),
                }
                seq += 1;
            }
            30..=59 => {
                me.busy[t as usize].store(OP_RECV_LOCK, Ordering::Relaxed);
                let guard = if a.concurrent_recv {
                    None
                } else {
                    Some(lock(&me.recv_lock))
                };
                me.busy[t as usize].store(OP_RECV, Ordering::Relaxed);
                let r = me.dev.recv(&mut rbuf, 100);
                me.busy[t as usize].store(OP_IDLE, Ordering::Relaxed);
                match r {
                    Ok(n) => {
                        drop(guard);
                        take_msg(me, s ^ 1, &rbuf[..n]).with_context(|| format!("thread {t}"))?;
                    }
                    Err(e) if errno_of(&e) == libc::ETIMEDOUT => {
                        me.n.recv_timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => bail!("{} thread {t}: IOCTL_RECV: {e}", me.name),
                }
            }
            60..=84 => {
                let len = 1 + rng.below(SLOT as u64) as usize;
                let at = peer_win.addr + (t as usize * SLOT) as u64;
                pattern::fill(&mut wbuf[..len], rdma_seed(s, t), iter);
                me.busy[t as usize].store(OP_WRITE, Ordering::Relaxed);
                me.dev
                    .rdma_within(at, peer_win.rkey, &mut wbuf[..len], true, OP_TIMEOUT_MS)
                    .with_context(|| format!("{} thread {t}: RDMA WRITE", me.name))?;
                back[..len].fill(0);
                me.busy[t as usize].store(OP_READ, Ordering::Relaxed);
                me.dev
                    .rdma_within(at, peer_win.rkey, &mut back[..len], false, OP_TIMEOUT_MS)
                    .with_context(|| format!("{} thread {t}: RDMA READ", me.name))?;
                me.busy[t as usize].store(OP_IDLE, Ordering::Relaxed);
                if back[..len] != wbuf[..len] {
                    return Err(mismatch(format!(
                        "{} thread {t}: READ back of {len} bytes differs from the WRITE",
                        me.name
                    )));
                }
                lock(&me.last)[t as usize] = Some((len, iter));
                iter += 1;
                me.n.rdma.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                let at = peer_win.addr + (a.threads as usize * SLOT) as u64;
                me.busy[t as usize].store(OP_FADD, Ordering::Relaxed);
                let old = me
                    .dev
                    .atomic_within(
                        at,
                        peer_win.rkey,
                        abi::ATOMIC_FETCH_ADD,
                        1,
                        0,
                        OP_TIMEOUT_MS,
                    )
                    .with_context(|| format!("{} thread {t}: FADD", me.name))?;
                me.busy[t as usize].store(OP_IDLE, Ordering::Relaxed);
                lock(&me.olds).push(old);
                me.n.fadds.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    Ok(())
}

/// `fds` connections, `threads` threads on each of their files, `seconds`
/// of mixed operations; then everything is checked:
/// every message sent arrived exactly once with its data intact; every READ
/// gave back what its thread had just written, and the window holds each
/// thread's last write; each counter holds exactly the number of
/// fetch-and-adds made on it, and they saw each value from 0 once.
///
/// The files are opened with the command line's global options
/// (`DevArgs::open`), its transport settings among them: a short
/// `--ack-timeout` makes the provider retry requests whose answers are
/// only slow.
pub fn stress(o: &DevArgs, a: &StressArgs) -> Result<()> {
    let win_len = a.threads as u64 * SLOT as u64 + 8;
    let mut access = abi::ACCESS_READ | abi::ACCESS_WRITE;
    if !a.no_atomics {
        access |= abi::ACCESS_ATOMIC;
    }
    let mut sides: Vec<Arc<Side>> = Vec::new();
    for i in 0..a.fds {
        let port = a.port + i as u16;
        let flags = if i < a.polled { abi::CONN_POLL } else { 0 };
        let (l, c) = connect_pair(o.open()?, o.open()?, a.ip, port, flags)?;
        // Each file exposes a window and tells its peer, before any thread
        // runs: the only messages that are not the run's.
        let (la, lk, lid) = l.expose(win_len, access).context("IOCTL_EXPOSE")?;
        let (ca, ck, cid) = c.expose(win_len, access).context("IOCTL_EXPOSE")?;
        let adv = |addr, rkey| Advert {
            addr,
            rkey,
            len: win_len as u32,
        };
        l.send(&adv(la, lk).encode(), 10_000)
            .context("send advert")?;
        c.send(&adv(ca, ck).encode(), 10_000)
            .context("send advert")?;
        let mut b = [0u8; 16];
        let n = l.recv(&mut b, 10_000).context("receive advert")?;
        let from_c = Advert::decode(&b[..n]).context("bad advert")?;
        let n = c.recv(&mut b, 10_000).context("receive advert")?;
        let from_l = Advert::decode(&b[..n]).context("bad advert")?;
        for (name, dev, win_id, peer_win) in [
            (format!("L{i}"), l, lid, from_c),
            (format!("C{i}"), c, cid, from_l),
        ] {
            sides.push(Arc::new(Side {
                name,
                dev,
                win_id,
                peer_win,
                recv_lock: Mutex::new(()),
                got: Mutex::new(HashSet::new()),
                sent: Mutex::new(HashSet::new()),
                maybe: Mutex::new(HashSet::new()),
                olds: Mutex::new(Vec::new()),
                last: Mutex::new(vec![None; a.threads as usize]),
                n: Counts::default(),
                busy: (0..a.threads).map(|_| AtomicU32::new(OP_IDLE)).collect(),
            }));
        }
    }
    println!(
        "stress: {} connection(s) ({} busy-polling), {} file(s), {} thread(s) per file, {} s{}",
        a.fds,
        a.polled.min(a.fds),
        sides.len(),
        a.threads,
        a.seconds,
        if a.concurrent_recv {
            ", concurrent receivers"
        } else {
            ""
        }
    );
    std::io::stdout().flush()?;

    let stop = Arc::new(AtomicBool::new(false));
    let sides = Arc::new(sides);
    let mut handles = Vec::new();
    for s in 0..sides.len() {
        for t in 0..a.threads {
            let (sides, stop, a) = (sides.clone(), stop.clone(), a.clone());
            handles.push(std::thread::spawn(move || {
                let r = worker(&sides, s, t, &a, &stop);
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                r
            }));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(a.seconds);
    let (mut seen, mut since) = (0, Instant::now());
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        if Instant::now() >= deadline {
            stop.store(true, Ordering::Relaxed);
        }
        let p = progress(&sides);
        if p != seen {
            (seen, since) = (p, Instant::now());
        } else if since.elapsed() > STALL {
            println!(
                "stress: no operation finished in {} s: hang",
                STALL.as_secs()
            );
            for side in sides.iter() {
                for (t, b) in side.busy.iter().enumerate() {
                    let op = b.load(Ordering::Relaxed) as usize;
                    let what = OP_NAMES.get(op).copied().unwrap_or("?");
                    println!("stress: {} thread {t}: in {what}", side.name);
                }
            }
            dump_stall(&sides);
            io::stdout().flush()?;
            std::process::exit(krust::exit::HANG.into());
        }
    }
    let mut errors = Vec::new();
    let mut mismatched = false;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                mismatched |= krust::exit::code(&e) == krust::exit::MISMATCH;
                errors.push(format!("{e:#}"));
            }
            Err(_) => errors.push("a thread panicked".into()),
        }
    }
    if !errors.is_empty() {
        for e in &errors {
            println!("stress: error: {e}");
        }
        let msg = format!("{} thread(s) failed", errors.len());
        if mismatched {
            return Err(mismatch(msg));
        }
        bail!(msg);
    }

    // Whatever is still queued arrives now.
    let mut rbuf = vec![0u8; MSG_HDR + a.max_msg as usize];
    for (s, me) in sides.iter().enumerate() {
        loop {
            match me.dev.recv(&mut rbuf, 1000) {
                Ok(n) => take_msg(me, s ^ 1, &rbuf[..n]).context("drain")?,
                Err(e) if errno_of(&e) == libc::ETIMEDOUT => break,
                Err(e) => bail!("{}: drain: IOCTL_RECV: {e}", me.name),
            }
        }
    }
    verify(&sides, a)
}

/// The checks after the run; prints the totals.
fn verify(sides: &[Arc<Side>], a: &StressArgs) -> Result<()> {
    let mut tot = [0u64; 7];
    let mut sums = Vec::new();
    for (s, me) in sides.iter().enumerate() {
        let peer = &sides[s ^ 1];
        let sent = lock(&me.sent);
        let maybe = lock(&me.maybe);
        let got = lock(&peer.got);
        let missing = sent.difference(&got).count();
        let extra = got
            .iter()
            .filter(|m| !sent.contains(m) && !maybe.contains(m))
            .count();
        if missing > 0 || extra > 0 {
            return Err(mismatch(format!(
                "{} -> {}: {missing} message(s) sent and never received, {extra} received and never sent",
                me.name,
                peer.name
            )));
        }
        // The counter after this file's fetch-and-adds, read by its owner.
        let mut v = [0u8; 8];
        let at = a.threads as u64 * SLOT as u64;
        peer.dev
            .window_io(peer.win_id, at, &mut v, true)
            .context("IOCTL_WINDOW_READ")?;
        let counter = u64::from_ne_bytes(v);
        let mut olds = lock(&me.olds).clone();
        olds.sort_unstable();
        if counter != olds.len() as u64 || olds.iter().enumerate().any(|(i, &o)| o != i as u64) {
            // The values seen, sorted: a repeated or skipped one tells a
            // result given twice from a lost one.
            let seen: Vec<String> = olds.iter().take(64).map(u64::to_string).collect();
            return Err(mismatch(format!(
                "{} -> {}: counter {counter} after {} fetch-and-adds (values seen not 0..n: {}{})",
                me.name,
                peer.name,
                olds.len(),
                seen.join(","),
                if olds.len() > 64 { ",..." } else { "" }
            )));
        }
        sums.push(counter);
        // Each thread's last WRITE is in the window.
        for (t, last) in lock(&me.last).iter().enumerate() {
            let Some((len, iter)) = *last else { continue };
            let mut w = vec![0u8; len];
            peer.dev
                .window_io(peer.win_id, (t * SLOT) as u64, &mut w, true)
                .context("IOCTL_WINDOW_READ")?;
            if let Some(off) = pattern::check(&w, rdma_seed(s, t as u32), iter) {
                return Err(mismatch(format!(
                    "{}'s window, slot of {} thread {t}: differs from its last WRITE at {off}",
                    peer.name, me.name
                )));
            }
        }
        let n = &me.n;
        for (i, c) in [
            &n.sends,
            &n.send_bytes,
            &n.send_timeouts,
            &n.recvs,
            &n.recv_timeouts,
            &n.rdma,
            &n.fadds,
        ]
        .iter()
        .enumerate()
        {
            tot[i] += c.load(Ordering::Relaxed);
        }
        println!(
            "stress: {}: sent {} ({} timed out), received {}, rdma {}, fadd {} (counter {counter})",
            me.name,
            n.sends.load(Ordering::Relaxed),
            n.send_timeouts.load(Ordering::Relaxed),
            n.recvs.load(Ordering::Relaxed),
            n.rdma.load(Ordering::Relaxed),
            n.fadds.load(Ordering::Relaxed),
        );
    }
    println!(
        "stress: ops: {} sends ({} bytes, {} timed out on credits), {} receives verified ({} empty), {} RDMA write+read verified, {} fadds",
        tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], tot[6]
    );
    println!(
        "stress: all verified: every message once, intact; every READ back; windows hold the last WRITEs; fadd counters exact ({sums:?})"
    );
    Ok(())
}

// --- recv-race ----------------------------------------------------------------

/// The arguments of `rdma-krust-kit recv-race`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct RaceArgs {
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7990)]
    pub port: u16,
    /// Rounds (each uses 256 KiB of the file).
    #[arg(long, default_value_t = 8)]
    pub rounds: u32,
    /// A file of at least `rounds` x 256 KiB on a slow file system (in the
    /// guest, any large file of the host's 9p root, such as
    /// /usr/lib/x86_64-linux-gnu/libLLVM-15.so.1), mapped privately as the
    /// receive buffers: the kernel's copy into them faults and sleeps on
    /// every page, which lets the other receiver run in the middle of a
    /// message even on one CPU without preemption.
    #[arg(long)]
    pub file: std::path::PathBuf,
}

/// Bytes of the first message of a round: two fragments.
const RACE_M1: usize = 100_000;
/// Bytes of the second: one fragment.
const RACE_M2: usize = 1000;
const RACE_REGION: usize = 128 * 1024;

/// Two threads call IOCTL_RECV on one file at the same time, each into
/// memory whose first touch sleeps, then the peer sends a two-fragment
/// message and a one-fragment one. A module that serializes receivers gives
/// one message to each thread, intact. Fails (and says what each thread
/// got) when a message is split between the two.
pub fn recv_race(path: &str, a: &RaceArgs) -> Result<()> {
    let file = std::fs::File::open(&a.file).with_context(|| format!("open {:?}", a.file))?;
    let flen = file.metadata()?.len() as usize;
    let need = 2 * RACE_REGION * a.rounds as usize;
    if flen < need {
        bail!(
            "{:?} has {flen} bytes; {} rounds need {need}",
            a.file,
            a.rounds
        );
    }
    // SAFETY: a new private mapping of a file we opened; no Rust object
    // lives there, and the kernel and the code below only copy bytes.
    let base = unsafe {
        libc::mmap(
            null_mut(),
            need,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE,
            std::os::fd::AsRawFd::as_raw_fd(&file),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error()).context("mmap");
    }
    // SAFETY: advice on our own mapping: no read-ahead, so every page the
    // kernel writes to is read from the file first, and sleeps.
    unsafe { libc::madvise(base, need, libc::MADV_RANDOM) };
    let (l, c) = kernel_pair(path, a.ip, a.port, 0)?;
    let l = Arc::new(l);
    let mut m1 = vec![0u8; RACE_M1];
    let mut m2 = vec![0u8; RACE_M2];
    let mut bad = 0;
    for r in 0..a.rounds {
        let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
        let mut threads = Vec::new();
        for k in 0..2 {
            let at = base as usize + (2 * r as usize + k) * RACE_REGION;
            let l = l.clone();
            threads.push(std::thread::spawn(move || {
                let mut x = abi::Xfer {
                    buf: at as u64,
                    len: RACE_REGION as u64,
                    timeout_ms: 5000,
                    flags: 0,
                };
                // SAFETY: `x` names this thread's region of the private
                // mapping, `RACE_REGION` writable bytes nothing else uses.
                unsafe { l.raw_ioctl(abi::IOCTL_RECV, &mut x as *mut _ as usize) }
                    .map(|_| (at, x.len as usize))
            }));
        }
        // Both receivers wait before anything is sent.
        std::thread::sleep(Duration::from_millis(200));
        pattern::fill(&mut m1, 23, 2 * u64::from(r));
        pattern::fill(&mut m2, 23, 2 * u64::from(r) + 1);
        c.send(&m1, 5000).context("SEND m1")?;
        c.send(&m2, 5000).context("SEND m2")?;
        let mut got = Vec::new();
        for t in threads {
            let res = t
                .join()
                .map_err(|_| anyhow::anyhow!("a receiver panicked"))?;
            got.push(match res {
                Ok((at, n)) if n <= RACE_REGION => {
                    // SAFETY: the receiver is done; its region is
                    // `RACE_REGION` readable bytes of our mapping.
                    let data = unsafe { std::slice::from_raw_parts(at as *const u8, n) };
                    if n == RACE_M1 && pattern::check(data, 23, 2 * u64::from(r)).is_none() {
                        "m1".to_string()
                    } else if n == RACE_M2
                        && pattern::check(data, 23, 2 * u64::from(r) + 1).is_none()
                    {
                        "m2".to_string()
                    } else {
                        let which = [(RACE_M1, 0), (RACE_M2, 1)]
                            .iter()
                            .map(|&(len, i)| {
                                let idx = 2 * u64::from(r) + i;
                                let k = data.len().min(len);
                                let first = pattern::check(&data[..k], 23, idx).unwrap_or(k);
                                format!("{first} bytes match m{}", i + 1)
                            })
                            .collect::<Vec<_>>()
                            .join(", ");
                        format!("{n} bytes that are neither message ({which})")
                    }
                }
                Ok((_, n)) => format!("a length of {n}"),
                Err(e) => format!("{} ({e})", errno_name(errno_of(&e))),
            });
        }
        got.sort();
        let ok = got == ["m1", "m2"];
        println!(
            "recv-race: round {r}: receivers got [{}]{}",
            got.join("; "),
            if ok { "" } else { ": WRONG" }
        );
        if !ok {
            bad += 1;
            break;
        }
    }
    // SAFETY: mapped above; no receiver runs any more.
    unsafe { libc::munmap(base, need) };
    if bad > 0 {
        bail!("concurrent IOCTL_RECVs on one file split a message between them");
    }
    println!(
        "recv-race: {} rounds, each message whole to one receiver",
        a.rounds
    );
    Ok(())
}

// --- idle-close ----------------------------------------------------------------

/// The arguments of `rdma-krust-kit idle-close`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct IdleCloseArgs {
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7990)]
    pub port: u16,
    /// Milliseconds allowed beyond the grace the module gives what is in
    /// flight before it answers the peer's disconnect.
    #[arg(long, default_value_t = 5000)]
    pub slack_ms: u64,
}

/// A module file whose peer disconnects while a READ of the file's is
/// still in flight, and whose owner then calls nothing: the module puts
/// its own disconnect off for the READ, at most `retry_count + 1` ACK
/// timeouts, and must then answer the peer's DREQ without a waiter to pay
/// the debt. The peer (userspace, connecting with a retry count of 7, which
/// rxe retries forever) drops every request first, so the READ never
/// completes. Its `rdma_disconnect()` returns when the module's DREP comes:
/// within the grace and `slack_ms`, where the CM gives up only after 16
/// DREQs of about 4.2 s each.
pub fn idle_close(path: &str, a: &IdleCloseArgs) -> Result<()> {
    let here = addr_of(a.ip, a.port);
    let dev = KrustDev::open(path)?;
    dev.listen(here, 0, 0, 0)?;
    let peer = UEp::new(&here, false)?;
    peer.connect()?;
    let info = dev.accept(10_000)?;
    peer.freeze()?;
    let mut buf = vec![0u8; 4096];
    let e = expect_err(
        "READ from a peer that drops every request",
        rdma_io(&dev, false, &mut buf, 300),
        &[libc::ETIMEDOUT],
    )?;
    println!(
        "a READ from a peer that drops every request: {}",
        errno_name(e)
    );
    let t = &info.transport;
    let grace_ms = t.retries_ms();
    // Nothing calls into the file from here until the check below.
    let start = Instant::now();
    let r = peer.disconnect();
    let ms = start.elapsed().as_millis() as u64;
    println!(
        "the peer's rdma_disconnect() returned after {ms} ms (ack timeout {}, retry count {}: grace {grace_ms} ms)",
        t.ack_timeout, t.retry_count
    );
    // `ETIMEDOUT`: the CM gave up on the DREQ, the module never answered.
    r?;
    if ms > grace_ms + a.slack_ms {
        bail!(
            "the module answered the peer's disconnect after {ms} ms, more than its grace of {grace_ms} ms and {} ms",
            a.slack_ms
        );
    }
    expect_state(&dev, abi::state::CLOSED, &[libc::ECONNRESET as u32])?;
    close_timed(dev)
}

// --- own-qp-fails -------------------------------------------------------------

/// The arguments of `rdma-krust-kit own-qp-fails`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct OwnQpFailsArgs {
    /// Address to listen on and connect to (an IB or RoCE device: iWARP
    /// has no RNR NAK).
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7985)]
    pub port: u16,
    /// Milliseconds the listener's end may take to learn that the
    /// connector's QP failed.
    #[arg(long, default_value_t = 10_000)]
    pub within_ms: u64,
}

/// A connection whose one end's QP fails on a completion error of its own
/// while the other end's QP stays up: the failing end must disconnect, so
/// the other learns now and not when the failing end's file is closed.
/// Two raw files of the module: the listener keeps `MIN_RECV_DEPTH`
/// receives posted and never reposts them (it reads nothing), and asks
/// for an RNR retry count of 0, which rdma_cm gives the connector's QP.
/// The connector's SEND past those receives meets an RNR NAK and fails
/// at once (`RNR_RETRY_EXC_ERR`, `ETIMEDOUT`); the listener's QP is
/// untouched by it. With the connector's file still open, the listener's
/// end must close (`ECONNRESET`) within `within_ms`, and still hand over
/// the messages that came before, byte for byte.
pub fn own_qp_fails(path: &str, a: &OwnQpFailsArgs) -> Result<()> {
    let depth = abi::MIN_RECV_DEPTH;
    let l = KrustDev::open(path)?;
    l.set_transport(abi::Transport {
        set: abi::TRANSPORT_RNR_RETRY | abi::TRANSPORT_RECV_DEPTH,
        rnr_retry: 0,
        recv_depth: depth,
        ..Default::default()
    });
    let (l, c) = connect_pair(l, KrustDev::open(path)?, a.ip, a.port, abi::CONN_RAW)?;
    let info = c.conn_info()?;
    if info.iwarp != 0 {
        bail!("own-qp-fails: the device speaks iWARP, which has no RNR NAK");
    }
    if info.transport.rnr_retry != 0 {
        bail!(
            "the connector's QP has RNR retry count {}, not the listener's 0",
            info.transport.rnr_retry
        );
    }
    let mut msg = [0u8; 64];
    for i in 0..u64::from(depth) {
        pattern::fill(&mut msg, 23, i);
        c.send(&msg, 10_000)
            .with_context(|| format!("raw SEND {i} of {depth} into posted receives"))?;
    }
    pattern::fill(&mut msg, 23, u64::from(depth));
    let t = Instant::now();
    let e = expect_err(
        "a raw SEND past the listener's receives (RNR retry count 0)",
        c.send(&msg, 10_000),
        &[libc::ETIMEDOUT],
    )?;
    let ms = t.elapsed().as_millis();
    println!(
        "the connector's SEND past {depth} receives: {} after {ms} ms",
        errno_name(e)
    );
    // Not the wait's own timeout: the transport's verdict.
    if ms >= 5000 {
        bail!("the SEND failed only after {ms} ms: its wait ran out, no RNR error came");
    }
    expect_state(&c, abi::state::CLOSED, &[libc::ETIMEDOUT as u32])?;
    let took = wait_closed(&l, Duration::from_millis(a.within_ms)).context(
        "the listener's end after the connector's QP failed: the connector did not disconnect",
    )?;
    println!(
        "the listener's end learned within {} ms, the connector's file still open",
        took.as_millis()
    );
    expect_state(&l, abi::state::CLOSED, &[libc::ECONNRESET as u32])?;
    let mut buf = [0u8; 64];
    for i in 0..u64::from(depth) {
        recv_check(&l, &mut buf, msg.len(), 23, i)
            .with_context(|| format!("raw RECV {i} after the close"))?;
    }
    println!("after: the listener read the {depth} messages sent before, intact");
    close_timed(c)?;
    close_timed(l)
}

// --- credit-livelock ----------------------------------------------------------

/// The arguments of `rdma-krust-kit credit-livelock`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct LivelockArgs {
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7995)]
    pub port: u16,
    /// `timeout_ms` of the two SENDs that wait for credits.
    #[arg(long, default_value_t = 500)]
    pub timeout_ms: u32,
    /// Bytes of each of those SENDs (announced: over 8176).
    #[arg(long, default_value_t = 200_000)]
    pub size: u64,
}

/// Two files of the module that both SEND and neither reads: a SEND that
/// lacks credits must fail with `ETIMEDOUT` after `timeout_ms`. The
/// connector, then the listener, fill the other's receives with small
/// messages (until a SEND times out), so each holds one credit and the
/// connector has been told the listener is low. Then each starts a SEND in
/// a thread, and the connector reads one message: the credit it grants for
/// it lets the listener's through (every message takes one receive), while
/// the connector's waits for a receive the listener never frees. Fails if
/// either SEND is still waiting ten times its timeout later.
pub fn credit_livelock(path: &str, a: &LivelockArgs) -> Result<()> {
    let (l, c) = kernel_pair(path, a.ip, a.port, 0)?;
    let small = vec![7u8; 1000];
    let mut filled = [0u32; 2];
    for (k, dev) in [&c, &l].iter().enumerate() {
        loop {
            match dev.send(&small, 200) {
                Ok(()) => filled[k] += 1,
                Err(e) if errno_of(&e) == libc::ETIMEDOUT => break,
                Err(e) => bail!("filling: IOCTL_SEND: {e}"),
            }
            if filled[k] > 2 * abi::RECV_DEPTH {
                bail!("filling: {} SENDs and still credits", filled[k]);
            }
        }
    }
    println!(
        "credit-livelock: filled with {} and {} messages; credits {} and {}",
        filled[0],
        filled[1],
        c.conn_info()?.credits,
        l.conn_info()?.credits
    );
    let (l, c) = (Arc::new(l), Arc::new(c));
    let big = Arc::new(vec![9u8; a.size as usize]);
    let mut senders = Vec::new();
    for (name, dev) in [("connector", c.clone()), ("listener", l.clone())] {
        let (big, to) = (big.clone(), a.timeout_ms);
        senders.push((
            name,
            std::thread::spawn(move || {
                let t = Instant::now();
                let r = dev.send(&big, to);
                (r, t.elapsed().as_millis())
            }),
        ));
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut buf = vec![0u8; small.len()];
    let n = c.recv(&mut buf, 1000).context("the one RECV")?;
    println!("credit-livelock: the connector read one message ({n} bytes)");
    let limit = Instant::now() + Duration::from_millis(10 * u64::from(a.timeout_ms) + 1000);
    while Instant::now() < limit && !senders.iter().all(|(_, h)| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stuck: Vec<&str> = senders
        .iter()
        .filter(|(_, h)| !h.is_finished())
        .map(|(n, _)| *n)
        .collect();
    if !stuck.is_empty() {
        let (ci, li) = (c.conn_info()?, l.conn_info()?);
        println!(
            "credit-livelock: after {} ms the SEND of the {} still waits (timeout {} ms); credits now {} and {}",
            10 * a.timeout_ms + 1000,
            stuck.join(" and the "),
            a.timeout_ms,
            ci.credits,
            li.credits
        );
        io::stdout().flush()?;
        bail!("SEND ignored its timeout: credit-only messages keep restarting its wait");
    }
    for (name, h) in senders {
        let (r, ms) = h.join().map_err(|_| anyhow::anyhow!("a sender panicked"))?;
        match r {
            Err(e) if errno_of(&e) == libc::ETIMEDOUT => {
                println!("credit-livelock: the {name}'s SEND: ETIMEDOUT after {ms} ms")
            }
            Err(e) => bail!("the {name}'s SEND: {e} after {ms} ms"),
            Ok(()) => println!("credit-livelock: the {name}'s SEND went through after {ms} ms"),
        }
    }
    Ok(())
}

// --- block --------------------------------------------------------------------

/// The arguments of `rdma-krust-kit block`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct BlockArgs {
    /// The wait to block in.
    #[arg(long, value_enum)]
    pub case: BlockCase,
    /// Address of rxe0.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port to listen on.
    #[arg(long, default_value_t = 7950)]
    pub port: u16,
    /// An address of rxe0's subnet that nobody answers.
    #[arg(long, default_value = "192.0.2.77", value_parser = krust::addr::ipv4)]
    pub silent_ip: Ipv4Addr,
    /// Milliseconds the blocking call is given: far more than the signal
    /// needs to arrive.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u32,
    /// The module's connections busy-poll (`CONN_POLL`): their waits reap
    /// completions instead of sleeping until they are handled.
    #[arg(long)]
    pub poll: bool,
    /// Send SIGUSR1 to this process this many milliseconds after the
    /// blocking call starts, and again as often until it returns; without
    /// it, the signal has to come from outside (kill -USR1).
    #[arg(long)]
    pub signal_after_ms: Option<u64>,
    /// How soon after the first signal the call must return, in ms. On
    /// iWARP an interrupted connect returns only once iw_cm lets its id go
    /// (siw: at its 10 s MPA timeout; Documentation/providers.rst).
    #[arg(long, default_value_t = PROMPT_MS)]
    pub prompt_ms: u128,
}

/// How many 2 MiB SENDs go through before the next waits for the
/// peer's DONE, when the peer's caller receives nothing: the window, and
/// the one message its module READs ahead unless it busy-polls (`poll`,
/// `abi::CONN_POLL` or 0).
fn announces_before_a_wait(poll: u32) -> u64 {
    u64::from(abi::ANNOUNCE_WINDOW) + u64::from(poll == 0)
}

/// The waits `block` can put an ioctl in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockCase {
    /// CONNECT to an address nobody answers: the address-resolution wait.
    ConnectResolve,
    /// CONNECT to a userspace listener that never accepts: the wait for the
    /// connection to be established.
    ConnectEstablish,
    /// SEND of a 2 MiB message while the peer holds the one before unread:
    /// the wait for the peer's DONE.
    SendCredits,
    /// RDMA READ from a peer whose QP drops every request: the completion
    /// wait.
    Rdma,
    /// Fetch-and-add on such a peer: the completion wait.
    Atomic,
    /// IOCTL_BENCH as SEND responder, with nothing sent to it.
    Bench,
    /// SEND queued behind another thread's SEND that waits 10 s for the
    /// peer's DONE: the wait for the connection's send turn.
    SendQueued,
    /// RDMA WRITE queued behind another thread's IOCTL_BENCH that waits
    /// 10 s: the wait for the one-sided operations' turn.
    OpQueued,
}

/// Blocks SIGUSR1 in the calling thread.
fn mask_usr1() -> Result<()> {
    // SAFETY: the set is initialised by sigemptyset before use; the call
    // changes only this thread's signal mask.
    let r = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, null_mut())
    };
    if r != 0 {
        bail!("pthread_sigmask: {}", io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Who interrupts the blocking call.
#[derive(Clone, Copy)]
struct Signaller {
    /// The call must return this soon after the first signal, in ms.
    prompt_ms: u128,
    /// Send SIGUSR1 to this process this many milliseconds after the call
    /// starts, and again as often until it returns (one may land before
    /// the call sleeps); `None`: someone else sends it.
    every_ms: Option<u64>,
}

impl Signaller {
    /// Announces the blocking call and makes it; meanwhile signals as
    /// configured. Once it returns, blocks SIGUSR1 (later signals stay
    /// pending) and reports how it ended. Fails if it ended more than
    /// `prompt_ms` after the first signal (or, signalled from outside,
    /// after the start): the signal did not end the wait.
    fn blocked<T>(&self, case: &str, f: impl FnOnce() -> io::Result<T>) -> Result<io::Result<T>> {
        let done = Arc::new(AtomicBool::new(false));
        let first: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
        let thread = self.every_ms.map(|ms| {
            let (done, first) = (done.clone(), first.clone());
            std::thread::spawn(move || {
                // This thread never takes the signal itself.
                let _ = mask_usr1();
                loop {
                    std::thread::sleep(Duration::from_millis(ms));
                    if done.load(Ordering::SeqCst) {
                        return;
                    }
                    lock(&first).get_or_insert_with(Instant::now);
                    // SAFETY: kill() of our own process with a signal
                    // whose handler (--eintr-on-usr1) does nothing.
                    unsafe { libc::kill(libc::getpid(), libc::SIGUSR1) };
                }
            })
        });
        println!("blocking {case}");
        io::stdout().flush()?;
        let t = Instant::now();
        let r = f();
        mask_usr1()?;
        let end = Instant::now();
        done.store(true, Ordering::SeqCst);
        if let Some(h) = thread {
            let _ = h.join();
        }
        let ms = (end - t).as_millis();
        let since = (*lock(&first)).map(|f| end.saturating_duration_since(f).as_millis());
        let tail = since.map_or(String::new(), |s| {
            format!(", {s} ms after the first signal")
        });
        match &r {
            Ok(_) => println!("{case}: returned success after {ms} ms{tail}"),
            Err(e) => println!("{case}: {e} after {ms} ms{tail}"),
        }
        io::stdout().flush()?;
        let late = since.unwrap_or(ms);
        if late > self.prompt_ms {
            bail!("{case}: the signal did not end the wait ({late} ms)");
        }
        Ok(r)
    }
}

/// How soon after the signal an interrupted wait must return, in ms; a
/// wait queued behind another call's lock returns when that call's wait
/// ends, 10 s here.
const PROMPT_MS: u128 = 3000;

fn expect_eintr<T>(case: &str, r: io::Result<T>) -> Result<()> {
    match r {
        Err(e) if errno_of(&e) == libc::EINTR => Ok(()),
        Err(e) => bail!("{case}: {e}, expected EINTR"),
        Ok(_) => bail!("{case}: succeeded, expected EINTR"),
    }
}

/// Expects `r` to have failed with one of `want`.
fn expect_err<T>(what: &str, r: io::Result<T>, want: &[i32]) -> Result<i32> {
    match r {
        Err(e) if want.contains(&errno_of(&e)) => Ok(errno_of(&e)),
        Err(e) => bail!("{what}: {e}"),
        Ok(_) => bail!("{what}: succeeded"),
    }
}

fn connect_io(dev: &KrustDev, dst: abi::Addr, timeout_ms: u32, flags: u32) -> io::Result<()> {
    let mut req = abi::ConnectReq {
        dst,
        timeout_ms,
        flags,
        ..Default::default()
    };
    // SAFETY: `req` is a `ConnectReq`, what the command reads and writes.
    unsafe { dev.raw_ioctl(abi::IOCTL_CONNECT, &mut req as *mut _ as usize) }.map(|_| ())
}

fn send_io(dev: &KrustDev, data: &[u8], timeout_ms: u32) -> io::Result<()> {
    dev.send(data, timeout_ms)
}

/// An RDMA READ or WRITE at a made-up key: for waits that never complete.
fn rdma_io(dev: &KrustDev, write: bool, buf: &mut [u8], timeout_ms: u32) -> io::Result<()> {
    dev.rdma_within(0x1000, 0x1234, buf, write, timeout_ms)
}

/// A fetch-and-add at a made-up key: for waits that never complete.
fn fadd_io(dev: &KrustDev, timeout_ms: u32) -> io::Result<u64> {
    dev.atomic_within(0x1000, 0x1234, abi::ATOMIC_FETCH_ADD, 1, 0, timeout_ms)
}

fn respond_io(dev: &KrustDev, timeout_ms: u32) -> io::Result<()> {
    let mut b = abi::Bench {
        op: abi::BENCH_SEND,
        mode: abi::BENCH_RESPOND,
        size: 64,
        iters: 1,
        timeout_ms,
        ..Default::default()
    };
    dev.bench(&mut b, &mut Vec::new())
}

/// A librdmacm endpoint (synchronous, with its QP when active).
struct UEp {
    id: *mut rdma_cm_id,
}

impl UEp {
    fn new(addr: &abi::Addr, passive: bool) -> Result<Self> {
        let res = krust::upeer::getaddrinfo(addr, passive)?;
        // SAFETY: zero is a valid `ibv_qp_init_attr`.
        let mut qa: ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        qa.cap.max_send_wr = 16;
        qa.cap.max_recv_wr = 16;
        qa.cap.max_send_sge = 1;
        qa.cap.max_recv_sge = 1;
        qa.qp_type = ibv_qp_type::IBV_QPT_RC;
        let mut id = null_mut();
        // SAFETY: `res` came from `rdma_getaddrinfo` and is freed right
        // after; `qa` lives for the call.
        let ret = unsafe { rdma_create_ep(&mut id, res, null_mut(), &mut qa) };
        let err = io::Error::last_os_error();
        // SAFETY: as above.
        unsafe { rdma_freeaddrinfo(res) };
        if ret != 0 {
            return Err(err).context("rdma_create_ep");
        }
        Ok(Self { id })
    }

    fn listen(&self) -> Result<()> {
        // SAFETY: `id` is a passive endpoint.
        if unsafe { rdma_listen(self.id, 4) } != 0 {
            return Err(io::Error::last_os_error()).context("rdma_listen");
        }
        Ok(())
    }

    fn connect(&self) -> Result<()> {
        // SAFETY: zero is a valid `rdma_conn_param`.
        let mut p: rdma_conn_param = unsafe { std::mem::zeroed() };
        p.responder_resources = 16;
        p.initiator_depth = 16;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        // SAFETY: `id` is an active endpoint with its QP; `p` lives for the
        // call.
        if unsafe { rdma_connect(self.id, &mut p) } != 0 {
            return Err(io::Error::last_os_error()).context("rdma_connect");
        }
        Ok(())
    }

    /// `rdma_disconnect()`: the endpoint is synchronous (no event
    /// channel), so it returns once rdma_cm reports `DISCONNECTED`: the
    /// peer's DREP, or the CM giving up on the DREQ after its retries.
    fn disconnect(&self) -> Result<()> {
        // SAFETY: `id` is a connected endpoint.
        if unsafe { rdma_disconnect(self.id) } != 0 {
            return Err(io::Error::last_os_error()).context("rdma_disconnect");
        }
        Ok(())
    }

    /// Moves the QP to the error state behind the CM's back: the connection
    /// stays up, and every request that reaches the QP is dropped unanswered.
    fn freeze(&self) -> Result<()> {
        // SAFETY: zero is a valid `ibv_qp_attr`.
        let mut attr: ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = ibv_qp_state::IBV_QPS_ERR;
        // SAFETY: the connected endpoint has a QP; `attr` lives for the call.
        let r = unsafe {
            ibv_modify_qp(
                (*self.id).qp,
                &mut attr,
                ibv_qp_attr_mask::IBV_QP_STATE.0 as i32,
            )
        };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r)).context("ibv_modify_qp(ERR)");
        }
        Ok(())
    }
}

impl Drop for UEp {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        unsafe { rdma_destroy_ep(self.id) };
    }
}

/// Closes `dev` and reports how long it took.
fn close_timed(dev: KrustDev) -> Result<()> {
    let t = Instant::now();
    drop(dev);
    let ms = t.elapsed().as_millis();
    println!("after: the file closed in {ms} ms");
    if ms > 5000 {
        bail!("closing the file took {ms} ms");
    }
    Ok(())
}

/// The state and error of `dev`'s connection, checked against `state` and
/// the errors allowed.
fn expect_state(dev: &KrustDev, state: u32, errors: &[u32]) -> Result<()> {
    let i = dev.conn_info()?;
    let name = krust::table::state_name;
    println!(
        "after: IOCTL_CONN_INFO: state {} error {}",
        name(i.state),
        if i.error == 0 {
            "0".into()
        } else {
            errno_name(i.error as i32)
        }
    );
    if i.state != state || !errors.contains(&i.error) {
        let want: Vec<String> = errors.iter().map(|&e| errno_name(e as i32)).collect();
        bail!("expected state {} error {}", name(state), want.join(" or "));
    }
    if errors.len() > 1 && i.error != errors[0] {
        println!(
            "note: ConnInfo.error is {}, not the {} the call returned",
            errno_name(i.error as i32),
            errno_name(errors[0] as i32)
        );
    }
    Ok(())
}

/// Blocks in the wait of `a.case` until a signal interrupts it; then checks
/// `EINTR`, that the wait ended within [`PROMPT_MS`] of the signal, and that
/// the file is still usable (or closes cleanly, for the waits that end a
/// connection). Needs `--eintr-on-usr1`: the signal is SIGUSR1, sent by
/// `--signal-after-ms` or from outside.
pub fn block(path: &str, a: &BlockArgs, eintr_on_usr1: bool) -> Result<()> {
    if !eintr_on_usr1 {
        bail!("block: run with --eintr-on-usr1");
    }
    let case = format!("{:?}", a.case);
    let case = kebab(&case);
    let to = a.timeout_ms;
    let here = addr_of(a.ip, a.port);
    let poll = if a.poll { abi::CONN_POLL } else { 0 };
    let sig = Signaller {
        prompt_ms: a.prompt_ms,
        every_ms: a.signal_after_ms,
    };
    match a.case {
        BlockCase::ConnectResolve | BlockCase::ConnectEstablish => {
            let _listener = if a.case == BlockCase::ConnectEstablish {
                let l = UEp::new(&here, true)?;
                l.listen()?;
                Some(l)
            } else {
                None
            };
            let dst = if a.case == BlockCase::ConnectResolve {
                addr_of(a.silent_ip, a.port)
            } else {
                here
            };
            let dev = KrustDev::open(path)?;
            expect_eintr(
                &case,
                sig.blocked(&case, || connect_io(&dev, dst, to, poll))?,
            )?;
            // A failed CONNECT closes the file; it is not reused. Its
            // ConnInfo.error is the CONNECT's errno, also once the QP
            // exists (connect-establish), whose teardown flushes receives.
            expect_state(&dev, abi::state::CLOSED, &[libc::EINTR as u32])?;
            let e = expect_err(
                "second CONNECT",
                connect_io(&dev, dst, to, poll),
                &[libc::EISCONN],
            )?;
            println!("after: a second CONNECT: {}", errno_name(e));
            close_timed(dev)?;
        }
        BlockCase::SendCredits => {
            let (l, c) = kernel_pair(path, a.ip, a.port, poll)?;
            let big = abi::MAX_MSG_SIZE as usize;
            let mut msg = vec![0u8; big];
            let mut buf = vec![0u8; big];
            // Messages of 2 MiB are announced and READ, and a sender waits
            // while `abi::ANNOUNCE_WINDOW` announces of its wait for DONE.
            // The receiver READs one message ahead (and DONEs it), unless
            // it busy-polls (then nothing reaps its completions while
            // nobody calls): so the SEND after the window and that one
            // must wait, or the one after the window on a polled
            // connection.
            let queued = announces_before_a_wait(poll);
            for i in 0..queued {
                pattern::fill(&mut msg, 5, i);
                c.send(&msg, 10_000)
                    .context("SEND before the blocked one")?;
            }
            pattern::fill(&mut msg, 5, queued);
            expect_eintr(&case, sig.blocked(&case, || send_io(&c, &msg, to))?)?;
            for i in 0..queued {
                recv_check(&l, &mut buf, big, 5, i).context("a message before")?;
            }
            let e = expect_err(
                "RECV after it",
                l.recv(&mut buf, 300).map(|_| ()),
                &[libc::ETIMEDOUT],
            )?;
            println!(
                "after: the peer received the {queued} message(s) before, then {}: the interrupted one was not sent",
                errno_name(e)
            );
            pattern::fill(&mut msg, 5, 9);
            c.send(&msg, 10_000).context("SEND after EINTR")?;
            recv_check(&l, &mut buf, big, 5, 9).context("message after EINTR")?;
            println!("after: a 2 MiB SEND on the same file, received and verified");
            close_timed(c)?;
        }
        BlockCase::Rdma | BlockCase::Atomic => {
            let dev = KrustDev::open(path)?;
            dev.listen(here, 0, 0, poll)?;
            let peer = UEp::new(&here, false)?;
            peer.connect()?;
            dev.accept(10_000)?;
            peer.freeze()?;
            let mut buf = vec![0u8; 4096];
            let r = if a.case == BlockCase::Rdma {
                sig.blocked(&case, || rdma_io(&dev, false, &mut buf, to))?
            } else {
                sig.blocked(&case, || fadd_io(&dev, to).map(|_| ()))?
            };
            expect_eintr(&case, r)?;
            expect_state(&dev, abi::state::CONNECTED, &[0])?;
            // The file is not stuck: the next operation runs (and waits
            // behind the first, which the peer still ignores).
            let again = if a.case == BlockCase::Rdma {
                rdma_io(&dev, false, &mut buf, 300)
            } else {
                fadd_io(&dev, 300).map(|_| ())
            };
            let want = [libc::ETIMEDOUT, libc::ECONNRESET];
            let e = expect_err("the next operation", again, &want)?;
            println!("after: the next operation on the file: {}", errno_name(e));
            close_timed(dev)?;
        }
        BlockCase::Bench => {
            let (l, c) = kernel_pair(path, a.ip, a.port, abi::CONN_RAW | poll)?;
            expect_eintr(&case, sig.blocked(&case, || respond_io(&l, to))?)?;
            let mut msg = [0u8; 64];
            pattern::fill(&mut msg, 9, 0);
            c.send(&msg, 10_000).context("raw SEND")?;
            respond_io(&l, 10_000).context("IOCTL_BENCH after EINTR")?;
            let n = c.recv(&mut msg, 10_000).context("raw RECV of the echo")?;
            if n != 64 {
                bail!("the responder sent back {n} bytes, expected 64");
            }
            println!("after: IOCTL_BENCH on the same file answered a 64-byte ping");
            close_timed(l)?;
        }
        BlockCase::SendQueued | BlockCase::OpQueued => {
            let raw = if a.case == BlockCase::OpQueued {
                abi::CONN_RAW | poll
            } else {
                poll
            };
            let (l, c) = kernel_pair(path, a.ip, a.port, raw)?;
            let c = Arc::new(c);
            let l = Arc::new(l);
            let big = vec![0u8; abi::MAX_MSG_SIZE as usize];
            if a.case == BlockCase::SendQueued {
                // As in `SendCredits`: then the next 2 MiB SEND waits for
                // a DONE.
                let queued = announces_before_a_wait(poll);
                for _ in 0..queued {
                    c.send(&big, 10_000)
                        .context("SEND before the blocked one")?;
                }
            }
            // Another thread (which ignores SIGUSR1) holds the file's lock,
            // waiting 10 s.
            let (c2, l2, big2) = (c.clone(), l.clone(), big.clone());
            let queued = a.case;
            let holder = std::thread::spawn(move || {
                let _ = mask_usr1();
                match queued {
                    BlockCase::SendQueued => send_io(&c2, &big2, 10_000),
                    _ => respond_io(&l2, 10_000),
                }
            });
            std::thread::sleep(Duration::from_millis(300));
            let mut small = [0u8; 64];
            let r = if a.case == BlockCase::SendQueued {
                sig.blocked(&case, || send_io(&c, &small, to))
            } else {
                sig.blocked(&case, || rdma_io(&l, true, &mut small, to))
            };
            let _ = holder.join();
            expect_eintr(&case, r?)?;
        }
    }
    println!("block {case}: ok");
    Ok(())
}

/// `ConnectResolve` -> `connect-resolve`.
fn kebab(s: &str) -> String {
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_names_are_kebab() {
        assert_eq!(kebab("ConnectResolve"), "connect-resolve");
        assert_eq!(kebab("Rdma"), "rdma");
    }

    #[test]
    fn seeds_differ_per_thread_and_side() {
        assert_ne!(msg_seed(0, 1), msg_seed(1, 0));
        assert_ne!(rdma_seed(0, 1), rdma_seed(1, 0));
        assert_ne!(rdma_seed(0, 0), msg_seed(0, 0));
    }
}
