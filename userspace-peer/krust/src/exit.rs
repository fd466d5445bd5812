// SPDX-License-Identifier: GPL-2.0

//! How the tool ends: its exit statuses, the errors that choose one, and the
//! hint printed under an error that says what to do about it.

use crate::abi;
use crate::kdev::{Failed, Op};
use std::fmt;
use std::io;

/// Success.
pub const OK: u8 = 0;
/// A runtime failure: a call failed, a peer went away, a wait ran out.
pub const FAILURE: u8 = 1;
/// The command line is wrong (clap's own errors exit with it too).
pub const USAGE: u8 = 2;
/// A watchdog saw no progress (`stress`, `fuzz`): a hang.
pub const HANG: u8 = 3;
/// Data came back different from what was sent or expected.
pub const MISMATCH: u8 = 4;

// Exported at the crate's root, as every `macro_export` macro is: used as
// `exit::statuses!()`, below.
#[doc(hidden)]
#[macro_export]
macro_rules! __exit_statuses {
    () => {
        "Exit status:
  0  success
  1  runtime failure (a call failed, the peer went away, a wait ran out)
  2  usage error (bad or missing arguments)
  3  hang: a stress or fuzz watchdog saw no progress
  4  data mismatch: data differed from what was sent or expected"
    };
}
/// The exit statuses, as `--help` ends with them (a macro, for `concat!`).
pub use __exit_statuses as statuses;

/// An error in the command line that clap cannot see (two options that
/// disagree once resolved, say): exit status [`USAGE`].
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Data that differed from what was sent or expected: exit status
/// [`MISMATCH`].
#[derive(Debug)]
pub struct Mismatch(pub String);

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Mismatch {}

/// A [`Usage`] error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    Usage(msg.into()).into()
}

/// A [`Mismatch`] error.
pub fn mismatch(msg: impl Into<String>) -> anyhow::Error {
    Mismatch(msg.into()).into()
}

/// The exit status for `e`.
pub fn code(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.is::<Usage>()) {
        USAGE
    } else if e.chain().any(|c| c.is::<Mismatch>()) {
        MISMATCH
    } else {
        FAILURE
    }
}

/// Prints `e` (and what to do about it, when known) the way the tool
/// named `prog` ends with it, and returns its exit status.
pub fn report(prog: &str, e: &anyhow::Error) -> u8 {
    let code = code(e);
    if code == USAGE {
        eprintln!("{prog}: error: {e:#}\n\nFor more information, try '--help'.");
        return code;
    }
    eprintln!("{prog}: {e:#}");
    if let Some(h) = hint(e) {
        eprintln!("{prog}: hint: {h}");
    }
    code
}

/// The end of a binary's `main`: catches SIGUSR1 first if `usr1` (the
/// tests' `--eintr-on-usr1`), runs `run`, and reports its error the way
/// [`report`] does, as the tool named `prog`.
pub fn main_of(
    prog: &str,
    usr1: bool,
    run: impl FnOnce() -> anyhow::Result<()>,
) -> std::process::ExitCode {
    let r = if usr1 {
        crate::opts::catch_usr1().and_then(|()| run())
    } else {
        run()
    };
    match r {
        Ok(()) => std::process::ExitCode::from(OK),
        Err(e) => std::process::ExitCode::from(report(prog, &e)),
    }
}

/// `IP:PORT` of an address, for messages.
pub fn show_addr(a: &abi::Addr) -> String {
    let ip: std::net::IpAddr = match a.family {
        abi::AF_INET => [a.addr[0], a.addr[1], a.addr[2], a.addr[3]].into(),
        _ => a.addr.into(),
    };
    std::net::SocketAddr::new(ip, a.port).to_string()
}

/// What to do about `e`, when the tool knows: the module not loaded, the
/// node not ours, an address on no RDMA device, nobody listening.
pub fn hint(e: &anyhow::Error) -> Option<String> {
    let f = e.chain().find_map(|c| c.downcast_ref::<Failed>())?;
    let errno = f.err.raw_os_error()?;
    let h = match (&f.op, errno) {
        (Op::Open(_), libc::ENOENT) => {
            "is the module loaded? (insmod rdma_krust.ko / modprobe rdma_krust)".to_string()
        }
        (Op::Open(p), libc::EACCES | libc::EPERM) => {
            format!("{p} is root's alone (mode 0600): run the tool as root (sudo)")
        }
        (Op::Open(_), libc::ENXIO | libc::ENODEV) => {
            "the module is going away: load it again (insmod rdma_krust.ko)".to_string()
        }
        (Op::Listen(a), libc::ENODEV) => format!(
            "no RDMA device has the address {}: listen on an address of a \
             netdev that has one (rdma link show; for example rdma link add \
             rxe0 type rxe netdev eth0)",
            show_addr(a)
        ),
        (Op::Listen(a), libc::EADDRNOTAVAIL) => format!(
            "{} is not an address of this host (ip -brief address)",
            show_addr(a)
        ),
        (Op::Listen(a), libc::EADDRINUSE) => format!(
            "{} is taken by another listener: choose another port (-p)",
            show_addr(a)
        ),
        (Op::Connect(a), libc::ENODEV) => format!(
            "the route to {} is not through an RDMA device: connect to an \
             address reached over a netdev that has one (rdma link show)",
            show_addr(a)
        ),
        (Op::Connect(a), libc::EHOSTUNREACH | libc::ENETUNREACH) => format!(
            "{} could not be reached over RDMA: check the address, that it \
             is up, and that this host's route to it is on a netdev with an \
             RDMA device",
            show_addr(a)
        ),
        (Op::Connect(a), libc::ECONNREFUSED) => format!(
            "nothing listens on {}: start the listening side first, on the \
             same port",
            show_addr(a)
        ),
        (Op::Connect(_), libc::ETIMEDOUT) => {
            "no answer in time: is the peer up? (--timeout-ms sets the wait)".to_string()
        }
        (Op::Accept, libc::ETIMEDOUT) => {
            "no peer connected in time (--timeout-ms sets the wait)".to_string()
        }
        _ => return None,
    };
    Some(h)
}

/// Whether `e` is, underneath, the OS error `errno`.
pub fn is_errno(e: &anyhow::Error, errno: i32) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|io| io.raw_os_error() == Some(errno))
}

/// How to get an RDMA device, for messages about having none.
pub const ADD_DEVICE: &str = "add one with rdma link add rxe0 type rxe netdev \
     eth0 (or type siw), or load the NIC's RDMA driver; rdma link show lists them";

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(op: Op, errno: i32) -> anyhow::Error {
        anyhow::Error::new(Failed {
            op,
            err: io::Error::from_raw_os_error(errno),
        })
    }

    #[test]
    fn codes() {
        assert_eq!(code(&anyhow::anyhow!("x")), FAILURE);
        assert_eq!(code(&usage("bad")), USAGE);
        assert_eq!(code(&mismatch("ping 3: data mismatch")), MISMATCH);
        // Still found under added context.
        let e = mismatch("differs").context("echo 1");
        assert_eq!(code(&e), MISMATCH);
        assert_eq!(format!("{e:#}"), "echo 1: differs");
        assert_eq!(code(&failed(Op::Accept, libc::ETIMEDOUT)), FAILURE);
    }

    #[test]
    fn module_not_loaded_and_not_root() {
        let e = failed(Op::Open("/dev/rdma_krust".into()), libc::ENOENT);
        assert_eq!(
            format!("{e:#}"),
            "open /dev/rdma_krust: No such file or directory (os error 2)"
        );
        let h = hint(&e).unwrap();
        assert!(h.contains("is the module loaded?"), "{h}");
        assert!(
            h.contains("insmod rdma_krust.ko / modprobe rdma_krust"),
            "{h}"
        );
        let e = failed(Op::Open("/dev/rdma_krust".into()), libc::EACCES);
        // The tests grep this text: it stays.
        assert!(format!("{e:#}").contains("Permission denied (os error 13)"));
        assert!(hint(&e).unwrap().contains("root"));
    }

    #[test]
    fn addresses_on_no_rdma_device() {
        let a = crate::addr::parse("192.0.2.1:7174").unwrap();
        let e = failed(Op::Listen(a), libc::ENODEV).context("rping server");
        let h = hint(&e).unwrap();
        assert!(
            h.contains("no RDMA device has the address 192.0.2.1:7174"),
            "{h}"
        );
        let h = hint(&failed(Op::Listen(a), libc::EADDRNOTAVAIL)).unwrap();
        assert!(h.contains("not an address of this host"), "{h}");
        let h = hint(&failed(Op::Connect(a), libc::ENODEV)).unwrap();
        assert!(h.contains("not through an RDMA device"), "{h}");
        let h = hint(&failed(Op::Connect(a), libc::ECONNREFUSED)).unwrap();
        assert!(h.contains("nothing listens on 192.0.2.1:7174"), "{h}");
        let a6 = crate::addr::parse("[2001:db8::1]:1").unwrap();
        assert_eq!(show_addr(&a6), "[2001:db8::1]:1");
    }

    #[test]
    fn ioctl_errors_read_as_before() {
        // The tests in scripts/tests/ grep these.
        let e = failed(Op::Accept, libc::EINTR);
        assert_eq!(
            format!("{e:#}"),
            "ioctl IOCTL_ACCEPT: Interrupted system call (os error 4)"
        );
        let a = crate::addr::parse("192.0.2.1:1").unwrap();
        let e = failed(Op::Connect(a), libc::ECONNREFUSED);
        assert_eq!(
            format!("{e:#}"),
            "ioctl IOCTL_CONNECT: Connection refused (os error 111)"
        );
        let e = failed(Op::Listen(a), libc::ENODEV);
        assert_eq!(
            format!("{e:#}"),
            "ioctl IOCTL_LISTEN: No such device (os error 19)"
        );
        // And the resets and timeouts are still found beneath.
        assert!(crate::scenario::is_reset(&failed(
            Op::Accept,
            libc::ECONNRESET
        )));
    }

    #[test]
    fn no_hint_for_errors_in_flight() {
        // The tests read the last line of these: no hint under them.
        assert!(hint(&anyhow::Error::new(io::Error::from_raw_os_error(
            libc::ENODEV
        )))
        .is_none());
        assert!(hint(&failed(Op::Accept, libc::EINTR)).is_none());
        assert!(hint(&failed(Op::Accept, libc::ENODEV)).is_none());
        let e = failed(Op::Accept, libc::EINTR).context("rping server");
        assert!(is_errno(&e, libc::EINTR));
        assert!(!is_errno(&e, libc::ETIMEDOUT));
    }

    #[test]
    fn statuses_are_distinct() {
        let all = [OK, FAILURE, USAGE, HANG, MISMATCH];
        for (i, a) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|b| a != b));
            assert!(statuses!().contains(&format!("\n  {a}  ")));
        }
    }
}
