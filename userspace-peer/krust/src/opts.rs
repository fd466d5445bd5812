// SPDX-License-Identifier: GPL-2.0

//! The options that open the module and set its connections, in groups
//! each subcommand flattens only where they act: the device node
//! ([`DevPath`]), the transport settings ([`TransportArgs`]), the waits for
//! messages ([`MsgTimeout`]) and for one-sided operations ([`OpTimeout`]);
//! [`ModuleArgs`] and [`DevArgs`] bundle them. And the SIGUSR1 handler of
//! the test kit's `--eintr-on-usr1` ([`catch_usr1`]).

use crate::abi;
use crate::kdev::{self, KrustDev};
use anyhow::{bail, Result};

/// The heading of the options that open the module and set its
/// connections.
pub const MODULE: &str = "Module options";

/// The module's device node.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct DevPath {
    /// Path of the module's device node.
    #[arg(long, default_value = kdev::DEV_PATH, help_heading = MODULE)]
    pub dev: String,
}

/// How long a scenario waits for each message (listed with a subcommand's
/// own options: the userspace peer's subcommands take it too).
#[derive(clap::Args, Debug, PartialEq, Eq, Clone, Copy)]
pub struct MsgTimeout {
    /// Milliseconds a scenario waits for each message or for credits (the
    /// echo, ping, stream, target and initiator), on a module connection
    /// and on the userspace peer's own.
    #[arg(long, default_value_t = 20_000)]
    pub msg_timeout_ms: u32,
}

impl MsgTimeout {
    /// Sets the userspace peer's waits to this one (a module connection
    /// takes it when opened, [`ModuleArgs::open`]).
    pub fn apply_to_upeer(self) {
        crate::upeer::set_timeout_ms(self.msg_timeout_ms);
    }
}

/// How long a module connection's one-sided operations wait.
#[derive(clap::Args, Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct OpTimeout {
    /// `timeout_ms` of a module connection's scenario's READs, WRITEs and
    /// atomics; 0 (the default) waits for the transport's verdict.
    #[arg(long, default_value_t = 0, help_heading = MODULE)]
    pub op_timeout_ms: u32,
}

/// What a subcommand that makes module connections takes: the device node,
/// the transport settings of its connections, and the scenarios' message
/// waits.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct ModuleArgs {
    #[command(flatten)]
    pub path: DevPath,
    #[command(flatten)]
    pub transport: TransportArgs,
    #[command(flatten)]
    pub msg: MsgTimeout,
}

impl ModuleArgs {
    /// Opens the module's device node with these transport settings and
    /// message waits.
    pub fn open(&self) -> Result<KrustDev> {
        self.open_with(OpTimeout::default())
    }

    /// [`ModuleArgs::open`], with the one-sided operations' wait.
    pub fn open_with(&self, op: OpTimeout) -> Result<KrustDev> {
        DevArgs {
            module: self.clone(),
            op,
        }
        .open()
    }
}

/// Every option of the module's connections, for commands that take them
/// all: the test kit's, given before its subcommand.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct DevArgs {
    #[command(flatten)]
    pub module: ModuleArgs,
    #[command(flatten)]
    pub op: OpTimeout,
}

impl DevArgs {
    /// The device node's path.
    pub fn dev(&self) -> &str {
        &self.module.path.dev
    }

    /// How long a scenario waits for each message.
    pub fn msg_timeout_ms(&self) -> u32 {
        self.module.msg.msg_timeout_ms
    }

    /// Opens the module's device node with the command line's transport
    /// settings and scenario timeouts.
    pub fn open(&self) -> Result<KrustDev> {
        let dev = KrustDev::open(self.dev())?;
        dev.set_transport(self.module.transport.to_abi());
        dev.set_msg_timeout(self.msg_timeout_ms());
        dev.set_op_timeout(self.op.op_timeout_ms);
        Ok(dev)
    }
}

/// Transport settings for the module's connections (`abi::Transport`,
/// `Documentation/transport.rst`); what is not given takes the module's
/// defaults.
#[derive(clap::Args, Debug, Default, PartialEq, Eq, Clone, Copy)]
pub struct TransportArgs {
    /// Local ACK timeout exponent: 4.096 us * 2^N, 1 to 31 (module: 14).
    #[arg(long, help_heading = MODULE)]
    pub ack_timeout: Option<u8>,
    /// Transport retries, 0 to 7 (module: 7, which rxe takes as forever).
    #[arg(long, help_heading = MODULE)]
    pub retry_count: Option<u8>,
    /// RNR retries, 0 to 7, 7 = forever (module: 7).
    #[arg(long, help_heading = MODULE)]
    pub rnr_retry: Option<u8>,
    /// Minimum RNR NAK timer code, 0 to 31 (module: 12, 0.64 ms).
    #[arg(long, help_heading = MODULE)]
    pub min_rnr_timer: Option<u8>,
    /// Receives a module connection keeps posted, 2 to 40 (module: 16 of
    /// 8 KiB on a message connection, 40 of 64 KiB on a raw one); any
    /// depth carries a 2 MiB message.
    #[arg(long, help_heading = MODULE)]
    pub recv_depth: Option<u32>,
}

impl TransportArgs {
    /// The ABI's form: a `set` bit for each value given.
    pub fn to_abi(self) -> abi::Transport {
        let mut t = abi::Transport::default();
        let mut put = |v: Option<u8>, bit: u32, field: &mut u8| {
            if let Some(v) = v {
                *field = v;
                t.set |= bit;
            }
        };
        let (mut a, mut r, mut n, mut m) = (0, 0, 0, 0);
        put(self.ack_timeout, abi::TRANSPORT_ACK_TIMEOUT, &mut a);
        put(self.retry_count, abi::TRANSPORT_RETRY_COUNT, &mut r);
        put(self.rnr_retry, abi::TRANSPORT_RNR_RETRY, &mut n);
        put(self.min_rnr_timer, abi::TRANSPORT_MIN_RNR_TIMER, &mut m);
        (t.ack_timeout, t.retry_count, t.rnr_retry, t.min_rnr_timer) = (a, r, n, m);
        if let Some(d) = self.recv_depth {
            t.recv_depth = d;
            t.set |= abi::TRANSPORT_RECV_DEPTH;
        }
        t
    }
}

extern "C" fn ignore_signal(_: libc::c_int) {}

/// Installs a SIGUSR1 handler that does nothing, without SA_RESTART:
/// `--eintr-on-usr1`, for the tests that interrupt a blocked ioctl.
pub fn catch_usr1() -> Result<()> {
    // SAFETY: a zeroed `sigaction` is valid; the handler is async-signal-safe
    // (it does nothing).
    let ret = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = ignore_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut())
    };
    if ret != 0 {
        bail!("sigaction: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;

    #[test]
    fn a_missing_node_says_to_load_the_module() {
        let o = DevArgs {
            module: ModuleArgs {
                path: DevPath {
                    dev: "/nonexistent/rdma_krust".into(),
                },
                transport: Default::default(),
                msg: MsgTimeout { msg_timeout_ms: 1 },
            },
            op: OpTimeout::default(),
        };
        let Err(e) = o.open() else {
            panic!("opened a missing node")
        };
        assert_eq!(exit::code(&e), exit::FAILURE);
        assert!(
            format!("{e:#}").contains("No such file or directory"),
            "{e:#}"
        );
        assert!(exit::hint(&e).unwrap().contains("is the module loaded?"));
    }
}
