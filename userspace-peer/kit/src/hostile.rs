// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust-kit hostile`: a peer that speaks the module's message protocol
//! (`Documentation/wire-protocol.rst`) over librdmacm and libibverbs, and
//! lies.
//!
//! Each round opens one connection between a file of the module and this
//! peer, the module listening or connecting by turns, and sends one lie
//! (or, sometimes, the truth), chosen by a seeded generator: grants of
//! `u32::MAX`, 1, 0 and random; lengths over the maximum, inline messages
//! too long or longer than they say; messages that are not whole; unknown
//! flags and versions; garbage; credit messages with data or in a flood;
//! announces whose segments are bad, that could have been inline, that name
//! a key already revoked, or come twice; a DONE nothing waits for; a
//! disconnect after a message. The module's file then receives and must
//! see exactly what the rules say: the honest messages, intact, then
//! `EPROTO` for a broken rule (`ECONNRESET` for the disconnect, and on
//! iWARP for a READ the liar refuses: its TERMINATE ends the connection
//! before the module learns why), with the connection closed on that
//! errno.
//!
//! Meanwhile a bystander, a connection between two other files of the
//! module, echoes pattern messages and checks every byte: a lie must cost
//! its own connection and nothing else.

use crate::fuzz::Rng;
use crate::stress::addr_of;
use anyhow::{bail, Context, Result};
use krust::abi::{self, WireHdr};
use krust::kdev::KrustDev;
use krust::pattern;
use krust::upeer::{Listener, UPeer};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HDR: usize = abi::WIRE_HDR_SIZE as usize;
/// The longest inline message.
const INLINE: usize = abi::MAX_INLINE_MSG as usize;
/// Credit-only messages of a flood: each takes a receive of the module's,
/// reposted as it completes; a SEND more than it posted would be a lie of
/// another kind (one the transport answers).
const FLOOD: usize = abi::MSG_RECV_DEPTH as usize - 2;
/// Every wait of the module's file in a round.
const WAIT_MS: u32 = 20_000;

/// The arguments of `rdma-krust-kit hostile`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct HostileArgs {
    /// Address of the RDMA device's interface: both ends use it.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port of the lying connections; the bystander uses the next one.
    #[arg(long, default_value_t = 7700)]
    pub port: u16,
    /// Stop starting rounds after this many seconds.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Stop after this many rounds.
    #[arg(long, default_value_t = 1_000_000)]
    pub count: u64,
    /// Seed of the choice of lies and of their random fields.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// One line per round: the lie and every SEND's header.
    #[arg(long)]
    pub verbose: bool,
    /// Tell only these lies (repeat, or comma-separated; default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub lie: Vec<Lie>,
}

/// The lies, and the one truth that is told among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Lie {
    /// An honest message with a grant of 0: inline, or announced and READ
    /// from a region of the liar's.
    Honest,
    /// A grant of `u32::MAX`.
    GrantMax,
    /// A grant of 1 to a side whose credits are all in hand.
    GrantOne,
    /// A random grant above the receive depth.
    GrantRandom,
    /// An announce of more than the maximum message.
    LenOverMax,
    /// An inline message longer than `MAX_INLINE_MSG`.
    InlineTooLong,
    /// An inline payload longer or shorter than `msg_len`.
    LongerThanAnnounced,
    /// A message without FIRST or LAST, or with an offset.
    NotWhole,
    /// A flag no version defines.
    UnknownFlags,
    /// Another version byte (version 1 among them).
    BadVersion,
    /// One to eight SENDs of random bytes.
    Garbage,
    /// A credit-only message that carries a payload.
    CreditWithData,
    /// As many credit-only messages (grant 0) as the module's receives
    /// take, less two, then an honest message.
    CreditFlood,
    /// An honest message, then a disconnect.
    DisconnectAfterMessage,
    /// Setup data (the connection's private data) that is short, of
    /// another version, with an unknown flag or with a receive depth out
    /// of range.
    BadSetup,
    /// An announce whose segments are none, too many, empty, too long,
    /// wrap the address space, or do not add up to `msg_len`.
    BadSegments,
    /// An announce of a message short enough to go inline.
    AnnounceShort,
    /// An announce naming a region the liar has already revoked.
    AnnounceRevoked,
    /// One announce more than the window (`abi::ANNOUNCE_WINDOW`), before
    /// any DONE.
    AnnounceBeyondWindow,
    /// DONE when the module announced nothing.
    DoneUnasked,
}

const LIES: &[Lie] = &[
    Lie::Honest,
    Lie::GrantMax,
    Lie::GrantOne,
    Lie::GrantRandom,
    Lie::LenOverMax,
    Lie::InlineTooLong,
    Lie::LongerThanAnnounced,
    Lie::NotWhole,
    Lie::UnknownFlags,
    Lie::BadVersion,
    Lie::Garbage,
    Lie::CreditWithData,
    Lie::CreditFlood,
    Lie::DisconnectAfterMessage,
    Lie::BadSetup,
    Lie::BadSegments,
    Lie::AnnounceShort,
    Lie::AnnounceRevoked,
    Lie::AnnounceBeyondWindow,
    Lie::DoneUnasked,
];

/// What the module's file must see, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Pattern message `index` of the round's seed, `len` bytes.
    Msg { len: usize, index: u64 },
    /// This errno, and the connection closed with it.
    Errno(i32),
    /// A lie the transport catches first: the liar's refusal of the
    /// module's READ, or a SEND longer than the module's receive. `EPROTO`
    /// on RoCE; on iWARP `EPROTO`, or `ECONNRESET` when the TERMINATE ends
    /// the connection before the module learns why.
    Refused,
}

/// A region the liar exposes for the module to READ, named by an announce.
struct Exposed {
    data: Vec<u8>,
    /// Revoked before the announce goes.
    revoked: bool,
}

/// One round's SENDs and what they must cause.
struct Round {
    lie: Lie,
    sends: Vec<Vec<u8>>,
    /// The setup data this peer connects or accepts with.
    setup: Vec<u8>,
    /// Disconnect after the SENDs instead of waiting for the module.
    disconnect: bool,
    /// The regions SENDs announce: SEND `i` of those whose header says
    /// READ gets its segments from region `i`, cut as an honest sender
    /// cuts them ([`announce`]).
    exposed: Vec<Exposed>,
    expect: Vec<Expect>,
}

/// An honest inline message: pattern message `index` of `seed`, `len`
/// bytes (at most `INLINE`).
fn honest(len: usize, seed: u64, index: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    pattern::fill(&mut data, seed, index);
    let mut b = WireHdr::message(len as u32, 0, false).encode().to_vec();
    b.extend_from_slice(&data);
    b
}

/// The header of an announce of `len` bytes; its segments are filled in
/// once the region is exposed ([`fill_announces`]).
fn announce(len: usize) -> Vec<u8> {
    let mut h = WireHdr::message(len as u32, 0, false);
    h.flags |= abi::WIRE_READ;
    h.encode().to_vec()
}

/// Rewrites the header of one SEND.
fn edit(b: &mut [u8], f: impl FnOnce(&mut WireHdr)) {
    let mut h = WireHdr::decode(b).expect("an honest header");
    f(&mut h);
    b[..HDR].copy_from_slice(&h.encode());
}

/// An announce payload of `segs`, each (address, length), key 7.
fn segs(segs: &[(u64, u32)]) -> Vec<u8> {
    segs.iter()
        .flat_map(|&(addr, len)| abi::ReadSeg { addr, rkey: 7, len }.encode())
        .collect()
}

fn plan(lie: Lie, rng: &mut Rng, seed: u64) -> Round {
    let eproto = Expect::Errno(libc::EPROTO);
    let mut expect = Vec::new();
    let mut sends = Vec::new();
    let mut exposed = Vec::new();
    let mut setup = abi::SetupData {
        recv_depth: abi::RECV_DEPTH,
        reads: true,
    }
    .encode()
    .to_vec();
    // Sometimes an honest message first: the lie must not spoil it (a lie
    // told while connecting comes before any message).
    if lie != Lie::Honest && lie != Lie::BadSetup && rng.one_in(3) {
        let len = rng.below(INLINE as u64 + 1) as usize;
        sends.push(honest(len, seed, 0));
        expect.push(Expect::Msg { len, index: 0 });
    }
    let index = expect.len() as u64;
    let one = 1 + rng.below(INLINE as u64 - 1) as usize;
    let big = INLINE + 1 + rng.below(abi::MAX_MSG_SIZE - INLINE as u64) as usize;
    let mut disconnect = false;
    let mut lie_sends = match lie {
        Lie::Honest => {
            if rng.one_in(3) {
                let mut data = vec![0u8; big];
                pattern::fill(&mut data, seed, index);
                exposed.push(Exposed {
                    data,
                    revoked: false,
                });
                expect.push(Expect::Msg { len: big, index });
                vec![announce(big)]
            } else {
                let len = rng.below(INLINE as u64 + 1) as usize;
                expect.push(Expect::Msg { len, index });
                vec![honest(len, seed, index)]
            }
        }
        Lie::GrantMax | Lie::GrantOne | Lie::GrantRandom => {
            let grant = match lie {
                Lie::GrantMax => u32::MAX,
                Lie::GrantOne => 1,
                _ => abi::RECV_DEPTH + 1 + rng.below(u64::from(u32::MAX - abi::RECV_DEPTH)) as u32,
            };
            let mut s = honest(one, seed, index);
            edit(&mut s, |h| h.grant = grant);
            expect.push(eproto);
            vec![s]
        }
        Lie::LenOverMax => {
            let over = abi::MAX_MSG_SIZE as u32 + 1;
            let len = over + rng.below(u64::from(u32::MAX - over)) as u32;
            let mut s = announce(INLINE + 1);
            edit(&mut s, |h| h.msg_len = len);
            s.extend(segs(&[(0x1000, abi::READ_SEG_SIZE)]));
            expect.push(eproto);
            vec![s]
        }
        Lie::InlineTooLong => {
            let len = INLINE + 1 + rng.below(100) as usize;
            let mut s = WireHdr::message(INLINE as u32, 0, false).encode().to_vec();
            edit(&mut s, |h| h.msg_len = len as u32);
            s.resize(HDR + len, 0x5a);
            // Longer than the module's receive, too.
            expect.push(Expect::Refused);
            vec![s]
        }
        Lie::LongerThanAnnounced => {
            let mut s = honest(one, seed, index);
            if rng.one_in(2) {
                s.truncate(s.len() - 1);
            } else {
                let extra = 1 + rng.below((INLINE - one) as u64) as usize;
                s.resize(s.len() + extra, 0x5a);
            }
            expect.push(eproto);
            vec![s]
        }
        Lie::NotWhole => {
            let mut s = honest(one, seed, index);
            match rng.below(3) {
                0 => edit(&mut s, |h| h.flags &= !abi::WIRE_FIRST),
                1 => edit(&mut s, |h| h.flags &= !abi::WIRE_LAST),
                _ => edit(&mut s, |h| {
                    h.offset = 1 + rng.below(u64::from(u32::MAX - 1)) as u32
                }),
            }
            expect.push(eproto);
            vec![s]
        }
        Lie::UnknownFlags => {
            let mut s = honest(one, seed, index);
            let bit = 0x40u8 << rng.below(2);
            edit(&mut s, |h| h.flags |= bit);
            expect.push(eproto);
            vec![s]
        }
        Lie::BadVersion => {
            let mut s = honest(one, seed, index);
            s[0] = match rng.below(3) {
                0 => 1,
                1 => 0,
                _ => 3 + rng.below(253) as u8,
            };
            expect.push(eproto);
            vec![s]
        }
        Lie::Garbage => {
            let n = 1 + rng.below(8) as usize;
            expect.push(eproto);
            (0..n)
                .map(|_| {
                    let len = rng.below(200) as usize;
                    let mut b: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                    // Never, by chance, a valid version byte.
                    if let Some(v) = b.first_mut() {
                        *v |= 0x80;
                    }
                    b
                })
                .collect()
        }
        Lie::CreditWithData => {
            let mut b = WireHdr::credit(0, false, false).encode().to_vec();
            b.resize(HDR + 1 + rng.below(100) as usize, 0x33);
            expect.push(eproto);
            vec![b]
        }
        Lie::CreditFlood => {
            let mut s = vec![WireHdr::credit(0, false, false).encode().to_vec(); FLOOD];
            s.push(honest(one, seed, index));
            expect.push(Expect::Msg { len: one, index });
            s
        }
        Lie::DisconnectAfterMessage => {
            disconnect = true;
            expect.push(Expect::Msg { len: one, index });
            expect.push(Expect::Errno(libc::ECONNRESET));
            vec![honest(one, seed, index)]
        }
        Lie::BadSetup => {
            let depth = |d: u32| {
                abi::SetupData {
                    recv_depth: d,
                    reads: true,
                }
                .encode()
                .to_vec()
            };
            setup = match rng.below(6) {
                0 => depth(rng.below(u64::from(abi::MIN_RECV_DEPTH)) as u32),
                1 => depth(abi::RECV_DEPTH + 1),
                2 => depth(
                    abi::RECV_DEPTH + 1 + rng.below(u64::from(u32::MAX - abi::RECV_DEPTH)) as u32,
                ),
                3 => {
                    setup[2] = if rng.one_in(2) {
                        1
                    } else {
                        abi::WIRE_VERSION + 1 + rng.below(253) as u8
                    };
                    setup
                }
                4 => {
                    setup[3] |= 2 << rng.below(7);
                    setup
                }
                _ => {
                    setup.truncate(2 + rng.below(abi::SETUP_DATA_SIZE as u64 - 2) as usize);
                    setup
                }
            };
            expect.push(eproto);
            Vec::new()
        }
        Lie::BadSegments => {
            let seg = abi::READ_SEG_SIZE;
            let len = INLINE as u32 + 1 + rng.below(u64::from(seg)) as u32;
            let payload = match rng.below(7) {
                0 => Vec::new(),
                1 => segs(&(0..9).map(|i| (i << 20, len / 9 + 1)).collect::<Vec<_>>()),
                2 => segs(&[(0x1000, len), (0x9000_0000, 0)]),
                3 => segs(&[(0x1000, seg + 1)]),
                4 => segs(&[(u64::MAX - u64::from(len) / 2, len)]),
                5 => segs(&[(0x1000, len - 1)]),
                _ => {
                    let mut p = segs(&[(0x1000, len)]);
                    p.push(0);
                    p
                }
            };
            let mut s = announce(len as usize);
            s.extend(payload);
            expect.push(eproto);
            vec![s]
        }
        Lie::AnnounceShort => {
            let len = 1 + rng.below(INLINE as u64) as u32;
            let mut s = announce(INLINE + 1);
            edit(&mut s, |h| h.msg_len = len);
            s.extend(segs(&[(0x1000, len)]));
            expect.push(eproto);
            vec![s]
        }
        Lie::AnnounceRevoked => {
            exposed.push(Exposed {
                data: vec![0x77; big],
                revoked: true,
            });
            expect.push(Expect::Refused);
            vec![announce(big)]
        }
        Lie::AnnounceBeyondWindow => {
            // The last breaks the rule on arrival; the module may have
            // begun READing the first by then (it READs ahead), and all
            // name revoked regions: EPROTO either way on RoCE, and on
            // iWARP a refused READ's TERMINATE may come first.
            let n = abi::ANNOUNCE_WINDOW as usize + 1;
            for _ in 0..n {
                exposed.push(Exposed {
                    data: vec![0x66; big],
                    revoked: true,
                });
            }
            expect.push(Expect::Refused);
            vec![announce(big); n]
        }
        Lie::DoneUnasked => {
            expect.push(eproto);
            vec![WireHdr::credit(0, false, true).encode().to_vec()]
        }
    };
    sends.append(&mut lie_sends);
    Round {
        lie,
        sends,
        setup,
        disconnect,
        exposed,
        expect,
    }
}

/// Exposes the round's regions on `peer` and writes each announce's
/// segments after its header. Revoked ones are revoked now, before any
/// announce goes.
fn fill_announces(peer: &UPeer, r: &Round) -> Result<Vec<Vec<u8>>> {
    use krust::scenario::WindowOwner;
    let mut sends = r.sends.clone();
    let mut regions = r.exposed.iter();
    for b in sends.iter_mut() {
        let Some(h) = WireHdr::decode(b) else {
            continue;
        };
        if h.flags & abi::WIRE_READ == 0 || b.len() != HDR {
            continue;
        }
        let Some(e) = regions.next() else { break };
        let (addr, rkey, id) = peer.expose(e.data.len() as u64, abi::ACCESS_READ)?;
        peer.window_write(id, &e.data)?;
        if e.revoked {
            peer.revoke(id)?;
        }
        let mut off = 0u64;
        for len in abi::ReadSeg::lens(e.data.len() as u32) {
            let s = abi::ReadSeg {
                addr: addr + off,
                rkey,
                len,
            };
            b.extend(s.encode());
            off += u64::from(len);
        }
    }
    Ok(sends)
}

/// The module's side of a round, on its connected file: receives until
/// every expectation is met, or fails on the first that is not.
fn module_side(dev: &KrustDev, expect: &[Expect], seed: u64) -> Result<()> {
    let iwarp = dev.conn_info()?.iwarp != 0;
    let mut buf = vec![0u8; abi::MAX_MSG_SIZE as usize];
    for (i, want) in expect.iter().enumerate() {
        let got = dev.recv(&mut buf, WAIT_MS);
        // On iWARP a lie the transport catches may end the connection by
        // the provider's TERMINATE before the module learns why
        // (ECONNRESET), or reach the module first (EPROTO): siw does both.
        let want = match (*want, &got) {
            (Expect::Refused, Err(e)) if iwarp && e.raw_os_error() == Some(libc::ECONNRESET) => {
                Expect::Errno(libc::ECONNRESET)
            }
            (Expect::Refused, _) => Expect::Errno(libc::EPROTO),
            (w, _) => w,
        };
        match (want, got) {
            (Expect::Msg { len, index }, Ok(n)) => {
                if n != len {
                    bail!("receive {i}: {n} bytes, expected {len}");
                }
                if let Some(off) = pattern::check(&buf[..n], seed, index) {
                    return Err(krust::exit::mismatch(format!(
                        "receive {i}: message differs at offset {off}"
                    )));
                }
            }
            (Expect::Errno(e), Err(err)) if err.raw_os_error() == Some(e) => {
                let info = dev.conn_info()?;
                if info.state != abi::state::CLOSED || info.error != e as u32 {
                    bail!(
                        "after {err}: state {} error {}, expected CLOSED with {e}",
                        krust::table::state_name(info.state),
                        info.error
                    );
                }
            }
            (want, got) => bail!("receive {i}: expected {want:?}, got {got:?}"),
        }
    }
    Ok(())
}

/// Whether the module's ACCEPT or CONNECT ended as it may: connected, or
/// already closed with the round's final errno (the lie can arrive, and
/// close the connection, before the module's side has seen it established;
/// the honest messages before it are still there to receive).
fn settled(r: Result<()>, expect: &[Expect]) -> Result<()> {
    let Err(e) = r else { return Ok(()) };
    let errno = e
        .root_cause()
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::raw_os_error);
    match (errno, expect.last()) {
        (Some(got), Some(Expect::Errno(want))) if got == *want => Ok(()),
        (Some(got), Some(Expect::Refused)) if got == libc::EPROTO || got == libc::ECONNRESET => {
            Ok(())
        }
        _ => Err(e),
    }
}

/// How the module's end of a round is set up.
#[derive(Clone, Copy, Debug)]
struct Side {
    /// The module listens (else it connects).
    listens: bool,
    /// Its file busy-polls (`abi::CONN_POLL`): its own waits reap the
    /// completions, so a lie is found in the receiving thread.
    polled: bool,
}

impl Side {
    /// Round `n`'s: the four kinds by turns.
    fn of_round(n: u64) -> Self {
        Self {
            listens: n.is_multiple_of(2),
            polled: n % 4 >= 2,
        }
    }
}

/// One round, the module's end set up as `side` says.
fn round(path: &str, a: &HostileArgs, r: &Round, side: Side, seed: u64) -> Result<()> {
    let addr = addr_of(a.ip, a.port);
    let dev = KrustDev::open(path)?;
    let expect = r.expect.clone();
    let flags = if side.polled { abi::CONN_POLL } else { 0 };
    // The module's thread hands its file back open: what the peer learns
    // below must come from the module, not from the file's close.
    let (peer, module) = if side.listens {
        dev.listen(addr, 0, 0, flags).context("IOCTL_LISTEN")?;
        let module = std::thread::spawn(move || -> (KrustDev, Result<()>) {
            let r = settled(dev.accept(WAIT_MS).map(|_| ()), &expect)
                .context("IOCTL_ACCEPT")
                .and_then(|()| module_side(&dev, &expect, seed));
            (dev, r)
        });
        let peer = match UPeer::connect_with(&addr, 0, 0, &r.setup) {
            Ok(peer) => peer,
            // Bad setup data in the request: refused, and no connection.
            Err(e) if r.lie == Lie::BadSetup => {
                let (_dev, verdict) = module.join().expect("module side panicked");
                if !krust::exit::is_errno(&e, libc::ECONNREFUSED) {
                    bail!(
                        "{:?}, {side:?}: the connect failed with {e:#}, not ECONNREFUSED",
                        r.lie
                    );
                }
                return verdict.with_context(|| format!("{:?}, {side:?}", r.lie));
            }
            Err(e) => return Err(e.context("connect to the module")),
        };
        if r.lie == Lie::BadSetup {
            bail!(
                "{:?}, {side:?}: a request with bad setup data was accepted",
                r.lie
            );
        }
        (peer, module)
    } else {
        let listener = Listener::bind(&addr).context("listen")?;
        let (connected_tx, connected) = std::sync::mpsc::channel();
        let module = std::thread::spawn(move || -> (KrustDev, Result<()>) {
            let c = dev.connect(addr, 0, 0, WAIT_MS, flags);
            let _ = connected_tx.send(());
            let r = settled(c.map(|_| ()), &expect)
                .context("IOCTL_CONNECT")
                .and_then(|()| module_side(&dev, &expect, seed));
            (dev, r)
        });
        let peer = listener
            .accept_with(0, 0, 0, &r.setup)
            .context("accept the module")?;
        // On iWARP the liar, the responder, may send only once the module
        // has its connection: an FPDU before the MPA reply is taken in is a
        // lie one layer down, which costs the module its connect (siw's
        // "peer sent extra data": ENETUNREACH), not the connection.
        if peer.iwarp() {
            let _ = connected.recv();
        }
        (peer, module)
    };
    // The module's file may close on the first lie, so later SENDs may
    // fail: what counts is what the module saw.
    let sent = fill_announces(&peer, r).and_then(|sends| {
        if r.exposed.iter().any(|e| !e.revoked) {
            // An honest announce: the module's DONE is due.
            peer.announced();
        }
        peer.send_wire(&sends)
    });
    if r.disconnect {
        peer.disconnect()?;
    }
    let (dev, mut verdict) = module.join().expect("module side panicked");
    // A broken rule costs the connection at both ends: the module hangs up,
    // and the liar learns it while the module's file is still open. (A QP
    // in the error state answers nothing on RoCE: before the module
    // disconnected, the liar's requests retried into it for ever.)
    if verdict.is_ok() && !r.disconnect && r.expect.last() == Some(&Expect::Errno(libc::EPROTO)) {
        verdict = peer
            .wait_peer_gone(WAIT_MS)
            .context("after EPROTO, the module did not disconnect");
    }
    drop(dev);
    drop(peer);
    verdict.with_context(|| format!("{:?}, {side:?} (sends: {:?})", r.lie, sent.err()))
}

/// The bystander: two files of the module echo pattern messages until
/// `stop`; returns the round trips, every byte checked.
fn bystander(path: &str, a: &HostileArgs, stop: &AtomicBool) -> Result<u64> {
    let (l, c) = crate::stress::kernel_pair(path, a.ip, a.port + 1, 0)?;
    let mut rng = Rng::new(a.seed ^ 0xb157_a4de);
    let mut buf = vec![0u8; 300_000];
    let mut msg = Vec::new();
    let seed = a.seed ^ 0x5eed;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let len = rng.below(300_000) as usize;
        msg.resize(len, 0);
        pattern::fill(&mut msg, seed, n);
        let check = |b: &[u8], what: &str| {
            if b.len() != len || pattern::check(b, seed, n).is_some() {
                let got = b.len();
                return Err(krust::exit::mismatch(format!(
                    "bystander message {n}: {what} got {got} bytes, not the {len} sent intact"
                )));
            }
            Ok::<(), anyhow::Error>(())
        };
        c.send(&msg, 10_000).context("bystander SEND")?;
        let got = l.recv(&mut buf, 10_000).context("bystander RECV")?;
        check(&buf[..got], "the echoing side")?;
        l.send(&buf[..got], 10_000).context("bystander echo")?;
        let got = c
            .recv(&mut buf, 10_000)
            .context("bystander RECV of the echo")?;
        check(&buf[..got], "the sending side")?;
        n += 1;
    }
    let info = c.conn_info()?;
    if info.state != abi::state::CONNECTED {
        bail!(
            "bystander connection state {} error {}",
            krust::table::state_name(info.state),
            info.error
        );
    }
    Ok(n)
}

/// `rdma-krust-kit hostile`.
pub fn run(path: &str, a: &HostileArgs) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let by = {
        let (path, a, stop) = (path.to_string(), a.clone(), stop.clone());
        std::thread::spawn(move || bystander(&path, &a, &stop))
    };
    let mut rng = Rng::new(a.seed);
    let end = Instant::now() + Duration::from_secs(a.seconds);
    let mut tally: BTreeMap<Lie, u64> = BTreeMap::new();
    let mut result = Ok(());
    let mut rounds = 0u64;
    // Every lie once in each run of `LIES.len()` rounds, in a seeded order:
    // a short run (a slow debug kernel manages about 75 rounds a minute)
    // still tells them all, where picking at random missed one now and
    // then.
    let mut deck: Vec<Lie> = Vec::new();
    while rounds < a.count && Instant::now() < end && !by.is_finished() {
        let lie = if a.lie.is_empty() {
            if deck.is_empty() {
                deck = LIES.to_vec();
                for i in (1..deck.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    deck.swap(i, j);
                }
            }
            deck.pop().unwrap_or(Lie::Honest)
        } else {
            rng.pick(&a.lie)
        };
        let r = plan(lie, &mut rng, a.seed.wrapping_add(rounds));
        let side = Side::of_round(rounds);
        if a.verbose {
            let hdrs: Vec<String> = r
                .sends
                .iter()
                .map(|b| match WireHdr::decode(b) {
                    Some(h) => format!(
                        "{:#x}/{}/{}/{}+{}",
                        h.flags,
                        h.grant,
                        h.msg_len,
                        h.offset,
                        b.len() - HDR
                    ),
                    None => format!("raw[{}]", b.len()),
                })
                .collect();
            println!(
                "hostile: round {rounds} {lie:?}, module {}{}: {} SENDs {}",
                if side.listens { "listens" } else { "connects" },
                if side.polled { ", polled" } else { "" },
                r.sends.len(),
                hdrs.join(" ")
            );
        }
        if let Err(e) = round(path, a, &r, side, a.seed.wrapping_add(rounds)) {
            result = Err(e.context(format!("round {rounds}")));
            break;
        }
        *tally.entry(lie).or_default() += 1;
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let by = by.join().expect("bystander panicked");
    for (lie, n) in &tally {
        println!("hostile: {lie:?}: {n} rounds, answered as the rules say");
    }
    result?;
    let trips = by.context("bystander")?;
    if a.lie.is_empty() && tally.len() < LIES.len() && rounds >= 4 * LIES.len() as u64 {
        bail!("only {} of {} lies were told", tally.len(), LIES.len());
    }
    println!(
        "hostile: {rounds} rounds, {} kinds, all answered as the rules say; bystander: {trips} round trips verified; seed {}",
        tally.len(),
        a.seed
    );
    Ok(())
}
