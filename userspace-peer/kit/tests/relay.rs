// SPDX-License-Identifier: GPL-2.0

//! `krust-relay` on the host, without QEMU: two UDP sockets on 127.0.0.1
//! stand in for the two guests' `-netdev dgram` ports, send numbered frames
//! through the relay each way and check what arrives against the faults and
//! against the relay's own counters.
//!
//! Not flaky by construction, even on a loaded host: the fault decisions
//! come from fixed seeds and depend only on each direction's frame order,
//! which loopback keeps; the senders go in batches of `BATCH` small frames
//! and wait for each batch to come through (by count, or by the highest
//! frame number seen), so no socket buffer overflows; a run ends only when
//! the relay's stats file accounts for every frame; the tests run one at a
//! time (`SERIAL`); and the bounds on the fault counts are wide.

use std::fs;
use std::io::{BufRead, BufReader, ErrorKind};
use std::net::{SocketAddr, UdpSocket};
use std::ops::Range;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// The relay binary cargo built for this test.
const RELAY: &str = env!("CARGO_BIN_EXE_krust-relay");
/// Frames sent each way before waiting for them to arrive: at most 600 bytes
/// each, so a batch (doubled by `dup`) is far below a socket's 212 KB.
const BATCH: u32 = 50;
/// When not every frame is expected (loss, link down), a batch is through
/// once a frame at most `SLACK` before its last has arrived each way (the
/// relay keeps the order, but for reordering and jitter)...
const SLACK: u32 = 5;
/// ... or when nothing came for this long (the link is down, or the last
/// frames were all lost).
const QUIET: Duration = Duration::from_millis(50);
/// When every frame is expected, how long to wait for a missing one before
/// going on (the test then fails on the count).
const PATIENCE: Duration = Duration::from_millis(2000);
/// How long a run may take to account for every frame at its end.
const ACCOUNT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for an expected line of the relay's output.
const LINE_TIMEOUT: Duration = Duration::from_secs(10);

/// One relay at a time: the host may have only two CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes `SERIAL`, even after another test panicked holding it.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frame `seq` of the guest whose tag is `tag`: the tag, the sequence
/// number, then a pattern; 60 to 540 bytes, but 9000 bytes for 1_000_000 and
/// the UDP maximum of 65507 for 1_000_001.
fn frame(tag: u8, seq: u32) -> Vec<u8> {
    let len = match seq {
        1_000_000 => 9000,
        1_000_001 => 65507,
        _ => 60 + (seq as usize % 9) * 60,
    };
    let mut f = vec![0u8; len];
    f[0] = tag;
    f[4..8].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in f[8..].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
    f
}

/// A stand-in guest: a UDP socket at the guest's port that sends its frames
/// to the relay and records the sequence numbers of the frames it gets.
struct Guest {
    /// The guest's port (its `local.port`).
    sock: UdpSocket,
    /// The tag of the frames it sends.
    tag: u8,
    /// The tag of the frames it should receive.
    peer_tag: u8,
    /// The relay's socket for this guest (its `remote.port`).
    relay: Option<SocketAddr>,
    /// Sequence numbers received, in arrival order.
    got: Vec<u32>,
    /// The highest sequence number received.
    max_seq: Option<u32>,
    /// Receive buffer.
    buf: Vec<u8>,
}

impl Guest {
    /// A guest on a free port of 127.0.0.1.
    fn new(tag: u8, peer_tag: u8) -> Guest {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind a guest socket");
        sock.set_nonblocking(true)
            .expect("non-blocking guest socket");
        Guest {
            sock,
            tag,
            peer_tag,
            relay: None,
            got: Vec::new(),
            max_seq: None,
            buf: vec![0; 70000],
        }
    }

    /// The guest's port.
    fn port(&self) -> u16 {
        self.sock.local_addr().expect("guest address").port()
    }

    /// Sends frame `seq` to the relay.
    fn send(&self, seq: u32) {
        let to = self.relay.expect("relay address known");
        let f = frame(self.tag, seq);
        loop {
            match self.sock.send_to(&f, to) {
                Ok(n) => {
                    assert_eq!(n, f.len());
                    return;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("guest send: {e}"),
            }
        }
    }

    /// Receives what is there; checks each frame is intact; true if any.
    fn drain(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.sock.recv_from(&mut self.buf) {
                Ok((n, _)) => {
                    assert!(n >= 8, "short frame of {n} bytes");
                    let seq = u32::from_le_bytes(self.buf[4..8].try_into().unwrap());
                    assert!(
                        self.buf[..n] == frame(self.peer_tag, seq)[..],
                        "frame {seq} damaged ({n} bytes)"
                    );
                    self.got.push(seq);
                    self.max_seq = self.max_seq.max(Some(seq));
                    any = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return any,
                Err(e) => panic!("guest receive: {e}"),
            }
        }
    }
}

/// How a batch is known to be through.
#[derive(Clone, Copy)]
enum Through {
    /// Each guest has this many frames.
    Count(usize, usize),
    /// Each guest has seen a frame numbered this or higher.
    Reached(u32),
}

/// Receives on both guests until the batch is `through`, or (for
/// `Through::Reached`) nothing came for `QUIET`, or (for `Through::Count`)
/// nothing came for `PATIENCE`.
fn settle(a: &mut Guest, b: &mut Guest, through: Through) {
    let patience = match through {
        Through::Count(..) => PATIENCE,
        Through::Reached(_) => QUIET,
    };
    let mut last = Instant::now();
    loop {
        let got = a.drain() | b.drain();
        let done = match through {
            Through::Count(wa, wb) => a.got.len() >= wa && b.got.len() >= wb,
            Through::Reached(seq) => a.max_seq >= Some(seq) && b.max_seq >= Some(seq),
        };
        if done {
            return;
        }
        if got {
            last = Instant::now();
        } else if last.elapsed() >= patience {
            return;
        }
        thread::sleep(Duration::from_micros(200));
    }
}

/// Sends frames `seqs` each way in batches, waiting for each batch; with
/// `complete`, every frame is expected to arrive, so a batch is through
/// when it has arrived; otherwise when one of its last frames has.
fn exchange(a: &mut Guest, b: &mut Guest, seqs: Range<u32>, complete: bool) {
    let mut start = seqs.start;
    while start < seqs.end {
        let end = seqs.end.min(start + BATCH);
        let n = (end - start) as usize;
        let through = if complete {
            Through::Count(a.got.len() + n, b.got.len() + n)
        } else {
            Through::Reached((end - 1).saturating_sub(SLACK).max(start))
        };
        for seq in start..end {
            a.send(seq);
            b.send(seq);
        }
        settle(a, b, through);
        start = end;
    }
}

/// What one guest got of the frames `sent`.
#[derive(Debug, PartialEq)]
struct Seen {
    /// Frames not received.
    missing: Vec<u32>,
    /// Frames received more than once, once per extra copy.
    dups: Vec<u32>,
    /// Places where a frame arrived after a later one.
    descents: usize,
}

/// Compares what a guest got with what was sent to it.
fn seen(got: &[u32], sent: Range<u32>) -> Seen {
    let mut count = vec![0u32; sent.len()];
    for &s in got {
        assert!(sent.contains(&s), "frame {s} was never sent");
        count[(s - sent.start) as usize] += 1;
    }
    let mut missing = Vec::new();
    let mut dups = Vec::new();
    for (i, &c) in count.iter().enumerate() {
        let seq = sent.start + i as u32;
        if c == 0 {
            missing.push(seq);
        }
        for _ in 1..c {
            dups.push(seq);
        }
    }
    let descents = got.windows(2).filter(|w| w[1] < w[0]).count();
    Seen {
        missing,
        dups,
        descents,
    }
}

/// One direction's counters from the relay's stats lines.
#[derive(Debug, Default, PartialEq, Clone, Copy)]
struct Stats {
    rx: u64,
    tx: u64,
    lost: u64,
    down: u64,
    dup: u64,
    reordered: u64,
    err: u64,
    kdrop: u64,
}

/// Parses the two stats lines (`relay: a->b rx=N ...`, `relay: b->a ...`)
/// out of `lines`; the last of each direction counts.
fn parse_stats<'a>(lines: impl IntoIterator<Item = &'a str>) -> [Option<Stats>; 2] {
    let mut out = [None, None];
    for line in lines {
        let mut words = line.split_whitespace();
        if words.next() != Some("relay:") {
            continue;
        }
        let d = match words.next() {
            Some("a->b") => 0,
            Some("b->a") => 1,
            _ => continue,
        };
        let mut s = Stats::default();
        for w in words {
            let (k, v) = w.split_once('=').expect("key=value in a stats line");
            let v: u64 = v.parse().expect("a number in a stats line");
            match k {
                "rx" => s.rx = v,
                "tx" => s.tx = v,
                "lost" => s.lost = v,
                "down" => s.down = v,
                "dup" => s.dup = v,
                "reordered" => s.reordered = v,
                "err" => s.err = v,
                "kdrop" => s.kdrop = v,
                _ => panic!("unknown counter in `{line}`"),
            }
        }
        out[d] = Some(s);
    }
    out
}

/// A running relay between guests `a` and `b`, with a control file and a
/// stats file in a directory of its own.
struct Relay {
    /// The process; None once stopped.
    child: Option<Child>,
    /// The relay's stdout, line by line.
    lines: mpsc::Receiver<String>,
    /// Every line read so far.
    log: Vec<String>,
    /// The directory of the control and stats files.
    dir: PathBuf,
}

impl Relay {
    /// Starts the relay for `a` and `b` with extra arguments, waits for its
    /// listening lines and tells the guests where it listens. The control
    /// file is `dir/control`; `control` is written there first if given.
    fn start(
        name: &str,
        a: &mut Guest,
        b: &mut Guest,
        control: Option<&str>,
        extra: &[&str],
    ) -> Relay {
        let dir = std::env::temp_dir().join(format!("krust-relay-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create the test directory");
        if let Some(text) = control {
            fs::write(dir.join("control"), text).expect("write the control file");
        }
        let mut child = Command::new(RELAY)
            .args(["--a-listen", "0", "--b-listen", "0"])
            .args(["--a-guest", &a.port().to_string()])
            .args(["--b-guest", &b.port().to_string()])
            .arg("--control")
            .arg(dir.join("control"))
            .arg("--stats")
            .arg(dir.join("stats"))
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start krust-relay");
        let out = child.stdout.take().expect("relay stdout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut relay = Relay {
            child: Some(child),
            lines: rx,
            log: Vec::new(),
            dir,
        };
        for g in [a, b] {
            let who = if g.tag == b'A' { "a" } else { "b" };
            let line = relay.wait_line(&format!("relay: {who}: listen "));
            let addr = line.split_whitespace().nth(3).expect("listen address");
            g.relay = Some(addr.parse().expect("a socket address"));
            assert!(
                line.ends_with(&format!("guest 127.0.0.1:{}", g.port())),
                "{line}"
            );
        }
        relay.wait_line("relay: t=0.000s ");
        relay
    }

    /// Path of a file in the relay's directory.
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Waits for (and returns) the next line of output containing `pat`.
    fn wait_line(&mut self, pat: &str) -> String {
        let deadline = Instant::now() + LINE_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(pat) {
                        return line;
                    }
                }
                Err(e) => panic!("no line with `{pat}` ({e}); output so far: {:#?}", self.log),
            }
        }
    }

    /// Replaces the control file's content atomically (write, rename).
    fn control(&self, text: &str) {
        let tmp = self.file("control.tmp");
        fs::write(&tmp, text).expect("write the control file");
        fs::rename(&tmp, self.file("control")).expect("rename the control file");
    }

    /// Waits until the stats file accounts for all `sent` frames each way
    /// (received, and sent on, dropped or failed; none still queued) and the
    /// guests have received every datagram the relay sent, receiving
    /// meanwhile. The stats file is rewritten every second.
    fn account(&self, sent: u64, a: &mut Guest, b: &mut Guest) {
        let deadline = Instant::now() + ACCOUNT_TIMEOUT;
        loop {
            a.drain();
            b.drain();
            let text = fs::read_to_string(self.file("stats")).unwrap_or_default();
            if let [Some(ab), Some(ba)] = parse_stats(text.lines()) {
                let settled = |s: Stats, got: usize| {
                    s.rx == sent
                        && s.rx + s.dup == s.tx + s.lost + s.down + s.err
                        && s.tx == got as u64
                };
                if settled(ab, b.got.len()) && settled(ba, a.got.len()) {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{sent} frames each way not accounted for: {text}, A got {}, B got {}",
                a.got.len(),
                b.got.len()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM, checks the relay exits 0 and that its stdout and its
    /// stats file give the same counters; returns them (a->b, b->a).
    fn stop(mut self) -> [Stats; 2] {
        let mut child = self.child.take().expect("relay running");
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: sends a signal to our own child, which is not reaped yet.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the relay") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the relay did not exit on SIGTERM");
            }
            thread::sleep(Duration::from_millis(10));
        };
        assert!(status.success(), "relay exit status {status}");
        self.log.extend(self.lines.iter());
        let from_stdout = parse_stats(self.log.iter().map(String::as_str));
        let text = fs::read_to_string(self.file("stats")).expect("read the stats file");
        let from_file = parse_stats(text.lines());
        assert_eq!(from_stdout, from_file, "stdout and stats file disagree");
        let [Some(ab), Some(ba)] = from_stdout else {
            panic!("no stats lines in {:#?}", self.log);
        };
        eprintln!(
            "{}: a->b {ab:?}\n{}: b->a {ba:?}",
            self.dir.display(),
            self.dir.display()
        );
        [ab, ba]
    }
}

impl Drop for Relay {
    /// Kills a relay the test did not stop (it panicked) and removes the
    /// directory.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Two guests, A and B.
fn guests() -> (Guest, Guest) {
    (Guest::new(b'A', b'B'), Guest::new(b'B', b'A'))
}

/// Checks the counters agree with what the guests got: every frame received
/// is accounted for, and what went out is what arrived.
fn check_accounts(stats: &[Stats; 2], sent: u64, a: &Guest, b: &Guest) {
    // stats[0] is a->b: what B got; stats[1] is b->a: what A got.
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        assert_eq!(s.rx, sent, "{s:?}");
        assert_eq!((s.err, s.kdrop), (0, 0), "{s:?}");
        assert_eq!(s.rx + s.dup, s.tx + s.lost + s.down + s.err, "{s:?}");
        assert_eq!(s.tx, got.len() as u64, "{s:?}");
    }
}

#[test]
fn clean_link_delivers_everything_in_order() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let relay = Relay::start("clean", &mut a, &mut b, None, &["--seed", "11"]);
    exchange(&mut a, &mut b, 0..10_000, true);
    // The largest frames, one at a time.
    exchange(&mut a, &mut b, 1_000_000..1_000_001, true);
    exchange(&mut a, &mut b, 1_000_001..1_000_002, true);
    relay.account(10002, &mut a, &mut b);
    let stats = relay.stop();
    let want: Vec<u32> = (0..10_000).chain(1_000_000..1_000_002).collect();
    assert!(a.got == want, "A got {} frames, not in order", a.got.len());
    assert!(b.got == want, "B got {} frames, not in order", b.got.len());
    check_accounts(&stats, want.len() as u64, &a, &b);
    for s in stats {
        assert_eq!((s.lost, s.down, s.dup, s.reordered), (0, 0, 0, 0), "{s:?}");
    }
}

#[test]
fn loss_drops_about_its_share() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let relay = Relay::start(
        "loss",
        &mut a,
        &mut b,
        None,
        &["--seed", "1", "--loss", "10"],
    );
    exchange(&mut a, &mut b, 0..10_000, false);
    relay.account(10000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 10_000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..10_000);
        let lost = seen.missing.len();
        assert!((800..=1200).contains(&lost), "{lost} of 10000 lost at 10%");
        assert_eq!(s.lost, lost as u64, "{s:?}");
        assert!(seen.dups.is_empty() && seen.descents == 0, "{seen:?}");
    }
}

#[test]
fn dup_duplicates_about_its_share() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let relay = Relay::start("dup", &mut a, &mut b, None, &["--seed", "2", "--dup", "10"]);
    exchange(&mut a, &mut b, 0..10_000, true);
    relay.account(10000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 10_000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..10_000);
        let dups = seen.dups.len();
        assert!(
            (800..=1200).contains(&dups),
            "{dups} of 10000 duplicated at 10%"
        );
        assert_eq!(s.dup, dups as u64, "{s:?}");
        assert!(seen.missing.is_empty() && seen.descents == 0, "{seen:?}");
    }
}

#[test]
fn reorder_delivers_everything_some_late() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let args = ["--seed", "3", "--reorder", "10"];
    let relay = Relay::start("reorder", &mut a, &mut b, None, &args);
    exchange(&mut a, &mut b, 0..10_000, true);
    relay.account(10000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 10_000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..10_000);
        assert!(seen.missing.is_empty() && seen.dups.is_empty(), "{seen:?}");
        let held = s.reordered;
        assert!(
            (800..=1200).contains(&held),
            "{held} of 10000 held back at 10%"
        );
        // A held frame goes out behind the next one, unless it was last of
        // a batch (then its 5 ms run out): most of them are overtaken.
        assert!(
            seen.descents as u64 >= held / 4 && seen.descents as u64 <= held,
            "{} frames overtaken of {held} held back",
            seen.descents
        );
    }
}

#[test]
fn control_file_takes_the_link_down_and_up() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let mut relay = Relay::start("control", &mut a, &mut b, None, &["--seed", "4"]);
    exchange(&mut a, &mut b, 0..1000, true);

    // The stats file is rewritten while the relay runs.
    relay.account(1000, &mut a, &mut b);

    relay.control("link=down\n");
    let line = relay.wait_line("link=down");
    assert!(line.starts_with("relay: t="), "{line}");
    assert!(line.ends_with("loss=0 reorder=0 dup=0 delay_ms=0 jitter_ms=0 link=down"));
    exchange(&mut a, &mut b, 1000..2000, false);
    assert_eq!(
        (a.got.len(), b.got.len()),
        (1000, 1000),
        "frames crossed a down link"
    );

    // Bad settings are reported and change nothing.
    relay.control("loss=abc");
    let line = relay.wait_line("control:");
    assert!(
        line.contains("keeping") && line.ends_with("link=down"),
        "{line}"
    );
    relay.control("link=down flood=1");
    let line = relay.wait_line("control:");
    assert!(line.contains("unknown key `flood`"), "{line}");
    exchange(&mut a, &mut b, 2000..2100, false);
    assert_eq!(
        (a.got.len(), b.got.len()),
        (1000, 1000),
        "frames crossed a down link"
    );

    // A plain (truncate, then write) rewrite, as a shell's `echo >` does.
    fs::write(relay.file("control"), "link=up\n").expect("write the control file");
    let line = relay.wait_line("link=up");
    assert!(line.starts_with("relay: t="), "{line}");
    exchange(&mut a, &mut b, 2100..3100, true);

    relay.account(3100, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 3100, &a, &b);
    let want: Vec<u32> = (0..1000).chain(2100..3100).collect();
    assert!(a.got == want && b.got == want, "wrong frames through");
    for s in stats {
        assert_eq!((s.tx, s.down, s.lost, s.dup), (2000, 1100, 0, 0), "{s:?}");
    }
}

#[test]
fn control_file_at_start_replaces_the_command_line() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let settings = "loss=1 reorder=1 dup=0.5 delay_ms=2 jitter_ms=3";
    let args = ["--seed", "5", "--loss", "50"];
    let mut relay = Relay::start("mixed", &mut a, &mut b, Some(settings), &args);
    relay.wait_line(&format!("{settings} link=up"));
    exchange(&mut a, &mut b, 0..5000, false);
    relay.account(5000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 5000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..5000);
        assert_eq!(s.lost, seen.missing.len() as u64, "{s:?}");
        assert_eq!(s.dup, seen.dups.len() as u64, "{s:?}");
        assert!((10..=150).contains(&s.lost), "{s:?}");
        assert!((5..=100).contains(&s.dup), "{s:?}");
        assert!((10..=150).contains(&s.reordered), "{s:?}");
        // 3 ms of jitter on frames microseconds apart: reordered a lot.
        assert!(seen.descents > 100, "{seen:?}");
    }
}

#[test]
fn same_seed_same_faults() {
    let _serial = serial();
    let run = |name: &str| {
        let (mut a, mut b) = guests();
        let args = ["--seed", "7", "--loss", "5", "--dup", "5", "--reorder", "5"];
        let relay = Relay::start(name, &mut a, &mut b, None, &args);
        exchange(&mut a, &mut b, 0..3000, false);
        relay.account(3000, &mut a, &mut b);
        let stats = relay.stop();
        check_accounts(&stats, 3000, &a, &b);
        let seen = [b.got, a.got].map(|got| {
            let s = seen(&got, 0..3000);
            (s.missing, s.dups)
        });
        (stats, seen)
    };
    let (stats1, seen1) = run("seed1");
    let (stats2, seen2) = run("seed2");
    assert_eq!(
        seen1, seen2,
        "the same seed dropped or duplicated other frames"
    );
    for (s1, s2) in stats1.iter().zip(&stats2) {
        assert_eq!(s1, s2);
    }
    // The two directions have streams of their own.
    assert_ne!(seen1[0], seen1[1]);
}

#[test]
fn bad_command_lines_are_refused() {
    let _serial = serial();
    let base = ["--a-listen", "0", "--b-listen", "0"];
    for extra in [
        &["--a-guest", "5", "--b-guest", "6", "--loss", "150"][..],
        &["--a-guest", "5", "--b-guest", "6", "--dup", "x"][..],
        &["--a-guest", "0", "--b-guest", "6"][..],
    ] {
        let out = Command::new(RELAY)
            .args(base)
            .args(extra)
            .output()
            .expect("run krust-relay");
        assert!(!out.status.success(), "{extra:?} accepted");
    }
}
