// SPDX-License-Identifier: GPL-2.0

//! Tests that the command lines others write for the tool still mean
//! something to it: the scripts' (`scripts/*.sh`), the two-host suite's
//! (`kit/src/pair/`), and the ones the documentation quotes (`README.md`,
//! `Documentation/*.rst`). Each is parsed as `main` parses it, and `bench`'s
//! and `rping`'s are also resolved (`benchcmd::plan`, `rping::plan`), whose
//! refusals are usage errors too. The test kit's command lines are the
//! kit's own tests' (`kit/src/cmdlines.rs`).

use crate::{benchcmd, rping, Cli, Cmd};
use clap::{CommandFactory, Parser};
use krust::cmdscan::{self, joined_lines, options};

/// Parses `line`, the words after `rdma-krust`, as the tool does before it
/// runs anything: an error is what would end it with exit status 2.
fn parse(line: &str) -> Result<Cli, String> {
    // '' is an empty word, as the shell passes "${UNSET:-}".
    let words = line
        .split_whitespace()
        .map(|w| if w == "''" { "" } else { w });
    let argv = std::iter::once("rdma-krust").chain(words);
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    let resolved = match &cli.cmd {
        Cmd::Bench { args: a, .. } => benchcmd::plan(a).map(|_| ()),
        Cmd::Rping { args: a, .. } => rping::plan(a).map(|_| ()),
        _ => Ok(()),
    };
    resolved.map_err(|e| format!("{e:#}"))?;
    Ok(cli)
}

/// Every command line of scripts/*.sh and kit/src/pair/*.rs, with sample
/// values for their variables (and every value a loop gives them): they
/// must all parse, and bench's and rping's resolve.
#[test]
fn script_invocations_still_parse() {
    let lines = [
        // scripts/guest-bench.sh (ours), kit/src/pair/bench.rs (ours)
        "bench --listen 192.0.2.1:18601 --op send --mode lat --size 2 --iters 1000 --depth 16",
        "bench --connect 192.0.2.1:18601 --op send --mode lat --size 2 --iters 1000 --depth 16 --json --samples-to /tmp/samples-send.txt",
        "bench --listen 192.0.2.1:18602 --op write --mode pingpong --size 2 --iters 1000 --depth 16",
        "bench --connect 192.0.2.1:18602 --op write --mode pingpong --size 2 --iters 1000 --depth 16 --json --samples-to /tmp/s",
        "bench --listen 192.0.2.1:18603 --op read --mode lat --size 2 --iters 20000 --depth 16",
        "bench --connect 192.0.2.1:18603 --op fadd --mode lat --size 8 --iters 1000 --depth 16 --json --samples-to /tmp/s",
        "bench --connect 192.0.2.1:18604 --op send --mode bw --size 65536 --iters 1000 --depth 16 --json --samples-to /tmp/s",
        "bench --connect 192.0.2.1:18604 --op write --mode bw --size 1048576 --iters 200 --depth 16 --json --samples-to /tmp/s",
        "bench --connect 192.0.2.1:18604 --op write --mode bw --size 64 --iters 200 --depth 16 --json --samples-to /tmp/s",
        "bench --listen 192.0.2.2:7801 --op read --mode bw --size 65536 --iters 1000 --depth 16",
        "bench --connect 192.0.2.2:7801 --op read --mode bw --size 65536 --iters 1000 --depth 16 --json",
        "bench --connect 192.0.2.2:7801 --op fadd --mode lat --size 8 --iters 1000 --depth 16 --json",
        // scripts/tests/
        "devices --brief",
        "devices --verbs --brief",
        "devices",
        "devices --verbs",
        "kernel-echo --listen 192.0.2.1:7471 --count 6",
        "kernel-echo --listen 192.0.2.1:7473 --count 1 --resp 8 --init 16",
        "kernel-echo --listen 192.0.2.1:7474 --count 3 --sink --seed 5 --poll",
        "kernel-echo --listen 192.0.2.1:7475 --count 7 --poll",
        "kernel-echo --listen 198.51.100.9:7512 --count 500",
        "kernel-echo --listen 198.51.100.1:7510 --count 1 --timeout-ms 60000",
        "kernel-target --listen 192.0.2.1:7480 --len 2097152 --access rw --fill 7",
        "kernel-target --listen 192.0.2.1:7490 --len 8 --access a",
        "kernel-target --listen 192.0.2.1:7491 --len 4096 --fill 3 --access rw",
        "kernel-target --listen 192.0.2.1:7493 --len 4096 --access r --fill 5",
        "kernel-initiator --connect 192.0.2.1:7480 --scenario rw --seed 7",
        "kernel-initiator --connect 192.0.2.1:7490 --scenario atomic --adds 20",
        "kernel-initiator --connect 192.0.2.1:7491 --scenario outside --seed 3",
        "kernel-initiator --connect 192.0.2.1:7495 --scenario outside-write --seed 3",
        "kernel-initiator --connect 192.0.2.1:7494 --scenario revoke",
        "kernel-initiator --connect 192.0.2.1:7550 --scenario fadd --adds 25",
        "kernel-ping --connect 192.0.2.1:7471 --sizes 1,4096,65536,1048576,12345,0",
        "ping --connect 192.0.2.1:7480 --sizes 1,2 --seed 5 --one-way",
        "kernel-ping --connect 192.0.2.1:7480 --sizes 1,2 --seed 5 --one-way --poll",
        "kernel-ping --connect 192.0.2.1:7481 --poll --sizes 1,2",
        "kernel-ping --connect 192.0.2.1:7472 --resp 4 --init 2 --sizes 8",
        "kernel-ping --connect 192.0.2.1:7473 --resp 1000 --init 1000 --sizes 8",
        "kernel-ping --recv-depth 6 --connect 192.0.2.1:7476 --sizes 327599,1,327599,0",
        "kernel-echo --listen 192.0.2.1:7476 --count 4 --recv-depth 6",
        "serve --listen 192.0.2.1:7520 --mode echo --count 5",
        "serve --listen 192.0.2.1:7530 --mode sink --count 3 --seed 5",
        "serve --listen 192.0.2.1:7531 --mode target --len 65536 --access rw --fill 9",
        "serve --listen 192.0.2.1:7550 --mode target --len 8 --access a --connections 4",
        "serve --listen 192.0.2.1:7601 --mode target --len 65536 --access rw --fill 42",
        "ping --connect 192.0.2.1:7521 --sizes 2097152,1048576",
        "initiate --connect 192.0.2.1:7540 --scenario rw --seed 11",
        "initiate --connect 192.0.2.1:7549 --scenario atomic --adds 10",
        "initiate --connect 192.0.2.1:7605 --scenario revoke",
        "rping --server --addr 192.0.2.1:7175 --timeout-ms 60000",
        "rping --client --addr 192.0.2.1:7181 -C 20 -S 64 -V",
        "rping --client --addr 192.0.2.1:7183 -C 20 -S 65535 -V",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --listen 192.0.2.1:7701 --op send --mode lat --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7701 --json --op send --mode lat --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7702 --json --op write --mode rtt --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7703 --json --op read --mode lat --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7704 --json --op cas --mode lat --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7705 --json --op fadd --mode lat --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7706 --json --op write --mode pingpong --size 8 --iters 50",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7707 --json --op read --mode lat --size 8 --iters 50 --events",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7708 --json --op send --mode bw --size 65536 --iters 64 --depth 8",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7709 --json --op write --mode bw --size 65536 --iters 64 --depth 8",
        "bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect 192.0.2.1:7710 --json --op read --mode bw --size 65536 --iters 64 --depth 8",
        // scripts/tests/, scripts/guest-demo.sh
        "serve --listen 192.0.2.1:7600 --mode echo --count 3",
        "kernel-ping --connect 192.0.2.1:7600 --sizes 1,65536,1048576",
        "kernel-echo --listen 192.0.2.1:7603 --count 3",
        "ping --connect 192.0.2.1:7603 --sizes 1,65536,1048576",
        "kernel-initiator --connect 192.0.2.1:7601 --scenario rw --seed 42",
        "kernel-target --listen 192.0.2.1:7604 --len 65536 --access rw --fill 43",
        "kernel-initiator --connect 192.0.2.1:7602 --scenario atomic --adds 5",
        "rping --server --addr 192.0.2.1:7174 --timeout-ms 60000",
        // scripts/bench.sh
        "bench-report /tmp/run/bench.jsonl",
        "bench-plot /tmp/run --out /tmp/run/plots",
        // kit/src/pair/tests/
        "devices --brief",
        "kernel-echo --count 7 --listen 192.0.2.2:7801",
        "kernel-ping --seed 3 --sizes 0,1,4097,65537,1048577,2097151,2097152 --connect 192.0.2.2:7801",
        "kernel-echo --ack-timeout 16 --rnr-retry 5 --min-rnr-timer 14 --count 1 --listen 192.0.2.2:7801",
        "kernel-ping --ack-timeout 15 --retry-count 3 --sizes 4097 --connect 192.0.2.2:7801",
        "kernel-echo --sink --count 7 --seed 5 --listen 192.0.2.1:7802",
        "kernel-ping --one-way --sizes 0,1,2097152 --seed 5 --connect 192.0.2.1:7802",
        "serve --mode echo --count 7 --listen 192.0.2.2:7803",
        "kernel-ping --seed 4 --sizes 0,1 --connect 192.0.2.2:7803",
        "ping --seed 6 --sizes 0,1 --connect 192.0.2.2:7803",
        "kernel-target --len 4096 --access rw --fill 7 --listen 192.0.2.2:7804",
        "kernel-initiator --scenario rw --seed 7 --connect 192.0.2.2:7804",
        "kernel-target --len 8 --access a --listen 192.0.2.1:7805",
        "kernel-initiator --scenario atomic --adds 20 --connect 192.0.2.1:7805",
        "kernel-echo --msg-timeout-ms 300000 --count 7 --listen 192.0.2.2:7806",
        "kernel-ping --msg-timeout-ms 300000 --seed 3 --sizes 0,1 --connect 192.0.2.2:7806",
        "serve --msg-timeout-ms 300000 --mode echo --count 7 --listen 192.0.2.2:7807",
        "ping --msg-timeout-ms 300000 --seed 6 --sizes 0,1 --connect 192.0.2.2:7807",
        "kernel-echo --ack-timeout 10 --msg-timeout-ms 300000 --count 7 --listen 192.0.2.2:7808",
        "kernel-ping --ack-timeout 18 --msg-timeout-ms 300000 --seed 3 --sizes 0,1 --connect 192.0.2.2:7808",
        "kernel-target --len 2097152 --access r --fill 7 --listen 192.0.2.2:7809",
        "kernel-initiator --scenario reads --adds 5 --seed 7 --connect 192.0.2.2:7809",
        "kernel-target --listen 192.0.2.2:7810 --len 2097152 --access r --fill 7",
        "kernel-initiator --retry-count 6 --connect 192.0.2.2:7810 --scenario reads --adds 100000 --seed 7",
        "kernel-initiator --ack-timeout 18 --retry-count 6 --connect 192.0.2.2:7810 --scenario reads --adds 10 --seed 7",
        "kernel-initiator --ack-timeout 20 --retry-count 6 --op-timeout-ms 10000 --connect 192.0.2.2:7810 --scenario reads --adds 10 --seed 7",
        "kernel-echo --listen 192.0.2.1:7811 --count 1",
        "rping --client --addr 192.0.2.2:7813 -C 50 -S 65535 -V",
        "rping --server --addr 192.0.2.2:7814 --timeout-ms 60000",
    ];
    for l in lines {
        if let Err(e) = parse(l) {
            panic!("{l}: {e}");
        }
    }
}

/// The scripts' functions that pass their arguments on to the tool, and
/// the subcommands they run with them.
const HELPERS: [(&str, &[&str]); 6] = [
    ("start_echo", &["kernel-echo"]),
    ("start_target", &["kernel-target"]),
    ("bad_access", &["kernel-target"]),
    ("initiator", &["kernel-initiator"]),
    ("start_serve", &["serve"]),
    ("bench_pair", &["bench"]),
];

/// Whether `word` (its quotes off) names the tool: `"$TOOL"`, or a path
/// to the binary.
fn is_tool(word: &str) -> bool {
    let w = word.trim_matches('"');
    w == "$TOOL" || w.ends_with("/rdma-krust")
}

/// Every option the scripts give the tool, directly or through a helper,
/// is one the subcommand takes: a script line that a change of the CLI
/// broke fails here, even one not in the list above. (Values are not
/// checked: they are variables; the list above has samples of them.)
#[test]
fn script_options_exist() {
    let mut cmd = Cli::command();
    cmd.build();
    let seen =
        cmdscan::check_script_options(&cmd, is_tool, &HELPERS).unwrap_or_else(|e| panic!("{e}"));
    // The suites run the tool a few hundred times; finding a handful would
    // mean the scan missed them.
    assert!(seen > 100, "only {seen} invocations found in scripts/*.sh");
}

/// Every command line the documentation quotes parses and resolves.
#[test]
fn documented_command_lines_parse() {
    let lines = cmdscan::doc_command_lines("rdma-krust");
    for (name, n, l) in &lines {
        if let Err(e) = parse(l) {
            panic!("{name}:{n}: rdma-krust {l}: {e}");
        }
    }
    let has = |sub: &str| lines.iter().filter(|(_, _, l)| l.contains(sub)).count();
    // The guide's examples are found: if the scan missed them, say so.
    assert!(lines.len() > 40, "only {} documented lines", lines.len());
    assert!(has("bench ") >= 8, "bench examples: {lines:?}");
    assert!(has("rping ") >= 5, "rping examples: {lines:?}");
}

/// The defaults the documentation states for `bench` and `rping` are the
/// ones they take.
#[test]
fn documented_defaults_hold() {
    let bench = |l: &str| match parse(l).map(|c| c.cmd) {
        Ok(Cmd::Bench { args: a, .. }) => {
            benchcmd::plan(&a).unwrap_or_else(|e| panic!("{l}: {e:#}"))
        }
        r => panic!("{l}: {r:?}"),
    };
    // real-hosts.rst: "65536 bytes, 5000 iterations, 16 in flight".
    let p = bench("bench --op write --mode bw -d rxe0 -t 16 192.0.2.2");
    assert_eq!((p.sizes, p.iters, p.depth), (vec![65536], 5000, 16));
    assert_eq!(
        p.role,
        benchcmd::Role::Connect(krust::addr::parse("192.0.2.2:18515").unwrap())
    );
    // user-guide.rst: port 18515 on every address; 2 bytes, 1000
    // iterations for latency; bandwidth's depth 64, perftest's 128 capped.
    let p = bench("bench --op read");
    assert_eq!(
        p.role,
        benchcmd::Role::Listen(krust::addr::parse("0.0.0.0:18515").unwrap())
    );
    assert_eq!((p.sizes, p.iters), (vec![2], 1000));
    assert_eq!(bench("bench --op send --mode bw").depth, 64);
    // rping: port 7174, 64 bytes, every address for the server, no
    // limit on its wait, 20 s for the client's.
    let rp = |l: &str| match parse(l).map(|c| c.cmd) {
        Ok(Cmd::Rping { args: a, .. }) => rping::plan(&a).unwrap_or_else(|e| panic!("{l}: {e:#}")),
        r => panic!("{l}: {r:?}"),
    };
    let s = rp("rping -s");
    assert_eq!(
        s.side,
        rping::Side::Server(krust::addr::parse("0.0.0.0:7174").unwrap())
    );
    assert_eq!((s.size, s.count, s.timeout_ms), (64, 0, u32::MAX));
    let c = rp("rping -c -a 192.0.2.1");
    assert_eq!(
        c.side,
        rping::Side::Client(krust::addr::parse("192.0.2.1:7174").unwrap())
    );
    assert_eq!(c.timeout_ms, 20_000);
    // -S: 26 to 65535.
    assert!(parse("rping -c -a 192.0.2.1 -S 25").is_err());
    assert!(parse("rping -c -a 192.0.2.1 -S 26").is_ok());
    assert!(parse("rping -c -a 192.0.2.1 -S 65535").is_ok());
    assert!(parse("rping -c -a 192.0.2.1 -S 65536").is_err());
}

/// The scanners find what they should, and nothing else.
#[test]
fn scanners() {
    let j = joined_lines("a \\\n  b\nc\n");
    assert_eq!(j, vec![(1, "a    b".to_string()), (3, "c".to_string())]);
    assert!(is_tool("\"$TOOL\""));
    assert!(is_tool(
        "\"$ROOT/userspace-peer/target/release/rdma-krust\""
    ));
    assert!(!is_tool("TOOL=$ROOT/x"));
    assert!(!is_tool("\"$KIT\""));
    assert!(!is_tool(
        "\"$ROOT/userspace-peer/target/release/rdma-krust-kit\""
    ));
    let mut cmd = Cli::command();
    cmd.build();
    let b = options(&cmd, "bench").unwrap();
    for f in [
        "--depth",
        "-t",
        "--tx-depth",
        "-s",
        "--size",
        "--ack-timeout",
    ] {
        assert!(b.contains(f), "{f}: {b:?}");
    }
    assert!(!b.contains("--count"));
    assert!(options(&cmd, "no-such").is_none());
    assert!(parse("bench --op cas -s 16 192.0.2.1").is_err());
    assert!(parse("rping -c").is_err());
}
