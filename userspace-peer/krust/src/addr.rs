// SPDX-License-Identifier: GPL-2.0

//! Addresses on the command line: host names as well as IPv4 and IPv6
//! addresses, resolved (`getaddrinfo`, through the standard library) to an
//! [`abi::Addr`], the first result, as rping and perftest take it.

use crate::abi;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// Parses `HOST:PORT`: a name, an IPv4 address, or an IPv6 address in
/// brackets, then the port, e.g. `192.0.2.1:7471`, `[2001:db8::1]:7471`,
/// `node-b:7471`.
pub fn parse(s: &str) -> Result<abi::Addr, String> {
    let (host, port) = split_host_port(s)?;
    let port = port.ok_or_else(|| format!("'{s}' has no port: give HOST:PORT"))?;
    resolve(&host, port)
}

/// Splits `HOST`, `HOST:PORT`, `IPv6`, `[IPv6]` or `[IPv6]:PORT` into the
/// host and the port, if there is one.
pub fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|e| format!("'{s}': port '{p}': {e}"))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("'{s}': no ']' after the IPv6 address"))?;
        return match after {
            "" => Ok((host.to_string(), None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host.to_string(), Some(port(p)?))),
                None => Err(format!("'{s}': expected ':PORT' after ']'")),
            },
        };
    }
    // A bare IPv6 address has colons of its own, and no port.
    if s.parse::<Ipv6Addr>().is_ok() {
        return Ok((s.to_string(), None));
    }
    match s.rsplit_once(':') {
        Some((h, _)) if h.contains(':') => Err(format!(
            "'{s}': put an IPv6 address in brackets to give a port: [ADDR]:PORT"
        )),
        Some((h, p)) => Ok((h.to_string(), Some(port(p)?))),
        None => Ok((s.to_string(), None)),
    }
}

/// Resolves `host` (a name or an address) with `port`.
pub fn resolve(host: &str, port: u16) -> Result<abi::Addr, String> {
    if host.is_empty() {
        return Err("empty host name".into());
    }
    let sa = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("'{host}' does not resolve: {e}"))?
        .next()
        .ok_or_else(|| format!("'{host}' has no address"))?;
    Ok(from_socket(sa))
}

/// The ABI's form of a socket address.
pub fn from_socket(sa: SocketAddr) -> abi::Addr {
    let mut a = abi::Addr {
        port: sa.port(),
        ..Default::default()
    };
    match sa.ip() {
        IpAddr::V4(v4) => {
            a.family = abi::AF_INET;
            a.addr[..4].copy_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            a.family = abi::AF_INET6;
            a.addr = v6.octets();
        }
    }
    a
}

/// An IPv4 address, or a name that resolves to one (its first).
pub fn ipv4(s: &str) -> Result<Ipv4Addr, String> {
    if let Ok(ip) = s.parse() {
        return Ok(ip);
    }
    (s, 0)
        .to_socket_addrs()
        .map_err(|e| format!("'{s}' does not resolve: {e}"))?
        .find_map(|sa| match sa.ip() {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(_) => None,
        })
        .ok_or_else(|| format!("'{s}' has no IPv4 address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v4_and_v6() {
        let a = parse("192.0.2.1:7471").unwrap();
        assert_eq!(a.family, abi::AF_INET);
        assert_eq!(a.port, 7471);
        assert_eq!(&a.addr[..4], &[192, 0, 2, 1]);
        assert!(a.addr[4..].iter().all(|&b| b == 0));
        let a = parse("[2001:db8::1]:1").unwrap();
        assert_eq!(a.family, abi::AF_INET6);
        assert_eq!(a.addr[0..2], [0x20, 0x01]);
        assert_eq!(a.addr[15], 1);
    }

    #[test]
    fn resolves_host_names() {
        // /etc/hosts has localhost everywhere; it may come as ::1 first.
        let a = parse("localhost:7174").unwrap();
        assert_eq!(a.port, 7174);
        match a.family {
            abi::AF_INET => assert_eq!(&a.addr[..4], &[127, 0, 0, 1]),
            abi::AF_INET6 => assert_eq!(a.addr, Ipv6Addr::LOCALHOST.octets()),
            f => panic!("family {f}"),
        }
        assert_eq!(ipv4("localhost").unwrap(), Ipv4Addr::LOCALHOST);
        assert_eq!(ipv4("192.0.2.9").unwrap(), Ipv4Addr::new(192, 0, 2, 9));
        assert!(ipv4("::1").is_err());
    }

    #[test]
    fn splits_hosts_and_ports() {
        let sp = |s| split_host_port(s).unwrap();
        assert_eq!(sp("192.0.2.1"), ("192.0.2.1".into(), None));
        assert_eq!(sp("192.0.2.1:7174"), ("192.0.2.1".into(), Some(7174)));
        assert_eq!(sp("node-b"), ("node-b".into(), None));
        assert_eq!(sp("node-b:1"), ("node-b".into(), Some(1)));
        assert_eq!(sp("2001:db8::1"), ("2001:db8::1".into(), None));
        assert_eq!(sp("[2001:db8::1]"), ("2001:db8::1".into(), None));
        assert_eq!(sp("[::1]:18515"), ("::1".into(), Some(18515)));
        assert!(split_host_port("[::1").is_err());
        assert!(split_host_port("[::1]x").is_err());
        assert!(split_host_port("fe80::1:zz:7").is_err());
        assert!(split_host_port("h:70000").is_err());
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("192.0.2.1").is_err());
        assert!(parse("no-such-host.invalid:1").is_err());
        assert!(parse("192.0.2.1:70000").is_err());
        assert!(parse(":1").is_err());
        assert!(resolve("", 1).is_err());
    }
}
