// SPDX-License-Identifier: GPL-2.0

//! The wire protocol's logic (`abi/src/abi/wire.rs`,
//! `Documentation/wire-protocol.rst`): the header's encoding, announces,
//! the setup data, the benchmark's counts, and `WireRx::check`, which the
//! module and the userspace peer both run on every SEND they receive.

use abi::{ReadSeg, SetupData, WireFault::*, WireHdr, WireRx};

#[test]
fn wire_header_round_trip_and_layout() {
    let h = WireHdr {
        flags: abi::WIRE_FIRST | abi::WIRE_LOW,
        grant: 0x0102_0304,
        msg_len: 70_000,
        offset: 0,
    };
    let b = h.encode();
    assert_eq!(b[0], abi::WIRE_VERSION);
    assert_eq!(abi::WIRE_VERSION, 2);
    assert_eq!(b[1], abi::WIRE_FIRST | abi::WIRE_LOW);
    assert_eq!(&b[4..8], &[1, 2, 3, 4], "big-endian grant");
    assert_eq!(WireHdr::decode(&b), Some(h));
    assert_eq!(WireHdr::decode(&b[..15]), None);
    let mut other = b;
    other[0] = 1;
    assert_eq!(WireHdr::decode(&other), None, "version 1");
    let s = ReadSeg {
        addr: 0x0102_0304_0506_0708,
        rkey: 0x0a0b_0c0d,
        len: 0x1000,
    };
    let e = s.encode();
    assert_eq!(e, [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 0, 0, 0x10, 0]);
    assert_eq!(ReadSeg::parse(&e).collect::<Vec<_>>(), [s]);
}

#[test]
fn wire_protocol_constants() {
    // An inline message fills a message receive after its header; an
    // announce of the most segments fits inline; the segments cover the
    // largest message.
    assert_eq!(
        abi::MAX_INLINE_MSG,
        abi::MSG_RECV_BUF_SIZE - abi::WIRE_HDR_SIZE
    );
    const { assert!(abi::READ_SEGS * abi::READ_SEG_WIRE_SIZE <= abi::MAX_INLINE_MSG) };
    assert_eq!(
        abi::READ_SEGS as u64 * abi::READ_SEG_SIZE as u64,
        abi::MAX_MSG_SIZE
    );
    assert_eq!(abi::grant_batch(abi::MSG_RECV_DEPTH), 8);
    assert_eq!(abi::grant_batch(abi::MIN_RECV_DEPTH), 1);
    for d in abi::MIN_RECV_DEPTH..=abi::RECV_DEPTH {
        let b = abi::grant_batch(d);
        assert!(b >= 1 && b < d, "depth {d}: batch {b}");
    }
    let lens: Vec<u32> = ReadSeg::lens(abi::MAX_MSG_SIZE as u32).collect();
    assert_eq!(lens, [abi::READ_SEG_SIZE; 8]);
    let lens: Vec<u32> = ReadSeg::lens(abi::READ_SEG_SIZE + 1).collect();
    assert_eq!(lens, [abi::READ_SEG_SIZE, 1]);
}

/// One SEND of the message protocol: header and `payload`.
fn wire(flags: u8, grant: u32, msg_len: u32, offset: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = WireHdr {
        flags,
        grant,
        msg_len,
        offset,
    }
    .encode()
    .to_vec();
    b.extend_from_slice(payload);
    b
}

/// An inline message of `len` bytes.
fn inline(len: u32) -> Vec<u8> {
    wire(F | L, 0, len, 0, &vec![0xa5; len as usize])
}

/// The announce payload of `segs` (address, length), key 7.
fn segs(segs: &[(u64, u32)]) -> Vec<u8> {
    segs.iter()
        .flat_map(|&(addr, len)| ReadSeg { addr, rkey: 7, len }.encode())
        .collect()
}

/// An announce of `msg_len` bytes cut as a sender cuts it, at 0x1000.
fn announce(msg_len: u32) -> Vec<u8> {
    let mut addr = 0x1000;
    let mut v = Vec::new();
    for len in ReadSeg::lens(msg_len) {
        v.push((addr, len));
        addr += u64::from(len);
    }
    wire(F | L | R, 0, msg_len, 0, &segs(&v))
}

const F: u8 = abi::WIRE_FIRST;
const L: u8 = abi::WIRE_LAST;
const C: u8 = abi::WIRE_CREDIT;
const R: u8 = abi::WIRE_READ;
const D: u8 = abi::WIRE_DONE;
const MAX: u32 = abi::MAX_MSG_SIZE as u32;
const T: u32 = abi::MAX_INLINE_MSG;

#[test]
fn wire_check_accepts_what_the_senders_send() {
    let mut rx = WireRx::default();
    // Credits: a grant adds, up to the peer's depth.
    let credit = WireHdr::credit(3, true, false).encode();
    assert_eq!(rx.check(&credit, 10).unwrap().1, 13);
    // Inline messages of 0 to T bytes, as `WireHdr::message` heads them.
    for len in [0, 1, 100, T] {
        let h = WireHdr::message(len, 0, false);
        assert_eq!(h.flags, F | L);
        let mut b = h.encode().to_vec();
        b.resize(b.len() + len as usize, 1);
        assert_eq!(rx.check(&b, 0).unwrap().0, h, "{len} bytes");
    }
    // Announces of T + 1 to MAX bytes, each after the DONE of the one
    // before (this side sends DONE: `done_sent`).
    for len in [T + 1, abi::READ_SEG_SIZE, abi::READ_SEG_SIZE + 1, MAX] {
        assert_eq!(WireHdr::message(len, 0, false).flags, F | L | R);
        let (h, _) = rx.check(&announce(len), 0).expect("announce");
        assert_eq!(h.msg_len, len);
        rx.done_sent();
    }
    // DONE, on a credit-only message or on a message, answers this side's
    // announce.
    rx.announce_sent();
    assert!(rx.awaiting_done());
    rx.check(&WireHdr::credit(0, false, true).encode(), 0)
        .unwrap();
    assert!(!rx.awaiting_done());
    rx.announce_sent();
    rx.check(&wire(F | L | D, 0, 0, 0, &[]), 0).unwrap();
    assert!(!rx.awaiting_done());
    // An announce may carry DONE too.
    rx.announce_sent();
    rx.check(&wire(F | L | R | D, 0, MAX, 0, &announce(MAX)[16..]), 0)
        .unwrap();
}

#[test]
fn wire_check_refuses_what_a_hostile_peer_sends() {
    let check = |b: &[u8], credits| WireRx::default().check(b, credits).map(|_| ());
    assert_eq!(check(&inline(1)[..15], 0), Err(Header), "short");
    let mut v1 = inline(1);
    v1[0] = 1;
    assert_eq!(check(&v1, 0), Err(Header), "version 1");
    let mut reserved = inline(1);
    reserved[3] = 1;
    assert_eq!(check(&reserved, 0), Err(Header));
    assert_eq!(check(&wire(F | L | 64, 0, 0, 0, &[]), 0), Err(Flags));
    let depth = abi::MSG_RECV_DEPTH;
    assert_eq!(check(&wire(C, 1, 0, 0, &[]), depth), Err(Grant));
    assert_eq!(check(&wire(C, depth, 0, 0, &[]), 0), Ok(()));
    assert_eq!(check(&wire(C, u32::MAX, 0, 0, &[]), 1), Err(Grant), "wraps");
    // Credit-only messages carry nothing else.
    assert_eq!(check(&wire(C, 1, 0, 0, &[0]), 0), Err(Credit));
    assert_eq!(check(&wire(C, 1, 1, 0, &[]), 0), Err(Credit));
    assert_eq!(check(&wire(C, 1, 0, 1, &[]), 0), Err(Credit));
    assert_eq!(check(&wire(C | F, 1, 0, 0, &[]), 0), Err(Credit));
    assert_eq!(check(&wire(C | R, 1, 0, 0, &[]), 0), Err(Credit));
    // Every message is whole: FIRST and LAST, offset 0.
    assert_eq!(check(&wire(F, 0, 1, 0, &[1]), 0), Err(Whole));
    assert_eq!(check(&wire(L, 0, 1, 0, &[1]), 0), Err(Whole));
    assert_eq!(check(&wire(0, 0, 1, 0, &[1]), 0), Err(Whole));
    assert_eq!(check(&wire(F | L, 0, 2, 1, &[1]), 0), Err(Whole));
    // Inline: up to T, payload exactly msg_len.
    let mut long = inline(T);
    long[8..12].copy_from_slice(&(T + 1).to_be_bytes());
    long.push(0);
    assert_eq!(check(&long, 0), Err(MsgLen));
    assert_eq!(check(&wire(F | L, 0, 5, 0, &[1; 4]), 0), Err(Length));
    assert_eq!(check(&wire(F | L, 0, 5, 0, &[1; 6]), 0), Err(Length));
    // Announces: longer than T, at most MAX, segments that add up.
    let a = |len, s: &[(u64, u32)]| check(&wire(F | L | R, 0, len, 0, &segs(s)), 0);
    assert_eq!(a(T, &[(0, T)]), Err(MsgLen), "could be inline");
    assert_eq!(a(MAX + 1, &[(0, 1)]), Err(MsgLen));
    assert_eq!(a(T + 1, &[]), Err(Announce), "no segment");
    let nine: Vec<(u64, u32)> = (0..9).map(|i| (i * 4096, 4096)).collect();
    assert_eq!(a(9 * 4096, &nine), Err(Announce), "nine segments");
    assert_eq!(
        a(T + 1, &[(0, T + 1), (0, 0)]),
        Err(Announce),
        "empty segment"
    );
    assert_eq!(
        a(abi::READ_SEG_SIZE + 1, &[(0, abi::READ_SEG_SIZE + 1)]),
        Err(Announce),
        "segment too long"
    );
    assert_eq!(a(T + 1, &[(u64::MAX - 10, T + 1)]), Err(Announce), "wraps");
    assert_eq!(a(T + 2, &[(0, T + 1)]), Err(Announce), "short of msg_len");
    assert_eq!(
        a(T + 1, &[(0, T + 1), (0, 1)]),
        Err(Announce),
        "beyond msg_len"
    );
    let mut ragged = announce(T + 1);
    ragged.push(0);
    assert_eq!(check(&ragged, 0), Err(Announce), "a part of a segment");
    // An announce to a side that does not READ, or a second one before
    // this side's DONE.
    assert_eq!(
        WireRx::new(abi::MSG_RECV_DEPTH, false).check(&announce(T + 1), 0),
        Err(Unasked)
    );
    // Up to ANNOUNCE_WINDOW announces unanswered; one more before a DONE
    // breaks the rule, and each DONE sent lets one more come.
    let mut rx = WireRx::default();
    for _ in 0..abi::ANNOUNCE_WINDOW {
        rx.check(&announce(T + 1), 0).unwrap();
    }
    assert_eq!(
        rx.check(&announce(T + 1), 0),
        Err(Unasked),
        "beyond the window"
    );
    rx.done_sent();
    assert!(rx.check(&announce(T + 1), 0).is_ok());
    assert_eq!(rx.check(&announce(T + 1), 0), Err(Unasked), "beyond again");
    // A DONE taken back (not sent after all) closes the window again.
    rx.done_sent();
    rx.done_unsent();
    assert_eq!(rx.check(&announce(T + 1), 0), Err(Unasked), "DONE unsent");
    // DONE when nothing of this side's waits for it.
    assert_eq!(
        check(&WireHdr::credit(0, false, true).encode(), 0),
        Err(Done)
    );
    let mut rx = WireRx::default();
    rx.announce_sent();
    rx.check(&WireHdr::credit(0, false, true).encode(), 0)
        .unwrap();
    assert_eq!(
        rx.check(&WireHdr::credit(0, false, true).encode(), 0),
        Err(Done),
        "twice"
    );
    // One DONE for each announce in the window, not one more.
    let mut rx = WireRx::default();
    for _ in 0..abi::ANNOUNCE_WINDOW {
        assert!(rx.may_announce());
        rx.announce_sent();
    }
    assert!(!rx.may_announce());
    for _ in 0..abi::ANNOUNCE_WINDOW {
        assert!(rx.awaiting_done());
        rx.check(&WireHdr::credit(0, false, true).encode(), 0)
            .unwrap();
        assert!(rx.may_announce());
    }
    assert!(!rx.awaiting_done());
    assert_eq!(
        rx.check(&WireHdr::credit(0, false, true).encode(), 0),
        Err(Done),
        "one more than the window"
    );
    // A fault changes nothing.
    let mut rx = WireRx::default();
    rx.announce_sent();
    let before = rx.clone();
    assert_eq!(rx.check(&wire(C | D, 0, 1, 0, &[]), 0), Err(Credit));
    assert_eq!(rx, before);
    assert_eq!(
        rx.check(&wire(F | L | R | D, 0, T, 0, &segs(&[(0, T)])), 0),
        Err(MsgLen)
    );
    assert_eq!(rx, before, "DONE not taken from a refused SEND");
}

#[test]
fn bench_count_advances_and_counts_only_what_was_sent() {
    use abi::WireFault::Count;
    let enc = abi::bench_count_encode;
    assert_eq!(abi::bench_count(&enc(8), 0, 40), Ok(8));
    assert_eq!(abi::bench_count(&enc(40), 32, 40), Ok(40));
    assert_eq!(abi::bench_count(&enc(8), 8, 40), Err(Count), "no advance");
    assert_eq!(abi::bench_count(&enc(7), 8, 40), Err(Count), "backwards");
    assert_eq!(abi::bench_count(&enc(41), 8, 40), Err(Count), "never sent");
    assert_eq!(
        abi::bench_count(&u64::MAX.to_be_bytes(), 0, u32::MAX),
        Err(Count)
    );
    assert_eq!(abi::bench_count(&enc(8)[..7], 0, 40), Err(Count), "short");
    assert_eq!(abi::bench_count(&[0; 9], 0, 40), Err(Count), "long");
}

#[test]
fn setup_data_round_trip_and_refusals() {
    for (depth, reads) in [(6, true), (abi::RECV_DEPTH, false)] {
        let s = SetupData {
            recv_depth: depth,
            reads,
        };
        let b = s.encode();
        assert_eq!(
            b,
            [b'R', b'K', 2, reads as u8, 0, 0, 0, depth as u8],
            "{s:?}"
        );
        assert_eq!(SetupData::decode(&b), Ok(Some(s)));
        // IB and RoCE pad the private data with zeros.
        let mut padded = [0u8; 56];
        padded[..8].copy_from_slice(&b);
        assert_eq!(SetupData::of_peer(&padded), Ok(s));
    }
    // A peer that sends none: rping, perftest.
    assert_eq!(SetupData::decode(&[]), Ok(None));
    assert_eq!(SetupData::of_peer(&[0; 56]), Ok(SetupData::FOREIGN));
    assert_eq!(SetupData::FOREIGN.recv_depth, abi::RECV_DEPTH);
    const { assert!(!SetupData::FOREIGN.reads) };
    let good = SetupData {
        recv_depth: 6,
        reads: true,
    }
    .encode();
    assert_eq!(SetupData::decode(&good[..7]), Err(Setup), "short");
    let mut v1 = good;
    v1[2] = 1;
    assert_eq!(SetupData::decode(&v1), Err(Setup), "version 1");
    let mut flag = good;
    flag[3] = 2;
    assert_eq!(SetupData::decode(&flag), Err(Setup), "unknown flag");
    for depth in [0, 1, abi::RECV_DEPTH + 1, u32::MAX] {
        let mut b = good;
        b[4..].copy_from_slice(&depth.to_be_bytes());
        assert_eq!(SetupData::decode(&b), Err(Setup), "depth {depth}");
    }
}
