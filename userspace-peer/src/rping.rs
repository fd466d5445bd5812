// SPDX-License-Identifier: GPL-2.0

//! rping's protocol (rdma-core's librdmacm/examples/rping.c), run over a raw
//! connection of the module (`abi::CONN_RAW`): every message is 16 bytes,
//! `{be64 addr, be32 rkey, be32 len}`; all RDMA is done by the module.
//!
//! One iteration: the client advertises its source buffer; the server RDMA
//! READs it and sends a go-ahead; the client advertises its sink; the server
//! RDMA WRITEs the data there and sends a second go-ahead; with `-V` the
//! client compares sink and source. See `Documentation/rping.rst`.

use crate::abi;
use crate::ctl::Advert;
use crate::kdev::KrustDev;
use crate::scenario;
use anyhow::{bail, Context, Result};

const TIMEOUT_MS: u32 = 20_000;

/// rping's start-buffer contents for iteration `ping`: "rdma-ping-%d: "
/// then the ASCII run from `start` ('A'..'z', wrapping), NUL-terminated.
pub fn pattern(ping: u32, size: usize) -> Vec<u8> {
    let mut b = vec![0u8; size];
    let head = format!("rdma-ping-{ping}: ");
    let n = head.len().min(size);
    b[..n].copy_from_slice(&head.as_bytes()[..n]);
    let mut c = b'A' + (ping % 58) as u8;
    for x in b.iter_mut().skip(n) {
        *x = c;
        c = if c == b'z' { b'A' } else { c + 1 };
    }
    if let Some(last) = b.last_mut() {
        *last = 0;
    }
    b
}

fn recv16(dev: &KrustDev) -> Result<[u8; 16]> {
    let mut b = [0u8; 16];
    let n = dev.recv(&mut b, TIMEOUT_MS)?;
    if n != 16 {
        bail!("received {n} bytes, rping messages are 16");
    }
    Ok(b)
}

/// The server: accept one connection, serve until the client disconnects.
pub fn server(dev: &KrustDev, addr: abi::Addr) -> Result<()> {
    dev.listen(addr, 0, 0, abi::CONN_RAW)?;
    println!("listening");
    std::io::Write::flush(&mut std::io::stdout())?;
    let info = dev.accept(60_000)?;
    println!(
        "rping server: connected, resp={} init={}",
        info.responder_resources, info.initiator_depth
    );
    let mut pings = 0u32;
    loop {
        // The source advert; a disconnect here is the normal end, and
        // anything else (a timeout, say) an error.
        let src = match recv16(dev) {
            Ok(b) => Advert::decode(&b).context("bad advert")?,
            Err(e) if crate::scenario::is_reset(&e) => break,
            Err(e) => return Err(e.context("receive the source advert")),
        };
        let mut data = vec![0u8; src.len as usize];
        dev.rdma(src.addr, src.rkey, &mut data, false)
            .context("RDMA READ of the client's source")?;
        dev.send(&[0u8; 16], TIMEOUT_MS).context("go-ahead")?;
        let sink = Advert::decode(&recv16(dev)?).context("bad sink advert")?;
        // As rping's server: write the string, with its NUL.
        let len = data
            .iter()
            .position(|&c| c == 0)
            .map_or(data.len(), |p| p + 1);
        let len = len.min(sink.len as usize);
        dev.rdma(sink.addr, sink.rkey, &mut data[..len], true)
            .context("RDMA WRITE to the client's sink")?;
        pings += 1;
        // The go-ahead of the client's last ping may be its last message:
        // rping exits as soon as it has it, and when its disconnect
        // overtakes the ACK the SEND is flushed (ECONNRESET) although it
        // arrived. The client's own exit status tells whether it did.
        match dev.send(&[0u8; 16], TIMEOUT_MS) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => break,
            Err(e) => return Err(e).context("second go-ahead"),
        }
    }
    println!("rping server: {pings} ping(s) served");
    if pings == 0 {
        bail!("no ping served");
    }
    Ok(())
}

/// The client: `count` validated (with `validate`) ping-pongs of `size` bytes.
pub fn client(
    dev: &KrustDev,
    addr: abi::Addr,
    count: u32,
    size: u32,
    validate: bool,
) -> Result<()> {
    if !(23..=65535).contains(&size) {
        bail!("size {size}: rping takes 23 to 65535");
    }
    let info = dev.connect(addr, 0, 0, TIMEOUT_MS, abi::CONN_RAW)?;
    println!(
        "rping client: connected, resp={} init={}",
        info.responder_resources, info.initiator_depth
    );
    let len = u64::from(size);
    let (src_addr, src_rkey, src_id) =
        dev.expose(len, abi::ACCESS_READ).context("expose source")?;
    let (sink_addr, sink_rkey, sink_id) =
        dev.expose(len, abi::ACCESS_WRITE).context("expose sink")?;
    for ping in 0..count {
        let mut start = pattern(ping, size as usize);
        dev.window_io(src_id, 0, &mut start, false)?;
        scenario::advertise(dev, src_addr, src_rkey, len).context("source advert")?;
        recv16(dev).context("go-ahead")?;
        scenario::advertise(dev, sink_addr, sink_rkey, len).context("sink advert")?;
        recv16(dev).context("second go-ahead")?;
        if validate {
            let mut sink = vec![0u8; size as usize];
            dev.window_io(sink_id, 0, &mut sink, true)?;
            if sink != start {
                return Err(crate::exit::mismatch(format!("ping {ping}: data mismatch")));
            }
        }
    }
    println!(
        "rping client: {count} ping(s) of {size} bytes{}",
        if validate { ", validated" } else { "" }
    );
    dev.disconnect()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_rpings() {
        let p = pattern(0, 30);
        assert_eq!(&p[..14], b"rdma-ping-0: A");
        assert_eq!(p[15], b'C');
        assert_eq!(p[29], 0);
        assert!(p[..29].iter().all(|&c| c != 0));
        // The run wraps from 'z' to 'A' and starts one later each ping.
        assert_eq!(pattern(1, 20)[13], b'B');
        let long = pattern(0, 100);
        let z = long.iter().position(|&c| c == b'z').unwrap();
        assert_eq!(long[z + 1], b'A');
    }
}
