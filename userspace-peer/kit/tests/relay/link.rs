// SPDX-License-Identifier: GPL-2.0

//! The guest side of the relay tests: stand-in guests that are UDP sockets
//! on 127.0.0.1 (`Guest`), the numbered frames they send (`frame`), the
//! batched exchange of frames through the relay (`exchange`, `settle`) and
//! the comparison of what a guest got with what was sent to it (`Seen`,
//! `seen`).

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::ops::Range;
use std::thread;
use std::time::{Duration, Instant};

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
pub(crate) struct Guest {
    /// The guest's port (its `local.port`).
    sock: UdpSocket,
    /// The tag of the frames it sends.
    pub(crate) tag: u8,
    /// The tag of the frames it should receive.
    peer_tag: u8,
    /// The relay's socket for this guest (its `remote.port`).
    pub(crate) relay: Option<SocketAddr>,
    /// Sequence numbers received, in arrival order.
    pub(crate) got: Vec<u32>,
    /// The highest sequence number received.
    max_seq: Option<u32>,
    /// Receive buffer.
    buf: Vec<u8>,
}

impl Guest {
    /// A guest on a free port of 127.0.0.1.
    pub(crate) fn new(tag: u8, peer_tag: u8) -> Guest {
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
    pub(crate) fn port(&self) -> u16 {
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
    pub(crate) fn drain(&mut self) -> bool {
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
pub(crate) fn exchange(a: &mut Guest, b: &mut Guest, seqs: Range<u32>, complete: bool) {
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
pub(crate) struct Seen {
    /// Frames not received.
    pub(crate) missing: Vec<u32>,
    /// Frames received more than once, once per extra copy.
    pub(crate) dups: Vec<u32>,
    /// Places where a frame arrived after a later one.
    pub(crate) descents: usize,
}

/// Compares what a guest got with what was sent to it.
pub(crate) fn seen(got: &[u32], sent: Range<u32>) -> Seen {
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
