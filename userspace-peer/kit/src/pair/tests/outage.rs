// SPDX-License-Identifier: GPL-2.0

//! Link outages against the retry budget, and a READ that outlasts a
//! fixed timeout.

use super::*;

/// READs in the outage tests: two before the cut, the rest after the link
/// is back.
pub(super) const OUTAGE_READS: u32 = 12;

/// READs of a 2 MiB window from B, and the link down for 5 s once two have
/// completed. `transport` is the initiator's transport options. Returns
/// whether it succeeded, its output and the target's.
pub(super) fn outage(c: &mut Ctx, transport: &str) -> Result<(bool, String, String)> {
    outage_for(c, transport, Duration::from_secs(5))
}

/// A 2 MiB target on B and an initiator on A that READs it `reads` times
/// with the `transport` options; returns (target, initiator) once two READs
/// have completed.
pub(super) fn reads_from_b(c: &mut Ctx, transport: &str, reads: u32) -> Result<(Job, Job)> {
    let port = c.port();
    let t = c.tool(&format!(
        "kernel-target --listen {}:{port} --len 2097152 --access r --fill 7",
        c.peer
    ));
    let mut tj = c.on_b("target", &t)?;
    tj.wait_for("listening", UP)?;
    let i = c.tool(&format!(
        "kernel-initiator --connect {}:{port} --scenario reads --adds {reads} --seed 7 {transport}",
        c.peer
    ));
    let mut ij = c.on_a("initiator", &i)?;
    if let Err(e) = ij.wait_for("READ 1:", UP) {
        tj.kill();
        return Err(e);
    }
    Ok((tj, ij))
}

/// [`outage`] with the link down for `down`.
pub(super) fn outage_for(
    c: &mut Ctx,
    transport: &str,
    down: Duration,
) -> Result<(bool, String, String)> {
    let (mut tj, mut ij) = reads_from_b(c, transport, OUTAGE_READS)?;
    c.link("link=down")?;
    std::thread::sleep(down);
    c.link("clean")?;
    let (rc, out) = ij.wait(LOSSY_JOB)?;
    let (_, tout) = tj.wait(JOB)?;
    Ok((rc == 0, out, tout))
}

/// The milliseconds at the end of a `READ i: N ms`, `READ i failed after
/// N ms: ...` or `disconnected in N ms` line; `u64::MAX` for none.
pub(super) fn read_ms(line: &str) -> u64 {
    let head = line.split(" ms").next().unwrap_or("");
    head.rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX)
}

pub(super) fn outage_within_retry_budget(c: &mut Ctx) -> Result<()> {
    // 2^18 * 4.096 us = 1.07 s per ACK timeout, 6 retries: the transport
    // gives up after about 7.5 s without an ACK, more than the outage.
    let (ok, out, tout) = outage(c, "--ack-timeout 18 --retry-count 6")?;
    ensure!(
        ok,
        "READs across a 5 s outage with a 7.5 s retry budget failed: {out}"
    );
    ensure!(
        out.contains(&format!("reads ok: {OUTAGE_READS} x 2097152 bytes")),
        "initiator: {out}"
    );
    ensure!(tout.contains("target done"), "target: {tout}");
    let reads: Vec<&str> = out.lines().filter(|l| l.starts_with("READ ")).collect();
    ensure!(
        reads.iter().any(|l| read_ms(l) > 4000),
        "no READ waited out the outage: {out}"
    );
    show(&reads.join("\n"));
    println!("  ack_timeout 18, 6 retries (7.5 s budget): the READs resumed after the 5 s outage, all verified");
    Ok(())
}

pub(super) fn outage_beyond_retry_budget(c: &mut Ctx) -> Result<()> {
    // The default ACK timeout, 2^14 * 4.096 us = 67 ms, and 6 retries:
    // about half a second.
    let (ok, out, tout) = outage(c, "--retry-count 6")?;
    ensure!(
        !ok,
        "READs survived a 5 s outage beyond a 0.5 s budget: {out}"
    );
    let line = out
        .lines()
        .find(|l| l.contains("failed after"))
        .with_context(|| format!("no failed READ reported: {out}"))?;
    ensure!(line.contains("ETIMEDOUT"), "initiator: {line}");
    let ms = read_ms(line);
    println!("  initiator: {line}");
    // The target learns of it from A's disconnect if that gets through
    // (the CM resends its DREQ only for a second or so, maybe all while
    // the link is down), else from its own wait for A's next request.
    let tline = tout.lines().last().unwrap_or("");
    ensure!(
        tline.contains("Connection reset") || tline.contains("Connection timed out"),
        "the target did not end with ECONNRESET or ETIMEDOUT: {tout}"
    );
    println!("  target: {tline}");
    ensure!(
        ms < 5000,
        "the READ failed {ms} ms in, not within the budget"
    );
    // Nothing left behind: both modules unload, and load again.
    reload(c)?;
    println!("  both modules unloaded and loaded again");
    Ok(())
}

/// A READ the transport delivers after 12 s: the link is down that long,
/// and an ACK timeout of 2^20 * 4.096 us (4.3 s) with 6 retries gives a
/// 30 s budget. With `timeout_ms` 10000, what every one-sided operation
/// used to wait, the READ fails with ETIMEDOUT at 10 s although the
/// transport would have delivered it (as the issue saw a 2 MiB READ fail
/// under loss); with 0, the wait now, it completes.
pub(super) fn read_outlasts_a_fixed_timeout(c: &mut Ctx) -> Result<()> {
    let down = Duration::from_secs(12);
    let t = "--ack-timeout 20 --retry-count 6";
    let (ok, out, _) = outage_for(c, &format!("{t} --op-timeout-ms 10000"), down)?;
    ensure!(!ok, "a READ across a 12 s outage met a 10 s timeout: {out}");
    let line = out
        .lines()
        .find(|l| l.contains("failed after"))
        .with_context(|| format!("no failed READ reported: {out}"))?;
    let ms = read_ms(line);
    ensure!(
        line.contains("ETIMEDOUT") && (9_900..11_000).contains(&ms),
        "expected ETIMEDOUT at 10 s: {line}"
    );
    println!("  timeout_ms 10000 (the old fixed wait): {line}");
    let (ok, out, tout) = outage_for(c, t, down)?;
    ensure!(ok, "the READ across the outage failed: {out}");
    ensure!(tout.contains("target done"), "target: {tout}");
    let longest = out
        .lines()
        .filter(|l| l.starts_with("READ "))
        .map(read_ms)
        .max()
        .unwrap_or(0);
    ensure!(longest > 10_000, "no READ outlasted 10 s: {out}");
    println!(
        "  timeout_ms 0 (the transport's verdict): every READ verified, the longest {longest} ms"
    );
    Ok(())
}
