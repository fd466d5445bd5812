// SPDX-License-Identifier: GPL-2.0

//! Test scenarios of one-sided operations, between a target that exposes a
//! window and an initiator that reads, writes and runs atomics on it. Both
//! ends check the data. See [`crate::ctl`] for the messages.

use crate::abi;
use crate::ctl::{self, Advert};
use crate::errno::errno_name;
use crate::exit::mismatch;
use crate::kdev::KrustDev;
use crate::pattern;
use anyhow::{bail, Context, Result};
use std::io;

/// One side of a connection that can carry control messages and run
/// one-sided operations.
pub trait Endpoint {
    /// Sends one message.
    fn send_msg(&self, data: &[u8]) -> Result<()>;
    /// Receives one message into `buf`; returns its length.
    fn recv_msg(&self, buf: &mut [u8]) -> Result<usize>;
    /// RDMA READ (`write == false`) or WRITE of `data`.
    fn rdma(&self, addr: u64, rkey: u32, data: &mut [u8], write: bool) -> io::Result<()>;
    /// An atomic; returns the value before it.
    fn atomic(&self, addr: u64, rkey: u32, op: u32, compare_add: u64, swap: u64)
        -> io::Result<u64>;
}

impl Endpoint for KrustDev {
    fn send_msg(&self, data: &[u8]) -> Result<()> {
        self.send(data, self.msg_timeout()).context("IOCTL_SEND")
    }
    fn recv_msg(&self, buf: &mut [u8]) -> Result<usize> {
        self.recv(buf, self.msg_timeout()).context("IOCTL_RECV")
    }
    fn rdma(&self, addr: u64, rkey: u32, data: &mut [u8], write: bool) -> io::Result<()> {
        self.rdma_within(addr, rkey, data, write, self.op_timeout())
    }
    fn atomic(
        &self,
        addr: u64,
        rkey: u32,
        op: u32,
        compare_add: u64,
        swap: u64,
    ) -> io::Result<u64> {
        self.atomic_within(addr, rkey, op, compare_add, swap, self.op_timeout())
    }
}

/// The side that exposes windows.
pub trait WindowOwner {
    /// Exposes `len` bytes with `ACCESS_*` rights: (address, rkey, id).
    fn expose(&self, len: u64, access: u32) -> Result<(u64, u32, u32)>;
    /// Copies the start of window `id` into `buf`.
    fn window_read(&self, id: u32, buf: &mut [u8]) -> Result<()>;
    /// Copies `data` to the start of window `id`.
    fn window_write(&self, id: u32, data: &[u8]) -> Result<()>;
    /// Invalidates the window's key and frees it.
    fn revoke(&self, id: u32) -> Result<()>;
}

impl WindowOwner for KrustDev {
    fn expose(&self, len: u64, access: u32) -> Result<(u64, u32, u32)> {
        self.expose_explained(len, access)
    }
    fn window_read(&self, id: u32, buf: &mut [u8]) -> Result<()> {
        self.window_io(id, 0, buf, true)
            .context("IOCTL_WINDOW_READ")
    }
    fn window_write(&self, id: u32, data: &[u8]) -> Result<()> {
        let mut copy = data.to_vec();
        self.window_io(id, 0, &mut copy, false)
            .context("IOCTL_WINDOW_WRITE")
    }
    fn revoke(&self, id: u32) -> Result<()> {
        KrustDev::revoke(self, id).context("IOCTL_REVOKE")
    }
}

/// The `ACCESS_*` bits of a string of `r`, `w`, `a`.
pub fn parse_access(s: &str) -> Result<u32, String> {
    let mut bits = 0;
    for c in s.chars() {
        bits |= match c {
            'r' => abi::ACCESS_READ,
            'w' => abi::ACCESS_WRITE,
            'a' => abi::ACCESS_ATOMIC,
            _ => return Err(format!("access '{s}': use r, w and a")),
        };
    }
    Ok(bits)
}

fn request(ep: &dyn Endpoint, tag: &[u8; 8], arg: u64) -> Result<u64> {
    ep.send_msg(&ctl::encode(tag, arg))?;
    let mut b = [0u8; 16];
    let n = ep.recv_msg(&mut b)?;
    match ctl::decode(&b[..n]) {
        Some((t, v)) if &t == ctl::OK => Ok(v),
        Some((t, v)) if &t == ctl::BAD => {
            Err(mismatch(format!("target: check failed at offset {v}")))
        }
        _ => bail!("target sent a bad reply"),
    }
}

fn expect_failure(r: io::Result<()>, what: &str) -> Result<String> {
    match r {
        Ok(()) => bail!("{what} succeeded"),
        Err(e) => {
            let code = e.raw_os_error().unwrap_or(0);
            Ok(format!("{} ({e})", errno_name(code)))
        }
    }
}

/// The initiator's scenarios.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// READ the target's pattern, WRITE another, READ it back; the target
    /// checks what was written.
    Rw,
    /// CAS that succeeds, CAS that fails, FADDs, a misaligned atomic.
    Atomic,
    /// READ past the end of the window: refused.
    Outside,
    /// WRITE 8 bytes across the end of the window (4 inside, 4 past it):
    /// refused, and not one byte lands (the target checks its window).
    OutsideWrite,
    /// The target revokes the window; READ with the old key is refused.
    Revoke,
    /// Fetch-and-add 1, `adds` times, printing each value returned; for many
    /// initiators at once.
    Fadd,
    /// READ the whole window `adds` times, checking the target's pattern
    /// each time: nothing but one-sided waits, for link faults.
    Reads,
}

/// What an initiator (kernel or userspace) runs against a target.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone, Copy)]
pub struct InitiatorArgs {
    /// The target.
    #[arg(long, value_parser = crate::addr::parse)]
    pub connect: abi::Addr,
    /// What to run.
    #[arg(long, value_enum)]
    pub scenario: Scenario,
    /// Pattern seed (the target's --fill).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Fetch-and-adds in the atomic and fadd scenarios.
    #[arg(long, default_value_t = 10)]
    pub adds: u32,
}

/// The test kit's options of an initiator (`rdma-krust-kit
/// kernel-initiator`): none of them is the user's.
#[derive(clap::Args, Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct InitiatorTest {
    /// Milliseconds to wait, connected and advertised to, before running:
    /// a bystander connection that lives through what other tests do.
    #[arg(long, default_value_t = 0)]
    pub hold_ms: u64,
}

/// `0xADDR:0xRKEY` (hex, with or without 0x).
pub fn parse_key(s: &str) -> Result<(u64, u32), String> {
    let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16);
    let (a, k) = s.split_once(':').ok_or("expected ADDR:RKEY")?;
    let a = hex(a).map_err(|e| format!("address: {e}"))?;
    let k = hex(k).map_err(|e| format!("rkey: {e}"))?;
    Ok((a, u32::try_from(k).map_err(|_| "rkey: over 32 bits")?))
}

/// Receives the target's advert and prints it.
fn advert(ep: &dyn Endpoint) -> Result<Advert> {
    let mut b = [0u8; 16];
    let n = ep.recv_msg(&mut b)?;
    let w = Advert::decode(&b[..n]).context("bad advert")?;
    println!("window addr={:#x} rkey={:#x} len={}", w.addr, w.rkey, w.len);
    std::io::Write::flush(&mut std::io::stdout())?;
    Ok(w)
}

/// Receives the target's advert, then READs with `(addr, rkey)`, the key of
/// a window of an earlier connection, instead of the advertised one: the
/// READ must be refused (the test kit's `stale-read`).
pub fn stale_read(ep: &dyn Endpoint, (addr, rkey): (u64, u32)) -> Result<()> {
    advert(ep)?;
    let mut buf = vec![0u8; 8];
    let got = expect_failure(
        ep.rdma(addr, rkey, &mut buf, false),
        "READ with a stale key",
    )?;
    println!("read with a stale key refused: {got}");
    Ok(())
}

/// Runs `scenario` against the target at the other end of `ep`.
pub fn initiator(ep: &dyn Endpoint, args: &InitiatorArgs, test: &InitiatorTest) -> Result<()> {
    let (scenario, seed, adds) = (args.scenario, args.seed, args.adds);
    let w = advert(ep)?;
    std::thread::sleep(std::time::Duration::from_millis(test.hold_ms));
    let len = w.len as usize;
    match scenario {
        Scenario::Rw => {
            let mut buf = vec![0u8; len];
            ep.rdma(w.addr, w.rkey, &mut buf, false)
                .context("RDMA READ")?;
            if let Some(off) = pattern::check(&buf, seed, 0) {
                return Err(mismatch(format!(
                    "READ: target's pattern differs at offset {off}"
                )));
            }
            pattern::fill(&mut buf, seed, 1);
            ep.rdma(w.addr, w.rkey, &mut buf, true)
                .context("RDMA WRITE")?;
            request(ep, ctl::CHECKPAT, 1)?;
            buf.fill(0);
            ep.rdma(w.addr, w.rkey, &mut buf, false)
                .context("RDMA READ back")?;
            if let Some(off) = pattern::check(&buf, seed, 1) {
                return Err(mismatch(format!("READ back: differs at offset {off}")));
            }
            println!("rw ok {len} bytes");
        }
        Scenario::Reads => {
            let mut buf = vec![0u8; len];
            let start = std::time::Instant::now();
            // The target waits for requests 20 s at a time: a check of its
            // pattern every 5 s keeps it answering through a long loop.
            let mut last = start;
            for i in 0..adds {
                if last.elapsed() > std::time::Duration::from_secs(5) {
                    request(ep, ctl::CHECKPAT, 0)?;
                    last = std::time::Instant::now();
                }
                buf.fill(0);
                let t = std::time::Instant::now();
                if let Err(e) = ep.rdma(w.addr, w.rkey, &mut buf, false) {
                    println!(
                        "READ {i} failed after {} ms: {}",
                        t.elapsed().as_millis(),
                        crate::errno::errno_name(e.raw_os_error().unwrap_or(0))
                    );
                    return Err(e).context("RDMA READ");
                }
                if let Some(off) = pattern::check(&buf, seed, 0) {
                    return Err(mismatch(format!(
                        "READ {i}: target's pattern differs at offset {off}"
                    )));
                }
                println!("READ {i}: {} ms", t.elapsed().as_millis());
            }
            println!(
                "reads ok: {adds} x {len} bytes in {} ms",
                start.elapsed().as_millis()
            );
        }
        Scenario::Atomic => {
            let cas = abi::ATOMIC_CMP_SWAP;
            let old = ep.atomic(w.addr, w.rkey, cas, 0, 0x1111).context("CAS")?;
            if old != 0 {
                return Err(mismatch(format!("CAS 0->0x1111 saw {old:#x}, expected 0")));
            }
            let old = ep.atomic(w.addr, w.rkey, cas, 0, 0x2222).context("CAS")?;
            if old != 0x1111 {
                return Err(mismatch(format!(
                    "failing CAS saw {old:#x}, expected 0x1111"
                )));
            }
            println!("cas ok: swapped 0 -> 0x1111, then refused 0 -> 0x2222");
            for i in 0..u64::from(adds) {
                let old = ep
                    .atomic(w.addr, w.rkey, abi::ATOMIC_FETCH_ADD, 5, 0)
                    .context("FADD")?;
                if old != 0x1111 + 5 * i {
                    return Err(mismatch(format!("FADD {i} saw {old:#x}")));
                }
            }
            let sum = 0x1111 + 5 * u64::from(adds);
            request(ep, ctl::CHECKU64, sum)?;
            println!("fadd ok: {adds} adds, final {sum:#x}");
            let e = ep.atomic(w.addr + 4, w.rkey, abi::ATOMIC_FETCH_ADD, 1, 0);
            let got = expect_failure(e.map(|_| ()), "misaligned atomic")?;
            println!("misaligned atomic refused: {got}");
        }
        Scenario::Outside => {
            let mut buf = vec![0u8; 8];
            let at = w.addr + u64::from(w.len) - 4;
            let got = expect_failure(ep.rdma(at, w.rkey, &mut buf, false), "READ outside")?;
            println!("read outside the window refused: {got}");
            return Ok(());
        }
        Scenario::OutsideWrite => {
            let mut buf = vec![0xeeu8; 8];
            let at = w.addr + u64::from(w.len) - 4;
            let mut r = ep.rdma(at, w.rkey, &mut buf, true);
            if r.is_ok() {
                // iWARP: a WRITE completes once its data has left; the
                // target refuses it afterwards (a TERMINATE), and the
                // connection fails. Waiting for a message sees that.
                let mut m = [0u8; 16];
                r = match ep.recv_msg(&mut m) {
                    Ok(_) => Ok(()),
                    Err(e) => Err(e
                        .downcast::<io::Error>()
                        .unwrap_or_else(|e| io::Error::other(e.to_string()))),
                };
            }
            let got = expect_failure(r, "WRITE outside")?;
            println!("write across the window's end refused: {got}");
            return Ok(());
        }
        Scenario::Fadd => {
            for _ in 0..adds {
                let old = ep
                    .atomic(w.addr, w.rkey, abi::ATOMIC_FETCH_ADD, 1, 0)
                    .context("FADD")?;
                println!("fadd-old {old}");
            }
        }
        Scenario::Revoke => {
            request(ep, ctl::REVOKE, 0)?;
            let mut buf = vec![0u8; len.min(64)];
            let got = expect_failure(ep.rdma(w.addr, w.rkey, &mut buf, false), "READ revoked")?;
            println!("read with a revoked key refused: {got}");
            return Ok(());
        }
    }
    say_bye(ep)
}

/// Sends BYE, the initiator's last message; see [`send_last`].
pub fn say_bye(ep: &dyn Endpoint) -> Result<()> {
    send_last(ep, &ctl::encode(ctl::BYE, 0)).context("send BYE")
}

/// Sends the last message of a conversation. The peer may close as soon as
/// it has read it, and when its disconnect overtakes the ACK our send is
/// flushed: the message arrived, yet the send reports `ECONNRESET`. That
/// error is therefore not a failure here; the peer's own check (it got the
/// message) is what decides, and every test asserts it.
pub fn send_last(ep: &dyn Endpoint, data: &[u8]) -> Result<()> {
    match ep.send_msg(data) {
        Err(e) if is_reset(&e) => Ok(()),
        r => r,
    }
}

/// Whether `e` comes from a connection the peer reset.
pub fn is_reset(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.raw_os_error() == Some(libc::ECONNRESET))
}

/// Sends the advert of a window.
pub fn advertise(ep: &dyn Endpoint, addr: u64, rkey: u32, len: u64) -> Result<()> {
    let advert = Advert {
        addr,
        rkey,
        len: len as u32,
    };
    ep.send_msg(&advert.encode()).context("send advert")
}

/// Answers one initiator's requests about window `id` of `owner` until BYE.
pub fn answer(
    ep: &dyn Endpoint,
    owner: &dyn WindowOwner,
    id: u32,
    len: u64,
    fill: Option<u64>,
) -> Result<()> {
    let mut win = vec![0u8; len as usize];
    let mut b = [0u8; 16];
    loop {
        let n = ep.recv_msg(&mut b).context("receive request")?;
        let (tag, arg) = ctl::decode(&b[..n]).context("bad request")?;
        let reply = match &tag {
            t if t == ctl::CHECKPAT => {
                owner.window_read(id, &mut win)?;
                match pattern::check(&win, fill.unwrap_or(0), arg) {
                    None => ctl::encode(ctl::OK, 0),
                    Some(off) => ctl::encode(ctl::BAD, off as u64),
                }
            }
            t if t == ctl::CHECKU64 => {
                let mut v = [0u8; 8];
                owner.window_read(id, &mut v)?;
                let got = u64::from_ne_bytes(v);
                println!("window value {got:#x}");
                if got == arg {
                    ctl::encode(ctl::OK, 0)
                } else {
                    ctl::encode(ctl::BAD, 0)
                }
            }
            t if t == ctl::REVOKE => {
                owner.revoke(id)?;
                println!("revoked");
                ctl::encode(ctl::OK, 0)
            }
            t if t == ctl::BYE => return Ok(()),
            _ => bail!("unknown request"),
        };
        match ep.send_msg(&reply) {
            // The peer may read the reply, send BYE and close before this
            // side sees the reply's ACK, which its disconnect then flushes
            // (`send_last`). The next receive decides: the BYE, delivered
            // before the close, or the close itself.
            Err(e) if is_reset(&e) => {}
            r => r.context("send reply")?,
        }
    }
}

/// Exposes a window of `owner` (filled with pattern message 0 of `fill`):
/// (address, rkey, id).
pub fn expose(
    owner: &dyn WindowOwner,
    len: u64,
    access: u32,
    fill: Option<u64>,
) -> Result<(u64, u32, u32)> {
    let (addr, rkey, id) = owner.expose(len, access)?;
    println!("window addr={addr:#x} rkey={rkey:#x} len={len} id={id}");
    if let Some(seed) = fill {
        let mut win = vec![0u8; len as usize];
        pattern::fill(&mut win, seed, 0);
        owner.window_write(id, &win)?;
    }
    Ok((addr, rkey, id))
}

/// A single-connection target: expose, advertise, answer until BYE.
pub fn target<T: Endpoint + WindowOwner>(
    ep: &T,
    len: u64,
    access: u32,
    fill: Option<u64>,
) -> Result<()> {
    let (addr, rkey, id) = expose(ep, len, access, fill)?;
    // The advert's own SEND may fail too: the peer can read it and break the
    // connection (a refused access) before this side sees it complete.
    let r = advertise(ep, addr, rkey, len).and_then(|()| answer(ep, ep, id, len, fill));
    if let Err(e) = r {
        // The connection failed, by a refused access say. Whatever the
        // peer tried, the window must hold what it held (unless revoked):
        // a check that needs no connection, so it runs whatever failed.
        if let Some(seed) = fill {
            let mut win = vec![0u8; len as usize];
            match ep.window_read(id, &mut win) {
                Ok(()) => match pattern::check(&win, seed, 0) {
                    None => println!("window intact after the failure"),
                    Some(off) => println!("window changed at offset {off} after the failure"),
                },
                Err(r) => println!("window not readable after the failure: {r:#}"),
            }
        }
        return Err(e);
    }
    println!("target done");
    Ok(())
}

/// Sends one patterned message per size and checks each echo.
pub fn ping(ep: &dyn Endpoint, sizes: &[u64], seed: u64) -> Result<()> {
    let mut back = vec![0u8; abi::MAX_MSG_SIZE as usize];
    for (i, &size) in sizes.iter().enumerate() {
        let mut msg = vec![0u8; size as usize];
        pattern::fill(&mut msg, seed, i as u64);
        ep.send_msg(&msg)
            .with_context(|| format!("send message {i} ({size} bytes)"))?;
        let n = ep
            .recv_msg(&mut back)
            .with_context(|| format!("receive echo {i}"))?;
        if n as u64 != size {
            return Err(mismatch(format!("echo {i}: {n} bytes, sent {size}")));
        }
        if let Some(off) = pattern::check(&back[..n], seed, i as u64) {
            return Err(mismatch(format!(
                "echo {i} ({size} bytes): data differs at offset {off}"
            )));
        }
        println!("ok {size} bytes");
    }
    println!("{} message(s) echoed and verified", sizes.len());
    Ok(())
}

/// Sends one patterned message per size without waiting for anything in
/// between, then the sink's verdict: a one-way stream, where credits come
/// back only in credit-only messages (no reply carries them).
pub fn stream(ep: &dyn Endpoint, sizes: &[u64], seed: u64) -> Result<()> {
    send_all(ep, sizes, seed)?;
    let mut back = [0u8; 8];
    let n = ep
        .recv_msg(&mut back)
        .context("receive the sink's verdict")?;
    let got = back.get(..n).and_then(|b| <[u8; 8]>::try_from(b).ok());
    match got.map(u64::from_le_bytes) {
        Some(v) if v == sizes.len() as u64 => {
            println!("{v} message(s) streamed and verified by the sink");
            Ok(())
        }
        _ => bail!(
            "the sink's verdict is {:?}, expected {}",
            &back[..n.min(8)],
            sizes.len()
        ),
    }
}

/// Sends the messages of a [`stream`], back to back, and nothing else.
pub fn send_all(ep: &dyn Endpoint, sizes: &[u64], seed: u64) -> Result<()> {
    for (i, &size) in sizes.iter().enumerate() {
        let mut msg = vec![0u8; size as usize];
        pattern::fill(&mut msg, seed, i as u64);
        ep.send_msg(&msg)
            .with_context(|| format!("send message {i} ({size} bytes)"))?;
        println!("sent {size} bytes");
    }
    Ok(())
}

/// Receives `count` messages of a [`stream`] with `seed`, checks each, and
/// answers with the count.
pub fn sink(ep: &dyn Endpoint, count: u32, seed: u64) -> Result<()> {
    let mut buf = vec![0u8; abi::MAX_MSG_SIZE as usize];
    for i in 0..count {
        let n = ep
            .recv_msg(&mut buf)
            .with_context(|| format!("receive message {i}"))?;
        if let Some(off) = pattern::check(&buf[..n], seed, u64::from(i)) {
            return Err(mismatch(format!(
                "message {i} ({n} bytes): data differs at offset {off}"
            )));
        }
        println!("ok {n} bytes");
    }
    send_last(ep, &u64::from(count).to_le_bytes()).context("send the verdict")?;
    println!("received and verified {count} message(s)");
    Ok(())
}

/// Echoes `count` messages.
pub fn echo(ep: &dyn Endpoint, count: u32) -> Result<()> {
    let mut buf = vec![0u8; abi::MAX_MSG_SIZE as usize];
    for i in 0..count {
        let n = ep
            .recv_msg(&mut buf)
            .with_context(|| format!("receive message {i}"))?;
        // The pinger closes once it has the last echo.
        let sent = if i + 1 == count {
            send_last(ep, &buf[..n])
        } else {
            ep.send_msg(&buf[..n])
        };
        sent.with_context(|| format!("echo message {i} ({n} bytes)"))?;
    }
    println!("echoed {count} message(s)");
    Ok(())
}
