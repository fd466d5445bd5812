// SPDX-License-Identifier: GPL-2.0

//! The user's commands that the test kit runs too: `kernel-echo`,
//! `kernel-ping`, `kernel-initiator` and `raw-ping`. Each has the user's
//! arguments (`*Args`, flattened into `rdma-krust`'s subcommand) and the
//! test kit's (`*Test`: holds, lingers and the like that only serve the
//! tests, flattened into `rdma-krust-kit`'s subcommand of the same name);
//! the user's tool runs them with `*Test::default()`, which changes
//! nothing.

use crate::kdev::KrustDev;
use crate::scenario::{self, InitiatorArgs, InitiatorTest};
use crate::{abi, addr, rawping, table};
use anyhow::{ensure, Result};
use std::time::{Duration, Instant};

/// READ/atomic depths a side asks for (0 = the device's maximum).
#[derive(clap::Args, Debug, PartialEq, Eq, Clone, Copy)]
pub struct Depth {
    /// READ/atomic requests this side serves (responder_resources).
    #[arg(long, default_value_t = 0)]
    pub resp: u32,
    /// READ/atomic requests this side issues (initiator_depth).
    #[arg(long, default_value_t = 0)]
    pub init: u32,
}

/// Where patterned messages go, and which: `ping` and `raw-ping`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct Messages {
    /// The listener (an echo server, or a sink).
    #[arg(long, value_parser = addr::parse)]
    pub connect: abi::Addr,
    /// Message sizes, one message each.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pub sizes: Vec<u64>,
    /// Pattern seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `kernel-echo`: listen, accept one connection, echo messages.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct KernelEchoArgs {
    /// Address and port to listen on.
    #[arg(long, value_parser = addr::parse)]
    pub listen: abi::Addr,
    /// Messages to echo before exiting.
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    #[command(flatten)]
    pub depth: Depth,
    /// Milliseconds to wait for the connection (messages:
    /// --msg-timeout-ms).
    #[arg(long, default_value_t = 20_000)]
    pub timeout_ms: u32,
    /// A busy-polling connection (CONN_POLL).
    #[arg(long)]
    pub poll: bool,
    /// Receive and check `--count` messages of a `--one-way` stream,
    /// then answer with the count, instead of echoing.
    #[arg(long)]
    pub sink: bool,
    /// `--sink`: the stream's pattern seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The test kit's options of `kernel-echo`.
#[derive(clap::Args, Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct EchoTest {
    /// Milliseconds to wait at most after accepting, before the first
    /// receive, for the connection to close (the peer's disconnect in).
    #[arg(long, default_value_t = 0)]
    pub hold_ms: u64,
}

/// Listens on `listen`, prints `listening`, accepts one connection and
/// prints it.
pub fn kernel_accept(
    dev: &KrustDev,
    listen: abi::Addr,
    depth: Depth,
    timeout_ms: u32,
    flags: u32,
) -> Result<()> {
    dev.listen(listen, depth.resp, depth.init, flags)?;
    println!("listening");
    std::io::Write::flush(&mut std::io::stdout())?;
    let info = dev.accept(timeout_ms)?;
    println!("{}", table::conn_line(&info));
    Ok(())
}

/// `kernel-echo` on `dev`.
pub fn kernel_echo(dev: &KrustDev, a: &KernelEchoArgs, test: &EchoTest) -> Result<()> {
    let flags = if a.poll { abi::CONN_POLL } else { 0 };
    kernel_accept(dev, a.listen, a.depth, a.timeout_ms, flags)?;
    if test.hold_ms > 0 {
        // Until the peer's close is in, or `hold_ms` at most.
        let t = Instant::now();
        let mut info = dev.conn_info()?;
        while info.state != abi::state::CLOSED && t.elapsed().as_millis() < u128::from(test.hold_ms)
        {
            std::thread::sleep(Duration::from_millis(20));
            info = dev.conn_info()?;
        }
        println!("after holding: {}", table::conn_line(&info));
    }
    if a.sink {
        scenario::sink(dev, a.count, a.seed)
    } else {
        scenario::echo(dev, a.count)
    }
}

/// `kernel-ping`: connect, send patterned messages, check echoes.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct KernelPingArgs {
    /// The listener.
    #[arg(long, value_parser = addr::parse)]
    pub connect: abi::Addr,
    /// Message sizes, one message each, e.g. 1,4096,65536.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pub sizes: Vec<u64>,
    /// Pattern seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub depth: Depth,
    /// Milliseconds for each step of connecting (messages:
    /// --msg-timeout-ms).
    #[arg(long, default_value_t = 20_000)]
    pub timeout_ms: u32,
    /// A busy-polling connection (CONN_POLL).
    #[arg(long)]
    pub poll: bool,
    /// Send every message back to back, then wait for a sink's count
    /// (`kernel-echo --sink`, `serve --mode sink`) instead of echoes.
    #[arg(long)]
    pub one_way: bool,
}

/// The test kit's options of `kernel-ping`.
#[derive(clap::Args, Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct PingTest {
    /// Milliseconds to wait after connecting, before the first message.
    #[arg(long, default_value_t = 0)]
    pub hold_ms: u64,
    /// Milliseconds to stay connected after the last message, before
    /// disconnecting (to cut a test link before the disconnect, say).
    #[arg(long, default_value_t = 0)]
    pub linger_ms: u64,
    /// With `--one-way`: disconnect as soon as every message is sent,
    /// without waiting for the sink's count.
    #[arg(long, requires = "one_way")]
    pub no_verdict: bool,
}

/// `kernel-ping` on `dev`.
pub fn kernel_ping(dev: &KrustDev, a: &KernelPingArgs, test: &PingTest) -> Result<()> {
    let flags = if a.poll { abi::CONN_POLL } else { 0 };
    let info = dev.connect(a.connect, a.depth.resp, a.depth.init, a.timeout_ms, flags)?;
    println!("{}", table::conn_line(&info));
    std::io::Write::flush(&mut std::io::stdout())?;
    std::thread::sleep(Duration::from_millis(test.hold_ms));
    match (a.one_way, test.no_verdict) {
        (false, _) => scenario::ping(dev, &a.sizes, a.seed)?,
        (true, false) => scenario::stream(dev, &a.sizes, a.seed)?,
        (true, true) => scenario::send_all(dev, &a.sizes, a.seed)?,
    }
    if test.linger_ms > 0 {
        println!("lingering {} ms before disconnecting", test.linger_ms);
        std::io::Write::flush(&mut std::io::stdout())?;
        std::thread::sleep(Duration::from_millis(test.linger_ms));
    }
    let t = Instant::now();
    if let Err(e) = dev.disconnect() {
        // The peer may have closed first: then there is nothing to do.
        if dev.conn_info()?.state != abi::state::CLOSED {
            return Err(e);
        }
        println!("disconnected by the peer");
        return Ok(());
    }
    // IOCTL_DISCONNECT returns once rdma_cm reported the end.
    let state = dev.conn_info()?.state;
    ensure!(
        state == abi::state::CLOSED,
        "IOCTL_DISCONNECT returned with the connection {}",
        table::state_name(state)
    );
    println!("disconnected in {} ms", t.elapsed().as_millis());
    Ok(())
}

/// `kernel-initiator`: connect to a target and run a scenario on its
/// window.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct KernelInitiatorArgs {
    #[command(flatten)]
    pub args: InitiatorArgs,
    /// Milliseconds for each step of connecting (messages:
    /// --msg-timeout-ms).
    #[arg(long, default_value_t = 20_000)]
    pub timeout_ms: u32,
}

/// `kernel-initiator` on `dev`.
pub fn kernel_initiator(
    dev: &KrustDev,
    a: &KernelInitiatorArgs,
    test: &InitiatorTest,
) -> Result<()> {
    let info = dev.connect(a.args.connect, 0, 0, a.timeout_ms, 0)?;
    println!("{}", table::conn_line(&info));
    scenario::initiator(dev, &a.args, test)?;
    // What the operations did to the connection (READ sinks, say).
    if let Ok(i) = dev.conn_info() {
        println!("after {}", table::conn_line(&i));
    }
    Ok(())
}

/// `raw-ping`: raw messages to an echo server, each echo checked.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct RawPingArgs {
    #[command(flatten)]
    pub msgs: Messages,
    /// Connect from userspace (librdmacm) instead of the module.
    #[arg(long)]
    pub userspace: bool,
    /// Milliseconds for each step of connecting (the module's).
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u32,
}

/// The test kit's options of `raw-ping`.
#[derive(clap::Args, Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct RawPingTest {
    /// Milliseconds to stay connected after the last echo.
    #[arg(long, default_value_t = 0)]
    pub hold_ms: u64,
    /// Milliseconds to wait before each message after the first.
    #[arg(long, default_value_t = 0)]
    pub pause_ms: u64,
}

/// `raw-ping`: from the module (opened by `open`), or from userspace.
pub fn raw_ping(
    a: &RawPingArgs,
    test: &RawPingTest,
    open: &dyn Fn() -> Result<KrustDev>,
) -> Result<()> {
    let plan = rawping::Plan {
        sizes: a.msgs.sizes.clone(),
        seed: a.msgs.seed,
        hold: Duration::from_millis(test.hold_ms),
        pause: Duration::from_millis(test.pause_ms),
    };
    if a.userspace {
        rawping::userspace(a.msgs.connect, &plan)
    } else {
        rawping::kernel(&open()?, a.msgs.connect, &plan, a.timeout_ms)
    }
}
