// SPDX-License-Identifier: GPL-2.0

//! Clean-link tests: devices, echoes and streams both ways, the kernel
//! against userspace, one-sided operations and atomics.

use super::*;

pub(super) fn both_guests_see_rxe(c: &mut Ctx) -> Result<()> {
    let cmd = c.tool("devices --brief");
    let a = c.on_a("devices", &cmd)?.success(JOB)?;
    let b = c.on_b("devices", &cmd)?.success(JOB)?;
    ensure!(a.contains("rxe0"), "A's module lists no rxe0: {a}");
    ensure!(b.contains("rxe0"), "B's module lists no rxe0: {b}");
    show(&format!("A: {}B: {}", a, b));
    Ok(())
}

/// Runs the tool's `listen` on one guest (A if `on_a`), given `--listen
/// HOST:PORT` and printing "listening", then `connect` on the other, given
/// `--connect HOST:PORT`; both must succeed. Returns the connecting side's
/// output, the listening side's, and the connecting side's seconds.
pub(super) fn listen_connect(
    c: &mut Ctx,
    on_a: bool,
    label: &str,
    listen: &str,
    connect: &str,
) -> Result<(String, String, f64)> {
    let port = c.port();
    let host = if on_a { c.me } else { c.peer };
    let l = c.tool(&format!("{listen} --listen {host}:{port}"));
    let k = c.tool(&format!("{connect} --connect {host}:{port}"));
    let mut lj = if on_a {
        c.on_a(label, &l)?
    } else {
        c.on_b(label, &l)?
    };
    lj.wait_for("listening", UP)?;
    let t = Instant::now();
    let kj = if on_a {
        c.on_b(label, &k)
    } else {
        c.on_a(label, &k)
    };
    let out = kj.and_then(|mut kj| kj.success(LOSSY_JOB));
    let took = secs(t);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            lj.kill();
            return Err(e);
        }
    };
    let lout = lj.success(JOB)?;
    Ok((out, lout, took))
}

/// One echo: a listener on B (`listen`), a pinger on A (`ping`); returns
/// both outputs and the pinger's seconds.
pub(super) fn across(
    c: &mut Ctx,
    label: &str,
    listen: &str,
    ping: &str,
) -> Result<(String, String, f64)> {
    listen_connect(c, false, label, listen, ping)
}

/// An echo of every size in [`SIZES`] across: both ends must report every
/// message verified. Returns the pinger's seconds.
pub(super) fn echo(c: &mut Ctx, label: &str, listen: &str, ping: &str) -> Result<f64> {
    let (a, b, t) = across(
        c,
        label,
        &format!("{listen} --count {N_SIZES}"),
        &format!("{ping} --sizes {SIZES}"),
    )?;
    ensure!(
        a.contains(&format!("{N_SIZES} message(s) echoed and verified")),
        "A ({label}): {a}"
    );
    ensure!(
        b.contains(&format!("echoed {N_SIZES} message(s)")),
        "B ({label}): {b}"
    );
    Ok(t)
}

pub(super) fn kernel_echo_across(c: &mut Ctx) -> Result<()> {
    let t = echo(c, "kernel echo", "kernel-echo", "kernel-ping --seed 3")?;
    println!("  module -> module echo, {SIZES} bytes: verified both ways in {t:.2} s");
    c.time("echo module", t);
    Ok(())
}

/// Each side's transport settings, as the QPs report them: the ACK timeout
/// and RNR timer are each side's own, the retry count the connecting
/// side's for both, and each QP's RNR retries what the other side asked.
pub(super) fn transport_settings_negotiated(c: &mut Ctx) -> Result<()> {
    let (a, b, _) = across(
        c,
        "transport",
        "kernel-echo --count 1 --ack-timeout 16 --rnr-retry 5 --min-rnr-timer 14",
        "kernel-ping --sizes 4097 --ack-timeout 15 --retry-count 3",
    )?;
    let want_a = "ack_timeout=15 retry=3 rnr_retry=5 min_rnr_timer=12";
    // A asked nothing of B's RNR retries: a message connection's 3.
    let want_b = "ack_timeout=16 retry=3 rnr_retry=3 min_rnr_timer=14";
    ensure!(a.contains(want_a), "A (connecting) wanted {want_a}: {a}");
    ensure!(b.contains(want_b), "B (listening) wanted {want_b}: {b}");
    ensure!(a.contains("1 message(s) echoed and verified"), "A: {a}");
    println!("  A, connecting: {want_a}");
    println!("  B, listening:  {want_b}");
    Ok(())
}

/// A one-way stream of every size, checked by the sink: the module's sink
/// listens on B (on A if `reverse`), the other guest's module streams.
pub(super) fn stream(c: &mut Ctx, reverse: bool) -> Result<f64> {
    let far = if reverse { "A" } else { "B" };
    let (out, got, took) = listen_connect(
        c,
        reverse,
        "stream",
        &format!("kernel-echo --sink --count {N_SIZES} --seed 5"),
        &format!("kernel-ping --one-way --sizes {SIZES} --seed 5"),
    )?;
    ensure!(
        out.contains(&format!(
            "{N_SIZES} message(s) streamed and verified by the sink"
        )),
        "sender: {out}"
    );
    ensure!(
        got.contains(&format!("received and verified {N_SIZES} message(s)")),
        "sink on {far}: {got}"
    );
    Ok(took)
}

pub(super) fn kernel_stream_both_ways(c: &mut Ctx) -> Result<()> {
    let t = stream(c, false)?;
    println!("  A -> B: {N_SIZES} messages streamed, verified by B's module in {t:.2} s");
    let t = stream(c, true)?;
    println!("  B -> A: {N_SIZES} messages streamed, verified by A's module in {t:.2} s");
    Ok(())
}

pub(super) fn kernel_to_userspace_across(c: &mut Ctx) -> Result<()> {
    let t = echo(
        c,
        "kernel -> userspace",
        "serve --mode echo",
        "kernel-ping --seed 4",
    )?;
    println!("  A's module -> B's userspace peer: echoed and verified in {t:.2} s");
    Ok(())
}

pub(super) fn userspace_to_kernel_across(c: &mut Ctx) -> Result<()> {
    let t = echo(c, "userspace -> kernel", "kernel-echo", "ping --seed 6")?;
    println!("  A's userspace peer -> B's module: echoed and verified in {t:.2} s");
    // The anchor: the same echo, userspace on both ends.
    let t = echo(c, "userspace echo", "serve --mode echo", "ping --seed 6")?;
    println!("  userspace -> userspace (anchor): {t:.2} s");
    c.time("echo userspace", t);
    Ok(())
}

/// A kernel target of `len` bytes on one side (`access` is its `--access`
/// and more: `--fill 7`, say), a kernel initiator with `init_args` on the
/// other; returns the initiator's output and the target's.
pub(super) fn target(
    c: &mut Ctx,
    on_a: bool,
    len: u64,
    access: &str,
    init_args: &str,
) -> Result<(String, String)> {
    let (out, tout, _) = listen_connect(
        c,
        on_a,
        "target",
        &format!("kernel-target --len {len} --access {access}"),
        &format!("kernel-initiator {init_args}"),
    )?;
    Ok((out, tout))
}

pub(super) fn rdma_rw_both_ways(c: &mut Ctx) -> Result<()> {
    for len in [4096u64, 2 << 20] {
        for on_a in [false, true] {
            let (i, t) = target(c, on_a, len, "rw --fill 7", "--scenario rw --seed 7")?;
            let dir = if on_a { "B -> A" } else { "A -> B" };
            ensure!(
                i.contains(&format!("rw ok {len} bytes")),
                "{dir} initiator: {i}"
            );
            ensure!(t.contains("target done"), "{dir} target: {t}");
            println!(
                "  {dir}: READ, WRITE, READ back of a {len}-byte window, checked on both sides"
            );
        }
    }
    Ok(())
}

pub(super) fn atomics_across(c: &mut Ctx) -> Result<()> {
    for on_a in [false, true] {
        let (i, t) = target(c, on_a, 8, "a", "--scenario atomic --adds 20")?;
        let dir = if on_a { "B -> A" } else { "A -> B" };
        ensure!(i.contains("cas ok"), "{dir}: {i}");
        ensure!(i.contains("fadd ok: 20 adds, final 0x1175"), "{dir}: {i}");
        ensure!(t.contains("window value 0x1175"), "{dir} target: {t}");
        println!("  {dir}: CAS both ways, 20 FADDs, final value checked by the target");
    }
    Ok(())
}
