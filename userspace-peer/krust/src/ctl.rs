// SPDX-License-Identifier: GPL-2.0

//! The small control protocol of the tool's test scenarios, carried in
//! SEND/RECV messages between a target (which exposes a window) and an
//! initiator (which runs one-sided operations on it).
//!
//! - target → initiator, first: an advert, 16 bytes `{be64 addr, be32 rkey,
//!   be32 len}` (rping's layout);
//! - initiator → target: a 16-byte request, 8-byte tag then a be64 argument:
//!   `CHECKPAT` (the window holds pattern message `arg`), `CHECKU64` (its
//!   first 8 bytes are `arg`, host order), `REVOKE__`, `BYE_____`;
//! - target → initiator: `OK______` or `BAD_____` with the first bad offset.

/// A window advertised by the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advert {
    /// Address of byte 0.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length in bytes.
    pub len: u32,
}

impl Advert {
    /// The 16 wire bytes.
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.addr.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Parses the 16 wire bytes.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != 16 {
            return None;
        }
        Some(Self {
            addr: u64::from_be_bytes(b[..8].try_into().ok()?),
            rkey: u32::from_be_bytes(b[8..12].try_into().ok()?),
            len: u32::from_be_bytes(b[12..].try_into().ok()?),
        })
    }
}

/// A request or reply: an 8-byte tag and a 64-bit argument.
pub fn encode(tag: &[u8; 8], arg: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(tag);
    b[8..].copy_from_slice(&arg.to_be_bytes());
    b
}

/// Parses a request or reply.
pub fn decode(b: &[u8]) -> Option<([u8; 8], u64)> {
    if b.len() != 16 {
        return None;
    }
    Some((
        b[..8].try_into().ok()?,
        u64::from_be_bytes(b[8..].try_into().ok()?),
    ))
}

/// Tag: check the window against a pattern message.
pub const CHECKPAT: &[u8; 8] = b"CHECKPAT";
/// Tag: check the window's first 8 bytes.
pub const CHECKU64: &[u8; 8] = b"CHECKU64";
/// Tag: revoke the window.
pub const REVOKE: &[u8; 8] = b"REVOKE__";
/// Tag: the scenario is over.
pub const BYE: &[u8; 8] = b"BYE_____";
/// Reply tag: the check passed, or the action was done.
pub const OK: &[u8; 8] = b"OK______";
/// Reply tag: the check failed at offset `arg`.
pub const BAD: &[u8; 8] = b"BAD_____";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advert_round_trip_in_rping_layout() {
        let a = Advert {
            addr: 0x0102_0304_0506_0708,
            rkey: 0x0a0b_0c0d,
            len: 64,
        };
        let b = a.encode();
        assert_eq!(&b[..4], &[1, 2, 3, 4]);
        assert_eq!(&b[8..12], &[0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(Advert::decode(&b), Some(a));
        assert_eq!(Advert::decode(&b[..15]), None);
    }

    #[test]
    fn request_round_trip() {
        let b = encode(CHECKU64, 42);
        assert_eq!(decode(&b), Some((*CHECKU64, 42)));
        assert_eq!(decode(&b[..8]), None);
    }
}
