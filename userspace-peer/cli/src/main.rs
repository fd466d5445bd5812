// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust`, the user's tool: drives the rdma_krust kernel module
//! through `/dev/rdma_krust`, and looks at the same RDMA devices through
//! libibverbs. Its commands are the ones a user runs (devices, the kernel
//! and userspace ends of a connection, rping, bench and its reports); the
//! tests' own (fuzz, stress, races, faults, the two-host suite) are the
//! test kit's, `rdma-krust-kit`. What both share is the `krust` library.

mod benchcmd;
#[cfg(test)]
mod cmdlines;
#[cfg(feature = "plot")]
mod plot;
mod rawping;
mod rping;

use anyhow::{ensure, Context, Result};
use clap::{Parser, Subcommand};
use krust::kdev::KrustDev;
use krust::opts::DevArgs;
use krust::scenario::{self, InitiatorArgs};
use krust::{abi, addr, bench, exit, table, upeer, verbs};
use std::process::ExitCode;

/// Drive the rdma_krust kernel module and compare it with libibverbs.
#[derive(Parser, Debug)]
#[command(name = "rdma-krust", version, about, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(flatten)]
    pub globals: DevArgs,

    /// Catch SIGUSR1 (doing nothing) instead of dying of it, so a blocked
    /// ioctl it interrupts returns and its EINTR is printed (for the tests).
    /// Hidden: a test kit option (`rdma-krust-kit --eintr-on-usr1`), taken
    /// here too for the tests that interrupt a `kernel-echo`.
    #[arg(long, global = true, hide = true)]
    pub eintr_on_usr1: bool,

    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands.
#[derive(Subcommand, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// List RDMA devices as the module's ib_client sees them.
    Devices {
        /// List them through libibverbs instead (no module needed).
        #[arg(long)]
        verbs: bool,
        /// One line per device: name and node GUID.
        #[arg(long, conflicts_with = "json")]
        brief: bool,
        /// Every field as one JSON object: {"source", "devices": [...]}.
        #[arg(short = 'j', long)]
        json: bool,
    },
    /// In-kernel passive side: listen, accept one connection, echo messages.
    KernelEcho {
        /// Address and port to listen on.
        #[arg(long, value_parser = addr::parse)]
        listen: abi::Addr,
        /// Messages to echo before exiting.
        #[arg(long, default_value_t = 1)]
        count: u32,
        #[command(flatten)]
        depth: Depth,
        /// Milliseconds to wait for the connection (messages:
        /// --msg-timeout-ms).
        #[arg(long, default_value_t = 20_000)]
        timeout_ms: u32,
        /// A busy-polling connection (CONN_POLL).
        #[arg(long)]
        poll: bool,
        /// Receive and check `--count` messages of a `--one-way` stream,
        /// then answer with the count, instead of echoing.
        #[arg(long)]
        sink: bool,
        /// `--sink`: the stream's pattern seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Milliseconds to wait at most after accepting, before the first
        /// receive, for the connection to close (the peer's disconnect in).
        #[arg(long, default_value_t = 0)]
        hold_ms: u64,
    },
    /// In-kernel active side: connect, send patterned messages, check echoes.
    KernelPing {
        /// The listener.
        #[arg(long, value_parser = addr::parse)]
        connect: abi::Addr,
        /// Milliseconds to wait after connecting, before the first message.
        #[arg(long, default_value_t = 0)]
        hold_ms: u64,
        /// Milliseconds to stay connected after the last message, before
        /// disconnecting (to cut a test link before the disconnect, say).
        #[arg(long, default_value_t = 0)]
        linger_ms: u64,
        /// Message sizes, one message each, e.g. 1,4096,65536.
        #[arg(long, value_delimiter = ',', default_value = "64")]
        sizes: Vec<u64>,
        /// Pattern seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        depth: Depth,
        /// Milliseconds for each step of connecting (messages:
        /// --msg-timeout-ms).
        #[arg(long, default_value_t = 20_000)]
        timeout_ms: u32,
        /// A busy-polling connection (CONN_POLL).
        #[arg(long)]
        poll: bool,
        /// Send every message back to back, then wait for a sink's count
        /// (`kernel-echo --sink`, `serve --mode sink`) instead of echoes.
        #[arg(long)]
        one_way: bool,
        /// With `--one-way`: disconnect as soon as every message is sent,
        /// without waiting for the sink's count.
        #[arg(long, requires = "one_way")]
        no_verdict: bool,
    },
    /// Userspace RDMA peer (librdmacm/libibverbs): accept connections and
    /// echo messages, sink a stream, or expose a window to them.
    Serve(ServeArgs),
    /// Userspace active side: connect and send patterned messages to an echo.
    Ping {
        #[command(flatten)]
        msgs: Messages,
        #[command(flatten)]
        depth: Depth,
        /// Send every message back to back, then wait for a sink's count.
        #[arg(long)]
        one_way: bool,
    },
    /// Raw messages to an echo server (the kernel::rdma echo sample), each
    /// echo checked: from the module, or with --userspace from librdmacm.
    RawPing {
        #[command(flatten)]
        msgs: Messages,
        /// Connect from userspace (librdmacm) instead of the module.
        #[arg(long)]
        userspace: bool,
        /// Milliseconds for each step of connecting (the module's).
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u32,
        /// Milliseconds to stay connected after the last echo.
        #[arg(long, default_value_t = 0)]
        hold_ms: u64,
        /// Milliseconds to wait before each message after the first.
        #[arg(long, default_value_t = 0)]
        pause_ms: u64,
    },
    /// Userspace initiator: connect to a target and run a scenario.
    Initiate(InitiatorArgs),
    /// Run rping's protocol in the module, with rping's options: as
    /// server (-s, against `rping -c`) or client (-c, against `rping -s`).
    Rping(rping::RpingArgs),
    /// Run a benchmark loop in the module, with perftest's options and
    /// report: without SERVER this side listens (the SEND responder, or the
    /// window of the one-sided operations), with it this side connects and
    /// measures. Give both sides the same --op, --mode, -s, -n and -a.
    Bench(benchcmd::BenchArgs),
    /// Write PNG plots of a `make bench` run (built with `--features plot`).
    BenchPlot {
        /// The run's directory (bench.jsonl, samples-*.txt).
        dir: std::path::PathBuf,
        /// Where to write the PNGs.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Print the side-by-side table of a `make bench` run (bench.jsonl);
    /// given several runs (one per boot), per row the medians, the median
    /// ratio and its spread, and which run is the median one.
    BenchReport {
        /// The results, one JSON object per line; one file per boot.
        #[arg(required = true)]
        input: Vec<std::path::PathBuf>,
    },
    /// In-kernel target: listen, expose a window, advertise it, answer checks.
    KernelTarget {
        /// Address and port to listen on.
        #[arg(long, value_parser = addr::parse)]
        listen: abi::Addr,
        /// Window size in bytes.
        #[arg(long, default_value_t = 4096)]
        len: u64,
        /// Access granted to the peer: any of r, w, a.
        #[arg(long, default_value = "rw", value_parser = scenario::parse_access)]
        access: u32,
        /// Fill the window with pattern message 0 of this seed first.
        #[arg(long)]
        fill: Option<u64>,
        /// Milliseconds to wait for the connection (messages:
        /// --msg-timeout-ms).
        #[arg(long, default_value_t = 20_000)]
        timeout_ms: u32,
    },
    /// In-kernel initiator: connect to a target and run a scenario on its
    /// window.
    KernelInitiator {
        #[command(flatten)]
        args: InitiatorArgs,
        /// Milliseconds for each step of connecting (messages:
        /// --msg-timeout-ms).
        #[arg(long, default_value_t = 20_000)]
        timeout_ms: u32,
    },
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

fn kernel_accept(
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

/// What `kernel-ping` does with its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PingMode {
    /// Each is echoed back and checked.
    Echo,
    /// Sent back to back, then the sink's count is checked.
    Stream,
    /// Sent back to back, then the connection is closed.
    StreamNoVerdict,
}

/// The pinging side, on a connected `dev`.
fn kernel_ping(
    dev: &KrustDev,
    info: &abi::ConnInfo,
    (hold_ms, linger_ms): (u64, u64),
    sizes: &[u64],
    seed: u64,
    mode: PingMode,
) -> Result<()> {
    println!("{}", table::conn_line(info));
    std::io::Write::flush(&mut std::io::stdout())?;
    std::thread::sleep(std::time::Duration::from_millis(hold_ms));
    match mode {
        PingMode::Echo => scenario::ping(dev, sizes, seed)?,
        PingMode::Stream => scenario::stream(dev, sizes, seed)?,
        PingMode::StreamNoVerdict => scenario::send_all(dev, sizes, seed)?,
    }
    if linger_ms > 0 {
        println!("lingering {linger_ms} ms before disconnecting");
        std::io::Write::flush(&mut std::io::stdout())?;
        std::thread::sleep(std::time::Duration::from_millis(linger_ms));
    }
    let t = std::time::Instant::now();
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

/// The arguments of `rdma-krust serve`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, value_parser = addr::parse)]
    pub listen: abi::Addr,
    /// Connections to accept before serving them.
    #[arg(long, default_value_t = 1)]
    pub connections: u32,
    /// What to do with each connection.
    #[arg(long, value_enum, default_value = "echo")]
    pub mode: ServeMode,
    /// Echo and sink modes: messages per connection.
    #[arg(long, default_value_t = 1)]
    pub count: u32,
    /// Target mode: window size.
    #[arg(long, default_value_t = 4096)]
    pub len: u64,
    /// Target mode: access granted, any of r, w, a.
    #[arg(long, default_value = "rw", value_parser = scenario::parse_access)]
    pub access: u32,
    /// Target mode: fill the window with pattern message 0 of this seed.
    #[arg(long)]
    pub fill: Option<u64>,
    /// Sink mode: the stream's pattern seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub depth: Depth,
    /// Milliseconds to wait for each connection; 0 (the default) waits
    /// without limit. (Messages: --msg-timeout-ms.)
    #[arg(long, default_value_t = 0)]
    pub timeout_ms: u32,
}

/// What `serve` does with each connection.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServeMode {
    /// Echo `--count` messages per connection.
    Echo,
    /// Receive and check `--count` messages of a one-way stream per
    /// connection, then answer with the count.
    Sink,
    /// Expose one window (shared by all connections), advertise it on each,
    /// answer checks until each says BYE.
    Target,
}

fn serve(a: &ServeArgs) -> Result<()> {
    let ServeArgs {
        listen,
        connections,
        mode,
        count,
        len,
        access,
        fill,
        seed,
        depth,
        timeout_ms,
    } = a.clone();
    let listener = upeer::Listener::bind(&listen)?;
    println!("listening");
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut peers: Vec<upeer::UPeer> = Vec::new();
    let mut window: Option<(u64, u32, u32)> = None;
    for _ in 0..connections {
        let peer = listener.accept_within(depth.resp, depth.init, timeout_ms)?;
        println!("accepted");
        if mode == ServeMode::Target {
            let owner: &dyn scenario::WindowOwner = match peers.first() {
                Some(first) => first,
                None => &peer,
            };
            let w = match window {
                Some(w) => w,
                None => *window.insert(scenario::expose(owner, len, access, fill)?),
            };
            scenario::advertise(&peer, w.0, w.1, len)?;
        }
        peers.push(peer);
    }
    for peer in &peers {
        match (mode, window) {
            (ServeMode::Echo, _) => scenario::echo(peer, count)?,
            (ServeMode::Sink, _) => scenario::sink(peer, count, seed)?,
            (ServeMode::Target, Some((_, _, id))) => {
                scenario::answer(peer, &peers[0], id, len, fill)?
            }
            (ServeMode::Target, None) => {}
        }
    }
    println!("served {connections} connection(s)");
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    upeer::set_timeout_ms(cli.globals.msg_timeout_ms);
    let o = &cli.globals;
    match cli.cmd {
        Cmd::Devices { verbs, brief, json } => {
            let devices = if verbs {
                verbs::list_devices()?
            } else {
                o.open()?.list_devices()?
            };
            let source = if verbs {
                "libibverbs"
            } else {
                "/dev/rdma_krust (ib_client)"
            };
            if json {
                print!("{}", table::json(source, &devices));
            } else if brief {
                print!("{}", table::brief(&devices));
            } else {
                print!("{}", table::full(source, &devices));
            }
            if devices.is_empty() {
                // Not an error (an empty list is an answer), but say why.
                let who = if verbs { "libibverbs" } else { "the module" };
                eprintln!(
                    "rdma-krust: hint: {who} sees no RDMA device; {}",
                    exit::ADD_DEVICE
                );
            }
            Ok(())
        }
        Cmd::KernelEcho {
            listen,
            count,
            depth,
            timeout_ms,
            poll,
            sink,
            seed,
            hold_ms,
        } => {
            let flags = if poll { abi::CONN_POLL } else { 0 };
            let dev = o.open()?;
            kernel_accept(&dev, listen, depth, timeout_ms, flags)?;
            if hold_ms > 0 {
                // Until the peer's close is in, or `hold_ms` at most.
                let t = std::time::Instant::now();
                let mut info = dev.conn_info()?;
                while info.state != abi::state::CLOSED
                    && t.elapsed().as_millis() < u128::from(hold_ms)
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    info = dev.conn_info()?;
                }
                println!("after holding: {}", table::conn_line(&info));
            }
            if sink {
                scenario::sink(&dev, count, seed)
            } else {
                scenario::echo(&dev, count)
            }
        }
        Cmd::KernelPing {
            connect,
            hold_ms,
            linger_ms,
            sizes,
            seed,
            depth,
            timeout_ms,
            poll,
            one_way,
            no_verdict,
        } => {
            let dev = o.open()?;
            let flags = if poll { abi::CONN_POLL } else { 0 };
            let info = dev.connect(connect, depth.resp, depth.init, timeout_ms, flags)?;
            let mode = match (one_way, no_verdict) {
                (false, _) => PingMode::Echo,
                (true, false) => PingMode::Stream,
                (true, true) => PingMode::StreamNoVerdict,
            };
            kernel_ping(&dev, &info, (hold_ms, linger_ms), &sizes, seed, mode)
        }
        Cmd::KernelTarget {
            listen,
            len,
            access,
            fill,
            timeout_ms,
        } => {
            let dev = o.open()?;
            dev.listen(listen, 0, 0, 0)?;
            println!("listening");
            std::io::Write::flush(&mut std::io::stdout())?;
            println!("{}", table::conn_line(&dev.accept(timeout_ms)?));
            scenario::target(&dev, len, access, fill)
        }
        Cmd::KernelInitiator {
            args: a,
            timeout_ms,
        } => {
            let dev = o.open()?;
            println!(
                "{}",
                table::conn_line(&dev.connect(a.connect, 0, 0, timeout_ms, 0)?)
            );
            scenario::initiator(&dev, &a)?;
            // What the operations did to the connection (READ sinks, say).
            if let Ok(i) = dev.conn_info() {
                println!("after {}", table::conn_line(&i));
            }
            Ok(())
        }
        Cmd::Serve(a) => serve(&a),
        Cmd::Ping {
            msgs,
            depth,
            one_way,
        } => {
            let peer = upeer::UPeer::connect(&msgs.connect, depth.resp, depth.init)?;
            println!("connected");
            if one_way {
                scenario::stream(&peer, &msgs.sizes, msgs.seed)
            } else {
                scenario::ping(&peer, &msgs.sizes, msgs.seed)
            }
        }
        Cmd::RawPing {
            msgs,
            userspace,
            timeout_ms,
            hold_ms,
            pause_ms,
        } => {
            let plan = rawping::Plan {
                sizes: msgs.sizes,
                seed: msgs.seed,
                hold: std::time::Duration::from_millis(hold_ms),
                pause: std::time::Duration::from_millis(pause_ms),
            };
            if userspace {
                rawping::userspace(msgs.connect, &plan)
            } else {
                rawping::kernel(&o.open()?, msgs.connect, &plan, timeout_ms)
            }
        }
        Cmd::Initiate(a) => {
            let peer = upeer::UPeer::connect(&a.connect, 0, 0)?;
            println!("connected");
            scenario::initiator(&peer, &a)
        }
        Cmd::Rping(args) => {
            // The command line first: its errors are usage errors.
            let plan = rping::plan(&args)?;
            rping::run(&plan, &|| o.open())
        }
        Cmd::Bench(args) => {
            // The command line first: its errors are usage errors.
            let plan = benchcmd::plan(&args)?;
            benchcmd::run_qps(&o.open()?, &plan, &|| o.open())
        }
        #[cfg(feature = "plot")]
        Cmd::BenchPlot { dir, out } => {
            for f in plot::plot(&dir, &out)? {
                println!("wrote {f}");
            }
            Ok(())
        }
        #[cfg(not(feature = "plot"))]
        Cmd::BenchPlot { .. } => {
            anyhow::bail!("built without plots: cargo build --release --features plot")
        }
        Cmd::BenchReport { input } => {
            let runs = input
                .iter()
                .map(|p| {
                    std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))
                })
                .collect::<Result<Vec<_>>>()?;
            if let [one] = runs.as_slice() {
                print!("{}", bench::report(one)?);
                print!("{}", bench::memory_table(&runs)?);
            } else {
                let (table, best) = bench::report_boots(&runs)?;
                print!("{table}");
                println!("median boot: {} ({})", best + 1, input[best].display());
            }
            Ok(())
        }
    }
}

/// `--help`'s description of the tool: what it is, then the exit statuses.
const LONG_ABOUT: &str = concat!(
    "Drive the rdma_krust kernel module and compare it with libibverbs.\n\n",
    "Subcommands that use the module open /dev/rdma_krust (root only); \
     serve, ping, initiate and devices --verbs are a userspace RDMA peer \
     and do not. `bench` takes perftest's options, `rping` rping's. \
     Documentation/user-guide.rst has every subcommand; the tests' own \
     (fuzz, stress, pair...) are rdma-krust-kit's.\n\n",
    exit::statuses!()
);

fn main() -> ExitCode {
    // Usage errors exit with 2, --help and --version with 0 (clap's own).
    let cli = Cli::parse();
    exit::main_of("rdma-krust", cli.eintr_on_usr1, || run(cli))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_devices_flags() {
        let cli = Cli::try_parse_from(["rdma-krust", "devices", "--verbs", "--brief"]).unwrap();
        assert_eq!(
            cli.cmd,
            Cmd::Devices {
                verbs: true,
                brief: true,
                json: false
            }
        );
        for j in ["-j", "--json"] {
            let cli = Cli::try_parse_from(["rdma-krust", "devices", j]).unwrap();
            assert!(matches!(cli.cmd, Cmd::Devices { json: true, .. }));
        }
        let e = Cli::try_parse_from(["rdma-krust", "devices", "-j", "--brief"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        assert_eq!(cli.globals.dev, "/dev/rdma_krust");
    }

    #[test]
    fn parses_raw_ping() {
        let cli = Cli::try_parse_from([
            "rdma-krust",
            "raw-ping",
            "--connect",
            "192.0.2.1:7",
            "--sizes",
            "1,4096",
            "--userspace",
            "--hold-ms",
            "500",
            "--pause-ms",
            "4000",
        ])
        .unwrap();
        match cli.cmd {
            Cmd::RawPing {
                msgs,
                userspace,
                timeout_ms,
                hold_ms,
                pause_ms,
            } => {
                assert_eq!(msgs.connect.port, 7);
                assert_eq!(msgs.sizes, [1, 4096]);
                assert_eq!(
                    (msgs.seed, userspace, timeout_ms, hold_ms, pause_ms),
                    (1, true, 10_000, 500, 4000)
                );
            }
            c => panic!("{c:?}"),
        }
        let e = Cli::try_parse_from(["rdma-krust", "raw-ping"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn parses_dev_path_anywhere() {
        let cli = Cli::try_parse_from(["rdma-krust", "devices", "--dev", "/tmp/x"]).unwrap();
        assert!(matches!(cli.cmd, Cmd::Devices { .. }));
        assert_eq!(cli.globals.dev, "/tmp/x");
    }

    #[test]
    fn rejects_unknown_subcommand_and_flag() {
        let e = Cli::try_parse_from(["rdma-krust", "frobnicate"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidSubcommand);
        let e = Cli::try_parse_from(["rdma-krust", "devices", "--nope"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
        let e = Cli::try_parse_from(["rdma-krust"]).unwrap_err();
        assert_eq!(
            e.kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
    }

    #[test]
    fn every_wait_is_settable() {
        let p = |args: &[&str]| {
            let mut v = vec!["rdma-krust"];
            v.extend_from_slice(args);
            Cli::try_parse_from(v).unwrap().cmd
        };
        let t = "--timeout-ms";
        match p(&["kernel-target", "--listen", "192.0.2.1:1"]) {
            Cmd::KernelTarget { timeout_ms, .. } => assert_eq!(timeout_ms, 20_000),
            c => panic!("{c:?}"),
        }
        match p(&["kernel-target", "--listen", "192.0.2.1:1", t, "5"]) {
            Cmd::KernelTarget { timeout_ms, .. } => assert_eq!(timeout_ms, 5),
            c => panic!("{c:?}"),
        }
        let ki = [
            "kernel-initiator",
            "--connect",
            "192.0.2.1:1",
            "--scenario",
            "rw",
        ];
        match p(&ki) {
            Cmd::KernelInitiator { timeout_ms, args } => {
                assert_eq!(timeout_ms, 20_000);
                assert_eq!(args.scenario, scenario::Scenario::Rw);
            }
            c => panic!("{c:?}"),
        }
        match p(&[&ki[..], &[t, "7"]].concat()) {
            Cmd::KernelInitiator { timeout_ms, .. } => assert_eq!(timeout_ms, 7),
            c => panic!("{c:?}"),
        }
        match p(&["serve", "--listen", "192.0.2.1:1"]) {
            Cmd::Serve(a) => assert_eq!(a.timeout_ms, 0),
            c => panic!("{c:?}"),
        }
        match p(&["serve", "--listen", "192.0.2.1:1", t, "9"]) {
            Cmd::Serve(a) => assert_eq!(a.timeout_ms, 9),
            c => panic!("{c:?}"),
        }
        // The message waits, for every command.
        let cli = Cli::try_parse_from(["rdma-krust", "--msg-timeout-ms", "3", "devices"]).unwrap();
        assert_eq!(cli.globals.msg_timeout_ms, 3);
    }

    #[test]
    fn help_lists_exit_statuses() {
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("Exit status:"), "{help}");
        for line in [
            "0  success",
            "1  runtime failure",
            "2  usage error",
            "3  hang",
            "4  data mismatch",
        ] {
            assert!(help.contains(line), "{line}: {help}");
        }
    }

    #[test]
    fn usage_errors_exit_2() {
        // clap's own errors exit with 2 ...
        let e = Cli::try_parse_from(["rdma-krust", "devices", "--nope"]).unwrap_err();
        assert_eq!(e.exit_code(), i32::from(exit::USAGE));
        // ... and so do the tool's.
        let e = exit::usage("rping: give --server or --client");
        assert_eq!(exit::report("rdma-krust", &e), exit::USAGE);
        assert_eq!(
            exit::report("rdma-krust", &exit::mismatch("ping 0: data mismatch")),
            exit::MISMATCH
        );
        assert_eq!(
            exit::report("rdma-krust", &anyhow::anyhow!("failed")),
            exit::FAILURE
        );
    }

    #[test]
    fn help_lists_only_the_user_commands() {
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "devices",
                "kernel-echo",
                "kernel-ping",
                "serve",
                "ping",
                "raw-ping",
                "initiate",
                "rping",
                "bench",
                "bench-plot",
                "bench-report",
                "kernel-target",
                "kernel-initiator",
            ]
        );
        let help = Cli::command().render_long_help().to_string();
        for kit in ["fuzz", "stress", "pair", "agent", "abi", "errno-check"] {
            assert!(!help.contains(&format!("\n  {kit} ")), "{kit}: {help}");
        }
    }

    #[test]
    fn eintr_on_usr1_is_taken_but_not_shown() {
        let cli = Cli::try_parse_from([
            "rdma-krust",
            "--eintr-on-usr1",
            "kernel-echo",
            "--listen",
            "192.0.2.1:7500",
        ])
        .unwrap();
        assert!(cli.eintr_on_usr1);
        let help = Cli::command().render_long_help().to_string();
        assert!(!help.contains("--eintr-on-usr1"), "{help}");
    }
}
