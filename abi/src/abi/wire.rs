// SPDX-License-Identifier: GPL-2.0

//! The message protocol on the wire (`Documentation/flow-control.rst`,
//! `Documentation/wire-protocol.rst`): the header in front of every SEND,
//! the setup data, and [`WireRx`], the checks every received SEND passes
//! before anything in it is used. Its sizes and flags are the uapi
//! header's; a child of `abi`, so compiled into the module and the tool
//! alike; `core` only.

use super::{
    GRANT_BATCH, MAX_MSG_FRAGS, MAX_MSG_SIZE, MIN_RECV_DEPTH, RECV_BUF_SIZE, RECV_DEPTH,
    SETUP_DATA_SIZE, WIRE_CREDIT, WIRE_FIRST, WIRE_FLAGS, WIRE_FRAG, WIRE_HDR_SIZE, WIRE_LAST,
    WIRE_LOW, WIRE_VERSION,
};

// The header states the protocol's derived sizes as numbers; they must be
// what the rules make of the others (`Documentation/flow-control.rst`): a
// fragment fills a receive after its header, the largest message is whole
// fragments, and a sender blocked on it leaves at least GRANT_BATCH
// receives to grant back.
const _: () = assert!(WIRE_FRAG == RECV_BUF_SIZE - WIRE_HDR_SIZE);
const _: () = assert!(MAX_MSG_FRAGS == (MAX_MSG_SIZE as u32).div_ceil(WIRE_FRAG));
const _: () = assert!(GRANT_BATCH == RECV_DEPTH - MAX_MSG_FRAGS);
const _: () = assert!(WIRE_FLAGS == WIRE_FIRST | WIRE_LAST | WIRE_CREDIT | WIRE_LOW);
const _: () = assert!(MIN_RECV_DEPTH >= 2);
const _: () = assert!(MAX_MSG_FRAGS < RECV_DEPTH && GRANT_BATCH >= 1);

/// Fragments of the largest message a receiver of `depth` receives takes:
/// a sender holds a credit more than the message's fragments, so at most
/// `depth - 1`. [`MAX_MSG_FRAGS`] at the default depth.
pub const fn max_msg_frags(depth: u32) -> u32 {
    let most = depth.saturating_sub(1);
    if most < MAX_MSG_FRAGS {
        most
    } else {
        MAX_MSG_FRAGS
    }
}

/// The largest message a receiver of `depth` receives takes: every
/// fragment of a message is in its receives at once (IOCTL_RECV delivers
/// whole messages), so a smaller depth lowers it. [`MAX_MSG_SIZE`] at the
/// default depth.
pub const fn max_msg_size(depth: u32) -> u64 {
    let fits = max_msg_frags(depth) as u64 * WIRE_FRAG as u64;
    if fits < MAX_MSG_SIZE {
        fits
    } else {
        MAX_MSG_SIZE
    }
}

/// [`GRANT_BATCH`] of a receiver of `depth` receives.
pub const fn grant_batch(depth: u32) -> u32 {
    depth - max_msg_frags(depth)
}

const _: () =
    assert!(max_msg_size(RECV_DEPTH) == MAX_MSG_SIZE && grant_batch(RECV_DEPTH) == GRANT_BATCH);

/// What a side of the message protocol tells its peer while connecting, in
/// the private data of its connect request or its reply: its receive depth.
/// 8 bytes, big-endian: `{u8 'R', u8 'K', u8 version, u8 zero, be32
/// recv_depth}`. See `Documentation/wire-protocol.rst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetupData {
    /// Receives the sender keeps posted, [`MIN_RECV_DEPTH`] to
    /// [`RECV_DEPTH`]: the credits its peer starts with.
    pub recv_depth: u32,
}

impl SetupData {
    /// The 8 wire bytes.
    pub const fn encode(&self) -> [u8; SETUP_DATA_SIZE] {
        let d = self.recv_depth.to_be_bytes();
        [b'R', b'K', WIRE_VERSION, 0, d[0], d[1], d[2], d[3]]
    }

    /// Reads the peer's setup data from the private data `b` it connected
    /// or accepted with (IB and RoCE pad it with zeros). `Ok(None)` if it
    /// does not start with `RK`: a peer that does not send it (rping,
    /// perftest), which posts [`RECV_DEPTH`] receives. `Err` if it does but
    /// is short, of another version, has its reserved byte set, or a depth
    /// out of range: that costs the connection.
    pub fn decode(b: &[u8]) -> Result<Option<Self>, WireFault> {
        if b.get(..2) != Some(b"RK".as_slice()) {
            return Ok(None);
        }
        let b: &[u8; SETUP_DATA_SIZE] = b
            .get(..SETUP_DATA_SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(WireFault::Setup)?;
        let recv_depth = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        if b[2] != WIRE_VERSION || b[3] != 0 || !(MIN_RECV_DEPTH..=RECV_DEPTH).contains(&recv_depth)
        {
            return Err(WireFault::Setup);
        }
        Ok(Some(Self { recv_depth }))
    }

    /// The peer's receive depth from the private data `b` it connected or
    /// accepted with: its setup data's, or [`RECV_DEPTH`] if it sent none
    /// ([`Self::decode`]).
    pub fn peer_depth(b: &[u8]) -> Result<u32, WireFault> {
        Ok(Self::decode(b)?.map_or(RECV_DEPTH, |s| s.recv_depth))
    }
}

/// The header in front of every SEND of the message protocol, 16 bytes,
/// big-endian: `{u8 version, u8 flags, u16 zero, be32 grant, be32 msg_len,
/// be32 offset}`. See `Documentation/flow-control.rst`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WireHdr {
    /// `WIRE_*` flags.
    pub flags: u8,
    /// Receives the sender reposted since its previous message: credits
    /// returned to the receiver of this header.
    pub grant: u32,
    /// Length of the whole message.
    pub msg_len: u32,
    /// Offset of this fragment's payload in the message.
    pub offset: u32,
}

impl WireHdr {
    /// The header of fragment `i` of a message of `msg_len` bytes, as
    /// every sender cuts it: payloads of [`WIRE_FRAG`] bytes but the last,
    /// FIRST on fragment 0, LAST on the last one (a message has
    /// `msg_len.div_ceil(WIRE_FRAG).max(1)`), LOW if `low`.
    pub fn fragment(msg_len: u32, i: u32, grant: u32, low: bool) -> Self {
        let frags = msg_len.div_ceil(WIRE_FRAG).max(1);
        let mut flags = if low { WIRE_LOW } else { 0 };
        if i == 0 {
            flags |= WIRE_FIRST;
        }
        if i + 1 == frags {
            flags |= WIRE_LAST;
        }
        Self {
            flags,
            grant,
            msg_len,
            offset: i.saturating_mul(WIRE_FRAG),
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

/// How a received SEND breaks the message protocol. Each one costs the
/// connection (`EPROTO`); `Documentation/wire-protocol.rst` has the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFault {
    /// Shorter than a header, another version, or reserved bytes not zero.
    Header,
    /// A flag this version does not define.
    Flags,
    /// The grant would leave the receiver more credits than the peer has
    /// receives posted (its depth, [`RECV_DEPTH`] by default).
    Grant,
    /// A credit-only message with a payload, a length, an offset, or
    /// FIRST/LAST.
    Credit,
    /// `msg_len` above what the receiver's depth takes ([`max_msg_size`]).
    MsgLen,
    /// A message that starts without FIRST, or FIRST inside a message.
    First,
    /// A fragment whose `msg_len` or `offset` is not the next one of the
    /// message in progress.
    Sequence,
    /// A payload longer or shorter than `msg_len` and `offset` imply.
    Length,
    /// LAST where the message goes on, or missing where it ends.
    Last,
    /// A bandwidth sink's count ([`bench_count`]) that is not 8 bytes, does
    /// not advance, or counts messages that were never sent.
    Count,
    /// Setup data ([`SetupData`]) that is short, of another version, or
    /// with a receive depth out of range.
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
            Self::MsgLen => "message too long",
            Self::First => "misplaced FIRST",
            Self::Sequence => "fragment out of sequence",
            Self::Length => "fragment length",
            Self::Last => "misplaced LAST",
            Self::Count => "benchmark count out of order",
            Self::Setup => "bad setup data",
        }
    }
}

/// What a receiver of the message protocol knows of the peer's stream, so
/// that every SEND can be checked before anything in it is used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireRx {
    /// The message being received: its `msg_len` and the offset its next
    /// fragment must have.
    partial: Option<(u32, u32)>,
    /// This side's receive depth: it bounds a message's length.
    depth: u32,
    /// The peer's receive depth: it bounds the credits grants give back.
    peer_depth: u32,
}

impl Default for WireRx {
    /// Both sides at the default depth.
    fn default() -> Self {
        Self::new(RECV_DEPTH, RECV_DEPTH)
    }
}

impl WireRx {
    /// A fresh stream between a receiver of `depth` receives and a peer of
    /// `peer_depth`.
    pub fn new(depth: u32, peer_depth: u32) -> Self {
        Self {
            partial: None,
            depth,
            peer_depth,
        }
    }

    /// Sets the peer's depth, once its setup data is known.
    pub fn set_peer_depth(&mut self, peer_depth: u32) {
        self.peer_depth = peer_depth;
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
        let payload = b.len() - WIRE_HDR_SIZE as usize;
        if hdr.flags & WIRE_CREDIT != 0 {
            if payload != 0
                || hdr.msg_len != 0
                || hdr.offset != 0
                || hdr.flags & (WIRE_FIRST | WIRE_LAST) != 0
            {
                return Err(WireFault::Credit);
            }
            return Ok((hdr, credits));
        }
        if u64::from(hdr.msg_len) > max_msg_size(self.depth) {
            return Err(WireFault::MsgLen);
        }
        let first = hdr.flags & WIRE_FIRST != 0;
        match self.partial {
            None if !first || hdr.offset != 0 => return Err(WireFault::First),
            Some(_) if first => return Err(WireFault::First),
            Some((len, next)) if hdr.msg_len != len || hdr.offset != next => {
                return Err(WireFault::Sequence)
            }
            _ => {}
        }
        // `offset` <= `msg_len` here: 0 for a first fragment, and a next
        // offset only ever stays within its message.
        let frag = (RECV_BUF_SIZE - WIRE_HDR_SIZE) as usize;
        let left = (hdr.msg_len - hdr.offset) as usize;
        if payload != left.min(frag) {
            return Err(WireFault::Length);
        }
        let last = payload == left;
        if last != (hdr.flags & WIRE_LAST != 0) {
            return Err(WireFault::Last);
        }
        self.partial = if last {
            None
        } else {
            // `payload` < `left`, so this stays within `msg_len`.
            Some((hdr.msg_len, hdr.offset + payload as u32))
        };
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
