// SPDX-License-Identifier: GPL-2.0

//! `krust-relay` on the host, without QEMU: two UDP sockets on 127.0.0.1
//! stand in for the two guests' `-netdev dgram` ports, send numbered frames
//! through the relay each way and check what arrives against the faults and
//! against the relay's own counters.
//!
//! Not flaky by construction, even on a loaded host: the fault decisions
//! come from fixed seeds and depend only on each direction's frame order,
//! which loopback keeps; the senders go in batches of `BATCH` small frames
//! and wait for each batch to come through (by count, or by the highest
//! frame number seen), so no socket buffer overflows; a run ends only when
//! the relay's stats file accounts for every frame; the tests run one at a
//! time (`SERIAL`); and the bounds on the fault counts are wide.

mod link;
mod relay_proc;

use std::fs;
use std::process::Command;
use std::sync::Mutex;

use link::{exchange, seen};
use relay_proc::{check_accounts, guests, Relay, RELAY};

/// One relay at a time: the host may have only two CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes `SERIAL`, even after another test panicked holding it.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn clean_link_delivers_everything_in_order() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let relay = Relay::start("clean", &mut a, &mut b, None, &["--seed", "11"]);
    exchange(&mut a, &mut b, 0..10_000, true);
    // The largest frames, one at a time.
    exchange(&mut a, &mut b, 1_000_000..1_000_001, true);
    exchange(&mut a, &mut b, 1_000_001..1_000_002, true);
    relay.account(10002, &mut a, &mut b);
    let stats = relay.stop();
    let want: Vec<u32> = (0..10_000).chain(1_000_000..1_000_002).collect();
    assert!(a.got == want, "A got {} frames, not in order", a.got.len());
    assert!(b.got == want, "B got {} frames, not in order", b.got.len());
    check_accounts(&stats, want.len() as u64, &a, &b);
    for s in stats {
        assert_eq!((s.lost, s.down, s.dup, s.reordered), (0, 0, 0, 0), "{s:?}");
    }
}

#[test]
fn loss_drops_about_its_share() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let relay = Relay::start(
        "loss",
        &mut a,
        &mut b,
        None,
        &["--seed", "1", "--loss", "10"],
    );
    exchange(&mut a, &mut b, 0..10_000, false);
    relay.account(10000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 10_000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..10_000);
        let lost = seen.missing.len();
        assert!((800..=1200).contains(&lost), "{lost} of 10000 lost at 10%");
        assert_eq!(s.lost, lost as u64, "{s:?}");
        assert!(seen.dups.is_empty() && seen.descents == 0, "{seen:?}");
    }
}

#[test]
fn dup_duplicates_about_its_share() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let relay = Relay::start("dup", &mut a, &mut b, None, &["--seed", "2", "--dup", "10"]);
    exchange(&mut a, &mut b, 0..10_000, true);
    relay.account(10000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 10_000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..10_000);
        let dups = seen.dups.len();
        assert!(
            (800..=1200).contains(&dups),
            "{dups} of 10000 duplicated at 10%"
        );
        assert_eq!(s.dup, dups as u64, "{s:?}");
        assert!(seen.missing.is_empty() && seen.descents == 0, "{seen:?}");
    }
}

#[test]
fn reorder_delivers_everything_some_late() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let args = ["--seed", "3", "--reorder", "10"];
    let relay = Relay::start("reorder", &mut a, &mut b, None, &args);
    exchange(&mut a, &mut b, 0..10_000, true);
    relay.account(10000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 10_000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..10_000);
        assert!(seen.missing.is_empty() && seen.dups.is_empty(), "{seen:?}");
        let held = s.reordered;
        assert!(
            (800..=1200).contains(&held),
            "{held} of 10000 held back at 10%"
        );
        // A held frame goes out behind the next one, unless it was last of
        // a batch (then its 5 ms run out): most of them are overtaken.
        assert!(
            seen.descents as u64 >= held / 4 && seen.descents as u64 <= held,
            "{} frames overtaken of {held} held back",
            seen.descents
        );
    }
}

#[test]
fn control_file_takes_the_link_down_and_up() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let mut relay = Relay::start("control", &mut a, &mut b, None, &["--seed", "4"]);
    exchange(&mut a, &mut b, 0..1000, true);

    // The stats file is rewritten while the relay runs.
    relay.account(1000, &mut a, &mut b);

    relay.control("link=down\n");
    let line = relay.wait_line("link=down");
    assert!(line.starts_with("relay: t="), "{line}");
    assert!(line.ends_with("loss=0 reorder=0 dup=0 delay_ms=0 jitter_ms=0 link=down"));
    exchange(&mut a, &mut b, 1000..2000, false);
    assert_eq!(
        (a.got.len(), b.got.len()),
        (1000, 1000),
        "frames crossed a down link"
    );

    // Bad settings are reported and change nothing.
    relay.control("loss=abc");
    let line = relay.wait_line("control:");
    assert!(
        line.contains("keeping") && line.ends_with("link=down"),
        "{line}"
    );
    relay.control("link=down flood=1");
    let line = relay.wait_line("control:");
    assert!(line.contains("unknown key `flood`"), "{line}");
    exchange(&mut a, &mut b, 2000..2100, false);
    assert_eq!(
        (a.got.len(), b.got.len()),
        (1000, 1000),
        "frames crossed a down link"
    );

    // A plain (truncate, then write) rewrite, as a shell's `echo >` does.
    fs::write(relay.file("control"), "link=up\n").expect("write the control file");
    let line = relay.wait_line("link=up");
    assert!(line.starts_with("relay: t="), "{line}");
    exchange(&mut a, &mut b, 2100..3100, true);

    relay.account(3100, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 3100, &a, &b);
    let want: Vec<u32> = (0..1000).chain(2100..3100).collect();
    assert!(a.got == want && b.got == want, "wrong frames through");
    for s in stats {
        assert_eq!((s.tx, s.down, s.lost, s.dup), (2000, 1100, 0, 0), "{s:?}");
    }
}

#[test]
fn control_file_at_start_replaces_the_command_line() {
    let _serial = serial();
    let (mut a, mut b) = guests();
    let settings = "loss=1 reorder=1 dup=0.5 delay_ms=2 jitter_ms=3";
    let args = ["--seed", "5", "--loss", "50"];
    let mut relay = Relay::start("mixed", &mut a, &mut b, Some(settings), &args);
    relay.wait_line(&format!("{settings} link=up"));
    exchange(&mut a, &mut b, 0..5000, false);
    relay.account(5000, &mut a, &mut b);
    let stats = relay.stop();
    check_accounts(&stats, 5000, &a, &b);
    for (s, got) in stats.iter().zip([&b.got, &a.got]) {
        let seen = seen(got, 0..5000);
        assert_eq!(s.lost, seen.missing.len() as u64, "{s:?}");
        assert_eq!(s.dup, seen.dups.len() as u64, "{s:?}");
        assert!((10..=150).contains(&s.lost), "{s:?}");
        assert!((5..=100).contains(&s.dup), "{s:?}");
        assert!((10..=150).contains(&s.reordered), "{s:?}");
        // 3 ms of jitter on frames microseconds apart: reordered a lot.
        assert!(seen.descents > 100, "{seen:?}");
    }
}

#[test]
fn same_seed_same_faults() {
    let _serial = serial();
    let run = |name: &str| {
        let (mut a, mut b) = guests();
        let args = ["--seed", "7", "--loss", "5", "--dup", "5", "--reorder", "5"];
        let relay = Relay::start(name, &mut a, &mut b, None, &args);
        exchange(&mut a, &mut b, 0..3000, false);
        relay.account(3000, &mut a, &mut b);
        let stats = relay.stop();
        check_accounts(&stats, 3000, &a, &b);
        let seen = [b.got, a.got].map(|got| {
            let s = seen(&got, 0..3000);
            (s.missing, s.dups)
        });
        (stats, seen)
    };
    let (stats1, seen1) = run("seed1");
    let (stats2, seen2) = run("seed2");
    assert_eq!(
        seen1, seen2,
        "the same seed dropped or duplicated other frames"
    );
    for (s1, s2) in stats1.iter().zip(&stats2) {
        assert_eq!(s1, s2);
    }
    // The two directions have streams of their own.
    assert_ne!(seen1[0], seen1[1]);
}

#[test]
fn bad_command_lines_are_refused() {
    let _serial = serial();
    let base = ["--a-listen", "0", "--b-listen", "0"];
    for extra in [
        &["--a-guest", "5", "--b-guest", "6", "--loss", "150"][..],
        &["--a-guest", "5", "--b-guest", "6", "--dup", "x"][..],
        &["--a-guest", "0", "--b-guest", "6"][..],
    ] {
        let out = Command::new(RELAY)
            .args(base)
            .args(extra)
            .output()
            .expect("run krust-relay");
        assert!(!out.status.success(), "{extra:?} accepted");
    }
}
