// SPDX-License-Identifier: GPL-2.0

//! `IP:PORT` arguments to [`abi::Addr`].

use crate::abi;
use std::net::SocketAddr;

/// Parses `192.0.2.1:7471` or `[2001:db8::1]:7471`.
pub fn parse(s: &str) -> Result<abi::Addr, String> {
    let sa: SocketAddr = s
        .parse()
        .map_err(|e| format!("'{s}' is not IP:PORT ({e})"))?;
    let mut a = abi::Addr {
        port: sa.port(),
        ..Default::default()
    };
    match sa {
        SocketAddr::V4(v4) => {
            a.family = abi::AF_INET;
            a.addr[..4].copy_from_slice(&v4.ip().octets());
        }
        SocketAddr::V6(v6) => {
            a.family = abi::AF_INET6;
            a.addr = v6.ip().octets();
        }
    }
    Ok(a)
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
    fn rejects_garbage() {
        assert!(parse("192.0.2.1").is_err());
        assert!(parse("host:1").is_err());
        assert!(parse("192.0.2.1:70000").is_err());
    }
}
