// SPDX-License-Identifier: GPL-2.0

//! Tests that the command lines others write for the kit still mean
//! something to it: the scripts' (`scripts/*.sh`, where `"$KIT"` is the
//! kit) and the ones the documentation quotes (`README.md`,
//! `Documentation/*.rst`: `rdma-krust-kit ...`). Each is parsed as `main`
//! parses it. The user's tool has the same tests for its command lines
//! (`cli/src/cmdlines.rs`).

use crate::Cli;
use clap::{CommandFactory, Parser};
use krust::cmdscan::{self, options};

/// Parses `line`, the words after `rdma-krust-kit`, as the kit does before
/// it runs anything: an error is what would end it with exit status 2.
fn parse(line: &str) -> Result<Cli, String> {
    // '' is an empty word, as the shell passes "${UNSET:-}".
    let words = line
        .split_whitespace()
        .map(|w| if w == "''" { "" } else { w });
    let argv = std::iter::once("rdma-krust-kit").chain(words);
    Cli::try_parse_from(argv).map_err(|e| e.to_string())
}

/// Every command line of scripts/*.sh that runs the kit, with sample
/// values for their variables (and every value a loop gives them): they
/// must all parse.
#[test]
fn script_invocations_still_parse() {
    let lines = [
        // scripts/guest-pair.sh
        "pair --ctl /tmp/ctl --me 192.0.2.1 --peer 192.0.2.2 --tests ''",
        "pair --ctl /tmp/ctl --me 192.0.2.1 --peer 192.0.2.2 --tests rping_across,bench_across",
        "agent --ctl /tmp/ctl",
        // scripts/tests/*.sh, the guest suite
        "abi",
        "errno-check",
        "hostile --verbose --seconds 60 --port 7700 --seed 12345",
        "hostile --verbose --seconds 60 --port 7700 --seed 1 --lie grant-max,honest",
        "listen-close-race --ip 198.51.100.25 --port 7720 --rounds 300 --seed 7",
        "fuzz --seconds 20 --count 1000000000 --fds 4 --port-base 20000",
        "cycles --count 10 --port 7620",
        "cycles --count 100 --port 7620",
        "stress --fds 2 --polled 1 --threads 4 --seconds 10 --port 7640 --max-msg 300000 --concurrent-recv",
        "stress --fds 2 --polled 1 --threads 4 --seconds 10 --port 7640 --max-msg 300000 --concurrent-recv --no-atomics",
        "recv-race --file /tmp/big --rounds 8 --port 7000",
        "credit-livelock --port 7020",
        "idle-close --port 7020",
        "--eintr-on-usr1 block --case connect-resolve --port 7661 --signal-after-ms 300",
        "--eintr-on-usr1 block --case connect-establish --port 7662 --signal-after-ms 300 --prompt-ms 15000",
        "--eintr-on-usr1 block --case send-credits --port 7663 --signal-after-ms 300",
        "--eintr-on-usr1 block --case rdma --port 7664 --signal-after-ms 300",
        "--eintr-on-usr1 block --case atomic --port 7665 --signal-after-ms 300",
        "--eintr-on-usr1 block --case bench --port 7666 --signal-after-ms 300",
        "--eintr-on-usr1 block --case send-queued --port 7667 --signal-after-ms 300",
        "--eintr-on-usr1 block --case op-queued --port 7668 --signal-after-ms 300 --poll",
        "stall --op recv --ip 198.51.100.33 --port 7040 --release /tmp/stall.recv.release",
        "fail-sweep --op connect --ip 192.0.2.1 --port 7965",
        "--msg-timeout-ms 5000 stress --fds 2 --threads 3 --seconds 5 --port 7900 --max-msg 300000 --no-atomics",
        "cycles --count 5 --port 7968 --size 65537",
        // iWARP only
        "tcp-reset --ip 192.0.2.1 --port 7740 --count 300",
        // The user's commands with the tests' options (scripts/tests/,
        // kit/src/pair/tests/)
        "--eintr-on-usr1 kernel-echo --listen 192.0.2.1:7500 --count 1 --timeout-ms 60000",
        "--eintr-on-usr1 kernel-echo --listen 192.0.2.1:7501 --count 1 --timeout-ms 60000 --poll",
        "kernel-ping --connect 192.0.2.1:7501 --hold-ms 30000 --sizes 8 --poll",
        "kernel-ping --connect 198.51.100.1:7510 --hold-ms 60000 --sizes 8",
        "kernel-echo --listen 192.0.2.1:7560 --count 1 --poll --sink --hold-ms 60000",
        "kernel-ping --connect 192.0.2.1:7560 --one-way --no-verdict --sizes 2097152",
        "kernel-initiator --connect 192.0.2.1:7570 --scenario rw --seed 12 --hold-ms 3000",
        "stale-read --connect 192.0.2.1:7497 --key 0x1000:0x22",
        "raw-ping --connect 203.0.113.19:7 --sizes 64 --hold-ms 60000",
        "raw-ping --userspace --connect 198.51.100.22:7472 --sizes 1,1 --pause-ms 6000",
        "kernel-ping --connect 192.0.2.2:7811 --sizes 64 --linger-ms 3000",
        "kernel-ping --connect 192.0.2.1:7811 --hold-ms 60000 --sizes 1",
        "--eintr-on-usr1 kernel-echo --listen 192.0.2.1:7812 --count 1",
    ];
    for l in lines {
        if let Err(e) = parse(l) {
            panic!("{l}: {e}");
        }
    }
}

/// The scripts' functions that pass their arguments on to the kit, and
/// the subcommands they run with them.
const HELPERS: [(&str, &[&str]); 2] = [
    ("sig_case", &["block"]),
    ("interrupted_recv", &["kernel-echo", "kernel-ping"]),
];

/// Whether `word` (its quotes off) names the kit: `"$KIT"`, or a path to
/// the binary.
fn is_kit(word: &str) -> bool {
    let w = word.trim_matches('"');
    w == "$KIT" || w.ends_with("/rdma-krust-kit")
}

/// Every option the scripts give the kit, directly or through a helper, is
/// one the subcommand takes: a script line that a change of the kit's
/// command line broke fails here, even one not in the list above. (Values
/// are not checked: they are variables; the list above has samples of
/// them.)
#[test]
fn script_options_exist() {
    let mut cmd = Cli::command();
    cmd.build();
    let seen =
        cmdscan::check_script_options(&cmd, is_kit, &HELPERS).unwrap_or_else(|e| panic!("{e}"));
    // The suites run the kit some twenty times; finding a handful would
    // mean the scan missed them.
    assert!(seen >= 15, "only {seen} invocations found in scripts/*.sh");
}

/// Every command line of the kit the documentation quotes parses.
#[test]
fn documented_command_lines_parse() {
    let lines = cmdscan::doc_command_lines("rdma-krust-kit");
    for (name, n, l) in &lines {
        if let Err(e) = parse(l) {
            panic!("{name}:{n}: rdma-krust-kit {l}: {e}");
        }
    }
    // README's and the user guide's checks are found: if the scan missed
    // them, say so.
    let has = |sub: &str| lines.iter().filter(|(_, _, l)| l.starts_with(sub)).count();
    assert!(has("abi") >= 2, "abi examples: {lines:?}");
    assert!(has("errno-check") >= 1, "errno-check examples: {lines:?}");
}

/// The scanners find the kit, and not the user's tool.
#[test]
fn scanners() {
    assert!(is_kit("\"$KIT\""));
    assert!(is_kit(
        "\"$ROOT/userspace-peer/target/release/rdma-krust-kit\""
    ));
    assert!(!is_kit("\"$TOOL\""));
    assert!(!is_kit(
        "\"$ROOT/userspace-peer/target/release/rdma-krust\""
    ));
    let mut cmd = Cli::command();
    cmd.build();
    let b = options(&cmd, "block").unwrap();
    for f in ["--case", "--port", "--eintr-on-usr1"] {
        assert!(b.contains(f), "{f}: {b:?}");
    }
    // The kit's module options go before its subcommand, not after.
    assert!(!b.contains("--msg-timeout-ms"), "{b:?}");
    assert!(!b.contains("--ack-timeout"), "{b:?}");
    assert!(options(&cmd, "bench").is_none());
    assert!(parse("fuzz --no-such-flag").is_err());
}
