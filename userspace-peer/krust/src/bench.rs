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
//! 2^20 bytes and Mpps, as perftest prints them and computes them
//! (`print_report_bw`, `src/perftest_parameters.c` of linux-rdma/perftest).
//! The peak is perftest's: the best rate of any run of consecutive
//! messages, from the post of the first to the completion of the last
//! ([`perftest_peak`]). It needs each message's times, which `IOCTL_BENCH`
//! does not return: for the module's loops the peak is not measured, and
//! printed as perftest prints a peak it does not measure, 0.00.

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
    /// perftest's BW peak, MB/sec (2^20): see [`perftest_peak`]. `None`
    /// when the run has no per-message times to compute it from (perftest
    /// prints 0.00 for a peak it does not measure, `-N`).
    pub peak: Option<f64>,
    /// MB/sec (2^20) over the whole run: see [`bw_avg`].
    pub avg: f64,
    /// Millions of messages per second over the whole run: see
    /// [`msg_rate`].
    pub msg_rate: f64,
}

/// Bytes in perftest's MB (its `format_factor` for MB/sec, 0x100000).
const MIB: f64 = (1u64 << 20) as f64;

/// perftest's BW average, MB/sec (2^20): `iters` messages of `size`
/// bytes in `total_ns`, the first post to the last completion
/// (`print_report_bw`: `tsize * iters * cycles_to_units /
/// (sum_of_test_cycles * format_factor)`, `sum_of_test_cycles` being
/// `tcompleted[iters - 1] - tposted[0]`). 0 for an empty run.
pub fn bw_avg(size: u64, iters: u64, total_ns: u64) -> f64 {
    if total_ns == 0 {
        return 0.0;
    }
    size as f64 * iters as f64 / MIB / (total_ns as f64 / 1e9)
}

/// perftest's MsgRate, millions of messages per second: `iters` messages
/// in `total_ns`, over the same span as [`bw_avg`] (`print_report_bw`:
/// `iters * cycles_to_units / (sum_of_test_cycles * 1000000)`). 0 for an
/// empty run.
pub fn msg_rate(iters: u64, total_ns: u64) -> f64 {
    if total_ns == 0 {
        return 0.0;
    }
    iters as f64 / (total_ns as f64 / 1e9) / 1e6
}

/// The per-message times of a bandwidth run, in nanoseconds on one clock,
/// as perftest keeps them (`tposted` and `tcompleted`, stamped in
/// `run_iter_bw`, `src/perftest_resources.c`). Both slices have one entry
/// per message, and only the entries perftest stamps are read.
#[derive(Clone, Copy, Debug)]
pub struct Stamps<'a> {
    /// `posted[i]`: just before message `i` was posted. perftest stamps
    /// each post call, of `post_list` messages: read where `i` is a
    /// multiple of `post_list`.
    pub posted: &'a [u64],
    /// `completed[j]`: when the completion of message `j` was polled.
    /// perftest asks for a completion every `cq_mod` messages, and for the
    /// last one: read where `j + 1` is a multiple of `cq_mod`, and at the
    /// last message.
    pub completed: &'a [u64],
    /// Messages per post call (perftest's `-l`, `post_list`), at least 1.
    pub post_list: usize,
    /// Messages per completion (perftest's `-Q`, `cq_mod`), at least 1.
    pub cq_mod: usize,
}

/// Consecutive messages `first..=last`, from the post of the first to the
/// completion of the last: `ns` nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first message.
    pub first: usize,
    /// The last message.
    pub last: usize,
    /// `completed[last] - posted[first]`.
    pub ns: u64,
}

impl Span {
    /// How many messages: `last - first + 1`.
    pub fn messages(&self) -> u64 {
        (self.last - self.first) as u64 + 1
    }
}

/// `a.0 / a.1 < b.0 / b.1`, exactly (denominators positive).
fn less(a: (u64, u64), b: (u64, u64)) -> bool {
    u128::from(a.0) * u128::from(b.1) < u128::from(b.0) * u128::from(a.1)
}

/// Whether `b` is on or below the line from `a` to `c` (`a.0 < b.0 < c.0`):
/// the slope from `a` to `b` is not above the slope from `a` to `c`.
fn on_or_below(a: (usize, u64), b: (usize, u64), c: (usize, u64)) -> bool {
    let dx = |p: (usize, u64), q: (usize, u64)| q.0 as i128 - p.0 as i128;
    let dy = |p: (usize, u64), q: (usize, u64)| i128::from(q.1) - i128::from(p.1);
    // Indices are below 2^61 (a slice of u64), times differ by less than
    // 2^64: each product is below 2^125.
    dy(a, b) * dx(a, c) <= dy(a, c) * dx(a, b)
}

/// perftest's best span: the one with the least time per message, over
/// every message `i` whose post perftest stamps and every later (or the
/// same) message `j` whose completion it stamps, that is
/// `min (completed[j] - posted[i]) / (j - i + 1)`, the loop of
/// `print_report_bw` (`src/perftest_parameters.c`):
///
/// ```text
/// for (i = 0; i < iters; i += post_list) {
///     for (j = ROUND_UP(i + 1, cq_mod) - 1; j < iters; j += cq_mod)
///         opt_delta = min(opt_delta, (tcompleted[j] - tposted[i]) / (j - i + 1));
///     if (iters % cq_mod)   /* the last message signals too */
///         j = iters - 1, the same;
/// }
/// ```
///
/// perftest divides in whole cycles; this keeps the exact fraction (its
/// floor is perftest's `opt_delta`: the least of the floors is the floor of
/// the least). perftest's loop is quadratic (it stops measuring the peak
/// beyond 20000 iterations); this is the same minimum in `O(n log n)`:
/// with posts as points `(i, posted[i])` and a completion as `(j + 1,
/// completed[j])`, a span's time per message is the slope between the two,
/// and the least slope from a completion to the posts before it is at a
/// vertex of their upper convex hull, where the slopes fall and then rise.
///
/// `None` for no messages, slices of different lengths, a `post_list` or
/// `cq_mod` of 0, or a stamped completion earlier than a stamped post
/// before it (perftest's unsigned difference would wrap).
pub fn best_span(s: &Stamps<'_>) -> Option<Span> {
    let n = s.posted.len();
    if n == 0 || s.completed.len() != n || s.post_list == 0 || s.cq_mod == 0 {
        return None;
    }
    let lasts = (s.cq_mod - 1..n)
        .step_by(s.cq_mod)
        .chain((!n.is_multiple_of(s.cq_mod)).then_some(n - 1));
    // The upper hull of the posts so far, by index.
    let mut hull: Vec<(usize, u64)> = Vec::new();
    let mut next = 0;
    let mut latest = 0;
    let mut best: Option<Span> = None;
    for j in lasts {
        while next <= j {
            let p = (next, *s.posted.get(next)?);
            latest = latest.max(p.1);
            while let [.., a, b] = hull[..] {
                if !on_or_below(a, b, p) {
                    break;
                }
                // `b` is no vertex of the hull with `p`.
                hull.pop();
            }
            hull.push(p);
            next += s.post_list;
        }
        let c = *s.completed.get(j)?;
        if c < latest {
            return None;
        }
        // Time per message from hull vertex `k` to completion `j`.
        let rate = |k: usize| hull.get(k).map(|&(i, p)| (c - p, (j + 1 - i) as u64));
        // The first vertex whose next is no better: slopes fall, then
        // rise (the hull has no three vertices in a line).
        let (mut lo, mut hi) = (0, hull.len().saturating_sub(1));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match (rate(mid), rate(mid + 1)) {
                (Some(here), Some(there)) if less(there, here) => lo = mid + 1,
                _ => hi = mid,
            }
        }
        let (i, p) = *hull.get(lo)?;
        let span = Span {
            first: i,
            last: j,
            ns: c - p,
        };
        if best.is_none_or(|b| less((span.ns, span.messages()), (b.ns, b.messages()))) {
            best = Some(span);
        }
    }
    best
}

/// perftest's BW peak, MB/sec (2^20), of messages of `size` bytes: `size`
/// over the least time per message of any span of consecutive messages,
/// from a post to a completion ([`best_span`]; `print_report_bw`:
/// `tsize * cycles_to_units / (opt_delta * format_factor)`). `None` where
/// [`best_span`] has none, or the best span took no time.
pub fn perftest_peak(s: &Stamps<'_>, size: u64) -> Option<f64> {
    let b = best_span(s)?;
    if b.ns == 0 {
        return None;
    }
    Some(size as f64 * b.messages() as f64 / MIB / (b.ns as f64 / 1e9))
}

/// perftest's bandwidth figures of `iters` messages of `size` bytes,
/// `total_ns` from the first post to the last completion; the peak from
/// the per-message times `stamps`, if there are any.
pub fn bw(size: u64, iters: u64, total_ns: u64, stamps: Option<&Stamps<'_>>) -> Bw {
    Bw {
        peak: stamps.and_then(|s| perftest_peak(s, size)),
        avg: bw_avg(size, iters, total_ns),
        msg_rate: msg_rate(iters, total_ns),
    }
}

/// perftest measures the BW peak of runs of at most this many
/// iterations (more, and it warns that it will not, and prints 0.00).
pub const PEAK_MAX_ITERS: u32 = 20_000;

/// perftest's bandwidth figures of a finished `IOCTL_BENCH`. `samples` is
/// what the module filled in through `Bench::samples`: each message's post
/// time then each completion's (`2 * iters` values), from which the peak
/// is computed as perftest's; the module signals and reaps every message
/// (perftest's `post_list` and `cq_mod` of 1). Without them (`samples` of
/// another length), the peak is not measured. `best_ns`, the shortest span
/// of `depth` completions, is not perftest's peak and is not used.
pub fn bw_of_bench(b: &abi::Bench, samples: &[u64]) -> Bw {
    let n = b.iters as usize;
    let stamps = (n > 0 && samples.len() == 2 * n).then(|| Stamps {
        posted: &samples[..n],
        completed: &samples[n..],
        post_list: 1,
        cq_mod: 1,
    });
    bw(
        u64::from(b.size),
        u64::from(b.iters),
        b.total_ns,
        stamps.as_ref(),
    )
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

/// What perftest prints above its bandwidth table when it does not measure
/// the peak (`-N`, or more than 20000 iterations): the peak column is 0.00.
pub const BW_NO_PEAK: &str = " WARNING: BW peak won't be measured in this run.\n";

/// A row of perftest's bandwidth table; a peak not measured is 0.00, as
/// perftest prints it.
pub fn bw_row(size: u32, iters: u32, b: &Bw) -> String {
    format!(
        " {:<10} {:<10}       {:<.2}            {:<.2}               {:<.6}\n",
        size,
        iters,
        b.peak.unwrap_or(0.0),
        b.avg,
        b.msg_rate
    )
}

/// op, mode, bytes, perftest's figure, rdma-krust's figure.
type Row = (String, String, u64, Option<f64>, Option<f64>);

/// The rows of one run's bench.jsonl, in the order they first appear.
fn rows_of(jsonl: &str) -> anyhow::Result<Vec<Row>> {
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
    // The module's loops with `--spin` (scripts/guest-bench.sh names their
    // rows OP-spin) compare with perftest's figure for OP.
    for i in 0..rows.len() {
        let Some(base) = rows[i].0.strip_suffix("-spin") else {
            continue;
        };
        let pt = rows
            .iter()
            .find(|r| r.0 == base && r.1 == rows[i].1 && r.2 == rows[i].2)
            .and_then(|r| r.3);
        if rows[i].3.is_none() {
            rows[i].3 = pt;
        }
    }
    Ok(rows)
}

/// What a row's figure is, for the table's last column.
fn figure_of(mode: &str, op: &str) -> &'static str {
    match (mode, op) {
        ("lat", "send" | "write" | "send-spin" | "write-spin") => {
            "t_typical us, both RTT/2 of a ping-pong"
        }
        ("lat", _) => "t_typical us, both full RTT",
        _ => "BW average MB/sec (2^20)",
    }
}

/// The side-by-side table of a bench run: one row per (op, mode, size) with
/// perftest's and rdma-krust's headline figure and their ratio. Latency rows
/// compare `t_typical` (lower is better), bandwidth rows `BW average`
/// (higher is better).
pub fn report(jsonl: &str) -> anyhow::Result<String> {
    use std::fmt::Write;
    let rows = rows_of(jsonl)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:<4} {:>8}  {:>12}  {:>12}  {:>6}  figure",
        "op", "mode", "bytes", "perftest", "rdma-krust", "ratio"
    );
    for (op, mode, bytes, pt, ours) in rows {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        let ratio = match (pt, ours) {
            (Some(p), Some(o)) if p > 0.0 => format!("{:.2}", o / p),
            _ => "-".to_string(),
        };
        let what = figure_of(&mode, &op);
        let _ = writeln!(
            out,
            "{op:<12} {mode:<4} {bytes:>8}  {:>12}  {:>12}  {ratio:>6}  {what}",
            f(pt),
            f(ours)
        );
    }
    Ok(out)
}

/// The median of `v` (the mean of the middle two for an even count);
/// `None` for none.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The lowest and the highest of `v`.
fn spread(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// What the ratios of one row over several boots say: rdma-krust
/// "faster" or "slower" only where every boot agrees (the spread does not
/// cross 1.0), else "neither". Latency is faster below 1, bandwidth above.
pub fn verdict(mode: &str, min: f64, max: f64) -> &'static str {
    let (below, above) = if mode == "lat" {
        ("faster", "slower")
    } else {
        ("slower", "faster")
    };
    if max < 1.0 {
        below
    } else if min > 1.0 {
        above
    } else {
        "neither"
    }
}

/// The table over several boots of `make bench` (one bench.jsonl each):
/// per row the median of each tool's figure, the median of the per-boot
/// ratios, their spread (min to max) and what the spread allows saying.
/// Also returns the index of the median boot: the one whose ratios are
/// nearest the medians (least sum of |log(ratio / median)|), whose plots
/// stand for the run.
pub fn report_boots(runs: &[String]) -> anyhow::Result<(String, usize)> {
    use std::fmt::Write;
    let boots: Vec<Vec<Row>> = runs
        .iter()
        .map(|r| rows_of(r))
        .collect::<anyhow::Result<_>>()?;
    let first = boots.first().ok_or_else(|| anyhow::anyhow!("no runs"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<12} {:<4} {:>8}  {:>9}  {:>10}  {:>6}  {:>11}  {:<7}  figure (medians over {} boots)",
        "op",
        "mode",
        "bytes",
        "perftest",
        "rdma-krust",
        "ratio",
        "spread",
        "krust is",
        boots.len()
    );
    let mut distance = vec![0.0f64; boots.len()];
    for (op, mode, bytes, _, _) in first {
        let mut pts = Vec::new();
        let mut ours = Vec::new();
        let mut ratios = Vec::new();
        for (b, rows) in boots.iter().enumerate() {
            let row = rows
                .iter()
                .find(|r| &r.0 == op && &r.1 == mode && r.2 == *bytes);
            let (p, o) = row.map_or((None, None), |r| (r.3, r.4));
            pts.extend(p);
            ours.extend(o);
            ratios.push(match (p, o) {
                (Some(p), Some(o)) if p > 0.0 => Some((b, o / p)),
                _ => None,
            });
        }
        let rs: Vec<f64> = ratios.iter().flatten().map(|r| r.1).collect();
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        let (ratio, spread, says) = match median(&rs) {
            Some(m) => {
                let (lo, hi) = spread(&rs);
                for (b, r) in ratios.iter().flatten() {
                    distance[*b] += (r / m).ln().abs();
                }
                (
                    format!("{m:.2}"),
                    format!("{lo:.2}-{hi:.2}"),
                    verdict(mode, lo, hi),
                )
            }
            None => ("-".to_string(), "-".to_string(), "-"),
        };
        // A boot that lacks a row is never the median boot.
        for (b, r) in ratios.iter().enumerate() {
            if r.is_none() && !rs.is_empty() {
                distance[b] = f64::INFINITY;
            }
        }
        let _ = writeln!(
            out,
            "{op:<12} {mode:<4} {bytes:>8}  {:>9}  {:>10}  {ratio:>6}  {spread:>11}  {says:<7}  {}",
            f(median(&pts)),
            f(median(&ours)),
            figure_of(mode, op)
        );
    }
    let best = distance
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i);
    out.push_str(&memory_table(runs)?);
    Ok((out, best))
}

/// The connections and the receive depth of a scale row's op:
/// `conns-N` (a message connection's default depth, 16) or `conns-N-dD`
/// (`--recv-depth D`).
pub fn conns_row(op: &str) -> Option<(u64, u32)> {
    let rest = op.strip_prefix("conns-")?;
    let (n, d) = match rest.split_once("-d") {
        Some((n, d)) => (n, d.parse().ok()?),
        None => (rest, crate::abi::MSG_RECV_DEPTH),
    };
    Some((n.parse().ok()?, d))
}

/// The memory rows of the runs' `conns-N` and `conns-N-dD` results
/// (scripts/guest-bench.sh), if any: per N and receive depth, the median
/// over the runs of the KiB each connection end took, all of it (MemFree)
/// and of it slab, with the spread of the first.
pub fn memory_table(runs: &[String]) -> anyhow::Result<String> {
    use std::cmp::Reverse;
    use std::fmt::Write;
    // (depth, connections) with the runs' memory and slab per end.
    type Row = ((Reverse<u32>, u64), Vec<f64>, Vec<f64>);
    let mut per_n: Vec<Row> = Vec::new();
    for run in runs {
        for line in run.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line)?;
            let Some((n, depth)) = v["op"].as_str().and_then(conns_row) else {
                continue;
            };
            // The default depth first, then by connections.
            let n = (Reverse(depth), n);
            let (Some(mem), Some(slab)) = (
                v["mem_per_end_kib"].as_f64(),
                v["slab_per_end_kib"].as_f64(),
            ) else {
                continue;
            };
            match per_n.iter_mut().find(|e| e.0 == n) {
                Some(e) => {
                    e.1.push(mem);
                    e.2.push(slab);
                }
                None => per_n.push((n, vec![mem], vec![slab])),
            }
        }
    }
    let mut out = String::new();
    if per_n.is_empty() {
        return Ok(out);
    }
    per_n.sort_by_key(|e| e.0);
    let _ = writeln!(
        out,
        "\nmemory per connection end, KiB (medians over {} runs; both ends in one guest)",
        runs.len()
    );
    let _ = writeln!(
        out,
        "{:>5}  {:>11}  {:>8}  {:>13}  {:>8}",
        "depth", "connections", "all", "spread", "slab"
    );
    for ((d, n), mem, slab) in per_n {
        let (lo, hi) = spread(&mem);
        let _ = writeln!(
            out,
            "{:>5}  {n:>11}  {:>8.0}  {:>13}  {:>8.0}",
            d.0,
            median(&mem).unwrap_or(0.0),
            format!("{lo:.0}-{hi:.0}"),
            median(&slab).unwrap_or(0.0)
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
            lines[1].starts_with("read         lat         2") && lines[1].contains(" 0.50 "),
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
    fn memory_rows_take_medians_per_count() {
        let run = |m1: u32, m256: u32| {
            format!(
                r#"{{"tool":"rdma-krust","op":"conns-1","mode":"bw","bytes":4096,"bw_avg":1.0,"mem_per_end_kib":{m1},"slab_per_end_kib":10}}
{{"tool":"rdma-krust","op":"conns-256","mode":"bw","bytes":4096,"bw_avg":2.0,"mem_per_end_kib":{m256},"slab_per_end_kib":20}}
{{"tool":"rdma-krust","op":"conns-16-d6","mode":"bw","bytes":4096,"bw_avg":2.0,"mem_per_end_kib":450,"slab_per_end_kib":400}}
{{"tool":"perftest","op":"write","mode":"bw","bytes":65536,"bw_avg":20.0}}
"#
            )
        };
        let runs = [run(2700, 2600), run(2500, 2640), run(2900, 2620)];
        let t = memory_table(&runs).unwrap();
        let lines: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 5, "{t}");
        assert!(lines[0].contains("medians over 3 runs"), "{t}");
        assert_eq!(
            lines[2].split_whitespace().collect::<Vec<_>>(),
            ["16", "1", "2700", "2500-2900", "10"],
            "{t}"
        );
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            ["16", "256", "2620", "2600-2640", "20"],
            "{t}"
        );
        assert_eq!(
            lines[4].split_whitespace().collect::<Vec<_>>(),
            ["6", "16", "450", "450-450", "400"],
            "{t}"
        );
        assert_eq!(memory_table(&[String::new()]).unwrap(), "");
    }

    #[test]
    fn spin_rows_compare_with_perftest_of_their_op() {
        let jsonl = r#"{"tool":"perftest","op":"send","mode":"lat","bytes":2,"t_typical":80.0}
{"tool":"rdma-krust","op":"send","mode":"lat","bytes":2,"t_typical":160.0}
{"tool":"rdma-krust","op":"send-spin","mode":"lat","bytes":2,"t_typical":40.0}
{"tool":"rdma-krust","op":"read-spin","mode":"lat","bytes":2,"t_typical":40.0}
"#;
        let r = report(jsonl).unwrap();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines.len(), 4, "{r}");
        assert!(
            lines[1].starts_with("send ") && lines[1].contains(" 2.00 "),
            "{r}"
        );
        assert!(
            lines[2].starts_with("send-spin    lat") && lines[2].contains(" 0.50 "),
            "{r}"
        );
        assert!(lines[2].contains("RTT/2"), "{r}");
        // No perftest READ row: no ratio.
        assert!(
            lines[3].starts_with("read-spin") && lines[3].contains(" - "),
            "{r}"
        );
    }

    #[test]
    fn boots_give_medians_spreads_and_the_median_boot() {
        // READ latency ratios 0.5, 0.8 and 0.6 (krust 30/60, 40/50, 36/60):
        // median 0.6, spread 0.5-0.8, all below 1: faster. WRITE bandwidth
        // ratios 0.9, 1.2, 1.1: median 1.1, spread crosses 1: neither.
        // Distances |ln(r / median)| summed per boot: boot 0 ln(0.6/0.5)
        // + ln(1.1/0.9) = 0.182 + 0.201 = 0.383; boot 1 ln(0.8/0.6) +
        // ln(1.2/1.1) = 0.288 + 0.087 = 0.375; boot 2: 0 + 0 = 0. The
        // median boot is boot 2.
        let run = |pr: f64, kr: f64, pw: f64, kw: f64| {
            format!(
                r#"{{"tool":"perftest","op":"read","mode":"lat","bytes":2,"t_typical":{pr}}}
{{"tool":"rdma-krust","op":"read","mode":"lat","bytes":2,"t_typical":{kr}}}
{{"tool":"perftest","op":"write","mode":"bw","bytes":65536,"bw_avg":{pw}}}
{{"tool":"rdma-krust","op":"write","mode":"bw","bytes":65536,"bw_avg":{kw}}}
"#
            )
        };
        let runs = [
            run(60.0, 30.0, 50.0, 45.0),
            run(50.0, 40.0, 50.0, 60.0),
            run(60.0, 36.0, 50.0, 55.0),
        ];
        let (t, best) = report_boots(&runs).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].contains("medians over 3 boots"), "{t}");
        // perftest's median READ 60, rdma-krust's 36.
        assert!(
            lines[1].starts_with("read         lat         2")
                && lines[1].contains(" 60.00 ")
                && lines[1].contains(" 36.00 ")
                && lines[1].contains(" 0.60 ")
                && lines[1].contains(" 0.50-0.80 ")
                && lines[1].contains(" faster "),
            "{t}"
        );
        assert!(
            lines[2].contains(" 1.10 ")
                && lines[2].contains(" 0.90-1.20 ")
                && lines[2].contains(" neither "),
            "{t}"
        );
        assert_eq!(best, 2);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(verdict("bw", 1.05, 1.3), "faster");
        assert_eq!(verdict("lat", 1.05, 1.3), "slower");
        assert_eq!(verdict("bw", 0.5, 0.9), "slower");
    }

    /// 1 MiB messages: a peak or an average in MB/sec (2^20) is then
    /// messages per second.
    const MB: u64 = 1 << 20;
    /// The timestamps below are in microseconds, written as nanoseconds.
    const US: u64 = 1000;

    fn us(v: &[u64]) -> Vec<u64> {
        v.iter().map(|t| t * US).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// One post and one completion per message.
    fn stamps<'a>(posted: &'a [u64], completed: &'a [u64]) -> Stamps<'a> {
        Stamps {
            posted,
            completed,
            post_list: 1,
            cq_mod: 1,
        }
    }

    #[test]
    fn steady_run_peak_is_the_average() {
        // Each message posted as the one before completes, each taking
        // 100 us: posts 0 100 200 300, completions 100 200 300 400. Every
        // span i..=j takes C[j] - P[i] = 100(j + 1) - 100i = 100(j - i + 1)
        // us: 100 us a message whichever. Peak: 1 MiB / 100 us = 10000
        // MB/sec; average: 4 MiB / (400 - 0) us = 10000 MB/sec; MsgRate:
        // 4 / 400 us = 0.01 Mpps.
        let (p, c) = (us(&[0, 100, 200, 300]), us(&[100, 200, 300, 400]));
        let s = stamps(&p, &c);
        let b = best_span(&s).unwrap();
        assert_eq!(b.ns, 100 * US * b.messages(), "{b:?}");
        let r = bw(MB, 4, c[3] - p[0], Some(&s));
        assert!(close(r.peak.unwrap(), 10000.0), "{r:?}");
        assert!(close(r.avg, 10000.0), "{r:?}");
        assert!(close(r.msg_rate, 0.01), "{r:?}");
    }

    #[test]
    fn burst_in_the_middle() {
        // Every message takes 100 us, but messages 2, 3 and 4 are posted
        // 10 us apart: posts 0 100 200 210 220 320, completions 100 200 300
        // 310 320 420. (C[j] - P[i]) / (j - i + 1), us:
        //   i=0: 100 100 100 77.5 64 70
        //   i=1:     100 100 70   55 64
        //   i=2:         100 55   40 55
        //   i=3:             100  55 70
        //   i=4:                 100 100
        //   i=5:                     100
        // The best is 2..=4, 120 us for 3: 40 us a message. Peak: 1 MiB /
        // 40 us = 25000 MB/sec; average: 6 MiB / 420 us = 14285.714...;
        // MsgRate: 6 / 420 us = 0.0142857... Mpps.
        let p = us(&[0, 100, 200, 210, 220, 320]);
        let c = us(&[100, 200, 300, 310, 320, 420]);
        let s = stamps(&p, &c);
        assert_eq!(
            best_span(&s),
            Some(Span {
                first: 2,
                last: 4,
                ns: 120 * US
            })
        );
        let r = bw(MB, 6, c[5] - p[0], Some(&s));
        assert!(close(r.peak.unwrap(), 25000.0), "{r:?}");
        assert!(close(r.avg, 1e6 * 6.0 / 420.0), "{r:?}");
        assert!(close(r.msg_rate, 6.0 / 420.0), "{r:?}");
    }

    #[test]
    fn one_message_is_the_best_span() {
        // Posts 0 100 200 300, completions 100 200 210 400: message 2
        // takes 10 us, the others 100. (C[j] - P[i]) / (j - i + 1), us:
        //   i=0: 100 100 70 100
        //   i=1:     100 55 100
        //   i=2:         10 100
        //   i=3:            100
        // The best is message 2 alone: 1 MiB / 10 us = 100000 MB/sec,
        // against an average of 4 MiB / 400 us = 10000.
        let (p, c) = (us(&[0, 100, 200, 300]), us(&[100, 200, 210, 400]));
        let s = stamps(&p, &c);
        assert_eq!(
            best_span(&s),
            Some(Span {
                first: 2,
                last: 2,
                ns: 10 * US
            })
        );
        let r = bw(MB, 4, c[3] - p[0], Some(&s));
        assert!(close(r.peak.unwrap(), 100000.0), "{r:?}");
        assert!(close(r.avg, 10000.0), "{r:?}");
    }

    #[test]
    fn cq_mod_reads_every_cq_modth_completion() {
        // cq_mod 3, 6 messages: perftest stamps the completions of
        // messages 2 and 5 only (each stands for 3). Posts 0 10 20 30 40
        // 50; completions 60 (of 2) and 130 (of 5). The other entries
        // would win if they were read (1 us for message 0), and are not.
        // (C[j] - P[i]) / (j - i + 1), us:
        //   j=2: i=0 60/3=20, i=1 50/2=25, i=2 40
        //   j=5: i=0 130/6=21.67, i=1 120/5=24, i=2 110/4=27.5,
        //        i=3 100/3=33.3, i=4 90/2=45, i=5 80
        // The best is 0..=2, 60 us for 3: 1 MiB / 20 us = 50000 MB/sec.
        let p = us(&[0, 10, 20, 30, 40, 50]);
        let c = us(&[1, 11, 60, 31, 41, 130]);
        let s = Stamps {
            cq_mod: 3,
            ..stamps(&p, &c)
        };
        assert_eq!(
            best_span(&s),
            Some(Span {
                first: 0,
                last: 2,
                ns: 60 * US
            })
        );
        assert!(close(perftest_peak(&s, MB).unwrap(), 50000.0));
    }

    #[test]
    fn the_last_message_completes_too() {
        // cq_mod 2, 3 messages: perftest stamps the completion of message
        // 1 and, 3 not being a multiple of 2, of the last, 2 (it signals
        // the last iteration). Posts 0 10 190; completions 200 (of 1) and
        // 200 (of 2); message 0's entry (5) is not read.
        //   j=1: i=0 200/2=100, i=1 190
        //   j=2: i=0 200/3=66.7, i=1 190/2=95, i=2 10
        // The best is message 2 alone, 10 us: 100000 MB/sec (without the
        // last message's completion it would be 100 us, 10000 MB/sec).
        let (p, c) = (us(&[0, 10, 190]), us(&[5, 200, 200]));
        let s = Stamps {
            cq_mod: 2,
            ..stamps(&p, &c)
        };
        assert_eq!(
            best_span(&s),
            Some(Span {
                first: 2,
                last: 2,
                ns: 10 * US
            })
        );
        assert!(close(perftest_peak(&s, MB).unwrap(), 100000.0));
    }

    #[test]
    fn post_list_reads_every_post_listth_post() {
        // post_list 2 and cq_mod 2 (perftest's default cq_mod with -l):
        // posts stamped for messages 0 and 2, completions for 1 and 3.
        // Posts 0 and 80, completions 100 and 110; the entries not read
        // would make 1-us spans.
        //   (0,1) 100/2=50, (0,3) 110/4=27.5, (2,3) 30/2=15
        // The best is 2..=3: 1 MiB / 15 us = 66666.67 MB/sec.
        let (p, c) = (us(&[0, 99, 80, 109]), us(&[1, 100, 81, 110]));
        let s = Stamps {
            posted: &p,
            completed: &c,
            post_list: 2,
            cq_mod: 2,
        };
        assert_eq!(
            best_span(&s),
            Some(Span {
                first: 2,
                last: 3,
                ns: 30 * US
            })
        );
        assert!(close(perftest_peak(&s, MB).unwrap(), 1e6 / 15.0));
    }

    #[test]
    fn nothing_to_measure() {
        let s = |p: &'static [u64], c: &'static [u64], post_list, cq_mod| Stamps {
            posted: p,
            completed: c,
            post_list,
            cq_mod,
        };
        assert_eq!(best_span(&s(&[], &[], 1, 1)), None);
        assert_eq!(best_span(&s(&[0, 1], &[2], 1, 1)), None);
        assert_eq!(best_span(&s(&[0], &[2], 0, 1)), None);
        assert_eq!(best_span(&s(&[0], &[2], 1, 0)), None);
        // Message 1 completed before it was posted.
        assert_eq!(best_span(&s(&[0, 100], &[50, 90], 1, 1)), None);
        // A span that took no time: no finite peak (perftest's would be a
        // division by zero).
        let z = s(&[5], &[5], 1, 1);
        assert_eq!(best_span(&z).map(|b| b.ns), Some(0));
        assert_eq!(perftest_peak(&z, MB), None);
        assert_eq!(bw(MB, 1, 0, Some(&z)), Bw::default());
    }

    #[test]
    fn steady_pipeline_of_the_most_iterations() {
        // BENCH_MAX_ITERS messages posted 10 ns apart, each taking 100 ns:
        // P[i] = 10i, C[i] = 10i + 100. A span of k messages takes
        // 10(k - 1) + 100 ns, 10 + 90/k a message: least for the whole
        // run, so the peak is the average, 1 MiB / (10 + 90/n) ns. (The
        // quadratic loop would take some 5 * 10^11 steps.)
        let n = abi::BENCH_MAX_ITERS as usize;
        let p: Vec<u64> = (0..n as u64).map(|i| 10 * i).collect();
        let c: Vec<u64> = p.iter().map(|t| t + 100).collect();
        let s = stamps(&p, &c);
        let b = best_span(&s).unwrap();
        assert_eq!((b.first, b.last), (0, n - 1));
        let r = bw(MB, n as u64, c[n - 1] - p[0], Some(&s));
        let want = 1e9 / (10.0 + 90.0 / n as f64);
        assert!(close(r.peak.unwrap(), want), "{r:?}");
        assert!(close(r.avg, want), "{r:?}");
    }

    /// perftest's loop (`print_report_bw`), quadratic: the least time per
    /// message as a fraction, and as perftest has it, in whole units.
    fn perftest_loop(s: &Stamps<'_>) -> ((u64, u64), u64) {
        let n = s.posted.len();
        let round_up = |v: usize, a: usize| {
            if v.is_multiple_of(a) {
                v
            } else {
                a * (v / a + 1)
            }
        };
        let mut best = (u64::MAX, 1);
        let mut opt_delta = u64::MAX;
        let mut see = |i: usize, j: usize| {
            let t = (s.completed[j] - s.posted[i], (j - i + 1) as u64);
            if less(t, best) {
                best = t;
            }
            opt_delta = opt_delta.min(t.0 / t.1);
        };
        for i in (0..n).step_by(s.post_list) {
            let mut j = round_up(i + 1, s.cq_mod) - 1;
            while j < n {
                see(i, j);
                j += s.cq_mod;
            }
            if !n.is_multiple_of(s.cq_mod) {
                see(i, n - 1);
            }
        }
        (best, opt_delta)
    }

    #[test]
    fn the_hull_finds_perftests_minimum() {
        // xorshift64: the same series on every run.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for round in 0..400 {
            let n = 1 + rnd(120) as usize;
            let depth = 1 + rnd(16) as usize;
            let (mut p, mut c) = (vec![0u64; n], vec![0u64; n]);
            for i in 0..n {
                // Posted when a slot frees up (or a little later), in
                // order; completed after its post and after the one
                // before, sometimes in a burst, sometimes much later.
                let free = if i >= depth { c[i - depth] } else { 0 };
                let prev = if i > 0 { p[i - 1] } else { 0 };
                p[i] = prev.max(free) + rnd(50);
                let lat = match rnd(4) {
                    0 => rnd(5),
                    1 => 1000 + rnd(100_000),
                    _ => 100 + rnd(1000),
                };
                let before = if i > 0 { c[i - 1] } else { 0 };
                c[i] = before.max(p[i] + lat);
                if round % 2 == 1 {
                    // Coarse clocks: equal times.
                    (p[i], c[i]) = (p[i] / 500 * 500, c[i] / 500 * 500);
                    c[i] = c[i].max(p[i]);
                }
            }
            for (post_list, cq_mod) in [(1, 1), (1, 2), (1, 3), (1, 16), (2, 2), (4, 2), (3, 5)] {
                let s = Stamps {
                    posted: &p,
                    completed: &c,
                    post_list,
                    cq_mod,
                };
                let b = best_span(&s).unwrap();
                let (want, opt_delta) = perftest_loop(&s);
                let got = (b.ns, b.messages());
                assert!(
                    !less(got, want) && !less(want, got),
                    "n {n} l {post_list} Q {cq_mod}: {b:?} vs {want:?}"
                );
                assert_eq!(b.ns, c[b.last] - p[b.first]);
                assert_eq!(b.first % post_list, 0);
                assert!(b.last == n - 1 || (b.last + 1).is_multiple_of(cq_mod));
                assert_eq!(b.ns / b.messages(), opt_delta);
            }
        }
    }

    #[test]
    fn bench_stamps_give_the_peak() {
        // 4 messages of 1 MiB, depth 2: posts at 0 and 0 us, then each post
        // as a completion comes (100, 200); completions at 100, 200, 300,
        // 400 us. Spans, time per message: 0..=3: (400 - 0) / 4 = 100;
        // 2..=3: (400 - 100) / 2 = 150; 1..=3: 400 / 3 = 133; 0..=0: 100;
        // 1..=1: 200 - 0 = 200. Least: 100 us a message, 10000 MB/sec,
        // the average (4 MiB in 400 us) too.
        let b = abi::Bench {
            size: MB as u32,
            iters: 4,
            depth: 2,
            total_ns: 400 * US,
            ..Default::default()
        };
        let samples = us(&[0, 0, 100, 200, 100, 200, 300, 400]);
        let r = bw_of_bench(&b, &samples);
        assert!(close(r.peak.unwrap(), 10000.0), "{r:?}");
        assert!(close(r.avg, 10000.0), "{r:?}");
        // Without the right count of stamps: no peak.
        assert_eq!(bw_of_bench(&b, &samples[..7]).peak, None);
    }

    #[test]
    fn bench_results_have_no_peak() {
        // IOCTL_BENCH without stamps returns the whole run's time and
        // best_ns: average and MsgRate, no peak (best_ns is ignored).
        // 1000 messages of 64 KiB in 2 s: 62.5 MiB / 2 s = 31.25 MB/sec,
        // 1000 / 2 s = 0.0005 Mpps.
        let b = abi::Bench {
            size: 65536,
            iters: 1000,
            depth: 10,
            bytes: 65536 * 1000,
            total_ns: 2_000_000_000,
            best_ns: 10_000_000,
            ..Default::default()
        };
        let r = bw_of_bench(&b, &[]);
        assert!((r.avg - 31.25).abs() < 1e-9, "{}", r.avg);
        assert_eq!(r.peak, None);
        assert!((r.msg_rate - 0.0005).abs() < 1e-12);
        // perftest prints a peak it does not measure as 0.00.
        let row = bw_row(65536, 1000, &r);
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["65536", "1000", "0.00", "31.25", "0.000500"]
        );
        assert_eq!(bw_of_bench(&abi::Bench::default(), &[]), Bw::default());
    }
}
