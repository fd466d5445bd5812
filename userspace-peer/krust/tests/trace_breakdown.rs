// SPDX-License-Identifier: GPL-2.0

//! `scripts/trace-breakdown.sh` cuts the half round trips of a traced siw
//! SEND ping-pong at the functions one message passes through. These feed
//! it made-up traces whose parts are known, in both of the timestamp forms
//! `scripts/guest-bench.sh` writes: ftrace's seconds (whole microseconds)
//! and TSC cycles under a `# tsc_mhz:` line (fractions of one).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The functions of one half round trip, with their offsets in µs from the
/// sender's `siw_post_send()`, run by the sender; the peer's answer, the
/// next `siw_post_send()`, comes `REAP` µs after `siw_rqe_complete()`.
const STEPS: [(&str, f64); 5] = [
    ("siw_post_send <-rust_helper_ib_post_send", 0.0),
    ("siw_qp_sq_process <-siw_post_send", 1.5),
    ("tcp_sendmsg_locked <-tcp_sendmsg", 3.25),
    ("siw_tcp_rx_data <-__tcp_read_sock", 15.5),
    ("siw_rqe_complete <-siw_rdmap_complete", 17.75),
];
const REAP: f64 = 3.5;
const TRIPS: usize = 5;

/// A trace of `TRIPS` half round trips between two tasks, each timestamp
/// written by `stamp` (µs since the start).
fn trace(header: &str, stamp: impl Fn(f64) -> String) -> String {
    let mut out = String::from(header);
    out.push_str("# tracer: function\n#\n");
    let mut t = 10.0;
    for trip in 0..=TRIPS {
        let task = if trip % 2 == 0 {
            "ping-101"
        } else {
            "echo-102"
        };
        let cpu = trip % 2;
        // The last post only ends the trip before it.
        let steps = if trip == TRIPS {
            &STEPS[..1]
        } else {
            &STEPS[..]
        };
        for (ev, at) in steps {
            out.push_str(&format!(
                "{task:>16}     [{cpu:03}] .....  {}: {ev}\n",
                stamp(t + at)
            ));
        }
        // A wake-up elsewhere, which the breakdown counts but does not cut at.
        out.push_str(&format!(
            "{:>16}     [{:03}] d..2.  {}: sched_wakeup: comm=kworker/u8:1 pid=45 prio=120 target_cpu=000\n",
            "<idle>-0",
            1 - cpu,
            stamp(t + 5.0)
        ));
        t += STEPS[4].1 + REAP;
    }
    out
}

fn breakdown(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("krust-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let script: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/trace-breakdown.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&file)
        .output()
        .unwrap();
    std::fs::remove_file(&file).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The value printed for `part` ("  wire   12.3 us").
fn part(out: &str, part: &str) -> f64 {
    out.lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(part)).then(|| w.next().unwrap().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {part} in:\n{out}"))
}

fn trips(out: &str) -> usize {
    let first = out.lines().next().unwrap_or("");
    first
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {first:?}"))
}

/// The parts `STEPS` and `REAP` make, in the order the script prints them.
fn expected() -> [(&'static str, f64); 6] {
    let at = |i: usize| STEPS[i].1;
    [
        ("handoff", at(1) - at(0)),
        ("tx", at(2) - at(1)),
        ("wire", at(3) - at(2)),
        ("rx", at(4) - at(3)),
        ("reap", REAP),
        ("total", at(4) + REAP),
    ]
}

#[test]
fn tsc_cycles_give_fractions_of_a_microsecond() {
    let mhz = 2600.0;
    let text = trace("# tsc_mhz: 2600\n", |us| {
        format!("{}", (us * mhz) as u64 + 75_000_000_000)
    });
    let out = breakdown("tsc.txt", &text);
    assert_eq!(trips(&out), TRIPS, "{out}");
    for (name, want) in expected() {
        let got = part(&out, name);
        assert!(
            (got - want).abs() < 0.06,
            "{name}: {got} against {want}\n{out}"
        );
    }
    assert_eq!(part(&out, "wake-ups"), 1.0, "{out}");
}

#[test]
fn seconds_give_whole_microseconds() {
    let text = trace("", |us| format!("{:.6}", us.round() / 1e6));
    let out = breakdown("secs.txt", &text);
    assert_eq!(trips(&out), TRIPS, "{out}");
    // Each stamp is rounded to the microsecond, so each part is within one.
    for (name, want) in expected() {
        let got = part(&out, name);
        assert!(
            (got - want).abs() <= 1.0,
            "{name}: {got} against {want}\n{out}"
        );
    }
}

#[test]
fn cycles_without_a_frequency_are_not_read_as_times() {
    let text = trace("", |us| format!("{}", (us * 2600.0) as u64));
    let out = breakdown("nofreq.txt", &text);
    assert_eq!(trips(&out), 0, "{out}");
}
