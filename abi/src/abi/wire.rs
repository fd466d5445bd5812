// SPDX-License-Identifier: GPL-2.0

//! The message protocol on the wire (`Documentation/flow-control.rst`,
//! `Documentation/wire-protocol.rst`): the header in front of every SEND,
//! the announce of a message the receiver READs, the setup data, and
//! [`WireRx`], the checks every received SEND passes before anything in it
//! is used. Its sizes and flags are the uapi header's; a child of `abi`,
//! so compiled into the module and the tool alike; `core` only.

use super::{
    ANNOUNCE_WINDOW, MAX_INLINE_MSG, MAX_MSG_SIZE, MIN_RECV_DEPTH, MSG_RECV_BUF_SIZE,
    MSG_RECV_DEPTH, READ_SEGS, READ_SEG_SIZE, READ_SEG_WIRE_SIZE, RECV_DEPTH, SETUP_DATA_SIZE,
    SETUP_READS, WIRE_CREDIT, WIRE_DONE, WIRE_FIRST, WIRE_FLAGS, WIRE_HDR_SIZE, WIRE_LAST,
    WIRE_LOW, WIRE_READ, WIRE_VERSION,
};

// The header states the protocol's derived sizes as numbers; they must be
// what the rules make of the others (`Documentation/flow-control.rst`): an
// inline message fills a receive after its header, an announce's segments
// fit inline and cover the largest message, and the default depth is one
// a side may choose.
const _: () = assert!(MAX_INLINE_MSG == MSG_RECV_BUF_SIZE - WIRE_HDR_SIZE);
const _: () = assert!(READ_SEGS * READ_SEG_WIRE_SIZE <= MAX_INLINE_MSG);
const _: () = assert!(READ_SEGS as u64 * READ_SEG_SIZE as u64 == MAX_MSG_SIZE);
const _: () =
    assert!(WIRE_FLAGS == WIRE_FIRST | WIRE_LAST | WIRE_CREDIT | WIRE_LOW | WIRE_READ | WIRE_DONE);
const _: () = assert!(MIN_RECV_DEPTH >= 2);
const _: () = assert!(ANNOUNCE_WINDOW >= 1);
const _: () = assert!(MIN_RECV_DEPTH <= MSG_RECV_DEPTH && MSG_RECV_DEPTH <= RECV_DEPTH);

/// Reposted receives that make a receiver of `depth` receives return
/// credits in a credit-only message even though its peer has not said it
/// is low: half of them. A peer that runs low says so, and gets every
/// credit there is at once (`Documentation/flow-control.rst`).
pub const fn grant_batch(depth: u32) -> u32 {
    if depth < 2 {
        1
    } else {
        depth / 2
    }
}

/// What a side of the message protocol tells its peer while connecting, in
/// the private data of its connect request or its reply: its receive depth
/// and whether it READs announced messages. 8 bytes, big-endian: `{u8 'R',
/// u8 'K', u8 version, u8 flags, be32 recv_depth}`. See
/// `Documentation/wire-protocol.rst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupData {
    /// Receives the sender keeps posted, [`MIN_RECV_DEPTH`] to
    /// [`RECV_DEPTH`]: the credits its peer starts with.
    pub recv_depth: u32,
    /// The sender READs announced messages ([`SETUP_READS`]): its peer may
    /// send it messages longer than [`MAX_INLINE_MSG`].
    pub reads: bool,
}

impl SetupData {
    /// What a peer that sends no setup data (rping, perftest) is taken to
    /// have: [`RECV_DEPTH`] receives, no READs.
    pub const FOREIGN: Self = Self {
        recv_depth: RECV_DEPTH,
        reads: false,
    };

    /// The 8 wire bytes.
    pub const fn encode(&self) -> [u8; SETUP_DATA_SIZE] {
        let d = self.recv_depth.to_be_bytes();
        let flags = if self.reads { SETUP_READS } else { 0 };
        [b'R', b'K', WIRE_VERSION, flags, d[0], d[1], d[2], d[3]]
    }

    /// Reads the peer's setup data from the private data `b` it connected
    /// or accepted with (IB and RoCE pad it with zeros). `Ok(None)` if it
    /// does not start with `RK`: a peer that does not send it. `Err` if it
    /// does but is short, of another version, has an unknown flag, or a
    /// depth out of range: that costs the connection.
    pub fn decode(b: &[u8]) -> Result<Option<Self>, WireFault> {
        if b.get(..2) != Some(b"RK".as_slice()) {
            return Ok(None);
        }
        let b: &[u8; SETUP_DATA_SIZE] = b
            .get(..SETUP_DATA_SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(WireFault::Setup)?;
        let recv_depth = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        if b[2] != WIRE_VERSION
            || b[3] & !SETUP_READS != 0
            || !(MIN_RECV_DEPTH..=RECV_DEPTH).contains(&recv_depth)
        {
            return Err(WireFault::Setup);
        }
        Ok(Some(Self {
            recv_depth,
            reads: b[3] & SETUP_READS != 0,
        }))
    }

    /// The peer's setup data from the private data `b` it connected or
    /// accepted with, or [`Self::FOREIGN`] if it sent none
    /// ([`Self::decode`]).
    pub fn of_peer(b: &[u8]) -> Result<Self, WireFault> {
        Ok(Self::decode(b)?.unwrap_or(Self::FOREIGN))
    }
}

/// The header in front of every SEND of the message protocol, 16 bytes,
/// big-endian: `{u8 version, u8 flags, u16 zero, be32 grant, be32 msg_len,
/// be32 offset}`. See `Documentation/wire-protocol.rst`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireHdr {
    /// `WIRE_*` flags.
    pub flags: u8,
    /// Receives the sender reposted since its previous message: credits
    /// returned to the receiver of this header.
    pub grant: u32,
    /// Length of the message.
    pub msg_len: u32,
    /// Zero: a message is one SEND (the field stays for a later version).
    pub offset: u32,
}

impl WireHdr {
    /// The header of a message of `msg_len` bytes, as every sender sends
    /// it: inline up to [`MAX_INLINE_MSG`], an announce (READ) above; LOW
    /// if `low`.
    pub fn message(msg_len: u32, grant: u32, low: bool) -> Self {
        let mut flags = WIRE_FIRST | WIRE_LAST;
        if msg_len > MAX_INLINE_MSG {
            flags |= WIRE_READ;
        }
        if low {
            flags |= WIRE_LOW;
        }
        Self {
            flags,
            grant,
            msg_len,
            offset: 0,
        }
    }

    /// A credit-only header: `grant` credits, LOW if `low`, DONE if `done`.
    pub fn credit(grant: u32, low: bool, done: bool) -> Self {
        let mut flags = WIRE_CREDIT;
        if low {
            flags |= WIRE_LOW;
        }
        if done {
            flags |= WIRE_DONE;
        }
        Self {
            flags,
            grant,
            msg_len: 0,
            offset: 0,
        }
    }

    /// The 16 wire bytes.
    pub fn encode(&self) -> [u8; WIRE_HDR_SIZE as usize] {
        let g = self.grant.to_be_bytes();
        let l = self.msg_len.to_be_bytes();
        let o = self.offset.to_be_bytes();
        [
            WIRE_VERSION,
            self.flags,
            0,
            0,
            g[0],
            g[1],
            g[2],
            g[3],
            l[0],
            l[1],
            l[2],
            l[3],
            o[0],
            o[1],
            o[2],
            o[3],
        ]
    }

    /// Parses the header at the start of `b`; `None` if it is short, of
    /// another version, or its reserved bytes are not zero.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b: &[u8; WIRE_HDR_SIZE as usize] = b.get(..WIRE_HDR_SIZE as usize)?.try_into().ok()?;
        if b[0] != WIRE_VERSION || b[2] != 0 || b[3] != 0 {
            return None;
        }
        Some(Self {
            flags: b[1],
            grant: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            msg_len: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            offset: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        })
    }
}

/// One segment of an announce: `len` bytes of the sender's memory at
/// `addr` under `rkey`, for the receiver to READ. 16 bytes, big-endian:
/// `{be64 addr, be32 rkey, be32 len}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadSeg {
    /// Address of the segment in the sender's memory region.
    pub addr: u64,
    /// The key the sender registered the segment under.
    pub rkey: u32,
    /// Its length, 1 to [`READ_SEG_SIZE`].
    pub len: u32,
}

impl ReadSeg {
    /// The 16 wire bytes.
    pub fn encode(&self) -> [u8; READ_SEG_WIRE_SIZE as usize] {
        let mut b = [0u8; READ_SEG_WIRE_SIZE as usize];
        b[..8].copy_from_slice(&self.addr.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// The segment in the 16 bytes `b`.
    fn decode(b: &[u8; READ_SEG_WIRE_SIZE as usize]) -> Self {
        Self {
            addr: u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            rkey: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            len: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        }
    }

    /// The lengths a sender cuts a message of `msg_len` bytes into:
    /// [`READ_SEG_SIZE`] each but the last.
    pub fn lens(msg_len: u32) -> impl Iterator<Item = u32> {
        let n = msg_len.div_ceil(READ_SEG_SIZE);
        (0..n).map(move |i| (msg_len - i * READ_SEG_SIZE).min(READ_SEG_SIZE))
    }

    /// The segments of an announce's payload `b`, which [`WireRx::check`]
    /// has accepted; nothing for bytes it would refuse.
    pub fn parse(b: &[u8]) -> impl Iterator<Item = ReadSeg> + '_ {
        // Not `is_multiple_of()`: the kernel's minimum Rust (1.78) lacks it.
        let whole = b
            .chunks_exact(READ_SEG_WIRE_SIZE as usize)
            .remainder()
            .is_empty();
        b.chunks_exact(READ_SEG_WIRE_SIZE as usize)
            .filter(move |_| whole)
            .filter_map(|c| c.try_into().ok().map(Self::decode))
    }

    /// Checks an announce's payload `b` for a message of `msg_len` bytes:
    /// 1 to [`READ_SEGS`] whole segments, each of 1 to [`READ_SEG_SIZE`]
    /// bytes that do not wrap the address space, adding up to `msg_len`.
    fn check_all(b: &[u8], msg_len: u32) -> Result<(), WireFault> {
        let n = b.len() / READ_SEG_WIRE_SIZE as usize;
        let ragged = !b
            .chunks_exact(READ_SEG_WIRE_SIZE as usize)
            .remainder()
            .is_empty();
        if ragged || n == 0 || n > READ_SEGS as usize {
            return Err(WireFault::Announce);
        }
        let mut sum: u64 = 0;
        for s in Self::parse(b) {
            if s.len == 0 || s.len > READ_SEG_SIZE || s.addr.checked_add(u64::from(s.len)).is_none()
            {
                return Err(WireFault::Announce);
            }
            sum += u64::from(s.len);
        }
        if sum != u64::from(msg_len) {
            return Err(WireFault::Announce);
        }
        Ok(())
    }
}

/// How a received SEND breaks the message protocol. Each one costs the
/// connection (`EPROTO`); `Documentation/wire-protocol.rst` has the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFault {
    /// Shorter than a header, another version, or reserved bytes not zero.
    Header,
    /// A flag this version does not define.
    Flags,
    /// The grant would leave the receiver more credits than the peer has
    /// receives posted (its depth).
    Grant,
    /// A credit-only message with a payload, a length, an offset, or
    /// FIRST, LAST or READ.
    Credit,
    /// A message without both FIRST and LAST, or with an offset: every
    /// message is one SEND.
    Whole,
    /// An inline message longer than [`MAX_INLINE_MSG`], or an announce of
    /// one that is not longer, or longer than [`MAX_MSG_SIZE`].
    MsgLen,
    /// An inline message whose payload is not `msg_len` bytes.
    Length,
    /// An announce whose segments are not 1 to [`READ_SEGS`] of 1 to
    /// [`READ_SEG_SIZE`] bytes, wrap the address space, or do not add up
    /// to `msg_len`.
    Announce,
    /// An announce to a side that does not READ them, or before this side
    /// said DONE to the previous one.
    Unasked,
    /// DONE when no announce of this side's waits for it.
    Done,
    /// A bandwidth sink's count ([`bench_count`]) that is not 8 bytes, does
    /// not advance, or counts messages that were never sent.
    Count,
    /// Setup data ([`SetupData`]) that is short, of another version, with
    /// an unknown flag, or with a receive depth out of range.
    Setup,
}

impl WireFault {
    /// A few words for the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Header => "malformed header",
            Self::Flags => "unknown flags",
            Self::Grant => "grant beyond the receive queue",
            Self::Credit => "credit message with data",
            Self::Whole => "message not whole",
            Self::MsgLen => "message length",
            Self::Length => "payload length",
            Self::Announce => "bad announce",
            Self::Unasked => "announce not allowed",
            Self::Done => "DONE not owed",
            Self::Count => "benchmark count out of order",
            Self::Setup => "bad setup data",
        }
    }
}

/// What a receiver of the message protocol knows of the peer's stream, so
/// that every SEND can be checked before anything in it is used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireRx {
    /// The peer's receive depth: it bounds the credits grants give back.
    peer_depth: u32,
    /// This side READs announces (it said so in its setup data).
    reads: bool,
    /// The peer's announces this side has not answered with DONE yet (at
    /// most [`ANNOUNCE_WINDOW`]).
    peer_announces: u32,
    /// This side's announces that wait for the peer's DONE (at most
    /// [`ANNOUNCE_WINDOW`]); each DONE answers the oldest.
    awaiting_done: u32,
}

impl Default for WireRx {
    /// A peer at the message default depth, and this side READs.
    fn default() -> Self {
        Self::new(MSG_RECV_DEPTH, true)
    }
}

impl WireRx {
    /// A fresh stream from a peer of `peer_depth` receives to a side that
    /// READs announces if `reads`.
    pub fn new(peer_depth: u32, reads: bool) -> Self {
        Self {
            peer_depth,
            reads,
            peer_announces: 0,
            awaiting_done: 0,
        }
    }

    /// Sets the peer's depth, once its setup data is known.
    pub fn set_peer_depth(&mut self, peer_depth: u32) {
        self.peer_depth = peer_depth;
    }

    /// This side is about to send an announce: a DONE of the peer's is
    /// due for it. Only when [`Self::may_announce`].
    pub fn announce_sent(&mut self) {
        self.awaiting_done = self.awaiting_done.saturating_add(1);
    }

    /// Whether an announce of this side's still waits for the peer's DONE.
    pub fn awaiting_done(&self) -> bool {
        self.awaiting_done > 0
    }

    /// Whether this side may announce now: fewer than
    /// [`ANNOUNCE_WINDOW`] of its announces wait for the peer's DONE.
    pub fn may_announce(&self) -> bool {
        self.awaiting_done < ANNOUNCE_WINDOW
    }

    /// This side is about to send DONE for the oldest of the peer's
    /// announces: the peer may announce one more.
    pub fn done_sent(&mut self) {
        self.peer_announces = self.peer_announces.saturating_sub(1);
    }

    /// A DONE that [`Self::done_sent`] was told of could not be sent after
    /// all: that announce of the peer's is still unanswered.
    pub fn done_unsent(&mut self) {
        self.peer_announces = self.peer_announces.saturating_add(1);
    }

    /// Checks one received SEND, `b` (exactly the bytes received), against
    /// the protocol and this stream. `credits` are the receiver's credits
    /// before it. Returns the header, and the credits after adding its
    /// grant (never above the peer's depth); nothing changes on a fault.
    pub fn check(&mut self, b: &[u8], credits: u32) -> Result<(WireHdr, u32), WireFault> {
        let hdr = WireHdr::decode(b).ok_or(WireFault::Header)?;
        if hdr.flags & !WIRE_FLAGS != 0 {
            return Err(WireFault::Flags);
        }
        let credits = credits
            .checked_add(hdr.grant)
            .filter(|c| *c <= self.peer_depth)
            .ok_or(WireFault::Grant)?;
        let done = hdr.flags & WIRE_DONE != 0;
        if done && self.awaiting_done == 0 {
            return Err(WireFault::Done);
        }
        let payload = &b[WIRE_HDR_SIZE as usize..];
        let announce = hdr.flags & WIRE_READ != 0;
        if hdr.flags & WIRE_CREDIT != 0 {
            if !payload.is_empty()
                || hdr.msg_len != 0
                || hdr.offset != 0
                || hdr.flags & (WIRE_FIRST | WIRE_LAST | WIRE_READ) != 0
            {
                return Err(WireFault::Credit);
            }
        } else if hdr.flags & (WIRE_FIRST | WIRE_LAST) != WIRE_FIRST | WIRE_LAST || hdr.offset != 0
        {
            return Err(WireFault::Whole);
        } else if announce {
            if !self.reads || self.peer_announces >= ANNOUNCE_WINDOW {
                return Err(WireFault::Unasked);
            }
            if hdr.msg_len <= MAX_INLINE_MSG || u64::from(hdr.msg_len) > MAX_MSG_SIZE {
                return Err(WireFault::MsgLen);
            }
            ReadSeg::check_all(payload, hdr.msg_len)?;
        } else {
            if hdr.msg_len > MAX_INLINE_MSG {
                return Err(WireFault::MsgLen);
            }
            if payload.len() != hdr.msg_len as usize {
                return Err(WireFault::Length);
            }
        }
        if done {
            self.awaiting_done -= 1;
        }
        if announce {
            self.peer_announces += 1;
        }
        Ok((hdr, credits))
    }
}

/// A bandwidth sink's count: 8 bytes, big-endian.
pub fn bench_count_encode(n: u32) -> [u8; 8] {
    u64::from(n).to_be_bytes()
}

/// Checks a received bandwidth count `b` (exactly the bytes received), from
/// a sink that had counted `acked` of the `sent` messages sent so far:
/// returns the new count, which advances and counts only what was sent.
pub fn bench_count(b: &[u8], acked: u32, sent: u32) -> Result<u32, WireFault> {
    let bytes: [u8; 8] = b.try_into().map_err(|_| WireFault::Count)?;
    u32::try_from(u64::from_be_bytes(bytes))
        .ok()
        .filter(|n| *n > acked && *n <= sent)
        .ok_or(WireFault::Count)
}
