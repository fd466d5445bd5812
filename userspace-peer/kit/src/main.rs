// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust-kit`, the test kit of the rdma_krust kernel module: the
//! commands only the tests run. The ABI and errno checks, the ioctl fuzzer,
//! stress, races and blocked waits, fault injection, a hostile peer, and
//! the two-host suite (`pair` on guest A, `agent` on guest B). The user's
//! commands are `rdma-krust`'s (the tests run them from there); what both
//! share is the `krust` library. Its second binary, `krust-relay`, is the
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
use krust::opts::{DevArgs, GLOBAL};
use krust::{abi, exit, upeer};
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
    #[command(flatten)]
    pub globals: DevArgs,

    /// Catch SIGUSR1 (doing nothing) instead of dying of it, so a blocked
    /// ioctl it interrupts returns and its EINTR is printed (for the tests).
    #[arg(long, global = true, help_heading = GLOBAL)]
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
    /// Two threads receive on one file at once while the peer sends a
    /// two-fragment message and a small one; each must get a whole one.
    RecvRace(stress::RaceArgs),
    /// Two files that both SEND and never read: each SEND short of credits
    /// must time out.
    CreditLivelock(stress::LivelockArgs),
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
    upeer::set_timeout_ms(cli.globals.msg_timeout_ms);
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
        Cmd::Fuzz(a) => fuzz::run(&o.dev, a),
        Cmd::Cycles(a) => stress::cycles(&o.dev, &a),
        Cmd::Stress(a) => stress::stress(o, &a),
        Cmd::Block(a) => stress::block(&o.dev, &a, cli.eintr_on_usr1),
        Cmd::Stall(a) => faults::stall(&o.dev, &a),
        Cmd::FailSweep(a) => faults::fail_sweep(&o.dev, &a),
        Cmd::RecvRace(a) => stress::recv_race(&o.dev, &a),
        Cmd::CreditLivelock(a) => stress::credit_livelock(&o.dev, &a),
        Cmd::IdleClose(a) => stress::idle_close(&o.dev, &a),
        Cmd::OwnQpFails(a) => stress::own_qp_fails(&o.dev, &a),
        Cmd::Hostile(a) => hostile::run(&o.dev, &a),
        Cmd::ListenCloseRace(a) => race::run(&o.dev, &a),
        Cmd::TcpReset(a) => race::tcp_reset(&a),
        Cmd::Pair(a) => pair::run(&a),
        Cmd::Agent { ctl } => pair::agent(&ctl),
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
     on two guests. Documentation/testing.rst has the tests; the user's \
     commands are rdma-krust's.\n\n",
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
                "idle-close",
                "own-qp-fails",
                "hostile",
                "listen-close-race",
                "tcp-reset",
                "pair",
                "agent",
            ]
        );
        let help = Cli::command().render_long_help().to_string();
        assert!(help.contains("--eintr-on-usr1"), "{help}");
        assert!(help.contains("Exit status:"), "{help}");
    }

    #[test]
    fn parses_globals_anywhere() {
        let cli = Cli::try_parse_from([
            "rdma-krust-kit",
            "--msg-timeout-ms",
            "5000",
            "abi",
            "--dev",
            "/tmp/x",
            "--eintr-on-usr1",
        ])
        .unwrap();
        assert_eq!(cli.cmd, Cmd::Abi);
        assert_eq!(cli.globals.dev, "/tmp/x");
        assert_eq!(cli.globals.msg_timeout_ms, 5000);
        assert!(cli.eintr_on_usr1);
        let e = Cli::try_parse_from(["rdma-krust-kit", "kernel-echo"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidSubcommand);
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
