// SPDX-License-Identifier: GPL-2.0

//! `bench_across`, on demand (`scripts/bench.sh --pair`): perftest and the
//! module's in-kernel loops across the two guests, the same cases as the
//! one-guest `make bench` (latency of SEND, WRITE, READ and fetch-and-add,
//! the module's also with `--spin`; bandwidth of SEND, WRITE and READ at
//! 64 KiB, and WRITE over 1 to 16 QPs, `-q`), the servers on B and the
//! measuring side on A. Results go to the shared directory's `bench.jsonl`
//! in `make bench`'s format, and the table to the output. Numbers, not a
//! verdict: the test fails only if a run gives no result.

use super::{Ctx, UP};
use anyhow::{bail, Result};
use std::fmt::Write as _;
use std::time::Duration;

const ITERS: u32 = 1000;
/// Iterations of each QP of the `-q` rows.
const Q_ITERS: u32 = 200;
const DEPTH: u32 = 16;
const BW_SIZE: u32 = 65536;
const RUN: Duration = Duration::from_secs(300);

/// One perftest case: `bin` served on B, measured from A, with `more`
/// arguments; its data row (the line after the `#bytes` header), as JSON in
/// `make bench`'s form, under the name `op`.
fn perftest(c: &mut Ctx, op: &str, bin: &str, lat: bool, size: u32, more: &str) -> Result<String> {
    let port = c.port();
    let extra = if lat {
        String::new()
    } else {
        format!(" -t {DEPTH}")
    };
    let iters = if more.is_empty() { ITERS } else { Q_ITERS };
    let args = format!("-d rxe0 -F -p {port} -s {size} -n {iters}{extra}{more}");
    let mut srv = c.on_b(bin, &format!("{bin} {args}"))?;
    std::thread::sleep(Duration::from_secs(1));
    let out = c
        .on_a(bin, &format!("{bin} {args} {}", c.peer))?
        .success(RUN)?;
    let _ = srv.wait(Duration::from_secs(30));
    let row: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("#bytes"))
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let mode = if lat { "lat" } else { "bw" };
    let mut j = format!("{{\"tool\":\"perftest\",\"op\":\"{op}\",\"mode\":\"{mode}\"");
    let keys: &[&str] = if lat {
        &[
            "bytes",
            "iterations",
            "t_min",
            "t_max",
            "t_typical",
            "t_avg",
            "t_stdev",
            "p99",
            "p999",
        ]
    } else {
        &["bytes", "iterations", "bw_peak", "bw_avg", "msg_rate"]
    };
    if row.len() < keys.len() {
        bail!("{bin}: no data row: {out}");
    }
    for (k, v) in keys.iter().zip(row) {
        write!(j, ",\"{k}\":{v}")?;
    }
    j.push('}');
    Ok(j)
}

/// One case of the module's loops: `rdma-krust bench` listening on B,
/// measuring from A, reported under the name `name`. `-spin` at the end of
/// the name adds `--spin`, `-qN` adds `-q N` (and takes N ports).
fn ours(c: &mut Ctx, name: &str, mode: &str, size: u32) -> Result<String> {
    let port = c.port();
    let (op, more, iters) = match name.split_once('-') {
        Some((op, "spin")) => (op, " --spin".to_string(), ITERS),
        Some((op, q)) => {
            let n: u16 = q.trim_start_matches('q').parse()?;
            for _ in 1..n {
                c.port();
            }
            (op, format!(" -q {n}"), Q_ITERS)
        }
        None => (name, String::new(), ITERS),
    };
    let args =
        format!("--op {op} --mode {mode} --size {size} --iters {iters} --depth {DEPTH}{more}");
    let mut peer = c.on_b(
        "bench peer",
        &c.tool(&format!("bench --listen {}:{port} {args}", c.peer)),
    )?;
    peer.wait_for("listening", UP)?;
    let out = c
        .on_a(
            "bench",
            &c.tool(&format!("bench --connect {}:{port} {args} --json", c.peer)),
        )?
        .success(RUN)?;
    peer.success(RUN)?;
    let line = out.lines().find(|l| l.starts_with('{'));
    match line {
        Some(l) => Ok(format!("{{\"tool\":\"rdma-krust\",{}", &l[1..]).replacen(
            &format!("\"op\":\"{op}\""),
            &format!("\"op\":\"{name}\""),
            1,
        )),
        None => bail!("rdma-krust bench {args}: {out}"),
    }
}

pub fn bench_across(c: &mut Ctx) -> Result<()> {
    let mut lines = Vec::new();
    for (op, bin, mode, size) in [
        ("send", "ib_send_lat", "lat", 2),
        ("write", "ib_write_lat", "pingpong", 2),
        ("read", "ib_read_lat", "lat", 2),
        ("atomic", "ib_atomic_lat", "lat", 8),
    ] {
        lines.push(perftest(c, op, bin, true, size, "")?);
        let ours_op = if op == "atomic" { "fadd" } else { op };
        lines.push(ours(c, ours_op, mode, size)?);
        lines.push(ours(c, &format!("{ours_op}-spin"), mode, size)?);
    }
    for (op, bin) in [
        ("send", "ib_send_bw"),
        ("write", "ib_write_bw"),
        ("read", "ib_read_bw"),
    ] {
        lines.push(perftest(c, op, bin, false, BW_SIZE, "")?);
        lines.push(ours(c, op, "bw", BW_SIZE)?);
    }
    for n in [1, 2, 4, 8, 16] {
        let name = format!("write-q{n}");
        lines.push(perftest(
            c,
            &name,
            "ib_write_bw",
            false,
            BW_SIZE,
            &format!(" -q {n}"),
        )?);
        lines.push(ours(c, &name, "bw", BW_SIZE)?);
    }
    let jsonl = lines.join("\n") + "\n";
    std::fs::write(c.ctl.join("bench.jsonl"), &jsonl)?;
    for l in krust::bench::report(&jsonl)?.lines() {
        println!("  {l}");
    }
    Ok(())
}
