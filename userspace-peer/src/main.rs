// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust`: drives the rdma_krust kernel module through
//! `/dev/rdma_krust`, and looks at the same RDMA devices through libibverbs.

#[allow(dead_code)]
#[path = "../../src/abi.rs"]
mod abi;
mod errno;
mod kdev;
mod table;
mod verbs;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use kdev::KrustDev;
use std::process::ExitCode;

/// Drive the rdma_krust kernel module and compare it with libibverbs.
#[derive(Parser, Debug)]
#[command(name = "rdma-krust", version, about)]
pub struct Cli {
    /// Path of the module's device node.
    #[arg(long, global = true, default_value = kdev::DEV_PATH)]
    pub dev: String,

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
        #[arg(long)]
        brief: bool,
    },
    /// Check that the module and this tool agree on the ioctl ABI.
    Abi,
    /// Issue every invalid ioctl of the ABI table and check each errno.
    ErrnoCheck,
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Devices { verbs, brief } => {
            let devices = if verbs {
                verbs::list_devices()?
            } else {
                KrustDev::open(&cli.dev)?.list_devices()?
            };
            let source = if verbs {
                "libibverbs"
            } else {
                "/dev/rdma_krust (ib_client)"
            };
            if brief {
                print!("{}", table::brief(&devices));
            } else {
                print!("{}", table::full(source, &devices));
            }
            Ok(())
        }
        Cmd::Abi => {
            let v = KrustDev::open(&cli.dev)?.version()?;
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
        Cmd::ErrnoCheck => {
            let dev = KrustDev::open(&cli.dev)?;
            let failed = errno::check_all(&dev)?;
            if failed > 0 {
                bail!("{failed} errno case(s) failed");
            }
            Ok(())
        }
    }
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rdma-krust: {e:#}");
            ExitCode::FAILURE
        }
    }
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
                brief: true
            }
        );
        assert_eq!(cli.dev, "/dev/rdma_krust");
    }

    #[test]
    fn parses_dev_path_anywhere() {
        let cli = Cli::try_parse_from(["rdma-krust", "abi", "--dev", "/tmp/x"]).unwrap();
        assert_eq!(cli.cmd, Cmd::Abi);
        assert_eq!(cli.dev, "/tmp/x");
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
