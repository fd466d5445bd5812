// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust bench-plot`: PNG plots of a `make bench` run, drawn with
//! plotters (SVG) and rasterized with resvg.
//!
//! - `latency-<op>.png`: the module's latency samples as a cumulative
//!   distribution, with perftest's t_min, t_typical, 99% and 99.9% marked;
//! - `bandwidth.png`: WRITE bandwidth against message size, both tools;
//! - `scale.png`: the module's aggregate WRITE rate over N connections, and
//!   the memory each connection end took, against N.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::Path;

const W: u32 = 800;
const H: u32 = 500;

fn to_png(svg: &str, out: &Path) -> Result<()> {
    let mut opt = resvg::usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // fontdb's generic families default to Microsoft's fonts; Debian has
    // DejaVu (fonts-dejavu-core).
    db.set_sans_serif_family("DejaVu Sans");
    db.set_serif_family("DejaVu Serif");
    let tree = resvg::usvg::Tree::from_str(svg, &opt).context("parse SVG")?;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(W, H).context("pixmap")?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .save_png(out)
        .with_context(|| format!("write {}", out.display()))?;
    Ok(())
}

fn records(jsonl: &str) -> Vec<serde_json::Value> {
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The latency CDF of one op.
fn latency(
    dir: &Path,
    op: &str,
    pt_op: &str,
    all: &[serde_json::Value],
    out: &Path,
) -> Result<bool> {
    let Ok(text) = std::fs::read_to_string(dir.join(format!("samples-{op}.txt"))) else {
        return Ok(false);
    };
    let mut s: Vec<f64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    if s.is_empty() {
        return Ok(false);
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let pt = all
        .iter()
        .find(|v| v["tool"] == "perftest" && v["op"] == pt_op && v["mode"] == "lat");
    // Up to the 99.9th percentile of either tool, so one outlier does not
    // flatten the curve.
    let mut xmax = s[(s.len() * 999 / 1000).min(s.len() - 1)];
    let mut xmin = s[0];
    if let Some(p) = pt {
        xmax = xmax.max(p["p999"].as_f64().unwrap_or(0.0));
        xmin = xmin.min(p["t_min"].as_f64().unwrap_or(xmin));
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{op} latency, {} samples", s.len()),
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(55)
            .build_cartesian_2d((xmin * 0.8..xmax * 1.2).log_scale(), 0f64..1f64)?;
        chart
            .configure_mesh()
            .x_desc("microseconds (log scale)")
            // Label only 1, 2 and 5 times a power of ten: the other ticks
            // of a log axis crowd into each other.
            .x_label_formatter(&|v| log_label(*v))
            .y_desc("fraction of operations")
            .draw()?;
        let n = s.len() as f64;
        chart
            .draw_series(LineSeries::new(
                s.iter().enumerate().map(|(i, &x)| (x, (i + 1) as f64 / n)),
                &BLUE,
            ))?
            .label("rdma-krust (in-kernel loop)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
        if let Some(p) = pt {
            let marks = [
                ("t_min", 0.0),
                ("t_typical", 0.5),
                ("p99", 0.99),
                ("p999", 0.999),
            ];
            chart
                .draw_series(marks.iter().filter_map(|(k, f)| {
                    p[*k]
                        .as_f64()
                        .map(|x| Circle::new((x, *f), 5, RED.filled()))
                }))?
                .label("perftest: min, typical, 99%, 99.9%")
                .legend(|(x, y)| Circle::new((x + 10, y), 5, RED.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
        root.present()?;
    }
    to_png(&svg, out)?;
    Ok(true)
}

/// WRITE bandwidth against size, both tools.
fn bandwidth(all: &[serde_json::Value], out: &Path) -> Result<()> {
    let series = |tool: &str| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = all
            .iter()
            .filter(|r| r["tool"] == tool && r["op"] == "write" && r["mode"] == "bw")
            .filter_map(|r| Some((r["bytes"].as_f64()?, r["bw_avg"].as_f64()?)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let (pt, ours) = (series("perftest"), series("rdma-krust"));
    let ymax = pt.iter().chain(&ours).map(|p| p.1).fold(1.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "RDMA WRITE bandwidth against message size",
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(55)
            .build_cartesian_2d((32f64..2_097_152f64).log_scale(), 0f64..ymax * 1.15)?;
        chart
            .configure_mesh()
            .x_desc("message size, bytes (log scale)")
            .x_label_formatter(&|v| log_label(*v))
            .y_desc("BW average, MB/sec (2^20)")
            .draw()?;
        for (data, color, name) in [
            (&pt, RED, "perftest ib_write_bw"),
            (&ours, BLUE, "rdma-krust (in-kernel)"),
        ] {
            chart
                .draw_series(LineSeries::new(data.iter().copied(), color))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(data.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
        root.present()?;
    }
    to_png(&svg, out)
}

/// The `conns-N` rows of receive depth `depth` (`conns-N-dD`, 16 for
/// `conns-N`): (N, message rate in Mpps, KiB per connection end).
fn scale_points(all: &[serde_json::Value], depth: u32) -> Vec<(f64, f64, f64)> {
    let mut v: Vec<(f64, f64, f64)> = all
        .iter()
        .filter(|r| r["tool"] == "rdma-krust")
        .filter_map(|r| {
            let (n, d) = krust::bench::conns_row(r["op"].as_str()?)?;
            (d == depth).then_some(())?;
            Some((
                n as f64,
                r["msg_rate"].as_f64()?,
                r["mem_per_end_kib"].as_f64()?,
            ))
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The aggregate rate and the memory per connection end against the
/// number of connections, one panel each; `false` if the run has no
/// `conns-N` rows.
fn scale(all: &[serde_json::Value], out: &Path) -> Result<bool> {
    // Each receive depth the run has, the default first.
    let mut depths: Vec<u32> = all
        .iter()
        .filter_map(|r| krust::bench::conns_row(r["op"].as_str()?))
        .map(|(_, d)| d)
        .collect();
    depths.sort_unstable_by(|a, b| b.cmp(a));
    depths.dedup();
    let colors = [BLUE, RED, GREEN, MAGENTA, BLACK];
    let series: Vec<_> = depths
        .iter()
        .zip(colors.iter().cycle())
        .map(|(&d, &c)| (d, scale_points(all, d), c))
        .collect();
    let every = || series.iter().flat_map(|s| s.1.iter());
    if every().next().is_none() {
        return Ok(false);
    }
    let xmax = every().map(|p| p.0).fold(2.0, f64::max) * 1.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(
            "rdma-krust: WRITE 4 KiB over N connections (events)",
            ("sans-serif", 22),
        )?;
        let (top, bottom) = root.split_vertically(H / 2 - 20);
        for (area, pick, what) in [
            (
                &top,
                (|p: &(f64, f64, f64)| p.1) as fn(&(f64, f64, f64)) -> f64,
                "aggregate Mpps",
            ),
            (&bottom, |p| p.2, "KiB per connection end"),
        ] {
            let ymax = every().map(pick).fold(0.0, f64::max).max(1e-6) * 1.2;
            let mut chart = ChartBuilder::on(area)
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(65)
                .build_cartesian_2d((0.8f64..xmax).log_scale(), 0f64..ymax)?;
            chart
                .configure_mesh()
                .x_desc("connections (log scale)")
                .x_label_formatter(&|v| log_label(*v))
                .y_desc(what)
                .draw()?;
            for (depth, pts, color) in &series {
                if pts.is_empty() {
                    continue;
                }
                chart
                    .draw_series(LineSeries::new(pts.iter().map(|p| (p.0, pick(p))), color))?
                    .label(format!("{depth} receives"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
                chart.draw_series(
                    pts.iter()
                        .map(|p| Circle::new((p.0, pick(p)), 4, color.filled())),
                )?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
    }
    to_png(&svg, out)?;
    Ok(true)
}

/// Writes every plot of the run in `dir` (bench.jsonl, samples-*.txt) to
/// `out`; returns the files written.
pub fn plot(dir: &Path, out: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("bench.jsonl")).context("read bench.jsonl")?;
    let all = records(&text);
    std::fs::create_dir_all(out)?;
    let mut written = Vec::new();
    for (op, pt_op) in [
        ("send", "send"),
        ("write", "write"),
        ("read", "read"),
        ("fadd", "atomic"),
    ] {
        let f = out.join(format!("latency-{op}.png"));
        if latency(dir, op, pt_op, &all, &f)? {
            written.push(f.display().to_string());
        }
    }
    let f = out.join("bandwidth.png");
    bandwidth(&all, &f)?;
    written.push(f.display().to_string());
    let f = out.join("scale.png");
    if scale(&all, &f)? {
        written.push(f.display().to_string());
    }
    Ok(written)
}

/// The label of a tick on a log axis: the value when it is 1, 2 or 5 times
/// a power of ten (a tick is within 1 % of one), empty otherwise.
fn log_label(v: f64) -> String {
    if v <= 0.0 {
        return String::new();
    }
    let p = 10f64.powf(v.log10().floor());
    let m = v / p;
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|k| (m - k).abs() < 0.01 * k)
    {
        if v >= 1.0 {
            format!("{v:.0}")
        } else {
            format!("{v}")
        }
    } else {
        String::new()
    }
}
