// SPDX-License-Identifier: GPL-2.0

//! The message protocol on the wire (`Documentation/flow-control.rst`,
//! `Documentation/wire-protocol.rst`): its constants, the header in front of
//! every SEND, and [`WireRx`], the checks every received SEND passes before
//! anything in it is used. A child of `abi`, so compiled into the module and
//! the tool alike; `core` only.

/// Largest message of [`super::IOCTL_SEND`] / [`super::IOCTL_RECV`].
pub const MAX_MSG_SIZE: u64 = 2 << 20;

/// Receives each side keeps posted. Part of the wire protocol: a peer that
/// talks to the module must post as many (see `Documentation/flow-control.rst`).
pub const RECV_DEPTH: u32 = 40;

/// Size of each posted receive buffer. Part of the wire protocol.
pub const RECV_BUF_SIZE: u32 = 64 * 1024;

/// Size of the header in front of every message fragment. Part of the wire
/// protocol.
pub const WIRE_HDR_SIZE: u32 = 16;

/// Payload bytes of a full fragment.
pub const WIRE_FRAG: u32 = RECV_BUF_SIZE - WIRE_HDR_SIZE;

/// Fragments of the largest message: a SEND of it needs one credit more.
pub const MAX_MSG_FRAGS: u32 = (MAX_MSG_SIZE as u32).div_ceil(RECV_BUF_SIZE - WIRE_HDR_SIZE);

/// A side returns credits in a credit-only message once this many reposted
/// receives wait to be granted (or at once when the peer says LOW). It is
/// the most a sender blocked on the largest message can leave ungranted:
/// once the receiver has consumed everything, a blocked sender holds at most
/// [`MAX_MSG_FRAGS`] credits, so at least this many wait, and go back. Part
/// of the wire protocol (`Documentation/flow-control.rst`).
pub const GRANT_BATCH: u32 = RECV_DEPTH - MAX_MSG_FRAGS;

const _: () = assert!(MAX_MSG_FRAGS < RECV_DEPTH && GRANT_BATCH >= 1);

/// Wire-header flag: first fragment of a message.
pub const WIRE_FIRST: u8 = 1;
/// Wire-header flag: last fragment of a message.
pub const WIRE_LAST: u8 = 2;
/// Wire-header flag: no payload, only credits.
pub const WIRE_CREDIT: u8 = 4;
/// Wire-header flag: the sender has fewer than 2 credits left.
pub const WIRE_LOW: u8 = 8;
/// Version byte of the wire header.
pub const WIRE_VERSION: u8 = 1;

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

/// Every flag a header of [`WIRE_VERSION`] may carry.
pub const WIRE_FLAGS: u8 = WIRE_FIRST | WIRE_LAST | WIRE_CREDIT | WIRE_LOW;

/// How a received SEND breaks the message protocol. Each one costs the
/// connection (`EPROTO`); `Documentation/wire-protocol.rst` has the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFault {
    /// Shorter than a header, another version, or reserved bytes not zero.
    Header,
    /// A flag this version does not define.
    Flags,
    /// The grant would leave the receiver more credits than it has
    /// receives posted ([`RECV_DEPTH`]).
    Grant,
    /// A credit-only message with a payload, a length, an offset, or
    /// FIRST/LAST.
    Credit,
    /// `msg_len` above [`MAX_MSG_SIZE`].
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
        }
    }
}

/// What a receiver of the message protocol knows of the peer's stream, so
/// that every SEND can be checked before anything in it is used.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WireRx {
    /// The message being received: its `msg_len` and the offset its next
    /// fragment must have.
    partial: Option<(u32, u32)>,
}

impl WireRx {
    /// Checks one received SEND, `b` (exactly the bytes received), against
    /// the protocol and this stream. `credits` are the receiver's credits
    /// before it. Returns the header, and the credits after adding its
    /// grant (never above [`RECV_DEPTH`]); nothing changes on a fault.
    pub fn check(&mut self, b: &[u8], credits: u32) -> Result<(WireHdr, u32), WireFault> {
        let hdr = WireHdr::decode(b).ok_or(WireFault::Header)?;
        if hdr.flags & !WIRE_FLAGS != 0 {
            return Err(WireFault::Flags);
        }
        let credits = credits
            .checked_add(hdr.grant)
            .filter(|c| *c <= RECV_DEPTH)
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
        if u64::from(hdr.msg_len) > MAX_MSG_SIZE {
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

/// The SEND bandwidth benchmark on iWARP, which has no receiver-not-ready
/// retry (a SEND that finds no receive posted ends the connection): the sink
/// sends back how many messages it has received and reposted a receive for,
/// after every this many and after the last. The sender keeps at most
/// [`RECV_DEPTH`] messages beyond the last count. Part of the wire protocol
/// (`Documentation/wire-protocol.rst`).
pub const BENCH_COUNT_EVERY: u32 = 8;

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
