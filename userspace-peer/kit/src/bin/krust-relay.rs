// SPDX-License-Identifier: GPL-2.0

//! `krust-relay`: a faulty Ethernet cable between two QEMU guests.
//!
//! Each guest's NIC uses QEMU's `-netdev dgram` backend (QEMU 7.2 and
//! later), for guest A:
//!
//! ```text
//! -netdev dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=<A-GUEST>,
//!         remote.type=inet,remote.host=127.0.0.1,remote.port=<A-LISTEN>
//! ```
//!
//! so every Ethernet frame guest A sends arrives as one UDP datagram at the
//! relay's port A-LISTEN, and the relay gives guest A a frame by sending one
//! datagram to A-GUEST. The relay owns two UDP sockets bound on 127.0.0.1
//! (A-LISTEN and B-LISTEN) and forwards A->B and B->A, applying faults on
//! the way: loss, duplication, reordering, delay with jitter, and a link
//! that can be taken down. The faults come from the command line and can be
//! replaced while it runs through a control file (`--control`).
//!
//! One thread: both sockets are non-blocking; the loop receives what is
//! there, queues each frame by its release time, sends what is due, looks
//! at the control file, and waits in `ppoll` no longer than the next due
//! frame. SIGTERM or SIGINT ends it, printing the counters. The only
//! `unsafe` is in the three libc calls std has no safe form of: `signal`,
//! `ppoll` and `setsockopt(SO_RCVBUF)`.

use anyhow::{bail, Context, Result};
use clap::Parser;
use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The largest frame (UDP payload) the relay takes.
const MAX_FRAME: usize = 65536;
/// How often the control file's metadata is looked at.
const CONTROL_POLL: Duration = Duration::from_millis(25);
/// How often the stats file is rewritten.
const STATS_EVERY: Duration = Duration::from_secs(1);
/// The longest wait in `ppoll`, so a signal that lands just before the wait
/// is noticed soon.
const MAX_WAIT: Duration = Duration::from_millis(25);
/// How long a frame held back for reordering waits for a later frame of its
/// direction to overtake it before it goes out anyway.
const REORDER_HOLD_MAX: Duration = Duration::from_millis(5);
/// Datagrams taken from one socket per loop round, so one busy side does not
/// starve the other or the sending of due frames.
const RECV_BATCH: usize = 256;
/// The receive buffer asked for on each socket (the kernel caps it at
/// net.core.rmem_max): room for a guest's burst while the relay is not
/// scheduled, since frames the kernel drops there are counted nowhere.
const RCVBUF: libc::c_int = 4 << 20;
/// Fault settings are percentages of frames, 0 to 100.
const MAX_PCT: f64 = 100.0;
/// Delays and jitters are at most one minute.
const MAX_MS: f64 = 60_000.0;
/// The directions' names, by index: frames received on socket `d` are sent
/// out of socket `1 - d`.
const DIR_NAMES: [&str; 2] = ["a->b", "b->a"];

/// Set by the SIGTERM/SIGINT handler; the main loop ends when it is set.
static STOP: AtomicBool = AtomicBool::new(false);

/// Writes one line to stdout, ignoring errors (a closed stdout must not
/// stop the relay; `println!` would panic).
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(io::stdout().lock(), $($arg)*);
    }};
}

/// Relay Ethernet frames between two QEMU guests (`-netdev dgram`) over
/// loopback UDP, with faults.
#[derive(Parser, Debug)]
#[command(name = "krust-relay", version)]
struct Args {
    /// The relay's port for guest A (A's remote.port); frames received there
    /// go to B. 0 picks a free port (printed at start).
    #[arg(long, value_name = "PORT")]
    a_listen: u16,
    /// Guest A's local.port, where frames for A are sent.
    #[arg(long, value_name = "PORT")]
    a_guest: u16,
    /// The relay's port for guest B (B's remote.port); frames received there
    /// go to A. 0 picks a free port (printed at start).
    #[arg(long, value_name = "PORT")]
    b_listen: u16,
    /// Guest B's local.port, where frames for B are sent.
    #[arg(long, value_name = "PORT")]
    b_guest: u16,
    /// A file of `key=value` settings that replace the faults whenever it
    /// changes (keys loss, reorder, dup, delay_ms, jitter_ms, link=up|down;
    /// empty or `clean`: no faults, link up). Read at start too, if present.
    #[arg(long, value_name = "FILE")]
    control: Option<PathBuf>,
    /// Seed of the fault decisions (default: from the clock, printed).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// File the counters are written to every second and at exit.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Percent of frames dropped, per direction.
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_pct)]
    loss: f64,
    /// Percent of frames held back until a later frame has gone (at most 5 ms).
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_pct)]
    reorder: f64,
    /// Percent of frames sent twice.
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_pct)]
    dup: f64,
    /// Fixed latency added to every frame, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = parse_ms)]
    delay_ms: f64,
    /// Uniformly random extra latency, 0 to this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = parse_ms)]
    jitter_ms: f64,
}

/// Parses a percentage, 0 to 100.
fn parse_pct(s: &str) -> Result<f64, String> {
    parse_bounded(s, MAX_PCT)
}

/// Parses a time in milliseconds, 0 to one minute.
fn parse_ms(s: &str) -> Result<f64, String> {
    parse_bounded(s, MAX_MS)
}

/// Parses a finite number from 0 to `max`.
fn parse_bounded(s: &str, max: f64) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if !(0.0..=max).contains(&v) {
        return Err(format!("`{s}` is not between 0 and {max}"));
    }
    Ok(v)
}

/// The fault settings, applied to both directions (each direction decides
/// for its own frames with its own random stream).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Faults {
    /// Percent of frames dropped.
    loss: f64,
    /// Percent of frames held back until a later frame has gone.
    reorder: f64,
    /// Percent of frames sent twice.
    dup: f64,
    /// Fixed latency in milliseconds.
    delay_ms: f64,
    /// Upper bound of the uniform random extra latency, in milliseconds.
    jitter_ms: f64,
    /// False: every frame is dropped, both ways.
    link_up: bool,
}

impl Default for Faults {
    /// No faults, link up.
    fn default() -> Self {
        Faults {
            loss: 0.0,
            reorder: 0.0,
            dup: 0.0,
            delay_ms: 0.0,
            jitter_ms: 0.0,
            link_up: true,
        }
    }
}

impl fmt::Display for Faults {
    /// The settings in control-file form, every key given.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "loss={} reorder={} dup={} delay_ms={} jitter_ms={} link={}",
            self.loss,
            self.reorder,
            self.dup,
            self.delay_ms,
            self.jitter_ms,
            if self.link_up { "up" } else { "down" }
        )
    }
}

impl Faults {
    /// Parses a control file's text: whitespace-separated `key=value`
    /// settings that replace all settings (what is not given is off; the
    /// link is up unless `link=down`). Empty text or `clean` is no faults.
    fn parse(text: &str) -> Result<Faults, String> {
        let mut f = Faults::default();
        for tok in text.split_whitespace() {
            if tok == "clean" {
                continue;
            }
            let (key, value) = tok
                .split_once('=')
                .ok_or_else(|| format!("`{tok}` is not key=value"))?;
            let bad = |e: String| format!("{key}: {e}");
            match key {
                "loss" => f.loss = parse_pct(value).map_err(bad)?,
                "reorder" => f.reorder = parse_pct(value).map_err(bad)?,
                "dup" => f.dup = parse_pct(value).map_err(bad)?,
                "delay_ms" => f.delay_ms = parse_ms(value).map_err(bad)?,
                "jitter_ms" => f.jitter_ms = parse_ms(value).map_err(bad)?,
                "link" => {
                    f.link_up = match value {
                        "up" => true,
                        "down" => false,
                        _ => return Err(format!("link: `{value}` is not up or down")),
                    }
                }
                _ => return Err(format!("unknown key `{key}`")),
            }
        }
        Ok(f)
    }
}

/// SplitMix64: a small, fast PRNG whose sequence depends only on its seed,
/// so a run's fault decisions repeat with the same `--seed` and traffic.
struct Rng(u64);

impl Rng {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `pct` percent. Draws nothing when `pct` is 0, so
    /// a fault that is off does not shift the other faults' decisions.
    fn chance(&mut self, pct: f64) -> bool {
        pct > 0.0 && self.unit() * 100.0 < pct
    }
}

/// One direction's counters.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    /// Frames received from the sending guest.
    rx: u64,
    /// Datagrams sent to the receiving guest (duplicates included).
    tx: u64,
    /// Frames dropped by `loss`.
    lost: u64,
    /// Frames (copies) dropped because the link was down, on arrival or
    /// when due.
    down: u64,
    /// Frames sent twice (each adds one datagram).
    dup: u64,
    /// Frames held back to be overtaken.
    reordered: u64,
    /// Datagrams whose send failed (send buffer full, say). A guest that is
    /// not up yet is no error: the sockets are unconnected, so the kernel
    /// drops such datagrams silently and they count in `tx`.
    err: u64,
    /// Datagrams the kernel dropped at the receiving socket before the relay
    /// read them (its buffer was full), from `/proc/net/udp`.
    kdrop: u64,
}

/// A frame waiting in the queue for its release time.
struct Pending {
    /// When it is due.
    due: Instant,
    /// Arrival order, so frames due at the same instant keep their order.
    seq: u64,
    /// Its direction (index into `DIR_NAMES`).
    dir: usize,
    /// 1, or 2 when duplicated.
    copies: u8,
    /// When due, hold it back until the next frame of its direction is sent.
    reorder: bool,
    /// The Ethernet frame.
    frame: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    /// By release time, then arrival order.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// A frame held back for reordering: it goes out right after the next frame
/// of its direction, or at `deadline` if no frame comes first.
struct Held {
    /// When it goes out anyway.
    deadline: Instant,
    /// 1, or 2 when duplicated.
    copies: u8,
    /// The Ethernet frame.
    frame: Vec<u8>,
}

/// The relay's state: sockets, faults, the queue of frames not yet sent and
/// the counters.
struct Relay {
    /// `socks[0]` is the socket for guest A (A-LISTEN), `socks[1]` for B.
    socks: [UdpSocket; 2],
    /// `dests[0]` is guest A's port, `dests[1]` guest B's.
    dests: [SocketAddr; 2],
    /// The fault settings in force.
    faults: Faults,
    /// One random stream per direction.
    rngs: [Rng; 2],
    /// One set of counters per direction.
    counters: [Counters; 2],
    /// Frames waiting for their release time, earliest first.
    queue: BinaryHeap<Reverse<Pending>>,
    /// Frames held back for reordering, per direction, oldest first.
    held: [VecDeque<Held>; 2],
    /// The next arrival number.
    next_seq: u64,
    /// The sockets' inode numbers, to find them in `/proc/net/udp`.
    inodes: [Option<u64>; 2],
}

impl Relay {
    /// Takes up to `RECV_BATCH` datagrams from socket `d` and admits each as
    /// a frame of direction `d`.
    fn receive(&mut self, d: usize, buf: &mut [u8]) {
        for _ in 0..RECV_BATCH {
            match self.socks[d].recv_from(buf) {
                Ok((n, _from)) => {
                    let now = Instant::now();
                    self.admit(d, now, &buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: drained. Anything else (a pending ICMP error)
                // was consumed by this call; try again next round.
                Err(_) => break,
            }
        }
    }

    /// Decides a frame's fate: dropped (link down, loss) or queued with its
    /// delay, copies and reorder mark.
    fn admit(&mut self, d: usize, now: Instant, frame: &[u8]) {
        let f = self.faults;
        let c = &mut self.counters[d];
        let rng = &mut self.rngs[d];
        c.rx += 1;
        if !f.link_up {
            c.down += 1;
            return;
        }
        if rng.chance(f.loss) {
            c.lost += 1;
            return;
        }
        let copies = if rng.chance(f.dup) {
            c.dup += 1;
            2
        } else {
            1
        };
        let reorder = rng.chance(f.reorder);
        if reorder {
            c.reordered += 1;
        }
        let mut delay_ms = f.delay_ms;
        if f.jitter_ms > 0.0 {
            delay_ms += rng.unit() * f.jitter_ms;
        }
        let due = now + Duration::from_secs_f64(delay_ms / 1000.0);
        self.queue.push(Reverse(Pending {
            due,
            seq: self.next_seq,
            dir: d,
            copies,
            reorder,
            frame: frame.to_vec(),
        }));
        self.next_seq += 1;
    }

    /// Sends every queued frame that is due at `now`, holding back the ones
    /// marked for reordering until the next frame of their direction has
    /// gone, and sends held frames whose hold has run out.
    fn release_due(&mut self, now: Instant) {
        while self.queue.peek().is_some_and(|Reverse(p)| p.due <= now) {
            let Some(Reverse(p)) = self.queue.pop() else {
                break;
            };
            if p.reorder {
                self.held[p.dir].push_back(Held {
                    deadline: now + REORDER_HOLD_MAX,
                    copies: p.copies,
                    frame: p.frame,
                });
                continue;
            }
            self.deliver(p.dir, &p.frame, p.copies);
            // The frames held back go out behind the one that overtook them.
            while let Some(h) = self.held[p.dir].pop_front() {
                self.deliver(p.dir, &h.frame, h.copies);
            }
        }
        for d in 0..2 {
            while self.held[d].front().is_some_and(|h| h.deadline <= now) {
                let Some(h) = self.held[d].pop_front() else {
                    break;
                };
                self.deliver(d, &h.frame, h.copies);
            }
        }
    }

    /// Sends `copies` copies of a frame of direction `d` to the other guest,
    /// unless the link is down now. Send errors are counted, not fatal.
    fn deliver(&mut self, d: usize, frame: &[u8], copies: u8) {
        let out = 1 - d;
        let c = &mut self.counters[d];
        for _ in 0..copies {
            if !self.faults.link_up {
                c.down += 1;
                continue;
            }
            match self.socks[out].send_to(frame, self.dests[out]) {
                Ok(_) => c.tx += 1,
                Err(_) => c.err += 1,
            }
        }
    }

    /// When the next queued or held frame is due, if any.
    fn next_due(&self) -> Option<Instant> {
        let queued = self.queue.peek().map(|Reverse(p)| p.due);
        let held = self
            .held
            .iter()
            .filter_map(|h| h.front().map(|h| h.deadline));
        queued.into_iter().chain(held).min()
    }

    /// The counters, one line per direction, each ending in a newline;
    /// `kdrop` is brought up to date first.
    fn stats_text(&mut self) -> String {
        let drops = kernel_drops(self.inodes);
        for (c, drops) in self.counters.iter_mut().zip(drops) {
            if let Some(n) = drops {
                c.kdrop = n;
            }
        }
        let mut s = String::new();
        for (name, c) in DIR_NAMES.iter().zip(&self.counters) {
            s.push_str(&format!(
                "relay: {name} rx={} tx={} lost={} down={} dup={} reordered={} err={} kdrop={}\n",
                c.rx, c.tx, c.lost, c.down, c.dup, c.reordered, c.err, c.kdrop
            ));
        }
        s
    }
}

/// The control file: noticed when its inode, mtime or size changes, read
/// once the change has held still for one poll (so a shell's truncate-then-
/// write is not taken for an empty file), applied when its text differs from
/// the text last read.
struct Control {
    /// The file's path.
    path: PathBuf,
    /// The (inode, mtime, mtime ns, size) of the version last read.
    read_key: Option<(u64, i64, i64, u64)>,
    /// A newer version seen at the last poll, not read yet.
    seen_key: Option<(u64, i64, i64, u64)>,
    /// The text last read.
    text: Option<String>,
}

impl Control {
    /// A control file not read yet.
    fn new(path: PathBuf) -> Self {
        Control {
            path,
            read_key: None,
            seen_key: None,
            text: None,
        }
    }

    /// The file's identity and version, or None if it is missing.
    fn key(&self) -> Option<(u64, i64, i64, u64)> {
        let m = fs::metadata(&self.path).ok()?;
        Some((m.ino(), m.mtime(), m.mtime_nsec(), m.len()))
    }

    /// Looks at the file; returns new settings (or why they are bad) when it
    /// has changed. A missing file is no change. With `settled` false (the
    /// first look, at start) a change is read at once.
    fn poll(&mut self, settled: bool) -> Option<Result<Faults, String>> {
        let key = self.key()?;
        if self.read_key == Some(key) {
            self.seen_key = None;
            return None;
        }
        if settled && self.seen_key != Some(key) {
            self.seen_key = Some(key);
            return None;
        }
        self.seen_key = None;
        let bytes = match fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.read_key = Some(key);
                return Some(Err(format!("cannot read: {e}")));
            }
        };
        self.read_key = Some(key);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if self.text.as_deref() == Some(text.as_str()) {
            return None;
        }
        let parsed = Faults::parse(&text).map_err(|e| format!("{e} in `{}`", text.trim()));
        self.text = Some(text);
        Some(parsed)
    }
}

/// Applies a control file change (if any) and prints it, or prints why it
/// is bad and keeps the settings; `t` is the seconds since start.
fn apply(relay: &mut Relay, change: Option<Result<Faults, String>>, t: f64) {
    match change {
        Some(Ok(f)) => {
            relay.faults = f;
            say!("relay: t={t:.3}s {f}");
        }
        Some(Err(e)) => say!("relay: t={t:.3}s control: {e}; keeping {}", relay.faults),
        None => {}
    }
}

/// Records a signal in `STOP`; only an atomic store, so async-signal-safe.
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Makes SIGTERM and SIGINT set `STOP` instead of killing the process.
fn install_signal_handlers() -> Result<()> {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `on_signal` has the signature a signal handler needs and
        // only stores to an atomic, which is async-signal-safe.
        if unsafe { libc::signal(sig, handler) } == libc::SIG_ERR {
            bail!("cannot install the handler of signal {sig}");
        }
    }
    Ok(())
}

/// Waits until one of `fds` is readable or `timeout` passes; returns which
/// are readable (none on timeout or signal).
fn wait_readable(fds: [RawFd; 2], timeout: Duration) -> io::Result<[bool; 2]> {
    let mut pfds = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `pfds` is an array of 2 initialized pollfds that outlives the
    // call, `ts` is a valid timespec, and a null sigmask means none.
    let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok([false; 2]);
        }
        return Err(e);
    }
    Ok(pfds.map(|p| p.revents != 0))
}

/// A socket's inode number (as `/proc/net/udp` lists it), or None.
fn socket_inode(sock: &UdpSocket) -> Option<u64> {
    fs::metadata(format!("/proc/self/fd/{}", sock.as_raw_fd()))
        .ok()
        .map(|m| m.ino())
}

/// The kernel's drop counts of the UDP sockets with inode numbers `inodes`
/// (the last column of `/proc/net/udp`); None where not known.
fn kernel_drops(inodes: [Option<u64>; 2]) -> [Option<u64>; 2] {
    let mut out = [None, None];
    let Ok(table) = fs::read_to_string("/proc/net/udp") else {
        return out;
    };
    for line in table.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (Some(inode), Some(drops)) = (cols.get(9), cols.get(12)) else {
            continue;
        };
        let (Ok(inode), Ok(drops)) = (inode.parse::<u64>(), drops.parse::<u64>()) else {
            continue;
        };
        for (o, want) in out.iter_mut().zip(inodes) {
            if want == Some(inode) {
                *o = Some(drops);
            }
        }
    }
    out
}

/// Writes the counters to `path` through a temporary file and a rename, so
/// a reader never sees half a file.
fn write_stats(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = OsString::from(path.as_os_str());
    tmp.push(".tmp");
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path)
}

/// A seed from the clock and the process id, for runs without `--seed`.
fn clock_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut r = Rng(nanos ^ (u64::from(std::process::id()) << 32));
    r.next_u64()
}

/// Binds a non-blocking UDP socket on 127.0.0.1:`port`, with a receive
/// buffer of up to `RCVBUF` bytes.
fn bind_loopback(port: u16, what: &str) -> Result<UdpSocket> {
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let sock = UdpSocket::bind(addr).with_context(|| format!("binding {what} on {addr}"))?;
    sock.set_nonblocking(true)
        .with_context(|| format!("making {what} non-blocking"))?;
    let size = RCVBUF;
    // SAFETY: the fd is the open socket `sock`; `size` is a c_int that
    // outlives the call and its length is passed with it. Best effort: on
    // failure the socket keeps the default buffer.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            std::ptr::addr_of!(size).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    Ok(sock)
}

/// Sets up the sockets and runs the loop until SIGTERM/SIGINT.
fn main() -> Result<()> {
    let args = Args::parse();
    if args.a_guest == 0 || args.b_guest == 0 {
        bail!("--a-guest and --b-guest must be real ports, not 0");
    }
    let start = Instant::now();
    let stamp = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
    install_signal_handlers()?;

    let socks = [
        bind_loopback(args.a_listen, "the socket for guest A (--a-listen)")?,
        bind_loopback(args.b_listen, "the socket for guest B (--b-listen)")?,
    ];
    let dests = [args.a_guest, args.b_guest]
        .map(|p| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, p)));
    let seed = args.seed.unwrap_or_else(clock_seed);
    let mut seeder = Rng(seed);
    let rngs = [Rng(seeder.next_u64()), Rng(seeder.next_u64())];

    say!("relay: seed={seed}");
    for (name, (sock, dest)) in ["a", "b"].iter().zip(socks.iter().zip(&dests)) {
        let local = sock.local_addr().context("the bound address")?;
        say!("relay: {name}: listen {local} guest {dest}");
    }

    let faults = Faults {
        loss: args.loss,
        reorder: args.reorder,
        dup: args.dup,
        delay_ms: args.delay_ms,
        jitter_ms: args.jitter_ms,
        link_up: true,
    };
    let mut relay = Relay {
        socks,
        dests,
        faults,
        rngs,
        counters: [Counters::default(); 2],
        queue: BinaryHeap::new(),
        held: [VecDeque::new(), VecDeque::new()],
        next_seq: 0,
        inodes: [None, None],
    };
    relay.inodes = [socket_inode(&relay.socks[0]), socket_inode(&relay.socks[1])];

    let mut control = args.control.clone().map(Control::new);
    say!("relay: t={:.3}s {}", stamp(start), relay.faults);
    if let Some(c) = control.as_mut() {
        let change = c.poll(false);
        apply(&mut relay, change, stamp(Instant::now()));
    }

    let mut stats_failed = false;
    let mut save_stats = |text: &str| {
        if let Some(path) = &args.stats {
            match write_stats(path, text) {
                Ok(()) => stats_failed = false,
                Err(e) if !stats_failed => {
                    stats_failed = true;
                    say!("relay: cannot write {}: {e}", path.display());
                }
                Err(_) => {}
            }
        }
    };
    save_stats(&relay.stats_text());

    let fds = [relay.socks[0].as_raw_fd(), relay.socks[1].as_raw_fd()];
    let mut buf = vec![0u8; MAX_FRAME];
    let mut next_control = start + CONTROL_POLL;
    let mut next_stats = start + STATS_EVERY;
    while !STOP.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next_control {
            if let Some(c) = control.as_mut() {
                let change = c.poll(true);
                apply(&mut relay, change, stamp(now));
            }
            next_control = now + CONTROL_POLL;
        }
        if now >= next_stats {
            save_stats(&relay.stats_text());
            next_stats = now + STATS_EVERY;
        }
        relay.release_due(now);

        let mut until = next_stats.min(now + MAX_WAIT);
        if control.is_some() {
            until = until.min(next_control);
        }
        if let Some(due) = relay.next_due() {
            until = until.min(due);
        }
        let ready = wait_readable(fds, until.saturating_duration_since(Instant::now()))
            .context("waiting for frames (ppoll)")?;
        for (d, r) in ready.iter().enumerate() {
            if *r {
                relay.receive(d, &mut buf);
            }
        }
    }

    let text = relay.stats_text();
    let _ = io::stdout().lock().write_all(text.as_bytes());
    save_stats(&text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The control-file syntax: replacement, `clean`, empty, bad input.
    #[test]
    fn control_settings_parse() {
        let f = Faults::parse("loss=1 reorder=1 dup=0.5\n").unwrap();
        assert_eq!(
            f.to_string(),
            "loss=1 reorder=1 dup=0.5 delay_ms=0 jitter_ms=0 link=up"
        );
        let f = Faults::parse("link=down delay_ms=10 jitter_ms=2.5").unwrap();
        assert_eq!(
            f.to_string(),
            "loss=0 reorder=0 dup=0 delay_ms=10 jitter_ms=2.5 link=down"
        );
        assert_eq!(Faults::parse("clean"), Ok(Faults::default()));
        assert_eq!(Faults::parse(" \n"), Ok(Faults::default()));
        for bad in [
            "loss=abc",
            "loss=101",
            "loss=-1",
            "loss=nan",
            "dup",
            "link=sideways",
            "delay_ms=60001",
            "speed=1",
        ] {
            assert!(Faults::parse(bad).is_err(), "{bad} accepted");
        }
    }

    /// `chance` hits about its percentage, and draws nothing at 0.
    #[test]
    fn rng_chance_rate() {
        let mut r = Rng(42);
        let hits = (0..100_000).filter(|_| r.chance(10.0)).count();
        assert!((9_000..=11_000).contains(&hits), "{hits}");
        let (mut a, mut b) = (Rng(7), Rng(7));
        assert!(!a.chance(0.0));
        assert_eq!(a.next_u64(), b.next_u64());
        assert!((0..1000).all(|_| a.chance(100.0)));
        assert!((0..1000).all(|_| (0.0..1.0).contains(&b.unit())));
    }
}
