// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust-kit listen-close-race`: a listening file of the module is closed
//! while a connection request to it is being handled, over and over.
//!
//! The module's CONNECT_REQUEST handler sets the connection up (QP,
//! receives, device registration) with the listener's handler mutex held;
//! the close tears the file's ids down. A request whose setup finished after
//! the close had taken the ids used to stay in the connection, whose id
//! holds the connection: a cycle that leaked the QP, the id and a device
//! reference, and made `rdma link delete` hang. Each round here starts a
//! connect from another file and closes the listener a random few
//! milliseconds later, so over the rounds the close lands before, during
//! and after the handler. The caller then deletes the device, which only
//! completes if no id was left behind.

use crate::fuzz::Rng;
use anyhow::{bail, Context, Result};
use krust::kdev::KrustDev;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// The arguments of `rdma-krust-kit listen-close-race`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct ListenRaceArgs {
    /// Address to listen on and connect to.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// Port of the listener.
    #[arg(long, default_value_t = 7720)]
    pub port: u16,
    /// Rounds.
    #[arg(long, default_value_t = 200)]
    pub rounds: u32,
    /// The close comes 0 to this many microseconds after the connect starts.
    #[arg(long, default_value_t = 20_000)]
    pub max_delay_us: u64,
    /// Seed of the delays.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print a line per round: the delay, how the connect ended, and how
    /// long the connect and the two closes took.
    #[arg(long)]
    pub trace: bool,
}

/// `rdma-krust-kit listen-close-race`: prints how each round's connect ended.
pub fn run(path: &str, a: &ListenRaceArgs) -> Result<()> {
    let mut rng = Rng::new(a.seed);
    let addr = crate::stress::addr_of(a.ip, a.port);
    let mut outcomes: BTreeMap<String, u32> = BTreeMap::new();
    let ms = |t: Instant| t.elapsed().as_millis();
    // The slowest round, by its whole duration, and that round's line.
    let mut slowest = (0u128, String::new());
    for round in 0..a.rounds {
        let t0 = Instant::now();
        let l = KrustDev::open(path)?;
        l.listen(addr, 0, 0, 0)
            .with_context(|| format!("round {round}: IOCTL_LISTEN"))?;
        let c = KrustDev::open(path)?;
        let connector = std::thread::spawn(move || {
            let t = Instant::now();
            let r = c.connect(addr, 0, 0, 3_000, 0);
            (r, ms(t), c)
        });
        let delay = rng.below(a.max_delay_us + 1);
        std::thread::sleep(Duration::from_micros(delay));
        let t = Instant::now();
        drop(l);
        let close_listener = ms(t);
        let Ok((r, connect_ms, c)) = connector.join() else {
            bail!("round {round}: the connecting thread panicked");
        };
        let t = Instant::now();
        drop(c);
        let close_connector = ms(t);
        let outcome = match r {
            Ok(_) => "connected".to_string(),
            Err(e) => e
                .root_cause()
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::raw_os_error)
                .map_or_else(|| e.to_string(), krust::errno::errno_name),
        };
        let line = format!(
            "round {round}: close after {delay} us, connect {outcome} in {connect_ms} ms, \
             closes took {close_listener} ms (listener) and {close_connector} ms (connector)"
        );
        if a.trace {
            println!("{line}");
        }
        if ms(t0) >= slowest.0 {
            slowest = (ms(t0), line);
        }
        *outcomes.entry(outcome).or_default() += 1;
    }
    println!(
        "listen-close-race: {} rounds, connects ended: {}",
        a.rounds,
        tally(&outcomes)
    );
    println!("slowest {}", slowest.1);
    Ok(())
}

/// The arguments of `rdma-krust-kit tcp-reset`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct TcpResetArgs {
    /// The iWARP listener's address.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub ip: Ipv4Addr,
    /// The iWARP listener's TCP port.
    #[arg(long)]
    pub port: u16,
    /// Connections to open and reset.
    #[arg(long, default_value_t = 200)]
    pub count: u32,
}

/// `rdma-krust-kit tcp-reset`: open TCP connections to an iWARP listener and
/// reset each at once (`SO_LINGER` 0, then close), before any MPA request:
/// what a port scan or a client that dies after its TCP handshake does.
/// Prints how many connected and how many were refused; the listener must
/// still take a real connection afterwards.
pub fn tcp_reset(a: &TcpResetArgs) -> Result<()> {
    let addr = std::net::SocketAddr::from((a.ip, a.port));
    let mut outcomes: BTreeMap<String, u32> = BTreeMap::new();
    for _ in 0..a.count {
        let outcome = match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(s) => {
                reset_on_close(&s)?;
                "reset".to_string()
            }
            Err(e) => e
                .raw_os_error()
                .map_or_else(|| e.to_string(), krust::errno::errno_name),
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    println!("tcp-reset: {} connections: {}", a.count, tally(&outcomes));
    Ok(())
}

/// How many of each outcome, `name count, name count`, in name order.
fn tally(outcomes: &BTreeMap<String, u32>) -> String {
    let list: Vec<String> = outcomes.iter().map(|(k, n)| format!("{k} {n}")).collect();
    list.join(", ")
}

/// Makes the close of `s` send a RST instead of a FIN.
fn reset_on_close(s: &std::net::TcpStream) -> Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `s` is an open socket for the call, and `linger` a valid
    // `struct linger` whose size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("SO_LINGER");
    }
    Ok(())
}
