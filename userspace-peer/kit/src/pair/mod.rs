// SPDX-License-Identifier: GPL-2.0

//! `rdma-krust-kit pair`: the two-host suite. It runs on guest A and drives
//! guest B through B's agent (`rdma-krust-kit agent`, see [`jobs`]); the two
//! guests are joined by a link that the host's relay (`krust-relay`) can
//! make lossy or cut, by a control file this side writes.
//!
//! Each test is a Rust function of this module's table: it starts the
//! user's tool's subcommands (`rdma-krust`, built next to this kit) on
//! either guest (the same building blocks the one-guest suite uses),
//! checks what both ends printed, and fails with
//! the reason. The runner prints `RUN`, then `PASS` or `FAIL` per test,
//! and ends with `N passed, N failed`. Bash only boots the guests, starts
//! the relay and collects the results (`scripts/qemu-test.sh --pair`).

mod bench;
mod jobs;
mod tests;

pub use jobs::agent;
use jobs::{Host, Job};

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The arguments of `rdma-krust-kit pair`.
#[derive(clap::Args, Debug, PartialEq, Eq, Clone)]
pub struct PairArgs {
    /// The directory shared with the other guest's agent (and the relay's
    /// control file, `link`).
    #[arg(long)]
    pub ctl: PathBuf,
    /// Where this guest's job outputs go.
    #[arg(long, default_value = "/tmp/pair")]
    pub work: PathBuf,
    /// This guest's address.
    #[arg(long, default_value = "192.0.2.1", value_parser = krust::addr::ipv4)]
    pub me: Ipv4Addr,
    /// The other guest's address.
    #[arg(long, default_value = "192.0.2.2", value_parser = krust::addr::ipv4)]
    pub peer: Ipv4Addr,
    /// Tests to run, comma-separated (default: all, in order).
    #[arg(long, value_delimiter = ',')]
    pub tests: Vec<String>,
    /// Print the test names and exit.
    #[arg(long)]
    pub list: bool,
    /// Seconds to wait for the other guest's agent.
    #[arg(long, default_value_t = 600)]
    pub wait_peer_s: u64,
}

/// A test: runs, or fails with the reason.
type TestFn = fn(&mut Ctx) -> Result<()>;

/// Runs only when named: the benchmark across hosts.
const ON_DEMAND: &[(&str, TestFn)] = &[("bench_across", bench::bench_across)];

/// The user's tool, whose commands the tests run: cargo builds it next to
/// the kit (`target/release/`).
const TOOL: &str = "rdma-krust";

/// How long a listener may take to come up.
const UP: Duration = Duration::from_secs(30);

/// What a test works with.
pub struct Ctx {
    remote: Host,
    local: Host,
    rseq: u32,
    lseq: u32,
    /// The user's tool, `rdma-krust`, next to this kit: the same path on
    /// both guests (the host's root, shared).
    tool: String,
    /// This kit, `rdma-krust-kit`: the same path on both guests.
    kit: String,
    me: Ipv4Addr,
    peer: Ipv4Addr,
    ctl: PathBuf,
    port: u16,
    /// Jobs a test left running: killed when it ends.
    strays: Vec<Job>,
    /// Seconds each timed run took, by name, for the tables.
    times: BTreeMap<String, f64>,
}

impl Ctx {
    /// Starts `cmd` on the other guest.
    fn on_b(&mut self, label: &str, cmd: &str) -> Result<Job> {
        self.rseq += 1;
        self.remote.spawn(self.rseq, &format!("B: {label}"), cmd)
    }

    /// Starts `cmd` here.
    fn on_a(&mut self, label: &str, cmd: &str) -> Result<Job> {
        self.lseq += 1;
        self.local.spawn(self.lseq, &format!("A: {label}"), cmd)
    }

    /// `rdma-krust ARGS` as a command line.
    fn tool(&self, args: &str) -> String {
        format!("{} {args}", self.tool)
    }

    /// `rdma-krust-kit ARGS` as a command line: the user's commands with
    /// the tests' options (`--hold-ms`, `--linger-ms`...).
    fn kit(&self, args: &str) -> String {
        format!("{} {args}", self.kit)
    }

    /// A fresh port for the next listener.
    fn port(&mut self) -> u16 {
        self.port += 1;
        self.port
    }

    /// Sets the link's faults (the relay's control line, e.g. `loss=1
    /// reorder=1 dup=0.5`, `link=down`, `clean`) and gives the relay time
    /// to apply it.
    fn link(&self, settings: &str) -> Result<()> {
        let tmp = self.ctl.join(".link.tmp");
        std::fs::write(&tmp, format!("{settings}\n")).context("write the link setting")?;
        std::fs::rename(&tmp, self.ctl.join("link")).context("set the link")?;
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    }

    /// Records a timed run for the tables.
    fn time(&mut self, name: &str, secs: f64) {
        self.times.insert(name.to_string(), secs);
    }
}

/// Prints every line of `out` indented, under the test's name.
fn show(out: &str) {
    for l in out.lines() {
        println!("  {l}");
    }
}

/// Seconds since `t`, for reports.
fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// `rdma-krust-kit pair`.
pub fn run(a: &PairArgs) -> Result<()> {
    if a.list {
        for (name, _) in tests::ALL {
            println!("{name}");
        }
        for (name, _) in ON_DEMAND {
            println!("{name} (on demand)");
        }
        return Ok(());
    }
    let wanted: Vec<&String> = a.tests.iter().filter(|t| !t.is_empty()).collect();
    let chosen: Vec<(&str, TestFn)> = if wanted.is_empty() {
        tests::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for t in wanted {
            match tests::ALL.iter().chain(ON_DEMAND).find(|(n, _)| n == t) {
                Some(e) => v.push(*e),
                None => bail!("pair: no test named {t:?} (see --list)"),
            }
        }
        v
    };
    std::fs::create_dir_all(&a.work)?;
    let kit = std::env::current_exe().context("the kit's own path")?;
    let tool = kit.with_file_name(TOOL).display().to_string();
    let kit = kit.display().to_string();
    let mut ctx = Ctx {
        remote: Host::Remote(a.ctl.clone()),
        local: Host::Local(a.work.clone()),
        rseq: 0,
        lseq: 0,
        tool,
        kit,
        me: a.me,
        peer: a.peer,
        ctl: a.ctl.clone(),
        port: 7800,
        strays: Vec::new(),
        times: BTreeMap::new(),
    };
    ctx.remote
        .wait_ready(Duration::from_secs(a.wait_peer_s))
        .context("pair")?;
    let (mut passed, mut failed) = (0, 0);
    for (name, f) in chosen {
        println!("pair: RUN  {name}");
        let t = Instant::now();
        let r = f(&mut ctx);
        for mut j in ctx.strays.drain(..) {
            j.kill();
        }
        // Whatever the test did to the link, the next one starts clean.
        let reset = ctx.link("clean");
        match r.and(reset) {
            Ok(()) => {
                passed += 1;
                println!("pair: PASS {name} ({:.1} s)", secs(t));
            }
            Err(e) => {
                failed += 1;
                // One line, then the rest indented: outputs quoted in the
                // error stay with the test in filtered logs.
                let text = format!("{e:#}");
                let mut lines = text.lines();
                println!("pair: FAIL {name}: {}", lines.next().unwrap_or(""));
                for l in lines {
                    println!("    {l}");
                }
            }
        }
    }
    let _ = std::fs::write(a.ctl.join("stop"), "");
    println!("pair: {passed} passed, {failed} failed");
    Ok(())
}
