// SPDX-License-Identifier: GPL-2.0

//! How connections end: a lost DREQ, a silent peer, a peer powered off.

use super::*;

/// rmmod and insmod on both guests.
pub(super) fn reload(c: &mut Ctx) -> Result<()> {
    let cmd = "rmmod rdma_krust && insmod \"$KRUST_KO\" && echo reloaded";
    let a = c.on_a("reload", cmd)?.success(JOB)?;
    let b = c.on_b("reload", cmd)?.success(JOB)?;
    ensure!(
        a.contains("reloaded") && b.contains("reloaded"),
        "A: {a} B: {b}"
    );
    Ok(())
}

/// A disconnect whose DREQ is lost still reaches the peer: A's
/// `IOCTL_DISCONNECT` waits for rdma_cm's verdict, so ib_cm resends the DREQ
/// (about 4.6 s later on RoCE: 2 x 256 ms packet life + 4096 ms response
/// time) instead of cancelling it when the file closes. B, waiting for a
/// second message, must see the reset, not its own timeout.
pub(super) fn lost_dreq_is_resent(c: &mut Ctx) -> Result<()> {
    let port = c.port();
    let mut b = c.on_b(
        "echo",
        &c.tool(&format!(
            "kernel-echo --msg-timeout-ms 30000 --count 2 --listen {}:{port}",
            c.peer
        )),
    )?;
    b.wait_for("listening", UP)?;
    let ping = c.kit(&format!(
        "kernel-ping --connect {}:{port} --sizes 64 --linger-ms 3000",
        c.peer
    ));
    let mut a = c.on_a("ping", &ping)?;
    if let Err(e) = a.wait_for("lingering", UP) {
        b.kill();
        return Err(e);
    }
    // Down from 0.3 s to 5.3 s of the 3 s linger: the DREQ at 3 s is lost,
    // its resend at about 7.6 s gets through.
    c.link("link=down")?;
    std::thread::sleep(Duration::from_secs(5));
    c.link("clean")?;
    let (rc, out) = a.wait(JOB)?;
    let (brc, bout) = b.wait(JOB)?;
    let last = bout.lines().last().unwrap_or("");
    println!("  B: {last}");
    ensure!(
        brc != 0 && last.contains("receive message 1") && last.contains("Connection reset"),
        "B did not learn of A's disconnect (exit {brc}): {bout}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("disconnected in "))
        .with_context(|| format!("A: exit {rc}: {out}"))?;
    let ms = read_ms(line);
    ensure!(ms != u64::MAX, "A: no time in {line:?}");
    println!("  A: {line} (its first DREQ lost on a link down for 5 s)");
    ensure!(
        ms >= 3000,
        "A's disconnect took {ms} ms: its DREQ was not lost, the test saw nothing"
    );
    Ok(())
}

pub(super) fn silent_peer_waits_end(c: &mut Ctx) -> Result<()> {
    // A listens and waits for a message; B connects and sends nothing for
    // a minute. A's RECV gives up after its 20 s wait, with ETIMEDOUT.
    let port = c.port();
    let mut a = c.on_a(
        "echo",
        &c.tool(&format!("kernel-echo --listen {}:{port} --count 1", c.me)),
    )?;
    a.wait_for("listening", UP)?;
    let b = c.on_b(
        "silent",
        &c.kit(&format!(
            "kernel-ping --connect {}:{port} --hold-ms 60000 --sizes 1",
            c.me
        )),
    )?;
    c.strays.push(b);
    let t = Instant::now();
    let (rc, out) = a.wait(Duration::from_secs(120))?;
    let waited = secs(t);
    ensure!(rc != 0, "the echo got a message from a silent peer: {out}");
    ensure!(
        out.contains("timed out") || out.contains("ETIMEDOUT"),
        "A: {out}"
    );
    println!("  A's RECV on a silent peer: ETIMEDOUT after {waited:.1} s (its wait: 20 s)");
    // A signal ends the same wait at once.
    let port = c.port();
    let mut a = c.on_a(
        "echo",
        &c.kit(&format!(
            "--eintr-on-usr1 kernel-echo --listen {}:{port} --count 1",
            c.me
        )),
    )?;
    a.wait_for("listening", UP)?;
    let b = c.on_b(
        "silent",
        &c.kit(&format!(
            "kernel-ping --connect {}:{port} --hold-ms 60000 --sizes 1",
            c.me
        )),
    )?;
    c.strays.push(b);
    a.wait_for("conn:", UP)?;
    std::thread::sleep(Duration::from_secs(1));
    let t = Instant::now();
    a.signal(libc::SIGUSR1);
    let (rc, out) = a.wait(Duration::from_secs(30))?;
    ensure!(
        rc != 0 && out.contains("Interrupted"),
        "A after SIGUSR1: {out}"
    );
    println!("  the same wait, SIGUSR1: EINTR after {:.2} s", secs(t));
    Ok(())
}

pub(super) fn peer_powered_off(c: &mut Ctx) -> Result<()> {
    // B serves READs of a 2 MiB window; A reads it in a loop; B powers off.
    // Six retries: on rxe the default, 7, never gives up (transport.rst).
    let (tj, mut ij) = reads_from_b(c, "--retry-count 6", 100_000)?;
    c.strays.push(tj);
    std::thread::sleep(Duration::from_secs(1));
    // The agent dumps B's kernel log for the host, then B is off at once.
    let _ = c.on_b(
        "power off",
        "dmesg > \"$KRUST_OUT/dmesg-before-poweroff.txt\"; sync; echo o > /proc/sysrq-trigger",
    )?;
    let t = Instant::now();
    let (rc, out) = ij.wait(Duration::from_secs(120))?;
    let took = secs(t);
    ensure!(rc != 0, "READs went on with the peer powered off: {out}");
    let line = out
        .lines()
        .find(|l| l.contains("failed after"))
        .with_context(|| format!("no failed READ reported: {out}"))?;
    ensure!(line.contains("ETIMEDOUT"), "A: {line}");
    println!("  A: {line}; {took:.1} s after the power-off request");
    // The survivor closed its file; its module unloads.
    let out = c
        .on_a("rmmod", "rmmod rdma_krust && echo unloaded")?
        .success(JOB)?;
    if !out.contains("unloaded") {
        bail!("rmmod on A: {out}");
    }
    let _ = c.on_a("insmod", "insmod \"$KRUST_KO\"")?.success(JOB)?;
    println!("  A's module unloaded with the peer gone, and loaded again");
    Ok(())
}
