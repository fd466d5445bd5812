// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust raw-ping` (and the test kit's, [`crate::cmds`]): raw
//! messages to an echo server, each echo checked.
//!
//! The server is the kernel::rdma echo sample of the series
//! (`samples/rust/rust_rdma_echo.rs`), or anything that SENDs every
//! message back as it came: no header, no credits. The client is the
//! module (a `CONN_RAW` connection) or, with `--userspace`, librdmacm.
//! Messages go one at a time, so the server's receives always suffice.

use crate::abi;
use crate::kdev::KrustDev;
use crate::pattern;
use crate::upeer::UPeer;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// How the run goes: the messages, and what happens after their echoes.
pub struct Plan {
    /// Message sizes, one message each.
    pub sizes: Vec<u64>,
    /// Pattern seed.
    pub seed: u64,
    /// How long to stay connected after the last echo (a test deletes the
    /// device meanwhile).
    pub hold: Duration,
    /// How long to wait before each message after the first (a test
    /// unloads the server meanwhile).
    pub pause: Duration,
}

/// Sends each message and checks its echo: the same length and pattern.
fn run(
    sizes: &[u64],
    seed: u64,
    pause: Duration,
    mut send: impl FnMut(&[u8]) -> Result<()>,
    mut recv: impl FnMut(&mut [u8]) -> Result<usize>,
) -> Result<()> {
    let largest = sizes.iter().copied().max().unwrap_or(0) as usize;
    let mut back = vec![0u8; largest.max(1)];
    for (i, &size) in sizes.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(pause);
        }
        let mut msg = vec![0u8; size as usize];
        pattern::fill(&mut msg, seed, i as u64);
        send(&msg).with_context(|| format!("message {i} ({size} bytes)"))?;
        let n = recv(&mut back).with_context(|| format!("echo of message {i}"))?;
        if n != msg.len() {
            bail!("echo of message {i}: {n} bytes, not {size}");
        }
        if let Some(at) = pattern::check(&back[..n], seed, i as u64) {
            bail!("echo of message {i}: byte {at} differs");
        }
    }
    Ok(())
}

/// Prints the result line, then holds the connection as `p` says.
fn done(from: &str, p: &Plan) {
    println!("raw-ping ({from}): {} echo(es) checked", p.sizes.len());
    std::thread::sleep(p.hold);
}

/// From the module: a raw connection to `at`.
pub fn kernel(dev: &KrustDev, at: abi::Addr, p: &Plan, ms: u32) -> Result<()> {
    dev.connect(at, 0, 0, ms, abi::CONN_RAW)?;
    run(
        &p.sizes,
        p.seed,
        p.pause,
        |m| dev.send(m, ms).context("IOCTL_SEND"),
        |b| dev.recv(b, ms).context("IOCTL_RECV"),
    )?;
    done("module", p);
    dev.disconnect()
}

/// From librdmacm: a raw connection of the userspace peer to `at`.
pub fn userspace(at: abi::Addr, p: &Plan) -> Result<()> {
    let peer = UPeer::connect_raw(&at)?;
    run(
        &p.sizes,
        p.seed,
        p.pause,
        |m| peer.send_wire(&[m.to_vec()]),
        |b| peer.recv_wire(b),
    )?;
    done("userspace", p);
    peer.disconnect()
}
