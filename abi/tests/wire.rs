// SPDX-License-Identifier: GPL-2.0

//! The wire protocol's logic (`abi/src/abi/wire.rs`,
//! `Documentation/wire-protocol.rst`): the header's encoding, the setup
//! data, the benchmark's counts, and `WireRx::check`, which the module and
//! the userspace peer both run on every SEND they receive.

#[test]
fn wire_header_round_trip_and_layout() {
    let h = abi::WireHdr {
        flags: abi::WIRE_FIRST | abi::WIRE_LOW,
        grant: 0x0102_0304,
        msg_len: 70_000,
        offset: 65_520,
    };
    let b = h.encode();
    assert_eq!(b[0], abi::WIRE_VERSION);
    assert_eq!(b[1], abi::WIRE_FIRST | abi::WIRE_LOW);
    assert_eq!(&b[4..8], &[1, 2, 3, 4], "big-endian grant");
    assert_eq!(abi::WireHdr::decode(&b), Some(h));
    assert_eq!(abi::WireHdr::decode(&b[..15]), None);
    let mut other = b;
    other[0] = 2;
    assert_eq!(abi::WireHdr::decode(&other), None, "another version");
}

#[test]
fn wire_protocol_constants() {
    // A message of MAX_MSG_SIZE must fit in the receives the peer keeps
    // posted, with one credit in reserve.
    let frag = (abi::RECV_BUF_SIZE - abi::WIRE_HDR_SIZE) as u64;
    let frags = abi::MAX_MSG_SIZE.div_ceil(frag);
    assert!(frags < abi::RECV_DEPTH as u64, "{frags} fragments");
    assert_eq!(abi::MAX_MSG_FRAGS as u64, frags);
    assert_eq!(abi::MAX_MSG_FRAGS, 33);
    // A sender blocked on the largest message leaves at least a batch
    // ungranted once everything it sent has been consumed: the grant goes.
    assert_eq!(abi::GRANT_BATCH, abi::RECV_DEPTH - abi::MAX_MSG_FRAGS);
    assert_eq!(abi::GRANT_BATCH, 7);
}

/// One SEND of the message protocol: header and `payload` bytes.
fn wire(flags: u8, grant: u32, msg_len: u32, offset: u32, payload: usize) -> Vec<u8> {
    let mut b = abi::WireHdr {
        flags,
        grant,
        msg_len,
        offset,
    }
    .encode()
    .to_vec();
    b.resize(b.len() + payload, 0xa5);
    b
}

const FRAG: usize = (abi::RECV_BUF_SIZE - abi::WIRE_HDR_SIZE) as usize;
const F: u8 = abi::WIRE_FIRST;
const L: u8 = abi::WIRE_LAST;

#[test]
fn wire_check_accepts_what_the_senders_send() {
    let mut rx = abi::WireRx::default();
    // Zero bytes: one fragment, FIRST|LAST, no payload.
    let (h, c) = rx.check(&wire(F | L, 3, 0, 0, 0), 10).unwrap();
    assert_eq!((h.msg_len, c), (0, 13));
    // 2 * FRAG + 5 bytes: three fragments, the last of 5 bytes.
    let len = (2 * FRAG + 5) as u32;
    assert_eq!(rx.check(&wire(F, 0, len, 0, FRAG), 0).unwrap().1, 0);
    // A credit-only message may come between fragments (the other
    // direction's receiver returns credits while this message streams).
    let credit = wire(abi::WIRE_CREDIT | abi::WIRE_LOW, 7, 0, 0, 0);
    assert_eq!(rx.check(&credit, 33).unwrap().1, abi::RECV_DEPTH);
    rx.check(&wire(0, 0, len, FRAG as u32, FRAG), 0).unwrap();
    rx.check(&wire(L, 0, len, 2 * FRAG as u32, 5), 0).unwrap();
    // The largest message, cut as the senders cut it (WireHdr::fragment),
    // and the stream is between messages again.
    let max = abi::MAX_MSG_SIZE as u32;
    for i in 0..abi::MAX_MSG_FRAGS {
        let h = abi::WireHdr::fragment(max, i, 0, i % 2 == 1);
        let n = FRAG.min((max - h.offset) as usize);
        assert_eq!(h.flags & F != 0, i == 0);
        assert_eq!(h.flags & L != 0, i + 1 == abi::MAX_MSG_FRAGS);
        rx.check(&wire(h.flags, 0, max, h.offset, n), 0).unwrap();
    }
    assert_eq!(rx, abi::WireRx::default());
    // A message of 0 bytes is one fragment, FIRST and LAST.
    assert_eq!(abi::WireHdr::fragment(0, 0, 0, false).flags, F | L);
}

#[test]
fn wire_check_refuses_what_a_hostile_peer_sends() {
    use abi::WireFault::*;
    let fresh = abi::WireRx::default();
    let check = |b: &[u8], credits: u32| fresh.clone().check(b, credits).map(|_| ());
    // Grants: anything that would leave more credits than receives.
    assert_eq!(check(&wire(F | L, u32::MAX, 0, 0, 0), 1), Err(Grant));
    assert_eq!(check(&wire(F | L, 1, 0, 0, 0), abi::RECV_DEPTH), Err(Grant));
    assert_eq!(check(&wire(F | L, abi::RECV_DEPTH, 0, 0, 0), 0), Ok(()));
    assert_eq!(
        check(&wire(F | L, abi::RECV_DEPTH + 1, 0, 0, 0), 0),
        Err(Grant)
    );
    // Header: short, other version, reserved bytes.
    assert_eq!(check(&wire(F | L, 0, 0, 0, 0)[..15], 0), Err(Header));
    let mut b = wire(F | L, 0, 0, 0, 0);
    b[2] = 1;
    assert_eq!(check(&b, 0), Err(Header));
    assert_eq!(check(&wire(0x10 | F | L, 0, 0, 0, 0), 0), Err(Flags));
    // Lengths.
    let big = abi::MAX_MSG_SIZE as u32 + 1;
    assert_eq!(check(&wire(F, 0, big, 0, FRAG), 0), Err(MsgLen));
    assert_eq!(check(&wire(F | L, 0, u32::MAX, 0, 1), 0), Err(MsgLen));
    assert_eq!(
        check(&wire(F | L, 0, 10, 0, 11), 0),
        Err(Length),
        "longer than announced"
    );
    assert_eq!(check(&wire(F | L, 0, 10, 0, 9), 0), Err(Length), "shorter");
    assert_eq!(check(&wire(F, 0, 10, 0, 10), 0), Err(Last), "LAST missing");
    let two = 2 * FRAG as u32;
    assert_eq!(
        check(&wire(F | L, 0, two, 0, FRAG), 0),
        Err(Last),
        "LAST early"
    );
    // Credit messages carry nothing else.
    let c = abi::WIRE_CREDIT;
    assert_eq!(check(&wire(c, 1, 0, 0, 1), 0), Err(Credit));
    assert_eq!(check(&wire(c, 1, 5, 0, 0), 0), Err(Credit));
    assert_eq!(check(&wire(c | F, 1, 0, 0, 0), 0), Err(Credit));
    // Sequence: no FIRST, FIRST in the middle, out of order, duplicated,
    // missing, another message's length.
    assert_eq!(check(&wire(L, 0, 10, 0, 10), 0), Err(First));
    assert_eq!(check(&wire(F | L, 0, 10, 5, 5), 0), Err(First));
    let mut rx = fresh.clone();
    rx.check(&wire(F, 0, two + 1, 0, FRAG), 0).unwrap();
    let mid = rx.clone();
    assert_eq!(
        mid.clone()
            .check(&wire(F, 0, two + 1, 0, FRAG), 0)
            .map(|_| ()),
        Err(First)
    );
    let dup = wire(0, 0, two + 1, 0, FRAG);
    assert_eq!(mid.clone().check(&dup, 0).map(|_| ()), Err(Sequence));
    let skip = wire(L, 0, two + 1, two, 1);
    assert_eq!(mid.clone().check(&skip, 0).map(|_| ()), Err(Sequence));
    let other = wire(0, 0, two + 2, FRAG as u32, FRAG);
    assert_eq!(mid.clone().check(&other, 0).map(|_| ()), Err(Sequence));
    // A fault changes nothing: the stream still wants the same fragment.
    let mut after = mid.clone();
    assert!(after.check(&dup, 0).is_err());
    assert_eq!(after, mid);
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
    use abi::{SetupData, WireFault::Setup};
    let s = SetupData { recv_depth: 6 };
    let b = s.encode();
    assert_eq!(b, [b'R', b'K', abi::WIRE_VERSION, 0, 0, 0, 0, 6]);
    assert_eq!(SetupData::decode(&b), Ok(Some(s)));
    // IB and RoCE pad the private data with zeros: ignored.
    let mut padded = b.to_vec();
    padded.resize(56, 0);
    assert_eq!(SetupData::decode(&padded), Ok(Some(s)));
    // A peer that sends none (rping, perftest; zeros on IB): the default.
    assert_eq!(SetupData::decode(&[]), Ok(None));
    assert_eq!(SetupData::decode(&[0; 56]), Ok(None));
    assert_eq!(SetupData::decode(b"RX"), Ok(None));
    // Which is what `peer_depth` takes: the default depth.
    assert_eq!(SetupData::peer_depth(&[0; 56]), Ok(abi::RECV_DEPTH));
    assert_eq!(SetupData::peer_depth(&padded), Ok(6));
    assert_eq!(SetupData::peer_depth(&b[..7]), Err(Setup));
    // "RK" and anything wrong after it costs the connection.
    assert_eq!(SetupData::decode(&b[..7]), Err(Setup), "short");
    for (i, v) in [(2, 2), (3, 1)] {
        let mut bad = b;
        bad[i] = v;
        assert_eq!(SetupData::decode(&bad), Err(Setup), "byte {i} = {v}");
    }
    for depth in [0, 1, abi::RECV_DEPTH + 1, u32::MAX] {
        let bad = SetupData { recv_depth: depth }.encode();
        assert_eq!(SetupData::decode(&bad), Err(Setup), "depth {depth}");
    }
    for depth in [abi::MIN_RECV_DEPTH, abi::RECV_DEPTH] {
        let ok = SetupData { recv_depth: depth }.encode();
        assert_eq!(
            SetupData::decode(&ok),
            Ok(Some(SetupData { recv_depth: depth }))
        );
    }
}

#[test]
fn a_smaller_depth_takes_smaller_messages() {
    assert_eq!(abi::max_msg_frags(abi::RECV_DEPTH), abi::MAX_MSG_FRAGS);
    assert_eq!(abi::max_msg_size(abi::RECV_DEPTH), abi::MAX_MSG_SIZE);
    assert_eq!(abi::grant_batch(abi::RECV_DEPTH), abi::GRANT_BATCH);
    // 34 receives still take 2 MiB (33 fragments and a credit to spare).
    assert_eq!(abi::max_msg_size(34), abi::MAX_MSG_SIZE);
    assert_eq!(abi::max_msg_size(33), 32 * FRAG as u64);
    assert_eq!(abi::max_msg_size(6), 5 * FRAG as u64);
    assert_eq!(abi::grant_batch(6), 1);
    assert_eq!(abi::max_msg_size(abi::MIN_RECV_DEPTH), FRAG as u64);
    for d in abi::MIN_RECV_DEPTH..=abi::RECV_DEPTH {
        assert!(
            abi::grant_batch(d) >= 1 && abi::max_msg_frags(d) < d,
            "depth {d}"
        );
    }
}

#[test]
fn wire_check_holds_each_side_to_its_depth() {
    use abi::WireFault::*;
    // This side takes 6 receives' worth; the peer has 4 posted.
    let mut rx = abi::WireRx::new(6, 4);
    let most = abi::max_msg_size(6) as u32;
    assert_eq!(
        rx.clone()
            .check(&wire(F, 0, most + 1, 0, FRAG), 0)
            .map(|_| ()),
        Err(MsgLen)
    );
    assert_eq!(
        rx.clone().check(&wire(F | L, 2, 0, 0, 0), 3).map(|_| ()),
        Err(Grant),
        "3 + 2 credits, 4 receives"
    );
    assert_eq!(rx.check(&wire(F | L, 1, 0, 0, 0), 3).unwrap().1, 4);
    for i in 0..5 {
        let h = abi::WireHdr::fragment(most, i, 0, false);
        let n = FRAG.min((most - h.offset) as usize);
        rx.check(&wire(h.flags, 0, most, h.offset, n), 0).unwrap();
    }
    assert_eq!(rx, abi::WireRx::new(6, 4));
    // Its peer's depth is learnt while connecting.
    let mut late = abi::WireRx::new(6, abi::RECV_DEPTH);
    late.set_peer_depth(4);
    assert_eq!(late, abi::WireRx::new(6, 4));
}
