// SPDX-License-Identifier: GPL-2.0

//! Printing device lists: the same format for the module's and libibverbs'
//! view, so the two can be compared line by line; and a connection's
//! line ([`conn_line`]).

use crate::abi;
use std::fmt::Write;

/// The name in a NUL-terminated buffer.
pub fn name(info: &abi::DeviceInfo) -> String {
    let len = info
        .name
        .iter()
        .position(|&c| c == 0)
        .unwrap_or(info.name.len());
    String::from_utf8_lossy(&info.name[..len]).into_owned()
}

/// A GUID as `ibv_devinfo` prints it: four groups of four hex digits.
pub fn guid(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        g >> 48,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
}

/// A connection state (`abi::state`) by name; an unknown one as its number.
pub fn state_name(s: u32) -> String {
    match s {
        abi::state::IDLE => "IDLE".into(),
        abi::state::LISTENING => "LISTENING".into(),
        abi::state::CONNECTING => "CONNECTING".into(),
        abi::state::CONNECTED => "CONNECTED".into(),
        abi::state::CLOSED => "CLOSED".into(),
        n => format!("UNKNOWN({n})"),
    }
}

fn port_state(s: u32) -> &'static str {
    match s {
        0 => "NOP",
        1 => "DOWN",
        2 => "INIT",
        3 => "ARMED",
        4 => "ACTIVE",
        5 => "ACTIVE_DEFER",
        _ => "?",
    }
}

fn mtu(m: u32) -> String {
    match m {
        1..=5 => (128u32 << m).to_string(),
        _ => "?".into(),
    }
}

fn link_layer(l: u32) -> &'static str {
    match l {
        1 => "IB",
        2 => "Eth",
        _ => "?",
    }
}

fn atomic_cap(a: u32) -> &'static str {
    match a {
        0 => "NONE",
        1 => "HCA",
        2 => "GLOB",
        _ => "?",
    }
}

/// `name guid` per line, sorted by name.
pub fn brief(devices: &[abi::DeviceInfo]) -> String {
    let mut lines: Vec<String> = devices
        .iter()
        .map(|d| format!("{} {}\n", name(d), guid(d.node_guid)))
        .collect();
    lines.sort();
    lines.concat()
}

/// Every field as JSON, sorted by name: `{"source": ..., "devices": [...]}`,
/// one object per device with its ports; the GUID as `ibv_devinfo` prints it.
pub fn json(source: &str, devices: &[abi::DeviceInfo]) -> String {
    let mut sorted: Vec<&abi::DeviceInfo> = devices.iter().collect();
    sorted.sort_by_key(|d| name(d));
    let devices: Vec<serde_json::Value> = sorted
        .iter()
        .map(|d| {
            let n = (d.num_ports as usize).min(abi::MAX_PORTS);
            let ports: Vec<serde_json::Value> = d.ports[..n]
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "port": p.port_num,
                        "state": port_state(p.state),
                        "active_mtu": mtu(p.active_mtu),
                        "link_layer": link_layer(p.link_layer),
                    })
                })
                .collect();
            serde_json::json!({
                "name": name(d),
                "node_guid": guid(d.node_guid),
                "ports": ports,
                "max_qp_rd_atom": d.max_qp_rd_atom,
                "max_qp_init_rd_atom": d.max_qp_init_rd_atom,
                "atomic_cap": atomic_cap(d.atomic_cap),
                "max_mr_size": d.max_mr_size,
                "max_window": d.max_window,
            })
        })
        .collect();
    let v = serde_json::json!({ "source": source, "devices": devices });
    format!("{v}\n")
}

/// A table of every field, sorted by name, headed by where it came from.
pub fn full(source: &str, devices: &[abi::DeviceInfo]) -> String {
    let mut sorted: Vec<&abi::DeviceInfo> = devices.iter().collect();
    sorted.sort_by_key(|d| name(d));
    let mut out = String::new();
    let _ = writeln!(out, "{} device(s) from {source}", devices.len());
    let _ = writeln!(
        out,
        "{:<10} {:<19} {:<22} {:>7} {:>12} {:>6} {:>18} {:>10}",
        "DEVICE",
        "NODE GUID",
        "PORTS (state/mtu/link)",
        "RD_ATOM",
        "INIT_RD_ATOM",
        "ATOMIC",
        "MAX_MR_SIZE",
        "MAX_WINDOW"
    );
    for d in sorted {
        let n = (d.num_ports as usize).min(abi::MAX_PORTS);
        let ports: Vec<String> = d.ports[..n]
            .iter()
            .map(|p| {
                format!(
                    "{}:{}/{}/{}",
                    p.port_num,
                    port_state(p.state),
                    mtu(p.active_mtu),
                    link_layer(p.link_layer)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "{:<10} {:<19} {:<22} {:>7} {:>12} {:>6} {:>#18x} {:>10}",
            name(d),
            guid(d.node_guid),
            ports.join(","),
            d.max_qp_rd_atom,
            d.max_qp_init_rd_atom,
            atomic_cap(d.atomic_cap),
            d.max_mr_size,
            // Only the module knows it (libibverbs does not report the
            // fast-registration page list).
            if d.max_window == 0 {
                "-".to_string()
            } else {
                d.max_window.to_string()
            }
        );
    }
    out
}

/// One line describing a connection, `key=value` separated by spaces.
pub fn conn_line(i: &abi::ConnInfo) -> String {
    let dev = abi::DeviceInfo {
        name: i.device,
        ..Default::default()
    };
    format!(
        "conn: device={} state={} resp={} init={} asked_resp={} asked_init={} peer_resp={} peer_init={} dev_rd_atom={} dev_init_rd_atom={} credits={} recv_depth={} peer_recv_depth={} iwarp={} read_sinks={} ack_timeout={} retry={} rnr_retry={} min_rnr_timer={}",
        name(&dev),
        state_name(i.state),
        i.responder_resources,
        i.initiator_depth,
        i.asked_responder_resources,
        i.asked_initiator_depth,
        i.peer_responder_resources,
        i.peer_initiator_depth,
        i.dev_max_qp_rd_atom,
        i.dev_max_qp_init_rd_atom,
        i.credits,
        i.recv_depth,
        i.peer_recv_depth,
        i.iwarp,
        i.read_sinks,
        i.transport.ack_timeout,
        i.transport.retry_count,
        i.transport.rnr_retry,
        i.transport.min_rnr_timer
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(n: &str, g: u64) -> abi::DeviceInfo {
        let mut d = abi::DeviceInfo::default();
        d.name[..n.len()].copy_from_slice(n.as_bytes());
        d.node_guid = g;
        d.num_ports = 1;
        d.ports[0] = abi::PortInfo {
            port_num: 1,
            state: 4,
            active_mtu: 3,
            link_layer: 2,
        };
        d.max_qp_rd_atom = 128;
        d.max_qp_init_rd_atom = 128;
        d.atomic_cap = 1;
        d
    }

    #[test]
    fn states_by_name() {
        assert_eq!(state_name(abi::state::IDLE), "IDLE");
        assert_eq!(state_name(abi::state::LISTENING), "LISTENING");
        assert_eq!(state_name(abi::state::CONNECTING), "CONNECTING");
        assert_eq!(state_name(abi::state::CONNECTED), "CONNECTED");
        assert_eq!(state_name(abi::state::CLOSED), "CLOSED");
        assert_eq!(state_name(9), "UNKNOWN(9)");
    }

    #[test]
    fn guid_matches_ibv_devinfo_format() {
        assert_eq!(guid(0x5054_00ff_fe12_3456), "5054:00ff:fe12:3456");
        assert_eq!(guid(1), "0000:0000:0000:0001");
    }

    #[test]
    fn brief_is_sorted_by_name() {
        let out = brief(&[dev("rxe1", 2), dev("rxe0", 1)]);
        assert_eq!(out, "rxe0 0000:0000:0000:0001\nrxe1 0000:0000:0000:0002\n");
    }

    #[test]
    fn full_shows_ports_and_limits() {
        let out = full("test", &[dev("rxe0", 1)]);
        let line = out.lines().nth(2).unwrap();
        assert!(line.starts_with("rxe0 "), "{line}");
        assert!(line.contains("1:ACTIVE/1024/Eth"), "{line}");
        assert!(line.contains(" 128 "), "{line}");
        assert!(line.contains(" HCA "), "{line}");
        assert!(line.ends_with(" -"), "unknown max_window: {line}");
        let mut d = dev("rxe0", 1);
        d.max_window = 1 << 20;
        let out = full("test", &[d]);
        assert!(out.lines().nth(1).unwrap().ends_with(" MAX_WINDOW"));
        assert!(out.lines().nth(2).unwrap().ends_with(" 1048576"));
        assert!(out.starts_with("1 device(s) from test\n"));
    }

    #[test]
    fn json_has_every_field() {
        let out = json("test", &[dev("rxe1", 2), dev("rxe0", 1)]);
        assert!(out.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["source"], "test");
        let d = &v["devices"][0];
        assert_eq!(d["name"], "rxe0");
        assert_eq!(d["node_guid"], "0000:0000:0000:0001");
        assert_eq!(d["max_qp_rd_atom"], 128);
        assert_eq!(d["max_qp_init_rd_atom"], 128);
        assert_eq!(d["atomic_cap"], "HCA");
        assert_eq!(d["max_mr_size"], 0);
        assert_eq!(d["ports"][0]["port"], 1);
        assert_eq!(d["ports"][0]["state"], "ACTIVE");
        assert_eq!(d["ports"][0]["active_mtu"], "1024");
        assert_eq!(d["ports"][0]["link_layer"], "Eth");
        assert_eq!(v["devices"][1]["name"], "rxe1");
        let none: serde_json::Value = serde_json::from_str(&json("x", &[])).unwrap();
        assert_eq!(none["devices"].as_array().map(Vec::len), Some(0));
    }

    #[test]
    fn name_stops_at_nul_and_survives_a_full_buffer() {
        let mut d = dev("x", 0);
        assert_eq!(name(&d), "x");
        d.name = [b'a'; abi::DEVICE_NAME_LEN];
        assert_eq!(name(&d).len(), abi::DEVICE_NAME_LEN);
    }

    #[test]
    fn conn_line_names_the_state() {
        let mut i = abi::ConnInfo {
            state: abi::state::CONNECTED,
            ..Default::default()
        };
        i.device[..4].copy_from_slice(b"rxe0");
        let l = conn_line(&i);
        assert!(
            l.starts_with("conn: device=rxe0 state=CONNECTED resp=0 "),
            "{l}"
        );
        i.state = abi::state::CLOSED;
        assert!(conn_line(&i).contains(" state=CLOSED "));
    }
}
