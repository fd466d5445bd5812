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
#[cfg(test)]
mod helptest;
#[cfg(feature = "plot")]
mod plot;
mod rping;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use krust::cmds::{self, Depth, KernelEchoArgs, KernelInitiatorArgs, KernelPingArgs, Messages};
use krust::cmds::{RawPingArgs, RawPingTest};
use krust::opts::{DevArgs, DevPath, ModuleArgs, MsgTimeout, OpTimeout, TransportArgs};
use krust::scenario::{self, InitiatorArgs, InitiatorTest};
use krust::{abi, addr, bench, exit, table, upeer, verbs};
use std::process::ExitCode;

/// Drive the rdma_krust kernel module and compare it with libibverbs.
#[derive(Parser, Debug)]
#[command(name = "rdma-krust", version, about, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands. Each takes the options of the module (`--dev`, the
/// transport settings, the waits) that act on it, and no others.
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
        #[command(flatten)]
        path: DevPath,
    },
    /// In-kernel passive side: listen, accept one connection, echo messages.
    KernelEcho {
        #[command(flatten)]
        args: KernelEchoArgs,
        #[command(flatten)]
        module: ModuleArgs,
    },
    /// In-kernel active side: connect, send patterned messages, check echoes.
    KernelPing {
        #[command(flatten)]
        args: KernelPingArgs,
        #[command(flatten)]
        module: ModuleArgs,
    },
    /// Userspace RDMA peer (librdmacm/libibverbs): accept connections and
    /// echo messages, sink a stream, or expose a window to them.
    Serve {
        #[command(flatten)]
        args: ServeArgs,
        #[command(flatten)]
        msg: MsgTimeout,
    },
    /// Userspace active side: connect and send patterned messages to an echo.
    Ping {
        #[command(flatten)]
        msgs: Messages,
        #[command(flatten)]
        depth: Depth,
        /// Send every message back to back, then wait for a sink's count.
        #[arg(long)]
        one_way: bool,
        #[command(flatten)]
        msg: MsgTimeout,
    },
    /// Raw messages to an echo server (the kernel::rdma echo sample), each
    /// echo checked: from the module, or with --userspace from librdmacm.
    RawPing {
        #[command(flatten)]
        args: RawPingArgs,
        #[command(flatten)]
        module: ModuleArgs,
    },
    /// Userspace initiator: connect to a target and run a scenario.
    Initiate {
        #[command(flatten)]
        args: InitiatorArgs,
        #[command(flatten)]
        msg: MsgTimeout,
    },
    /// Run rping's protocol in the module, with rping's options: as
    /// server (-s, against `rping -c`) or client (-c, against `rping -s`).
    Rping {
        #[command(flatten)]
        args: rping::RpingArgs,
        #[command(flatten)]
        module: ModuleArgs,
    },
    /// Run a benchmark loop in the module, with perftest's options and
    /// report: without SERVER this side listens (the SEND responder, or the
    /// window of the one-sided operations), with it this side connects and
    /// measures. Give both sides the same --op, --mode, -s, -n and -a.
    Bench {
        #[command(flatten)]
        args: benchcmd::BenchArgs,
        #[command(flatten)]
        path: DevPath,
        #[command(flatten)]
        transport: TransportArgs,
    },
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
        #[command(flatten)]
        module: ModuleArgs,
    },
    /// In-kernel initiator: connect to a target and run a scenario on its
    /// window.
    KernelInitiator {
        #[command(flatten)]
        args: KernelInitiatorArgs,
        #[command(flatten)]
        module: ModuleArgs,
        #[command(flatten)]
        op: OpTimeout,
    },
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

/// The module options of a command that takes only `--dev` and the
/// transport settings: the waits take their defaults.
fn dev_transport(path: DevPath, transport: TransportArgs) -> DevArgs {
    DevArgs {
        module: ModuleArgs {
            path,
            transport,
            msg: MsgTimeout {
                msg_timeout_ms: 20_000,
            },
        },
        op: OpTimeout::default(),
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Devices {
            verbs,
            brief,
            json,
            path,
        } => {
            let devices = if verbs {
                verbs::list_devices()?
            } else {
                dev_transport(path, TransportArgs::default())
                    .open()?
                    .list_devices()?
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
        Cmd::KernelEcho { args, module } => {
            cmds::kernel_echo(&module.open()?, &args, &Default::default())
        }
        Cmd::KernelPing { args, module } => {
            cmds::kernel_ping(&module.open()?, &args, &Default::default())
        }
        Cmd::KernelTarget {
            listen,
            len,
            access,
            fill,
            timeout_ms,
            module,
        } => {
            let dev = module.open()?;
            dev.listen(listen, 0, 0, 0)?;
            println!("listening");
            std::io::Write::flush(&mut std::io::stdout())?;
            println!("{}", table::conn_line(&dev.accept(timeout_ms)?));
            scenario::target(&dev, len, access, fill)
        }
        Cmd::KernelInitiator { args, module, op } => {
            cmds::kernel_initiator(&module.open_with(op)?, &args, &InitiatorTest::default())
        }
        Cmd::Serve { args, msg } => {
            msg.apply_to_upeer();
            serve(&args)
        }
        Cmd::Ping {
            msgs,
            depth,
            one_way,
            msg,
        } => {
            msg.apply_to_upeer();
            let peer = upeer::UPeer::connect(&msgs.connect, depth.resp, depth.init)?;
            println!("connected");
            if one_way {
                scenario::stream(&peer, &msgs.sizes, msgs.seed)
            } else {
                scenario::ping(&peer, &msgs.sizes, msgs.seed)
            }
        }
        Cmd::RawPing { args, module } => {
            module.msg.apply_to_upeer();
            cmds::raw_ping(&args, &RawPingTest::default(), &|| module.open())
        }
        Cmd::Initiate { args, msg } => {
            msg.apply_to_upeer();
            let peer = upeer::UPeer::connect(&args.connect, 0, 0)?;
            println!("connected");
            scenario::initiator(&peer, &args, &InitiatorTest::default())
        }
        Cmd::Rping { args, module } => {
            // The command line first: its errors are usage errors.
            let plan = rping::plan(&args)?;
            rping::run(&plan, &|| module.open())
        }
        Cmd::Bench {
            args,
            path,
            transport,
        } => {
            // The command line first: its errors are usage errors.
            let plan = benchcmd::plan(&args)?;
            let o = dev_transport(path, transport);
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
     (fuzz, stress, pair...) and their options (holds, lingers...) are \
     rdma-krust-kit's. The module's options (--dev, the transport \
     settings, the waits) go after the subcommand, on the subcommands \
     they act on.\n\n",
    exit::statuses!()
);

fn main() -> ExitCode {
    // Usage errors exit with 2, --help and --version with 0 (clap's own).
    let cli = Cli::parse();
    exit::main_of("rdma-krust", false, || run(cli))
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
        assert!(matches!(
            cli.cmd,
            Cmd::Devices {
                verbs: true,
                brief: true,
                json: false,
                ..
            }
        ));
        for j in ["-j", "--json"] {
            let cli = Cli::try_parse_from(["rdma-krust", "devices", j]).unwrap();
            assert!(matches!(cli.cmd, Cmd::Devices { json: true, .. }));
        }
        let e = Cli::try_parse_from(["rdma-krust", "devices", "-j", "--brief"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
        match cli.cmd {
            Cmd::Devices { path, .. } => assert_eq!(path.dev, "/dev/rdma_krust"),
            c => panic!("{c:?}"),
        }
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
        ])
        .unwrap();
        match cli.cmd {
            Cmd::RawPing { args, .. } => {
                assert_eq!(args.msgs.connect.port, 7);
                assert_eq!(args.msgs.sizes, [1, 4096]);
                assert_eq!(
                    (args.msgs.seed, args.userspace, args.timeout_ms),
                    (1, true, 10_000)
                );
            }
            c => panic!("{c:?}"),
        }
        let e = Cli::try_parse_from(["rdma-krust", "raw-ping"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn parses_dev_path_after_the_subcommand() {
        let cli = Cli::try_parse_from(["rdma-krust", "devices", "--dev", "/tmp/x"]).unwrap();
        match cli.cmd {
            Cmd::Devices { path, .. } => assert_eq!(path.dev, "/tmp/x"),
            c => panic!("{c:?}"),
        }
        // The module's options are the subcommands', not the tool's.
        let e = Cli::try_parse_from(["rdma-krust", "--dev", "/tmp/x", "devices"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
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
            Cmd::KernelInitiator { args, op, .. } => {
                assert_eq!(args.timeout_ms, 20_000);
                assert_eq!(args.args.scenario, scenario::Scenario::Rw);
                assert_eq!(op.op_timeout_ms, 0);
            }
            c => panic!("{c:?}"),
        }
        match p(&[&ki[..], &[t, "7", "--op-timeout-ms", "8"]].concat()) {
            Cmd::KernelInitiator { args, op, .. } => {
                assert_eq!((args.timeout_ms, op.op_timeout_ms), (7, 8))
            }
            c => panic!("{c:?}"),
        }
        match p(&["serve", "--listen", "192.0.2.1:1"]) {
            Cmd::Serve { args, msg } => {
                assert_eq!((args.timeout_ms, msg.msg_timeout_ms), (0, 20_000))
            }
            c => panic!("{c:?}"),
        }
        match p(&["serve", "--listen", "192.0.2.1:1", t, "9"]) {
            Cmd::Serve { args, .. } => assert_eq!(args.timeout_ms, 9),
            c => panic!("{c:?}"),
        }
        // The message waits, on the commands that wait for messages.
        match p(&[
            "kernel-echo",
            "--listen",
            "192.0.2.1:1",
            "--msg-timeout-ms",
            "3",
        ]) {
            Cmd::KernelEcho { module, .. } => assert_eq!(module.msg.msg_timeout_ms, 3),
            c => panic!("{c:?}"),
        }
        match p(&["ping", "--connect", "192.0.2.1:1", "--msg-timeout-ms", "4"]) {
            Cmd::Ping { msg, .. } => assert_eq!(msg.msg_timeout_ms, 4),
            c => panic!("{c:?}"),
        }
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
    fn transport_settings_reach_the_subcommand() {
        let line = "rdma-krust bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 \
                    --connect 192.0.2.1:7708 --op send --mode bw --size 65536";
        match Cli::try_parse_from(line.split_whitespace()).unwrap().cmd {
            Cmd::Bench { transport, .. } => {
                let t = transport.to_abi();
                assert_eq!((t.ack_timeout, t.min_rnr_timer), (17, 0));
                assert_eq!(
                    t.set,
                    abi::TRANSPORT_ACK_TIMEOUT | abi::TRANSPORT_MIN_RNR_TIMER
                );
            }
            c => panic!("{c:?}"),
        }
        let line = "rdma-krust kernel-ping --recv-depth 6 --connect 192.0.2.1:1";
        match Cli::try_parse_from(line.split_whitespace()).unwrap().cmd {
            Cmd::KernelPing { module, .. } => {
                assert_eq!(module.transport.recv_depth, Some(6));
                assert_eq!(module.msg.msg_timeout_ms, 20_000);
            }
            c => panic!("{c:?}"),
        }
    }

    #[test]
    fn the_tests_options_are_the_kits() {
        // A test's option is refused with a usage error, not ignored.
        for line in [
            "rdma-krust --eintr-on-usr1 kernel-echo --listen 192.0.2.1:7500",
            "rdma-krust kernel-echo --listen 192.0.2.1:7500 --hold-ms 1",
            "rdma-krust kernel-ping --connect 192.0.2.1:7500 --hold-ms 1",
            "rdma-krust kernel-ping --connect 192.0.2.1:7500 --linger-ms 1",
            "rdma-krust kernel-ping --connect 192.0.2.1:7500 --one-way --no-verdict",
            "rdma-krust kernel-initiator --connect 192.0.2.1:1 --scenario rw --hold-ms 1",
            "rdma-krust kernel-initiator --connect 192.0.2.1:1 --scenario stale",
            "rdma-krust raw-ping --connect 192.0.2.1:7 --pause-ms 1",
        ] {
            let e = Cli::try_parse_from(line.split(' ')).unwrap_err();
            assert_eq!(e.exit_code(), i32::from(exit::USAGE), "{line}");
        }
    }
}
