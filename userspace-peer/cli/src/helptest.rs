// SPDX-License-Identifier: GPL-2.0

//! What the user's `--help` shows: the user's options only. The tests'
//! own options (holds, lingers, stale keys, the SIGUSR1 handler...) are the
//! test kit's (`rdma-krust-kit`), and the module's options (`--dev`, the
//! transport settings, the waits) are shown, and taken, only by the
//! subcommands they act on.

use crate::Cli;
use clap::CommandFactory;

/// The options that serve only the tests: `rdma-krust-kit` takes them.
const TEST_ONLY: [&str; 6] = [
    "--eintr-on-usr1",
    "--hold-ms",
    "--linger-ms",
    "--no-verdict",
    "--stale-key",
    "--pause-ms",
];

/// The module's options, in their groups.
const DEV: &[&str] = &["--dev"];
const TRANSPORT: &[&str] = &[
    "--ack-timeout",
    "--retry-count",
    "--rnr-retry",
    "--min-rnr-timer",
    "--recv-depth",
];
const MSG: &[&str] = &["--msg-timeout-ms"];
const OP: &[&str] = &["--op-timeout-ms"];

/// Which groups of the module's options each subcommand acts on.
fn module_options(sub: &str) -> Vec<&'static str> {
    let groups: &[&[&str]] = match sub {
        // Opens the module (without --verbs), makes no connection.
        "devices" => &[DEV],
        // Module connections with scenarios' messages.
        "kernel-echo" | "kernel-ping" | "kernel-target" | "raw-ping" | "rping" => {
            &[DEV, TRANSPORT, MSG]
        }
        // ... and READs, WRITEs and atomics.
        "kernel-initiator" => &[DEV, TRANSPORT, MSG, OP],
        // Module connections whose loop runs in the kernel, with its own
        // waits.
        "bench" => &[DEV, TRANSPORT],
        // The userspace peer: no module, its own message waits.
        "serve" | "ping" | "initiate" => &[MSG],
        // Files only.
        "bench-plot" | "bench-report" => &[],
        other => panic!("{other}: say which module options it takes"),
    };
    groups.iter().flat_map(|g| g.iter().copied()).collect()
}

/// The long help of the tool, then of each subcommand, with its name.
fn helps() -> Vec<(String, String)> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = vec![("".to_string(), cmd.render_long_help().to_string())];
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names.into_iter().filter(|n| n != "help") {
        let sub = cmd
            .find_subcommand_mut(&name)
            .unwrap_or_else(|| panic!("{name}"));
        out.push((name, sub.render_long_help().to_string()));
    }
    out
}

/// Whether `help` lists `option`: as the start of an option's line.
fn lists(help: &str, option: &str) -> bool {
    help.lines().any(|l| {
        let l = l.trim_start();
        let l = l
            .split_once(", ")
            .map_or(l, |(short, long)| if short.len() == 2 { long } else { l });
        l == option || l.starts_with(&format!("{option} ")) || l.starts_with(&format!("{option}="))
    })
}

#[test]
fn help_shows_no_test_option() {
    let all = helps();
    assert!(all.len() > 10, "{all:?}");
    for (name, help) in &all {
        for opt in TEST_ONLY {
            assert!(
                !help.contains(opt),
                "rdma-krust {name} --help shows {opt}:\n{help}"
            );
        }
        // The stale scenario is the kit's `stale-read`: not a value of
        // --scenario.
        let stale = help.lines().any(|l| {
            l.trim_start().starts_with("- stale") || l.contains(", stale") || l.contains("stale]")
        });
        assert!(!stale, "rdma-krust {name} --help: {help}");
    }
}

#[test]
fn module_options_show_only_where_they_act() {
    let all = helps();
    let every: Vec<&str> = [DEV, TRANSPORT, MSG, OP].concat();
    for (name, help) in &all {
        let wanted = if name.is_empty() {
            // The tool itself takes none: they are the subcommands'.
            Vec::new()
        } else {
            module_options(name)
        };
        for opt in &every {
            assert_eq!(
                lists(help, opt),
                wanted.contains(opt),
                "rdma-krust {name} --help {} {opt}:\n{help}",
                if wanted.contains(opt) {
                    "lacks"
                } else {
                    "shows"
                }
            );
        }
    }
}

/// The parser agrees with the help: what a subcommand does not show, it
/// does not take.
#[test]
fn module_options_are_taken_only_where_they_act() {
    let mut cmd = Cli::command();
    cmd.build();
    let every: Vec<&str> = [DEV, TRANSPORT, MSG, OP].concat();
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = sub.get_name();
        let wanted = module_options(name);
        for opt in &every {
            let takes = sub
                .get_arguments()
                .any(|a| a.get_long().is_some_and(|l| format!("--{l}") == *opt));
            assert_eq!(takes, wanted.contains(opt), "{name} {opt}");
        }
    }
    assert!(
        cmd.get_arguments()
            .all(|a| matches!(a.get_id().as_str(), "help" | "version")),
        "the tool takes options of its own: {:?}",
        cmd.get_arguments().map(|a| a.get_id()).collect::<Vec<_>>()
    );
}

#[test]
fn lists_matches_option_lines_only() {
    let help =
        "Options:\n      --dev <DEV>\n  -j, --json\n      --sizes=<S>\n  see --dev for more\n";
    assert!(lists(help, "--dev"));
    assert!(lists(help, "--json"));
    assert!(lists(help, "--sizes"));
    assert!(!lists(help, "--de"));
    assert!(!lists(help, "more"));
}
