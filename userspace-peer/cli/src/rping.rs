// SPDX-License-Identifier: GPL-2.0

//! rping's protocol (rdma-core's librdmacm/examples/rping.c), run over a raw
//! connection of the module (`abi::CONN_RAW`): every message is 16 bytes,
//! `{be64 addr, be32 rkey, be32 len}`; all RDMA is done by the module.
//!
//! One iteration: the client advertises its source buffer; the server RDMA
//! READs it and sends a go-ahead; the client advertises its sink; the server
//! RDMA WRITEs the data there and sends a second go-ahead; with `-V` the
//! client compares sink and source. See `Documentation/rping.rst`.
//!
//! The command line is rping's (`getopt(argc, argv, "a:I:Pp:C:S:t:scvVdq")`
//! in rping.c): `-s`/`-c`, `-a ADDR`, `-p PORT` (7174), `-C COUNT` (none:
//! forever), `-S SIZE` (64; `RPING_MIN_BUFSIZE` to `RPING_BUFSIZE - 1`),
//! `-V`, `-v`, `-P`.

use anyhow::{bail, Context, Result};
use krust::abi;
use krust::addr;
use krust::ctl::Advert;
use krust::exit::{self, usage};
use krust::kdev::KrustDev;
use krust::scenario;

/// rping's default port.
pub const DEF_PORT: u16 = 7174;
/// rping's default size (`cb->size = 64`).
pub const DEF_SIZE: u32 = 64;
/// rping's `RPING_BUFSIZE`: sizes are below it.
pub const BUFSIZE: u32 = 64 * 1024;
/// rping's `RPING_MIN_BUFSIZE`: `sizeof(stringify(INT_MAX)) +
/// sizeof(RPING_MSG_FMT)`, 11 + 15 with gcc and clang alike.
pub const MIN_BUFSIZE: u32 = 26;
/// How long the client waits for each step of connecting, unless told.
const CONNECT_MS: u32 = 20_000;

/// The arguments of `rdma-krust rping`: rping's.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
#[command(group(clap::ArgGroup::new("side").required(true).args(["server", "client"])))]
pub struct RpingArgs {
    /// Be the server (rping -s): listen on -a (default: every address) and
    /// serve one client, or every client with -P.
    #[arg(short = 's', long)]
    pub server: bool,
    /// Be the client (rping -c): connect to -a and ping.
    #[arg(short = 'c', long)]
    pub client: bool,
    /// The address: a host name or an address, as rping's -a. HOST:PORT
    /// (or [IPv6]:PORT) also works, without -p.
    #[arg(short = 'a', long, value_name = "ADDR")]
    pub addr: Option<String>,
    /// The port [default: 7174, rping's].
    #[arg(short = 'p', long)]
    pub port: Option<u16>,
    /// Client: pings to run; 0 runs until the server goes away or the
    /// tool is stopped, as rping without -C.
    #[arg(short = 'C', long, default_value_t = 0)]
    pub count: u32,
    /// Ping data size, 26 to 65535 bytes (rping's -S).
    #[arg(short = 'S', long, default_value_t = DEF_SIZE)]
    pub size: u32,
    /// Client: check every echo against what was sent (rping's -V).
    #[arg(short = 'V', long)]
    pub validate: bool,
    /// Print the ping data of every ping (rping's -v).
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Server: persistent, a client after another, each on a connection
    /// (and a thread) of its own, until stopped (rping's -P).
    #[arg(short = 'P', long, conflicts_with = "client")]
    pub persistent: bool,
    /// Milliseconds to wait for the connection: the server's wait for each
    /// client [default: without limit, as rping], the client's wait for
    /// each step of connecting [default: 20000]. Messages wait
    /// --msg-timeout-ms.
    #[arg(long)]
    pub timeout_ms: Option<u32>,
}

/// Which side, where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Listen here.
    Server(abi::Addr),
    /// Connect there.
    Client(abi::Addr),
}

/// A resolved command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The side and its address.
    pub side: Side,
    /// Client: pings, 0 for ever.
    pub count: u32,
    /// Ping data size.
    pub size: u32,
    /// Client: compare each echo.
    pub validate: bool,
    /// Print the ping data.
    pub verbose: bool,
    /// Server: serve every client.
    pub persistent: bool,
    /// The connection's wait (accept, or each step of connecting).
    pub timeout_ms: u32,
}

/// Resolves the command line; its errors are usage errors.
pub fn plan(a: &RpingArgs) -> Result<Plan> {
    if !(MIN_BUFSIZE..BUFSIZE).contains(&a.size) {
        return Err(usage(format!(
            "-S {}: rping's sizes are {MIN_BUFSIZE} to {}",
            a.size,
            BUFSIZE - 1
        )));
    }
    let (host, port) = match &a.addr {
        Some(s) => addr::split_host_port(s).map_err(usage)?,
        None if a.client => return Err(usage("the client needs the server's address: -a ADDR")),
        // rping's server binds a zeroed AF_INET address: every address.
        None => ("0.0.0.0".to_string(), None),
    };
    let port = match (port, a.port) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "the port is given twice: in -a ADDR:PORT and with -p",
            ))
        }
        (p, q) => p.or(q).unwrap_or(DEF_PORT),
    };
    let at = addr::resolve(&host, port).map_err(usage)?;
    let (side, timeout_ms) = if a.server {
        // u32::MAX ms, 49 days: the module's "no deadline".
        (Side::Server(at), a.timeout_ms.unwrap_or(u32::MAX))
    } else {
        (Side::Client(at), a.timeout_ms.unwrap_or(CONNECT_MS))
    };
    Ok(Plan {
        side,
        count: a.count,
        size: a.size,
        validate: a.validate,
        verbose: a.verbose,
        persistent: a.persistent,
        timeout_ms,
    })
}

/// Runs `rping` as planned; `open` opens a new file of the module (one per
/// connection).
pub fn run(p: &Plan, open: &dyn Fn() -> Result<KrustDev>) -> Result<()> {
    // No device: say how to add one, instead of a server listening on
    // nothing or a client's connect failing.
    open()?.device_names()?;
    match p.side {
        Side::Client(at) => client(&open()?, at, p),
        Side::Server(at) if !p.persistent => {
            let dev = open()?;
            accept(&dev, at, p)?;
            let pings = serve(&dev, p.verbose)?;
            println!("rping server: {pings} ping(s) served");
            if pings == 0 {
                bail!("no ping served");
            }
            Ok(())
        }
        Side::Server(at) => {
            // Each connection on a file of its own, served by a thread of
            // its own; the next file listens as soon as the last accepted
            // (the module's listener lets the port go at the accept).
            for n in 1u64.. {
                let dev = open()?;
                if let Err(e) = accept(&dev, at, p) {
                    // A wait that ran out or was interrupted, or a listen
                    // that failed, ends the server; a client whose
                    // connection failed does not.
                    let ended = |errno| exit::is_errno(&e, errno);
                    if ended(libc::ETIMEDOUT) || ended(libc::EINTR) || !accepting(&e) {
                        return Err(e);
                    }
                    eprintln!("rping server: client {n}: {e:#}");
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    continue;
                }
                let verbose = p.verbose;
                std::thread::spawn(move || match serve(&dev, verbose) {
                    Ok(pings) => println!("rping server: client {n}: {pings} ping(s) served"),
                    Err(e) => eprintln!("rping server: client {n}: {e:#}"),
                });
            }
            Ok(())
        }
    }
}

/// Whether `e` is the accept's (not the listen's, nor the output's).
fn accepting(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|c| c.downcast_ref::<krust::kdev::Failed>())
        .any(|f| f.op == krust::kdev::Op::Accept)
}

/// Listens on `at` and waits for a client.
fn accept(dev: &KrustDev, at: abi::Addr, p: &Plan) -> Result<()> {
    dev.listen(at, 0, 0, abi::CONN_RAW)?;
    println!("listening on {}", exit::show_addr(&at));
    std::io::Write::flush(&mut std::io::stdout())?;
    let info = dev.accept(p.timeout_ms)?;
    println!(
        "rping server: connected, resp={} init={}",
        info.responder_resources, info.initiator_depth
    );
    Ok(())
}

/// rping's start-buffer contents for iteration `ping`: "rdma-ping-%d: "
/// then the ASCII run from `start` ('A'..'z', wrapping), NUL-terminated.
pub fn pattern(ping: u64, size: usize) -> Vec<u8> {
    let mut b = vec![0u8; size];
    let head = format!("rdma-ping-{ping}: ");
    let n = head.len().min(size);
    b[..n].copy_from_slice(&head.as_bytes()[..n]);
    let mut c = b'A' + (ping % 58) as u8;
    for x in b.iter_mut().skip(n) {
        *x = c;
        c = if c == b'z' { b'A' } else { c + 1 };
    }
    if let Some(last) = b.last_mut() {
        *last = 0;
    }
    b
}

/// The string in `b`, up to its NUL, as rping's `%s` prints it.
fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn recv16(dev: &KrustDev) -> Result<[u8; 16]> {
    let mut b = [0u8; 16];
    let n = dev.recv(&mut b, dev.msg_timeout())?;
    if n != 16 {
        bail!("received {n} bytes, rping messages are 16");
    }
    Ok(b)
}

/// The server's side of a connection: serves until the client
/// disconnects; returns the pings served.
fn serve(dev: &KrustDev, verbose: bool) -> Result<u64> {
    let mut pings = 0u64;
    loop {
        // The source advert; a disconnect here is the normal end, and
        // anything else (a timeout, say) an error.
        let src = match recv16(dev) {
            Ok(b) => Advert::decode(&b).context("bad advert")?,
            Err(e) if krust::scenario::is_reset(&e) => break,
            Err(e) => {
                return Err(e.context(format!(
                    "receive the source advert, after {pings} ping(s) served"
                )))
            }
        };
        if src.len == 0 || src.len > BUFSIZE {
            bail!(
                "the client's buffer is {} bytes; rping's are 1 to {BUFSIZE}",
                src.len
            );
        }
        let mut data = vec![0u8; src.len as usize];
        dev.rdma(src.addr, src.rkey, &mut data, false)
            .context("RDMA READ of the client's source")?;
        if verbose {
            println!("server ping data: {}", text(&data));
        }
        dev.send(&[0u8; 16], dev.msg_timeout())
            .context("go-ahead")?;
        let sink = Advert::decode(&recv16(dev)?).context("bad sink advert")?;
        // As rping's server: write the string, with its NUL.
        let len = data
            .iter()
            .position(|&c| c == 0)
            .map_or(data.len(), |p| p + 1);
        let len = len.min(sink.len as usize);
        dev.rdma(sink.addr, sink.rkey, &mut data[..len], true)
            .context("RDMA WRITE to the client's sink")?;
        pings += 1;
        // The go-ahead of the client's last ping may be its last message:
        // rping exits as soon as it has it, and when its disconnect
        // overtakes the ACK the SEND is flushed (ECONNRESET) although it
        // arrived. The client's own exit status tells whether it did.
        match dev.send(&[0u8; 16], dev.msg_timeout()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => break,
            Err(e) => return Err(e).context("second go-ahead"),
        }
    }
    Ok(pings)
}

/// The client: `p.count` ping-pongs (0: until the server goes away) of
/// `p.size` bytes, each checked with `p.validate`.
fn client(dev: &KrustDev, at: abi::Addr, p: &Plan) -> Result<()> {
    let info = dev.connect(at, 0, 0, p.timeout_ms, abi::CONN_RAW)?;
    println!(
        "rping client: connected, resp={} init={}",
        info.responder_resources, info.initiator_depth
    );
    let size = p.size;
    let len = u64::from(size);
    let (src_addr, src_rkey, src_id) =
        dev.expose(len, abi::ACCESS_READ).context("expose source")?;
    let (sink_addr, sink_rkey, sink_id) =
        dev.expose(len, abi::ACCESS_WRITE).context("expose sink")?;
    let one = |ping: u64| -> Result<()> {
        let mut start = pattern(ping, size as usize);
        dev.window_io(src_id, 0, &mut start, false)?;
        scenario::advertise(dev, src_addr, src_rkey, len).context("source advert")?;
        recv16(dev).context("go-ahead")?;
        scenario::advertise(dev, sink_addr, sink_rkey, len).context("sink advert")?;
        recv16(dev).context("second go-ahead")?;
        if p.validate || p.verbose {
            let mut sink = vec![0u8; size as usize];
            dev.window_io(sink_id, 0, &mut sink, true)?;
            if p.validate && sink != start {
                return Err(exit::mismatch(format!("ping {ping}: data mismatch")));
            }
            if p.verbose {
                println!("ping data: {}", text(&sink));
            }
        }
        Ok(())
    };
    let validated = if p.validate { ", validated" } else { "" };
    let mut ping = 0u64;
    while p.count == 0 || ping < u64::from(p.count) {
        match one(ping) {
            Ok(()) => ping += 1,
            // Without -C the server going away ends the run, as rping's.
            Err(e) if p.count == 0 && scenario::is_reset(&e) => {
                println!(
                    "rping client: {ping} ping(s) of {size} bytes{validated}; the server disconnected"
                );
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    println!("rping client: {ping} ping(s) of {size} bytes{validated}");
    dev.disconnect()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        a: RpingArgs,
    }

    fn args(line: &str) -> Result<RpingArgs, clap::Error> {
        T::try_parse_from(std::iter::once("rping").chain(line.split_whitespace())).map(|t| t.a)
    }

    fn plan_of(line: &str) -> Plan {
        plan(&args(line).unwrap()).unwrap()
    }

    fn v4(ip: [u8; 4], port: u16) -> abi::Addr {
        addr::from_socket(std::net::SocketAddr::from((ip, port)))
    }

    #[test]
    fn pattern_is_rpings() {
        let p = pattern(0, 30);
        assert_eq!(&p[..14], b"rdma-ping-0: A");
        assert_eq!(p[15], b'C');
        assert_eq!(p[29], 0);
        assert!(p[..29].iter().all(|&c| c != 0));
        // The run wraps from 'z' to 'A' and starts one later each ping.
        assert_eq!(pattern(1, 20)[13], b'B');
        let long = pattern(0, 100);
        let z = long.iter().position(|&c| c == b'z').unwrap();
        assert_eq!(long[z + 1], b'A');
        assert_eq!(text(&pattern(7, 20)), "rdma-ping-7: HIJKLM");
    }

    #[test]
    fn rpings_command_line() {
        // rping -s -a 192.0.2.1 -p 7174 -S 64 -V
        let p = plan_of("-s -a 192.0.2.1 -p 7180 -S 64 -V");
        assert_eq!(p.side, Side::Server(v4([192, 0, 2, 1], 7180)));
        assert_eq!(p.size, 64);
        assert_eq!(p.timeout_ms, u32::MAX);
        assert!(!p.persistent);
        // rping -c -a 192.0.2.1 -p 7174 -C 20 -S 65535 -V -v
        let p = plan_of("-c -a 192.0.2.1 -p 7174 -C 20 -S 65535 -V -v");
        assert_eq!(p.side, Side::Client(v4([192, 0, 2, 1], 7174)));
        assert_eq!(
            (p.count, p.size, p.validate, p.verbose),
            (20, 65535, true, true)
        );
        assert_eq!(p.timeout_ms, 20_000);
        // rping's defaults: port 7174, size 64, forever; the server on
        // every address.
        let p = plan_of("-c -a 192.0.2.1");
        assert_eq!(p.side, Side::Client(v4([192, 0, 2, 1], DEF_PORT)));
        assert_eq!(
            (p.count, p.size, p.validate, p.verbose),
            (0, 64, false, false)
        );
        assert_eq!(plan_of("-s").side, Side::Server(v4([0, 0, 0, 0], 7174)));
        assert!(plan_of("-s -P").persistent);
        assert!(plan_of("--server --persistent").persistent);
        // Names resolve.
        assert_eq!(
            plan_of("-c -a localhost").side,
            Side::Client(addr::resolve("localhost", 7174).unwrap())
        );
        assert_eq!(plan_of("-s --timeout-ms 60000").timeout_ms, 60_000);
        assert_eq!(plan_of("-c -a 192.0.2.1 --timeout-ms 5").timeout_ms, 5);
    }

    #[test]
    fn old_invocations_still_parse() {
        // scripts/tests/ and kit/src/pair/tests/.
        let p = plan_of("--server --addr 192.0.2.1:7175");
        assert_eq!(p.side, Side::Server(v4([192, 0, 2, 1], 7175)));
        let p = plan_of("--client --addr 192.0.2.1:7181 -C 20 -S 1000 -V");
        assert_eq!(p.side, Side::Client(v4([192, 0, 2, 1], 7181)));
        assert_eq!((p.count, p.size, p.validate), (20, 1000, true));
        let p = plan_of("--client --addr [2001:db8::1]:7181 --count 3 --size 64 --validate");
        assert_eq!((p.count, p.size, p.validate), (3, 64, true));
        assert_eq!(
            plan_of("--server --addr 192.0.2.1:7174 --timeout-ms 60000").timeout_ms,
            60_000
        );
    }

    #[test]
    fn refuses_what_rping_refuses() {
        // Neither side, both sides, -P on the client: clap's errors.
        for bad in ["-a 192.0.2.1", "-s -c", "-c -a 192.0.2.1 -P", "-s -x"] {
            assert!(args(bad).is_err(), "{bad}");
        }
        for bad in [
            "-c",                     // no address
            "-s -S 25",               // below RPING_MIN_BUFSIZE
            "-s -S 65536",            // RPING_BUFSIZE and above
            "-s -a 192.0.2.1:1 -p 2", // the port twice
            "-c -a no-such-host.invalid",
        ] {
            let e = plan(&args(bad).unwrap()).unwrap_err();
            assert_eq!(exit::code(&e), exit::USAGE, "{bad}");
        }
        assert_eq!(plan_of("-s -S 26").size, 26);
    }
}
