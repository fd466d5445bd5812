// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust bench`: perftest's command line over `IOCTL_BENCH`.
//!
//! As with perftest, the side given a server is the client and measures;
//! the side without one listens (`-p`, default 18515, on every address).
//! perftest's options keep their letters and defaults (`-s`, `-n`, `-t`,
//! `-d`, `-p`, `-a`, `-e`; `src/perftest_parameters.{c,h}` of
//! linux-rdma/perftest), within the module's limits. The older form
//! (`--listen ADDR:PORT` / `--connect ADDR:PORT`, `--depth`) still works.
//!
//! Both sides must be given the same `--op`, `--mode`, `-s`, `-n` and `-a`
//! (perftest's SYMMETRIC options): the measuring side sends its settings
//! first, the listening side answers with its own, and both stop with a
//! usage error when they differ.

use anyhow::{bail, Context, Result};
use krust::abi;
use krust::addr;
use krust::bench;
use krust::ctl;
use krust::exit::{self, usage};
use krust::kdev::KrustDev;
use krust::scenario::{self, Endpoint};
use std::fmt;

/// perftest's `DEF_PORT`.
pub const DEF_PORT: u16 = 18515;
/// perftest's `DEF_SIZE_LAT`.
pub const DEF_SIZE_LAT: u32 = 2;
/// perftest's `DEF_SIZE_BW`.
pub const DEF_SIZE_BW: u32 = 65536;
/// perftest's `DEF_SIZE_ATOMIC`: atomics are 8 bytes, and only 8.
pub const SIZE_ATOMIC: u32 = 8;
/// perftest's `DEF_ITERS`.
pub const DEF_ITERS: u32 = 1000;
/// perftest's `DEF_ITERS_WB`: WRITE bandwidth's iterations.
pub const DEF_ITERS_WB: u32 = 5000;
/// perftest's `DEF_TX_BW`.
pub const DEF_TX_BW: u32 = 128;
/// perftest's `MAX_SIZE`, the largest size of `-a` (2^23).
pub const MAX_SIZE_ALL: u32 = 1 << 23;
/// How long the listening side waits for its client when `--timeout-ms`
/// is 0, and the connecting side for each step of connecting.
const ACCEPT_MS: u32 = 60_000;
/// And, under `-q`, this much more per connection: the measuring end
/// connects them one after another.
const ACCEPT_MS_PER_QP: u32 = 200;
const CONNECT_MS: u32 = 20_000;

/// The arguments of `rdma-krust bench`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct BenchArgs {
    /// The listening side (a host name or address, as perftest's server
    /// argument): connect to it and measure. Without it, this side listens,
    /// on every address (as perftest's server).
    #[arg(value_name = "SERVER", conflicts_with_all = ["listen", "connect"])]
    pub server: Option<String>,
    /// Operation.
    #[arg(long, value_enum)]
    pub op: BenchOp,
    /// What to measure; `lat` reports as perftest's *_lat tools do.
    #[arg(long, value_enum, default_value = "lat")]
    pub mode: BenchMode,
    /// Port to listen on or connect to [default: 18515, perftest's].
    #[arg(short = 'p', long, conflicts_with_all = ["listen", "connect"])]
    pub port: Option<u16>,
    /// The RDMA device to run on: checked before, and against the
    /// connection after connecting (the module takes the device the
    /// address routes to).
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub ib_dev: Option<String>,
    /// Bytes per operation, K and M suffixes as perftest's [default: 2 for
    /// latency, 65536 for bandwidth; atomics 8 and only 8].
    #[arg(short = 's', long, value_parser = parse_size)]
    pub size: Option<u32>,
    /// Iterations [default: 1000; WRITE bandwidth 5000, as perftest].
    #[arg(short = 'n', long)]
    pub iters: Option<u32>,
    /// Bandwidth: operations in flight, 1 to 64 (the module's limit)
    /// [default: perftest's 128, capped at 64].
    #[arg(short = 't', long = "tx-depth", visible_alias = "depth")]
    pub tx_depth: Option<u32>,
    /// Run every size from 2 to 2^23 bytes, powers of two (perftest's
    /// -a), up to the module's largest for the operation (one-sided 2 MiB,
    /// SEND 64 KiB).
    #[arg(short = 'a', long, conflicts_with_all = ["size", "samples_to"])]
    pub all: bool,
    /// Completions through ib_core's workqueue and a wake-up, instead of
    /// busy polling (perftest's -e; polling, CONN_POLL, is the default).
    #[arg(short = 'e', long)]
    pub events: bool,
    /// Polling waits spin without yielding the CPU, as perftest's pollers
    /// (CONN_SPIN); without it they yield after each poll.
    #[arg(long, conflicts_with = "events")]
    pub spin: bool,
    /// Bandwidth over this many QPs at once, 1 to 1024 (perftest's -q): as
    /// many connections, on ports PORT to PORT+N-1, each running the loop
    /// with -n iterations in a thread of its own; the row is their
    /// aggregate, from the moment all start to the moment the last ends.
    #[arg(short = 'q', long = "qp", default_value_t = 1)]
    pub qps: u32,
    /// Bandwidth, measuring side: also say how much memory this machine
    /// gave the connections (MemFree and Slab of /proc/meminfo, read before
    /// connecting and once all are connected; both ends' share when the
    /// listening side runs here too).
    #[arg(long)]
    pub meminfo: bool,
    /// Connect to the listening side at HOST:PORT (the older form of
    /// SERVER -p PORT).
    #[arg(long, value_parser = addr::parse, conflicts_with = "listen")]
    pub connect: Option<abi::Addr>,
    /// Listen on HOST:PORT only, instead of every address on -p.
    #[arg(long, value_parser = addr::parse)]
    pub listen: Option<abi::Addr>,
    /// Print JSON instead of perftest's table, one object per size.
    #[arg(long)]
    pub json: bool,
    /// Latency: also write every sample (microseconds) to this file.
    #[arg(long)]
    pub samples_to: Option<std::path::PathBuf>,
    /// Milliseconds to wait for the connection (0: 60 s for the listening
    /// side, 20 s for each step of connecting), and in the loop for the
    /// peer's next message or WRITE and for each completion (0: 10 s for
    /// the peer, the transport's verdict for completions).
    #[arg(long, default_value_t = 0)]
    pub timeout_ms: u32,
    /// The listening side of SEND: wait this many milliseconds before each
    /// loop, as a receiver that falls behind (a test of the module's pacing
    /// on iWARP, which has no receiver-not-ready retry). Ignored when
    /// connecting.
    #[arg(long, default_value_t = 0)]
    pub sink_delay_ms: u64,
}

/// `bench --op`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchOp {
    /// SEND (latency: ping-pong, RTT/2, as ib_send_lat).
    Send,
    /// RDMA WRITE (latency: ping-pong, RTT/2, as ib_write_lat).
    Write,
    /// RDMA READ (latency: the full round trip, as ib_read_lat).
    Read,
    /// Compare-and-swap (latency: the full round trip).
    Cas,
    /// Fetch-and-add (latency: the full round trip, as ib_atomic_lat).
    Fadd,
}

/// `bench --mode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchMode {
    /// Latency, like for like with perftest's *_lat.
    Lat,
    /// Bandwidth, as perftest's *_bw.
    Bw,
    /// WRITE latency as a ping-pong, RTT/2 (what `lat` is for WRITE).
    Pingpong,
    /// One one-sided operation at a time, each timed from its post to the
    /// next: a full round trip (what `lat` is for READ and atomics, and
    /// what it was for WRITE before it became the ping-pong).
    Rtt,
}

/// The loop the two sides run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    /// `BENCH_LAT`: SEND's ping-pong, or one operation at a time.
    Lat,
    /// `BENCH_BW`: `depth` in flight.
    Bw,
    /// `BENCH_PINGPONG`: WRITE's ping-pong.
    Pingpong,
}

/// Which end this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Listen here, and serve the measuring side.
    Listen(abi::Addr),
    /// Connect there, and measure.
    Connect(abi::Addr),
}

/// A resolved command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Which end.
    pub role: Role,
    /// The operation.
    pub op: BenchOp,
    /// The loop.
    pub run: Loop,
    /// The sizes, one run each, in order.
    pub sizes: Vec<u32>,
    /// Whether they are `-a`'s.
    pub all: bool,
    /// Iterations of each run.
    pub iters: u32,
    /// Bandwidth: operations in flight.
    pub depth: u32,
    /// The device asked for.
    pub ib_dev: Option<String>,
    /// Busy polling.
    pub poll: bool,
    /// Spinning without yielding (`--spin`).
    pub spin: bool,
    /// Connections, each with its QP (`-q`).
    pub qps: u32,
    /// `--meminfo`.
    pub meminfo: bool,
    /// JSON instead of the table.
    pub json: bool,
    /// Where the latency samples go.
    pub samples_to: Option<std::path::PathBuf>,
    /// `--timeout-ms`.
    pub timeout_ms: u32,
    /// `--sink-delay-ms`.
    pub sink_delay_ms: u64,
}

/// perftest's `-s`: a number (decimal, or hex with 0x), optionally with a
/// K or M suffix (x1024, x1024^2).
pub fn parse_size(s: &str) -> Result<u32, String> {
    let (num, factor) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'M') => (&s[..s.len() - 1], 1u64 << 20),
        _ => (s, 1),
    };
    let n = match num.strip_prefix("0x").or_else(|| num.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => num.parse::<u64>(),
    }
    .map_err(|e| format!("size '{s}': {e}"))?;
    let n = n
        .checked_mul(factor)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("size '{s}': too large"))?;
    if n == 0 {
        return Err(format!("size '{s}': at least 1 byte"));
    }
    Ok(n)
}

/// The largest size the module runs `op` with: a raw SEND is one receive
/// buffer; a one-sided operation a message (and a window) of 2 MiB.
pub fn max_size(op: BenchOp) -> u32 {
    match op {
        BenchOp::Send => abi::RECV_BUF_SIZE,
        BenchOp::Cas | BenchOp::Fadd => SIZE_ATOMIC,
        BenchOp::Write | BenchOp::Read => abi::MAX_MSG_SIZE
            .min(abi::MAX_WINDOW_SIZE)
            .min(u64::from(u32::MAX)) as u32,
    }
}

/// `-a`'s sizes: 2^1 to 2^23 (perftest's loop, `1 << i` for i in 1..24),
/// those the module takes for `op`.
pub fn all_sizes(op: BenchOp) -> Vec<u32> {
    (1..24)
        .map(|i| 1u32 << i)
        .filter(|&s| s <= MAX_SIZE_ALL && s <= max_size(op))
        .collect()
}

fn is_atomic(op: BenchOp) -> bool {
    matches!(op, BenchOp::Cas | BenchOp::Fadd)
}

/// The loop of `op` in `mode`, or why there is none.
pub fn loop_of(op: BenchOp, mode: BenchMode) -> Result<Loop, String> {
    Ok(match (op, mode) {
        (BenchOp::Write, BenchMode::Lat | BenchMode::Pingpong) => Loop::Pingpong,
        (_, BenchMode::Pingpong) => return Err("--mode pingpong is for --op write".into()),
        (BenchOp::Send, BenchMode::Rtt) => {
            return Err(
                "--mode rtt is for the one-sided operations; SEND's latency \
                        is its ping-pong, --mode lat"
                    .into(),
            )
        }
        (BenchOp::Cas | BenchOp::Fadd, BenchMode::Bw) => {
            return Err("the module has no bandwidth loop for atomics: --mode lat".into())
        }
        (_, BenchMode::Bw) => Loop::Bw,
        (_, BenchMode::Lat | BenchMode::Rtt) => Loop::Lat,
    })
}

/// Resolves the command line: defaults, limits, and where to connect or
/// listen. Errors are usage errors.
pub fn plan(a: &BenchArgs) -> Result<Plan> {
    let run = loop_of(a.op, a.mode).map_err(usage)?;
    let bw = run == Loop::Bw;
    let max = max_size(a.op);
    let sizes = if a.all {
        if is_atomic(a.op) {
            return Err(usage(
                "-a: atomics have one size, 8 bytes (perftest: \"Message size \
                 cannot be changed for Atomic tests\")",
            ));
        }
        all_sizes(a.op)
    } else {
        let size = match (a.size, is_atomic(a.op)) {
            (Some(s), true) if s != SIZE_ATOMIC => {
                return Err(usage(format!(
                    "-s {s}: atomics are {SIZE_ATOMIC} bytes, and only {SIZE_ATOMIC}"
                )))
            }
            (_, true) => SIZE_ATOMIC,
            (Some(s), false) => s,
            (None, false) if bw => DEF_SIZE_BW,
            (None, false) => DEF_SIZE_LAT,
        };
        if size > max {
            return Err(usage(format!(
                "-s {size}: the module's largest {op:?} is {max} bytes{why}",
                op = a.op,
                why = if a.op == BenchOp::Send {
                    " (a raw SEND is one receive buffer)"
                } else {
                    ""
                }
            )));
        }
        vec![size]
    };
    let iters = match a.iters {
        Some(n) => n,
        None if bw && a.op == BenchOp::Write => DEF_ITERS_WB,
        None => DEF_ITERS,
    };
    if !(1..=abi::BENCH_MAX_ITERS).contains(&iters) {
        return Err(usage(format!(
            "-n {iters}: the module runs 1 to {} iterations",
            abi::BENCH_MAX_ITERS
        )));
    }
    let depth = match a.tx_depth {
        None => DEF_TX_BW.min(abi::BENCH_MAX_DEPTH),
        Some(d) if (1..=abi::BENCH_MAX_DEPTH).contains(&d) => d,
        // Latency runs one at a time: the depth is not used.
        Some(d) if !bw => d.clamp(1, abi::BENCH_MAX_DEPTH),
        Some(d) => {
            return Err(usage(format!(
                "-t {d}: the module keeps 1 to {} operations in flight \
                 (BENCH_MAX_DEPTH)",
                abi::BENCH_MAX_DEPTH
            )))
        }
    };
    if !(1..=MAX_QPS).contains(&a.qps) {
        return Err(usage(format!("-q {}: 1 to {MAX_QPS} QPs", a.qps)));
    }
    if a.qps > 1 && !bw {
        return Err(usage(format!(
            "-q {}: several QPs are for --mode bw (perftest's latency tests \
             have one QP)",
            a.qps
        )));
    }
    if a.meminfo && !bw {
        return Err(usage("--meminfo: for --mode bw"));
    }
    let role = match (&a.server, a.connect, a.listen) {
        (Some(s), _, _) => {
            let (host, port) = addr::split_host_port(s).map_err(usage)?;
            let port = match (port, a.port) {
                (Some(_), Some(_)) => {
                    return Err(usage(format!(
                        "the port is given twice: in '{s}' and with -p"
                    )))
                }
                (p, q) => p.or(q).unwrap_or(DEF_PORT),
            };
            Role::Connect(addr::resolve(&host, port).map_err(usage)?)
        }
        (None, Some(c), _) => Role::Connect(c),
        (None, None, Some(l)) => Role::Listen(l),
        (None, None, None) => Role::Listen(addr::from_socket(std::net::SocketAddr::from((
            [0, 0, 0, 0],
            a.port.unwrap_or(DEF_PORT),
        )))),
    };
    Ok(Plan {
        role,
        op: a.op,
        run,
        sizes,
        all: a.all,
        iters,
        depth,
        ib_dev: a.ib_dev.clone(),
        poll: !a.events,
        spin: a.spin,
        qps: a.qps,
        meminfo: a.meminfo,
        json: a.json,
        samples_to: a.samples_to.clone(),
        timeout_ms: a.timeout_ms,
        sink_delay_ms: a.sink_delay_ms,
    })
}

/// What the two sides must agree on, exchanged first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Settings {
    op: BenchOp,
    run: Loop,
    all: bool,
    /// The (largest) size.
    size: u32,
    iters: u32,
}

const OPS: [BenchOp; 5] = [
    BenchOp::Send,
    BenchOp::Write,
    BenchOp::Read,
    BenchOp::Cas,
    BenchOp::Fadd,
];
const LOOPS: [Loop; 3] = [Loop::Lat, Loop::Bw, Loop::Pingpong];

impl Settings {
    fn of(p: &Plan) -> Self {
        Self {
            op: p.op,
            run: p.run,
            all: p.all,
            size: p.sizes.iter().copied().max().unwrap_or(0),
            iters: p.iters,
        }
    }

    /// `KBSET` op loop all, then be32 size and be32 iterations.
    fn encode(&self) -> [u8; 16] {
        let op = OPS.iter().position(|&o| o == self.op).unwrap_or(0) as u8;
        let run = LOOPS.iter().position(|&l| l == self.run).unwrap_or(0) as u8;
        let tag = [b'K', b'B', b'S', b'E', b'T', op, run, u8::from(self.all)];
        ctl::encode(&tag, (u64::from(self.size) << 32) | u64::from(self.iters))
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let (tag, arg) = ctl::decode(b)?;
        if &tag[..5] != b"KBSET" || tag[7] > 1 {
            return None;
        }
        Some(Self {
            op: *OPS.get(usize::from(tag[5]))?,
            run: *LOOPS.get(usize::from(tag[6]))?,
            all: tag[7] == 1,
            size: (arg >> 32) as u32,
            iters: arg as u32,
        })
    }
}

impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = format!("{:?}", self.op).to_lowercase();
        let run = match self.run {
            Loop::Lat => "lat",
            Loop::Bw => "bw",
            Loop::Pingpong => "pingpong",
        };
        let size = if self.all {
            "-a".to_string()
        } else {
            format!("-s {}", self.size)
        };
        write!(f, "--op {op} ({run}) {size} -n {}", self.iters)
    }
}

/// Sends ours, receives theirs (`first`), or the other way round; fails
/// when they differ.
fn agree(dev: &KrustDev, mine: Settings, first: bool) -> Result<()> {
    let mut b = [0u8; 16];
    if first {
        dev.send_msg(&mine.encode()).context("send the settings")?;
    }
    let n = dev
        .recv_msg(&mut b)
        .context("receive the other side's settings (is it this rdma-krust bench?)")?;
    if !first {
        dev.send_msg(&mine.encode()).context("send the settings")?;
    }
    let theirs = Settings::decode(&b[..n])
        .context("the other side sent no bench settings (is it this rdma-krust bench?)")?;
    if theirs != mine {
        return Err(usage(format!(
            "the two sides differ: this side runs {mine}, the other {theirs}; \
             give both the same --op, --mode, -s, -n and -a (as perftest's \
             SYMMETRIC options)"
        )));
    }
    Ok(())
}

/// The module has a device, and `want` (if any) is one of its.
fn check_device(dev: &KrustDev, want: Option<&str>) -> Result<()> {
    let names = dev.device_names()?;
    if let Some(w) = want {
        if !names.iter().any(|n| n == w) {
            bail!(
                "-d {w}: no such RDMA device; the module has {}",
                names.join(", ")
            );
        }
    }
    Ok(())
}

/// After connecting: the connection is on the device asked for.
fn check_conn_device(info: &abi::ConnInfo, want: Option<&str>) -> Result<()> {
    let Some(w) = want else { return Ok(()) };
    let d = abi::DeviceInfo {
        name: info.device,
        ..Default::default()
    };
    let got = krust::table::name(&d);
    if got != w {
        bail!(
            "-d {w}: the connection runs on {got}; the module takes the device \
             the address routes to, so use an address of {w}'s netdev"
        );
    }
    Ok(())
}

/// The window rights an operation needs, and no more (atomic access only
/// for atomics: a device without them refuses it).
fn rights(op: BenchOp) -> u32 {
    match op {
        BenchOp::Read => abi::ACCESS_READ,
        BenchOp::Cas | BenchOp::Fadd => abi::ACCESS_ATOMIC,
        _ => abi::ACCESS_WRITE,
    }
}

fn op_code(op: BenchOp) -> u32 {
    match op {
        BenchOp::Send => abi::BENCH_SEND,
        BenchOp::Write => abi::BENCH_WRITE,
        BenchOp::Read => abi::BENCH_READ,
        BenchOp::Cas => abi::BENCH_CAS,
        BenchOp::Fadd => abi::BENCH_FADD,
    }
}

/// The window advert the other side sends, of `len` bytes.
fn receive_advert(dev: &KrustDev, len: u32) -> Result<ctl::Advert> {
    let mut a = [0u8; 16];
    let n = dev.recv_msg(&mut a)?;
    let w = ctl::Advert::decode(&a[..n]).context("bad advert")?;
    if w.len != len {
        bail!("the other side's window is {} bytes, not {len}", w.len);
    }
    Ok(w)
}

/// The most QPs `-q` takes.
pub const MAX_QPS: u32 = 1024;

/// `addr` with its port moved up by `i` (connection `i` of `-q`).
fn port_plus(mut addr: abi::Addr, i: u32) -> Result<abi::Addr> {
    addr.port = u16::try_from(u32::from(addr.port) + i)
        .map_err(|_| usage(format!("-q {}: ports past 65535", i + 1)))?;
    Ok(addr)
}

/// Runs `bench` as planned (see [`plan`]); `open` gives a new file of the
/// module for each further connection of `-q`.
pub fn run_qps(dev: &KrustDev, p: &Plan, open: &dyn Fn() -> Result<KrustDev>) -> Result<()> {
    if p.qps <= 1 && !(p.meminfo && matches!(p.role, Role::Connect(_))) {
        return run(dev, p);
    }
    check_device(dev, p.ib_dev.as_deref())?;
    // A file per connection, and stdio, and what the tool holds besides.
    krust::host::raise_nofile(u64::from(p.qps) + 64)?;
    let flags = conn_flags(p);
    let mut devs = vec![];
    for _ in 1..p.qps {
        devs.push(open()?);
    }
    let mut all: Vec<&KrustDev> = vec![dev];
    all.extend(devs.iter());
    match p.role {
        Role::Listen(addr) => {
            // Every file listens before the measuring end is told to come.
            for (i, d) in all.iter().enumerate() {
                d.listen(port_plus(addr, i as u32)?, 0, 0, flags)?;
            }
            println!(
                "listening on {} to port {} ({} QPs)",
                exit::show_addr(&addr),
                port_plus(addr, p.qps - 1)?.port,
                p.qps
            );
            std::io::Write::flush(&mut std::io::stdout())?;
            std::thread::scope(|s| {
                let threads: Vec<_> = all
                    .iter()
                    .map(|d| {
                        s.spawn(move || -> Result<()> {
                            // The measuring end connects one file after
                            // another: the last waits for all before it.
                            let info =
                                d.accept(timeout_or(p, ACCEPT_MS + ACCEPT_MS_PER_QP * p.qps))?;
                            check_conn_device(&info, p.ib_dev.as_deref())?;
                            serve(d, p, false)
                        })
                    })
                    .collect();
                join_all(threads)
            })?;
            println!("bench peer done ({} QPs)", p.qps);
            Ok(())
        }
        Role::Connect(addr) => measure_qps(&all, p, addr, flags),
    }
}

/// Joins `threads`, giving the first error.
fn join_all(threads: Vec<std::thread::ScopedJoinHandle<'_, Result<()>>>) -> Result<()> {
    let mut first = Ok(());
    for t in threads {
        let r = t
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a -q thread panicked")));
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// The measuring side of `-q`: connects every file, then runs each size on
/// all of them at once, each in its thread, and reports their aggregate:
/// all bytes over the time from the moment all threads were released to
/// the moment the last one's loop returned (perftest's `-q` divides by its
/// one clock, around the loop over all QPs, the same span).
fn measure_qps(all: &[&KrustDev], p: &Plan, addr: abi::Addr, flags: u32) -> Result<()> {
    let n = all.len();
    let mut name = None;
    let max = p.sizes.iter().copied().max().unwrap_or(1);
    let before = p.meminfo.then(krust::host::meminfo).transpose()?;
    let connecting = std::time::Instant::now();
    let mut windows = vec![];
    for (i, d) in all.iter().enumerate() {
        let info = d.connect(
            port_plus(addr, i as u32)?,
            0,
            0,
            timeout_or(p, CONNECT_MS),
            flags,
        )?;
        check_conn_device(&info, p.ib_dev.as_deref())?;
        name.get_or_insert(info.device);
        agree(d, Settings::of(p), true)?;
        windows.push(if p.op == BenchOp::Send {
            (0, 0)
        } else {
            let w = receive_advert(d, max)?;
            (w.addr, w.rkey)
        });
    }
    let connect_ms = connecting.elapsed().as_millis();
    // The memory the connections took: KiB less free, KiB more slab.
    let mem = match before {
        Some(b) => {
            let a = krust::host::meminfo()?;
            Some((b.0.saturating_sub(a.0), a.1.saturating_sub(b.1)))
        }
        None => None,
    };
    let start = std::sync::Barrier::new(n + 1);
    let done = std::sync::Barrier::new(n + 1);
    let (tx, rx) = std::sync::mpsc::channel::<bool>();
    if !p.json {
        let d = abi::DeviceInfo {
            name: name.unwrap_or([0; abi::DEVICE_NAME_LEN]),
            ..Default::default()
        };
        println!(" {}", title(p));
        println!(
            " Device: {}  Number of qps: {n}  Iterations: {} per QP  TX depth: {}  Completions: {}",
            krust::table::name(&d),
            p.iters,
            p.depth,
            completions(p)
        );
        if let Some((free, slab)) = mem {
            println!(
                " Memory: {free} KiB less free, slab {slab} KiB more, once {n} connected \
                 (this machine's /proc/meminfo), in {connect_ms} ms"
            );
        }
        print!("{}", bench::BW_NO_PEAK);
        print!("{}", bench::BW_HEADER);
    }
    let mem_json = mem.map_or(String::new(), |(free, slab)| {
        format!(
            ",\"mem_free_drop_kib\":{free},\"slab_growth_kib\":{slab},\"connect_ms\":{connect_ms}"
        )
    });
    std::thread::scope(|s| -> Result<()> {
        let (start, done) = (&start, &done);
        let threads: Vec<_> = all
            .iter()
            .zip(windows)
            .map(|(d, w)| {
                let tx = tx.clone();
                s.spawn(move || qp_loops(d, p, w, start, done, &tx))
            })
            .collect();
        drop(tx);
        let name = format!("{:?}", p.op).to_lowercase();
        for &size in &p.sizes {
            start.wait();
            let t0 = std::time::Instant::now();
            done.wait();
            let ns = t0.elapsed().as_nanos().max(1) as u64;
            if !rx.iter().take(n).all(|ok| ok) {
                // A loop failed: its thread says why when joined.
                break;
            }
            // All QPs' iterations, as perftest counts them under -q.
            let iters = u64::from(p.iters) * n as u64;
            let r = bench::bw(u64::from(size), iters, ns, None);
            if p.json {
                println!(
                    "{{\"op\":\"{name}\",\"mode\":\"bw\",\"bytes\":{size},\"iterations\":{},\"qps\":{n},\"depth\":{},\"bw_peak\":null,\"bw_avg\":{:.3},\"msg_rate\":{:.6}{mem_json}}}",
                    iters, p.depth, r.avg, r.msg_rate
                );
            } else {
                print!("{}", bench::bw_row(size, iters as u32, &r));
            }
            std::io::Write::flush(&mut std::io::stdout())?;
        }
        join_all(threads)
    })
}

/// One connection's part of `-q`: each size's loop between the two
/// barriers, on the peer's window `(addr, rkey)`; sends whether the loop
/// ran, `false` once one failed. A failed thread keeps meeting the barriers,
/// so the others never wait for it, and gives its error when joined.
fn qp_loops(
    dev: &KrustDev,
    p: &Plan,
    (remote_addr, rkey): (u64, u32),
    start: &std::sync::Barrier,
    done: &std::sync::Barrier,
    tx: &std::sync::mpsc::Sender<bool>,
) -> Result<()> {
    let mut samples = Vec::new();
    let mut failed = None;
    for &size in &p.sizes {
        let mut b = request(p, abi::BENCH_BW, size);
        (b.remote_addr, b.rkey) = (remote_addr, rkey);
        start.wait();
        if failed.is_none() {
            if let Err(e) = dev.bench(&mut b, &mut samples).context("IOCTL_BENCH") {
                failed = Some(e);
            }
        }
        done.wait();
        let _ = tx.send(failed.is_none());
    }
    match failed {
        Some(e) => Err(e),
        None => scenario::say_bye(dev),
    }
}

/// `--timeout-ms`, or `default` where it is 0.
fn timeout_or(p: &Plan, default: u32) -> u32 {
    if p.timeout_ms == 0 {
        default
    } else {
        p.timeout_ms
    }
}

/// How the loops take their completions, for the banner.
fn completions(p: &Plan) -> &'static str {
    match (p.poll, p.spin) {
        (true, true) => "polled, spinning",
        (true, false) => "polled",
        _ => "events",
    }
}

/// The connection flags of `p`.
fn conn_flags(p: &Plan) -> u32 {
    (if p.op == BenchOp::Send {
        abi::CONN_RAW
    } else {
        0
    }) | if p.poll { abi::CONN_POLL } else { 0 }
        | if p.spin { abi::CONN_SPIN } else { 0 }
}

/// Runs `bench` as planned (see [`plan`]).
pub fn run(dev: &KrustDev, p: &Plan) -> Result<()> {
    check_device(dev, p.ib_dev.as_deref())?;
    let flags = conn_flags(p);
    match p.role {
        Role::Listen(addr) => {
            dev.listen(addr, 0, 0, flags)?;
            println!("listening on {}", exit::show_addr(&addr));
            std::io::Write::flush(&mut std::io::stdout())?;
            let info = dev.accept(timeout_or(p, ACCEPT_MS))?;
            check_conn_device(&info, p.ib_dev.as_deref())?;
            serve(dev, p, true)
        }
        Role::Connect(addr) => {
            let info = dev.connect(addr, 0, 0, timeout_or(p, CONNECT_MS), flags)?;
            check_conn_device(&info, p.ib_dev.as_deref())?;
            measure(dev, p, &info)
        }
    }
}

/// A benchmark request for one size.
fn request(p: &Plan, mode: u32, size: u32) -> abi::Bench {
    abi::Bench {
        op: op_code(p.op),
        mode,
        size,
        iters: p.iters,
        depth: p.depth,
        timeout_ms: p.timeout_ms,
        ..Default::default()
    }
}

/// How long the listening side waits for the measuring end's BYE: as long
/// as the measurement takes (every size's loop runs in between, and a slow
/// link or a large `-n` takes as long as it takes), so `--timeout-ms` if
/// given, else without a limit of its own. A measuring end that dies ends
/// the connection, and with it the wait. A fixed 20 s failed the README's
/// `bench --op write --mode bw` (5000 x 64 KiB) on a busy guest.
fn bye_wait(p: &Plan) -> u32 {
    timeout_or(p, u32::MAX)
}

/// The listening side: the SEND loops' other end, or the window of the
/// one-sided ones (and WRITE ping-pong's answers); says what it did if
/// `say` (not for each connection of `-q`).
fn serve(dev: &KrustDev, p: &Plan, say: bool) -> Result<()> {
    agree(dev, Settings::of(p), false)?;
    let max = p.sizes.iter().copied().max().unwrap_or(1);
    let mut samples = Vec::new();
    if p.op == BenchOp::Send {
        let mode = if p.run == Loop::Lat {
            abi::BENCH_RESPOND
        } else {
            abi::BENCH_SINK
        };
        for &size in &p.sizes {
            std::thread::sleep(std::time::Duration::from_millis(p.sink_delay_ms));
            dev.bench(&mut request(p, mode, size), &mut samples)
                .context("IOCTL_BENCH")?;
        }
        // Stay connected until the measuring end has all its completions:
        // closing at the last message would flush the SENDs whose ACKs are
        // still on their way (it failed that way with ECONNRESET on a slow
        // debug kernel).
        let mut bye = [0u8; 16];
        dev.recv(&mut bye, bye_wait(p)).context("the BYE")?;
    } else {
        let (addr, rkey, id) = dev.expose_explained(u64::from(max.max(8)), rights(p.op))?;
        scenario::advertise(dev, addr, rkey, u64::from(max))?;
        if p.run == Loop::Pingpong {
            let w = receive_advert(dev, max)?;
            for &size in &p.sizes {
                let mut b = request(p, abi::BENCH_RESPOND, size);
                (b.remote_addr, b.rkey, b.window) = (w.addr, w.rkey, id);
                dev.bench(&mut b, &mut samples).context("IOCTL_BENCH")?;
            }
        }
        let mut bye = [0u8; 16];
        dev.recv(&mut bye, bye_wait(p)).context("the BYE")?;
        let mut v = [0u8; 8];
        dev.window_io(id, 0, &mut v, true)?;
        if say {
            println!("window value {}", u64::from_ne_bytes(v));
        }
    }
    if say {
        println!("bench peer done");
    }
    Ok(())
}

/// perftest's name of a test, for the banner.
fn title(p: &Plan) -> String {
    let op = match p.op {
        BenchOp::Send => "Send",
        BenchOp::Write => "RDMA_Write",
        BenchOp::Read => "RDMA_Read",
        BenchOp::Cas => "Atomic CMP_AND_SWAP",
        BenchOp::Fadd => "Atomic FETCH_AND_ADD",
    };
    let what = match p.run {
        Loop::Bw => "BW",
        Loop::Lat | Loop::Pingpong => "Latency",
    };
    format!("{op} {what} Test (rdma-krust, loop in the kernel)")
}

/// The measuring side.
fn measure(dev: &KrustDev, p: &Plan, info: &abi::ConnInfo) -> Result<()> {
    agree(dev, Settings::of(p), true)?;
    let max = p.sizes.iter().copied().max().unwrap_or(1);
    let (mut remote_addr, mut rkey, mut window) = (0, 0, 0);
    if p.op != BenchOp::Send {
        let w = receive_advert(dev, max)?;
        (remote_addr, rkey) = (w.addr, w.rkey);
    }
    if p.run == Loop::Pingpong {
        let (addr, key, id) = dev.expose_explained(u64::from(max.max(8)), abi::ACCESS_WRITE)?;
        scenario::advertise(dev, addr, key, u64::from(max))?;
        window = id;
    }
    let mode = match p.run {
        Loop::Lat => abi::BENCH_LAT,
        Loop::Bw => abi::BENCH_BW,
        Loop::Pingpong => abi::BENCH_PINGPONG,
    };
    let lat = p.run != Loop::Bw;
    if !p.json {
        let d = abi::DeviceInfo {
            name: info.device,
            ..Default::default()
        };
        println!(" {}", title(p));
        println!(
            " Device: {}  Iterations: {}{}  Completions: {}",
            krust::table::name(&d),
            p.iters,
            if lat {
                String::new()
            } else {
                format!("  TX depth: {}", p.depth)
            },
            completions(p)
        );
        if lat {
            print!("{}", bench::LAT_HEADER);
        } else {
            // As perftest: over PEAK_MAX_ITERS iterations the peak is not
            // measured (no per-message times are asked for).
            if p.iters > bench::PEAK_MAX_ITERS {
                print!("{}", bench::BW_NO_PEAK);
            }
            print!("{}", bench::BW_HEADER);
        }
    }
    let name = format!("{:?}", p.op).to_lowercase();
    let one_way = (p.op == BenchOp::Send && lat) || p.run == Loop::Pingpong;
    let mut samples = Vec::new();
    for &size in &p.sizes {
        let mut b = request(p, mode, size);
        (b.remote_addr, b.rkey, b.window) = (remote_addr, rkey, window);
        dev.bench(&mut b, &mut samples).context("IOCTL_BENCH")?;
        let iters = p.iters;
        if lat {
            let l = bench::lat(&samples);
            if p.json {
                println!(
                    "{{\"op\":\"{name}\",\"mode\":\"lat\",\"bytes\":{size},\"iterations\":{iters},\"t_min\":{:.3},\"t_max\":{:.3},\"t_typical\":{:.3},\"t_avg\":{:.3},\"t_stdev\":{:.3},\"p99\":{:.3},\"p999\":{:.3},\"one_way\":{one_way},\"total_us\":{:.3}}}",
                    l.min,
                    l.max,
                    l.typical,
                    l.avg,
                    l.stdev,
                    l.p99,
                    l.p999,
                    b.total_ns as f64 / 1000.0
                );
            } else {
                print!("{}", bench::lat_row(size, iters, &l));
            }
        } else {
            let r = bench::bw_of_bench(&b, &samples);
            if p.json {
                // A peak not measured is null.
                let peak = r.peak.map_or("null".to_string(), |v| format!("{v:.3}"));
                println!(
                    "{{\"op\":\"{name}\",\"mode\":\"bw\",\"bytes\":{size},\"iterations\":{iters},\"depth\":{},\"bw_peak\":{peak},\"bw_avg\":{:.3},\"msg_rate\":{:.6}}}",
                    p.depth, r.avg, r.msg_rate
                );
            } else {
                print!("{}", bench::bw_row(size, iters, &r));
            }
        }
        std::io::Write::flush(&mut std::io::stdout())?;
    }
    scenario::say_bye(dev)?;
    if let (Some(path), true) = (&p.samples_to, lat) {
        let text: String = samples
            .iter()
            .map(|ns| format!("{:.3}\n", *ns as f64 / 1000.0))
            .collect();
        std::fs::write(path, text).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        a: BenchArgs,
    }

    fn args(line: &str) -> Result<BenchArgs, clap::Error> {
        T::try_parse_from(std::iter::once("bench").chain(line.split_whitespace())).map(|t| t.a)
    }

    fn plan_of(line: &str) -> Plan {
        plan(&args(line).unwrap()).unwrap()
    }

    fn v4(ip: [u8; 4], port: u16) -> abi::Addr {
        addr::from_socket(std::net::SocketAddr::from((ip, port)))
    }

    #[test]
    fn perftest_client_and_server() {
        // ib_write_bw -d rxe0 -s 65536 -n 1000 -t 16 -p 18600 192.0.2.1
        let p = plan_of("--op write --mode bw -d rxe0 -s 65536 -n 1000 -t 16 -p 18600 192.0.2.1");
        assert_eq!(p.role, Role::Connect(v4([192, 0, 2, 1], 18600)));
        assert_eq!(p.run, Loop::Bw);
        assert_eq!((p.sizes.clone(), p.iters, p.depth), (vec![65536], 1000, 16));
        assert_eq!(p.ib_dev.as_deref(), Some("rxe0"));
        assert!(p.poll);
        // The long names.
        let q = plan_of(
            "--op write --mode bw --ib-dev rxe0 --size 65536 --iters 1000 --tx-depth 16 \
             --port 18600 192.0.2.1",
        );
        assert_eq!(p, q);
        // The server: no address, every address on the port.
        let s = plan_of("--op write --mode bw -s 65536 -n 1000 -p 18600");
        assert_eq!(s.role, Role::Listen(v4([0, 0, 0, 0], 18600)));
        assert_eq!(Settings::of(&s), Settings::of(&p));
    }

    #[test]
    fn perftest_defaults() {
        // Bandwidth: 65536 bytes; WRITE 5000 iterations, the rest 1000.
        let p = plan_of("--op write --mode bw");
        assert_eq!((p.sizes.clone(), p.iters), (vec![65536], 5000));
        let p = plan_of("--op read --mode bw");
        assert_eq!((p.sizes.clone(), p.iters), (vec![65536], 1000));
        let p = plan_of("--op send --mode bw");
        assert_eq!((p.sizes.clone(), p.iters), (vec![65536], 1000));
        // Latency: 2 bytes, 1000 iterations; atomics 8.
        for op in ["send", "write", "read"] {
            let p = plan_of(&format!("--op {op}"));
            assert_eq!((p.sizes.clone(), p.iters), (vec![2], 1000), "{op}");
        }
        assert_eq!(plan_of("--op fadd").sizes, vec![8]);
        assert_eq!(plan_of("--op cas -s 8").sizes, vec![8]);
        // Port 18515, listening on every address.
        assert_eq!(
            plan_of("--op read").role,
            Role::Listen(v4([0, 0, 0, 0], 18515))
        );
        assert_eq!(
            plan_of("--op read 192.0.2.1").role,
            Role::Connect(v4([192, 0, 2, 1], 18515))
        );
        // perftest's tx depth, 128, is more than the module keeps in flight.
        assert_eq!(DEF_TX_BW, 128);
        assert_eq!(plan_of("--op write --mode bw").depth, abi::BENCH_MAX_DEPTH);
        assert!(!plan_of("--op read -e").poll);
        assert!(!plan_of("--op read --events").poll);
    }

    #[test]
    fn latency_is_like_perftests() {
        // ib_write_lat is a ping-pong; ib_read_lat and ib_atomic_lat the
        // full round trip; ib_send_lat a ping-pong.
        assert_eq!(plan_of("--op write").run, Loop::Pingpong);
        assert_eq!(plan_of("--op write --mode lat").run, Loop::Pingpong);
        assert_eq!(plan_of("--op write --mode pingpong").run, Loop::Pingpong);
        assert_eq!(plan_of("--op write --mode rtt").run, Loop::Lat);
        assert_eq!(plan_of("--op read --mode lat").run, Loop::Lat);
        assert_eq!(plan_of("--op read --mode rtt").run, Loop::Lat);
        assert_eq!(plan_of("--op fadd --mode lat").run, Loop::Lat);
        assert_eq!(plan_of("--op send --mode lat").run, Loop::Lat);
        for bad in [
            "--op read --mode pingpong",
            "--op send --mode rtt",
            "--op cas --mode bw",
        ] {
            let e = plan(&args(bad).unwrap()).unwrap_err();
            assert_eq!(exit::code(&e), exit::USAGE, "{bad}");
        }
    }

    #[test]
    fn all_sizes_within_the_modules_limits() {
        let p = plan_of("--op write --mode bw -a");
        assert_eq!(p.sizes.first(), Some(&2));
        assert_eq!(p.sizes.last(), Some(&(2 << 20)));
        assert_eq!(p.sizes.len(), 21);
        assert!(p.sizes.windows(2).all(|w| w[1] == 2 * w[0]));
        let p = plan_of("--op send --all");
        assert_eq!(p.sizes.last(), Some(&65536));
        assert_eq!(p.sizes.len(), 16);
        let e = plan(&args("--op fadd -a").unwrap()).unwrap_err();
        assert_eq!(exit::code(&e), exit::USAGE);
        // -a is every size: not with -s, nor one samples file.
        assert!(args("--op read -a -s 8").is_err());
        assert!(args("--op read -a --samples-to /tmp/x").is_err());
    }

    #[test]
    fn old_invocations_still_parse() {
        // scripts/guest-bench.sh, scripts/tests/, kit/src/pair/bench.rs.
        let p = plan_of(
            "--listen 192.0.2.1:18601 --op send --mode lat --size 2 --iters 1000 --depth 16",
        );
        assert_eq!(p.role, Role::Listen(v4([192, 0, 2, 1], 18601)));
        assert_eq!((p.sizes.clone(), p.iters, p.depth), (vec![2], 1000, 16));
        let a = args(
            "--connect 192.0.2.1:18601 --op write --mode pingpong --size 2 --iters 1000 \
             --depth 16 --json --samples-to /tmp/s.txt",
        )
        .unwrap();
        assert!(a.json);
        assert_eq!(
            a.samples_to.as_deref(),
            Some(std::path::Path::new("/tmp/s.txt"))
        );
        let p = plan(&a).unwrap();
        assert_eq!(p.role, Role::Connect(v4([192, 0, 2, 1], 18601)));
        assert_eq!(p.run, Loop::Pingpong);
        let p = plan_of(
            "--timeout-ms 120000 --connect 192.0.2.1:7709 --json --op read --mode bw \
             --size 65536 --iters 64 --depth 8",
        );
        assert_eq!((p.timeout_ms, p.depth, p.iters), (120000, 8, 64));
        let p =
            plan_of("--connect 192.0.2.1:7706 --op read --mode lat --size 8 --iters 50 --events");
        assert!(!p.poll);
        assert_eq!(
            plan_of("--op fadd --mode lat --size 8 --connect 192.0.2.1:1").sizes,
            vec![8]
        );
    }

    #[test]
    fn rejects_what_the_module_cannot_run() {
        for bad in [
            "--op write --mode bw -t 128",
            "--op write --mode bw -t 0",
            "--op send -s 65537",
            "--op write -s 4M",
            "--op fadd -s 16",
            "--op read -n 0",
            "--op read -n 1000001",
            "--op write --mode bw -q 0",
            "--op write --mode bw -q 1025",
            "--op write -q 2",
            "--op send -q 2",
        ] {
            let e = plan(&args(bad).unwrap()).unwrap_err();
            assert_eq!(exit::code(&e), exit::USAGE, "{bad}");
            assert!(!format!("{e}").is_empty());
        }
        let e = plan(&args("--op write --mode bw -t 128").unwrap()).unwrap_err();
        assert!(format!("{e}").contains("1 to 64"), "{e}");
        // Latency keeps one in flight: -t is not used there.
        assert!(plan(&args("--op write -t 128").unwrap()).is_ok());
        // The port once.
        let e = plan(&args("--op read -p 1 192.0.2.1:2").unwrap()).unwrap_err();
        assert_eq!(exit::code(&e), exit::USAGE);
        assert_eq!(
            plan_of("--op read 192.0.2.1:2").role,
            Role::Connect(v4([192, 0, 2, 1], 2))
        );
        // The server argument or the old flags, not both.
        assert!(args("--op read 192.0.2.1 --connect 192.0.2.1:1").is_err());
        assert!(args("--op read --listen 192.0.2.1:1 --connect 192.0.2.1:1").is_err());
        assert!(args("--op read -p 5 --listen 192.0.2.1:1").is_err());
        assert!(args("--op read").is_ok());
        assert!(args("--mode bw").is_err());
    }

    #[test]
    fn several_qps_as_perftest_q() {
        // ib_write_bw -q 8 -s 65536 192.0.2.1
        let p = plan_of("--op write --mode bw -q 8 -s 65536 192.0.2.1");
        assert_eq!((p.qps, p.sizes.clone()), (8, vec![65536]));
        assert_eq!(plan_of("--op send --mode bw --qp 256").qps, 256);
        assert!(plan_of("--op write --mode bw --meminfo").meminfo);
        assert!(plan(&args("--op write --meminfo").unwrap()).is_err());
        assert_eq!(plan_of("--op read --mode bw").qps, 1);
        let e = plan(&args("--op read -q 4").unwrap()).unwrap_err();
        assert!(format!("{e}").contains("--mode bw"), "{e}");
        // Connection i goes to port PORT + i, and no port past 65535.
        let a = v4([192, 0, 2, 1], 65534);
        assert_eq!(port_plus(a, 1).unwrap().port, 65535);
        assert!(port_plus(a, 2).is_err());
        assert_eq!(
            conn_flags(&plan_of("--op send --mode bw -q 2 --spin")),
            abi::CONN_RAW | abi::CONN_POLL | abi::CONN_SPIN
        );
        assert_eq!(conn_flags(&plan_of("--op write --mode bw -e")), 0);
        assert!(args("--op write -e --spin").is_err());
    }

    #[test]
    fn sizes_as_perftest_reads_them() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert_eq!(parse_size("0x100"), Ok(256));
        assert!(parse_size("0").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("K").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("8G").is_err());
        assert!(parse_size("5000M").is_err());
    }

    #[test]
    fn settings_round_trip_and_name_the_difference() {
        let p = plan_of("--op write --mode bw -a -n 10");
        let s = Settings::of(&p);
        assert_eq!(Settings::decode(&s.encode()), Some(s));
        assert_eq!(s.size, 2 << 20);
        let q = Settings::of(&plan_of("--op write --mode bw -s 4096 -n 10"));
        assert_ne!(s, q);
        assert_eq!(format!("{q}"), "--op write (bw) -s 4096 -n 10");
        assert_eq!(format!("{s}"), "--op write (bw) -a -n 10");
        assert_eq!(Settings::decode(&ctl::encode(ctl::BYE, 0)), None);
        assert_eq!(Settings::decode(&[0u8; 8]), None);
    }
}
