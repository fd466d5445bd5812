// SPDX-License-Identifier: GPL-2.0

//! The relay side of the relay tests: the `krust-relay` binary cargo built
//! (`RELAY`), a running relay with its control and stats files (`Relay`,
//! killed and cleaned up on drop), its counters as its stats lines give
//! them (`Stats`, `parse_stats`), the two stand-in guests a run uses
//! (`guests`) and the check that the counters agree with what the guests
//! got (`check_accounts`).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::link::Guest;

/// The relay binary cargo built for this test.
pub(crate) const RELAY: &str = env!("CARGO_BIN_EXE_krust-relay");
/// How long a run may take to account for every frame at its end.
const ACCOUNT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for an expected line of the relay's output.
const LINE_TIMEOUT: Duration = Duration::from_secs(10);

/// One direction's counters from the relay's stats lines.
#[derive(Debug, Default, PartialEq, Clone, Copy)]
pub(crate) struct Stats {
    rx: u64,
    pub(crate) tx: u64,
    pub(crate) lost: u64,
    pub(crate) down: u64,
    pub(crate) dup: u64,
    pub(crate) reordered: u64,
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
pub(crate) struct Relay {
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
    pub(crate) fn start(
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
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Waits for (and returns) the next line of output containing `pat`.
    pub(crate) fn wait_line(&mut self, pat: &str) -> String {
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
    pub(crate) fn control(&self, text: &str) {
        let tmp = self.file("control.tmp");
        fs::write(&tmp, text).expect("write the control file");
        fs::rename(&tmp, self.file("control")).expect("rename the control file");
    }

    /// Waits until the stats file accounts for all `sent` frames each way
    /// (received, and sent on, dropped or failed; none still queued) and the
    /// guests have received every datagram the relay sent, receiving
    /// meanwhile. The stats file is rewritten every second.
    pub(crate) fn account(&self, sent: u64, a: &mut Guest, b: &mut Guest) {
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
    pub(crate) fn stop(mut self) -> [Stats; 2] {
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
pub(crate) fn guests() -> (Guest, Guest) {
    (Guest::new(b'A', b'B'), Guest::new(b'B', b'A'))
}

/// Checks the counters agree with what the guests got: every frame received
/// is accounted for, and what went out is what arrived.
pub(crate) fn check_accounts(stats: &[Stats; 2], sent: u64, a: &Guest, b: &Guest) {
    // stats[0] is a->b: what B got; stats[1] is b->a: what A got.
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        assert_eq!(s.rx, sent, "{s:?}");
        assert_eq!((s.err, s.kdrop), (0, 0), "{s:?}");
        assert_eq!(s.rx + s.dup, s.tx + s.lost + s.down + s.err, "{s:?}");
        assert_eq!(s.tx, got.len() as u64, "{s:?}");
    }
}
