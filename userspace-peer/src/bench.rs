// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust bench`'s figures and tables, as perftest prints them (the
//! command line and the runs are in `benchcmd`).
//!
//! Latency: `#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%`
//! in microseconds; `t_typical` is the median. SEND and WRITE latencies are
//! half the round trip of a ping-pong (as `ib_send_lat` and `ib_write_lat`);
//! READ and atomic latencies are the full round trip (as `ib_read_lat` and
//! `ib_atomic_lat`), and so is WRITE's with `--mode rtt`.
//!
//! Bandwidth: `#bytes #iterations BW peak BW average MsgRate`, in MB/sec of
//! 2^20 bytes and Mpps, as perftest prints them.

use crate::abi;

/// Latency figures, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Lat {
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// The median.
    pub typical: f64,
    /// The mean.
    pub avg: f64,
    /// The standard deviation.
    pub stdev: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
}

/// perftest's latency summary of `samples` (nanoseconds).
pub fn lat(samples: &[u64]) -> Lat {
    if samples.is_empty() {
        return Lat::default();
    }
    let mut s: Vec<f64> = samples.iter().map(|&n| n as f64 / 1000.0).collect();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    let avg = s.iter().sum::<f64>() / n as f64;
    let var = s.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n as f64;
    let pct = |p: f64| s[((n as f64 * p).ceil() as usize).clamp(1, n) - 1];
    Lat {
        min: s[0],
        max: s[n - 1],
        typical: s[n / 2],
        avg,
        stdev: var.sqrt(),
        p99: pct(0.99),
        p999: pct(0.999),
    }
}

/// Bandwidth figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bw {
    /// MB/sec (2^20) over the best window of `depth` completions.
    pub peak: f64,
    /// MB/sec (2^20) over the whole run.
    pub avg: f64,
    /// Millions of messages per second over the whole run.
    pub msg_rate: f64,
}

/// perftest's bandwidth summary of a finished `IOCTL_BENCH`.
pub fn bw(b: &abi::Bench) -> Bw {
    let mib = (1u64 << 20) as f64;
    let secs = b.total_ns as f64 / 1e9;
    let avg = if secs > 0.0 {
        b.bytes as f64 / mib / secs
    } else {
        0.0
    };
    let peak = if b.best_ns > 0 {
        (u64::from(b.depth.min(b.iters)) * u64::from(b.size)) as f64
            / mib
            / (b.best_ns as f64 / 1e9)
    } else {
        avg
    };
    Bw {
        peak: peak.max(avg),
        avg,
        msg_rate: if secs > 0.0 {
            f64::from(b.iters) / secs / 1e6
        } else {
            0.0
        },
    }
}

/// perftest's latency table header.
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n";

/// A row of perftest's latency table.
pub fn lat_row(size: u32, iters: u32, l: &Lat) -> String {
    format!(
        " {:<6} {:<10}     {:<10.2}     {:<10.2}     {:<10.2}         {:<10.2}     {:<10.2}          {:<10.2}             {:<10.2}\n",
        size, iters, l.min, l.max, l.typical, l.avg, l.stdev, l.p99, l.p999
    )
}

/// perftest's bandwidth table header.
pub const BW_HEADER: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";

/// A row of perftest's bandwidth table.
pub fn bw_row(size: u32, iters: u32, b: &Bw) -> String {
    format!(
        " {:<10} {:<10}       {:<.2}            {:<.2}               {:<.6}\n",
        size, iters, b.peak, b.avg, b.msg_rate
    )
}

/// op, mode, bytes, perftest's figure, rdma-krust's figure.
type Row = (String, String, u64, Option<f64>, Option<f64>);

/// The side-by-side table of a bench run: one row per (op, mode, size) with
/// perftest's and rdma-krust's headline figure and their ratio. Latency rows
/// compare `t_typical` (lower is better), bandwidth rows `BW average`
/// (higher is better).
pub fn report(jsonl: &str) -> anyhow::Result<String> {
    use std::fmt::Write;
    let mut rows: Vec<Row> = Vec::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let tool = v["tool"].as_str().unwrap_or("");
        // perftest's atomic latency is a fetch-and-add.
        let op = match v["op"].as_str().unwrap_or("") {
            "atomic" => "fadd",
            o => o,
        }
        .to_string();
        let mode = v["mode"].as_str().unwrap_or("").to_string();
        let bytes = v["bytes"].as_u64().unwrap_or(0);
        let key = if mode == "lat" { "t_typical" } else { "bw_avg" };
        let fig = v[key].as_f64();
        let i = match rows
            .iter()
            .position(|r| r.0 == op && r.1 == mode && r.2 == bytes)
        {
            Some(i) => i,
            None => {
                rows.push((op, mode, bytes, None, None));
                rows.len() - 1
            }
        };
        if tool == "perftest" {
            rows[i].3 = fig;
        } else {
            rows[i].4 = fig;
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<6} {:<4} {:>8}  {:>12}  {:>12}  {:>6}  figure",
        "op", "mode", "bytes", "perftest", "rdma-krust", "ratio"
    );
    for (op, mode, bytes, pt, ours) in rows {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        let ratio = match (pt, ours) {
            (Some(p), Some(o)) if p > 0.0 => format!("{:.2}", o / p),
            _ => "-".to_string(),
        };
        let what = match (mode.as_str(), op.as_str()) {
            ("lat", "send" | "write") => "t_typical us, both RTT/2 of a ping-pong",
            ("lat", _) => "t_typical us, both full RTT",
            _ => "BW average MB/sec (2^20)",
        };
        let _ = writeln!(
            out,
            "{op:<6} {mode:<4} {bytes:>8}  {:>12}  {:>12}  {ratio:>6}  {what}",
            f(pt),
            f(ours)
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_summary_matches_hand_computation() {
        // 1..=1000 microseconds, shuffled order.
        let mut v: Vec<u64> = (1..=1000u64).map(|us| us * 1000).collect();
        v.reverse();
        let l = lat(&v);
        assert_eq!(l.min, 1.0);
        assert_eq!(l.max, 1000.0);
        assert_eq!(l.typical, 501.0);
        assert!((l.avg - 500.5).abs() < 1e-9);
        assert_eq!(l.p99, 990.0);
        assert_eq!(l.p999, 999.0);
        assert!((l.stdev - 288.6749).abs() < 1e-3);
        assert_eq!(lat(&[]), Lat::default());
    }

    #[test]
    fn report_pairs_tools_and_computes_ratios() {
        let jsonl = r#"{"tool":"perftest","op":"read","mode":"lat","bytes":2,"iterations":1000,"t_typical":60.0}
{"tool":"rdma-krust","op":"read","mode":"lat","bytes":2,"iterations":1000,"t_typical":30.0}
{"tool":"perftest","op":"atomic","mode":"lat","bytes":8,"iterations":1000,"t_typical":80.0}
{"tool":"rdma-krust","op":"fadd","mode":"lat","bytes":8,"iterations":1000,"t_typical":40.0}
{"tool":"perftest","op":"write","mode":"bw","bytes":65536,"iterations":1000,"bw_avg":20.0}
"#;
        let r = report(jsonl).unwrap();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines.len(), 4, "{r}");
        assert!(
            lines[1].starts_with("read   lat         2") && lines[1].contains(" 0.50 "),
            "{r}"
        );
        assert!(
            lines[2].starts_with("fadd") && lines[2].contains(" 0.50 "),
            "{r}"
        );
        assert!(
            lines[3].contains("20.00") && lines[3].contains(" - "),
            "{r}"
        );
    }

    #[test]
    fn bandwidth_in_perftest_units() {
        let b = abi::Bench {
            size: 65536,
            iters: 1000,
            depth: 10,
            bytes: 65536 * 1000,
            total_ns: 2_000_000_000,
            best_ns: 10_000_000,
            ..Default::default()
        };
        let r = bw(&b);
        assert!((r.avg - 31.25).abs() < 1e-9, "{}", r.avg);
        assert!((r.peak - 62.5).abs() < 1e-9, "{}", r.peak);
        assert!((r.msg_rate - 0.0005).abs() < 1e-12);
    }
}
