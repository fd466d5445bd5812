// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust-kit`, the test kit of the rdma_krust kernel module: the
//! commands only the tests run. The ABI and errno checks, the ioctl fuzzer,
//! stress, races and blocked waits, fault injection, a hostile peer, and
//! the two-host suite (`pair` on guest A, `agent` on guest B). The user's
//! commands are `rdma-krust`'s (the tests run them from there); what both
//! share is the `krust` library. The user's commands whose tests need
//! options of their own (holds, lingers, a stale key...) are here too,
//! with those options: `kernel-echo`, `kernel-ping`, `kernel-initiator`,
//! `raw-ping`, and `stale-read`. Its second binary, `krust-relay`, is the
//! lossy link between the two guests of the two-host suite.

#[cfg(test)]
mod cmdlines;
mod errno_check;
mod faults;
mod fuzz;
mod hostile;
mod pair;
mod race;
mod stress;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use krust::cmds::{self, EchoTest, KernelEchoArgs, KernelInitiatorArgs, KernelPingArgs};
use krust::cmds::{PingTest, RawPingArgs, RawPingTest};
use krust::opts::DevArgs;
use krust::scenario::{self, InitiatorTest};
use krust::{abi, addr, exit, table};
use std::process::ExitCode;

/// The test kit of the rdma_krust kernel module.
#[derive(Parser, Debug)]
#[command(
    name = "rdma-krust-kit",
    version,
    about = "The test kit of the rdma_krust kernel module: the commands only its tests run",
    long_about = LONG_ABOUT
)]
pub struct Cli {
    /// The module's options, given before the subcommand.
    #[command(flatten)]
    pub globals: DevArgs,

    /// Catch SIGUSR1 (doing nothing) instead of dying of it, so a blocked
    /// ioctl it interrupts returns and its EINTR is printed (for the tests).
    #[arg(long, global = true, help_heading = "Test options")]
    pub eintr_on_usr1: bool,

    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands.
#[derive(Subcommand, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// Check that the module and this tool agree on the ioctl ABI.
    Abi,
    /// Issue every invalid ioctl of the ABI table and check each errno.
    ErrnoCheck,
    /// Fuzz the ioctls: real and random commands, bad and boundary
    /// arguments, across several files, some of them connected.
    Fuzz(fuzz::FuzzArgs),
    /// Connect two files of the module, exchange a message, disconnect,
    /// close; over and over.
    Cycles(stress::CyclesArgs),
    /// Many threads on several connections at once, mixing SEND/RECV, RDMA
    /// and fetch-and-add; every message, byte and sum checked.
    Stress(stress::StressArgs),
    /// Block in one of the module's waits until a signal (SIGUSR1, with
    /// --eintr-on-usr1) interrupts it; check EINTR and the file afterwards.
    Block(stress::BlockArgs),
    /// A user copy of the module's that stalls on a userfaultfd page while
    /// the device is removed (the test deletes it): the removal must not
    /// wait for the copy.
    Stall(faults::StallArgs),
    /// Fail each allocation of a CONNECT, SEND or RECV in turn (fail-nth, a kernel
    /// with CONFIG_FAULT_INJECTION): every call succeeds or fails with an
    /// errno and leaves the connection whole.
    FailSweep(faults::SweepArgs),
    /// Two threads receive on one file at once while the peer sends two
    /// messages; each must get a whole one.
    RecvRace(stress::RaceArgs),
    /// Two files that both SEND and never read: each SEND short of credits
    /// must time out.
    CreditLivelock(stress::LivelockArgs),
    /// The message path's latency and bandwidth between two files of the
    /// module (IOCTL_SEND and IOCTL_RECV, not raw).
    MsgBench(stress::MsgBenchArgs),
    /// Many connections at once (1,024 by default), each between two files:
    /// all connected, a message out and back on each, verified, all closed.
    Many(stress::ManyArgs),
    /// A file whose peer disconnects while a READ is in flight, and whose
    /// owner then calls nothing: the module must still answer in time.
    IdleClose(stress::IdleCloseArgs),
    /// A connection whose one end's QP fails on its own (a SEND's RNR
    /// retries run out): the other end must learn at once.
    OwnQpFails(stress::OwnQpFailsArgs),
    /// A peer that breaks the message protocol in every way it knows,
    /// against files of the module, while a bystander connection checks
    /// that only the lying connections pay (EPROTO).
    Hostile(hostile::HostileArgs),
    /// Close a listening file while a connect to it is being handled, over
    /// and over (then delete the device: it must go).
    ListenCloseRace(race::ListenRaceArgs),
    /// Open TCP connections to an iWARP listener and reset each before its
    /// MPA request, as a port scan does: the listener must stay.
    TcpReset(race::TcpResetArgs),
    /// The two-host suite, on guest A (`scripts/qemu-test.sh --pair`).
    Pair(pair::PairArgs),
    /// Guest B of a pair: run guest A's requests from a shared directory.
    Agent {
        /// The directory shared with guest A.
        #[arg(long)]
        ctl: std::path::PathBuf,
    },
    /// `rdma-krust kernel-echo`, with the tests' options.
    KernelEcho {
        #[command(flatten)]
        args: KernelEchoArgs,
        #[command(flatten)]
        test: EchoTest,
    },
    /// `rdma-krust kernel-ping`, with the tests' options.
    KernelPing {
        #[command(flatten)]
        args: KernelPingArgs,
        #[command(flatten)]
        test: PingTest,
    },
    /// `rdma-krust kernel-initiator`, with the tests' options.
    KernelInitiator {
        #[command(flatten)]
        args: KernelInitiatorArgs,
        #[command(flatten)]
        test: InitiatorTest,
    },
    /// `rdma-krust raw-ping`, with the tests' options.
    RawPing {
        #[command(flatten)]
        args: RawPingArgs,
        #[command(flatten)]
        test: RawPingTest,
    },
    /// In-kernel initiator with a stale key: connect to a target, receive
    /// its advert, and READ with the key of a window of an earlier
    /// connection instead: the READ must be refused.
    StaleRead {
        /// The target.
        #[arg(long, value_parser = addr::parse)]
        connect: abi::Addr,
        /// ADDR:RKEY of a window of an earlier connection (as an earlier
        /// initiator printed it: `window addr=... rkey=...`).
        #[arg(long, value_parser = scenario::parse_key)]
        key: (u64, u32),
        /// Milliseconds for each step of connecting (messages:
        /// --msg-timeout-ms).
        #[arg(long, default_value_t = 20_000)]
        timeout_ms: u32,
    },
}

/// Compares the module's view of the ABI (from `IOCTL_VERSION`) with ours.
fn abi_mismatches(v: &abi::Version) -> Vec<String> {
    let mut out = Vec::new();
    if v.abi_version != abi::ABI_VERSION {
        out.push(format!(
            "ABI version: module {}, tool {}",
            v.abi_version,
            abi::ABI_VERSION
        ));
    }
    let n = (v.n_cmds as usize).min(abi::MAX_CMDS);
    let theirs = &v.cmds[..n];
    if theirs != abi::ALL_CMDS {
        out.push(format!(
            "commands: module {:08x?}, tool {:08x?}",
            theirs,
            abi::ALL_CMDS
        ));
    }
    out
}

fn run(cli: Cli) -> Result<()> {
    cli.globals.module.msg.apply_to_upeer();
    let o = &cli.globals;
    match cli.cmd {
        Cmd::Abi => {
            let v = o.open()?.version()?;
            let mismatches = abi_mismatches(&v);
            for m in &mismatches {
                println!("mismatch: {m}");
            }
            if !mismatches.is_empty() {
                bail!("the module and this tool disagree on the ioctl ABI");
            }
            println!("ABI version {}: {} commands agree", v.abi_version, v.n_cmds);
            Ok(())
        }
        Cmd::Fuzz(a) => fuzz::run(o.dev(), a),
        Cmd::Cycles(a) => stress::cycles(o.dev(), &a),
        Cmd::Stress(a) => stress::stress(o, &a),
        Cmd::Block(a) => stress::block(o.dev(), &a, cli.eintr_on_usr1),
        Cmd::Stall(a) => faults::stall(o.dev(), &a),
        Cmd::FailSweep(a) => faults::fail_sweep(o.dev(), &a),
        Cmd::RecvRace(a) => stress::recv_race(o.dev(), &a),
        Cmd::CreditLivelock(a) => stress::credit_livelock(o.dev(), &a),
        Cmd::Many(a) => stress::many(o.dev(), &a),
        Cmd::MsgBench(a) => stress::msg_bench(o.dev(), &a),
        Cmd::IdleClose(a) => stress::idle_close(o.dev(), &a),
        Cmd::OwnQpFails(a) => stress::own_qp_fails(o.dev(), &a),
        Cmd::Hostile(a) => hostile::run(o.dev(), &a),
        Cmd::ListenCloseRace(a) => race::run(o.dev(), &a),
        Cmd::TcpReset(a) => race::tcp_reset(&a),
        Cmd::Pair(a) => pair::run(&a),
        Cmd::Agent { ctl } => pair::agent(&ctl),
        Cmd::KernelEcho { args, test } => cmds::kernel_echo(&o.open()?, &args, &test),
        Cmd::KernelPing { args, test } => cmds::kernel_ping(&o.open()?, &args, &test),
        Cmd::KernelInitiator { args, test } => cmds::kernel_initiator(&o.open()?, &args, &test),
        Cmd::RawPing { args, test } => cmds::raw_ping(&args, &test, &|| o.open()),
        Cmd::StaleRead {
            connect,
            key,
            timeout_ms,
        } => {
            let dev = o.open()?;
            println!(
                "{}",
                table::conn_line(&dev.connect(connect, 0, 0, timeout_ms, 0)?)
            );
            scenario::stale_read(&dev, key)
        }
        Cmd::ErrnoCheck => {
            let dev = o.open()?;
            let failed = errno_check::check_all(&dev)?;
            if failed > 0 {
                bail!("{failed} errno case(s) failed");
            }
            Ok(())
        }
    }
}

/// `--help`'s description of the kit: what it is, then the exit statuses.
const LONG_ABOUT: &str = concat!(
    "The test kit of the rdma_krust kernel module.\n\n",
    "The commands only the tests run. Most open /dev/rdma_krust (root \
     only); pair and agent, the two-host suite, run rdma-krust's commands \
     on two guests. kernel-echo, kernel-ping, kernel-initiator and raw-ping \
     are rdma-krust's, with the tests' options (holds, lingers...). The \
     module's options (--dev, the transport settings, the waits) come \
     before the subcommand. Documentation/testing.rst has the tests; the \
     user's commands are rdma-krust's.\n\n",
    exit::statuses!()
);

fn main() -> ExitCode {
    // Usage errors exit with 2, --help and --version with 0 (clap's own).
    let cli = Cli::parse();
    exit::main_of("rdma-krust-kit", cli.eintr_on_usr1, || run(cli))
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
    fn help_lists_the_test_commands() {
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "abi",
                "errno-check",
                "fuzz",
                "cycles",
                "stress",
                "block",
                "stall",
                "fail-sweep",
                "recv-race",
                "credit-livelock",
                "msg-bench",
                "many",
                "idle-close",
                "own-qp-fails",
                "hostile",
                "listen-close-race",
                "tcp-reset",
                "pair",
                "agent",
                "kernel-echo",
                "kernel-ping",
                "kernel-initiator",
                "raw-ping",
                "stale-read",
            ]
        );
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("--eintr-on-usr1"), "{help}");
        assert!(help.contains("Exit status:"), "{help}");
    }

    #[test]
    fn parses_globals_before_the_subcommand() {
        let cli = Cli::try_parse_from([
            "rdma-krust-kit",
            "--msg-timeout-ms",
            "5000",
            "--dev",
            "/tmp/x",
            "abi",
            "--eintr-on-usr1",
        ])
        .unwrap();
        assert_eq!(cli.cmd, Cmd::Abi);
        assert_eq!(cli.globals.dev(), "/tmp/x");
        assert_eq!(cli.globals.msg_timeout_ms(), 5000);
        assert!(cli.eintr_on_usr1);
        let e = Cli::try_parse_from(["rdma-krust-kit", "bench"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidSubcommand);
    }

    #[test]
    fn parses_the_tests_options_of_the_users_commands() {
        let p = |l: &str| {
            Cli::try_parse_from(std::iter::once("rdma-krust-kit").chain(l.split(' ')))
                .unwrap_or_else(|e| panic!("{l}: {e}"))
                .cmd
        };
        match p("kernel-ping --connect 192.0.2.1:1 --hold-ms 5 --linger-ms 6 --sizes 8") {
            Cmd::KernelPing { args, test } => {
                assert_eq!(args.sizes, [8]);
                assert_eq!(
                    (test.hold_ms, test.linger_ms, test.no_verdict),
                    (5, 6, false)
                );
            }
            c => panic!("{c:?}"),
        }
        match p("kernel-echo --listen 192.0.2.1:1 --sink --hold-ms 7") {
            Cmd::KernelEcho { args, test } => assert!(args.sink && test.hold_ms == 7),
            c => panic!("{c:?}"),
        }
        match p("kernel-initiator --connect 192.0.2.1:1 --scenario rw --hold-ms 3") {
            Cmd::KernelInitiator { test, .. } => assert_eq!(test.hold_ms, 3),
            c => panic!("{c:?}"),
        }
        match p("raw-ping --connect 192.0.2.1:7 --pause-ms 4 --hold-ms 2") {
            Cmd::RawPing { test, .. } => assert_eq!((test.hold_ms, test.pause_ms), (2, 4)),
            c => panic!("{c:?}"),
        }
        match p("stale-read --connect 192.0.2.1:1 --key 0x1000:0x22") {
            Cmd::StaleRead { key, .. } => assert_eq!(key, (0x1000, 0x22)),
            c => panic!("{c:?}"),
        }
        // --no-verdict needs --one-way, as before.
        let e = Cli::try_parse_from([
            "rdma-krust-kit",
            "kernel-ping",
            "--connect",
            "192.0.2.1:1",
            "--no-verdict",
        ])
        .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn abi_agreement_detects_differences() {
        let mut v = abi::Version {
            abi_version: abi::ABI_VERSION,
            n_cmds: abi::ALL_CMDS.len() as u32,
            ..Default::default()
        };
        v.cmds[..abi::ALL_CMDS.len()].copy_from_slice(abi::ALL_CMDS);
        assert!(abi_mismatches(&v).is_empty());

        let mut other = v;
        other.abi_version += 1;
        assert_eq!(abi_mismatches(&other).len(), 1);

        let mut other = v;
        other.cmds[1] ^= 1 << 16; // a different argument size
        assert_eq!(abi_mismatches(&other).len(), 1);

        let mut other = v;
        other.n_cmds = 1;
        assert_eq!(abi_mismatches(&other).len(), 1);
    }
}
