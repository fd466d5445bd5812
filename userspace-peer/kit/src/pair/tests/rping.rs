// SPDX-License-Identifier: GPL-2.0

//! rping's protocol across: the module and rdma-core's rping, each way.

use super::*;

/// rping at 65535 bytes, validated, `n` iterations: the module as client
/// against `rping -s` on B, `rping -c` on A against the module's server on
/// B, the module on both ends, and userspace rping on both (the anchor).
/// Returns the seconds per iteration of each, in that order.
pub(super) fn rpings(c: &mut Ctx, n: u32) -> Result<[f64; 4]> {
    const S: u32 = 65535;
    // The module's client against rping -s.
    let port = c.port();
    let mut s = c.on_b(
        "rping -s",
        &format!("rping -s -V -a {} -p {port} -S {S}", c.peer),
    )?;
    std::thread::sleep(Duration::from_secs(2));
    let t = Instant::now();
    let cl = c.tool(&format!(
        "rping --client --addr {}:{port} -C {n} -S {S} -V",
        c.peer
    ));
    let out = c.on_a("module rping client", &cl)?.success(LOSSY_JOB);
    let t1 = secs(t) / f64::from(n);
    s.kill();
    let out = out?;
    ensure!(
        out.contains(&format!(
            "rping client: {n} ping(s) of {S} bytes, validated"
        )),
        "module client: {out}"
    );
    // rping -c against the module's server.
    let port = c.port();
    let mut srv = c.on_b(
        "module rping server",
        &c.tool(&format!(
            "rping --server --addr {}:{port} --timeout-ms 60000",
            c.peer
        )),
    )?;
    srv.wait_for("listening", UP)?;
    let t = Instant::now();
    let out = c
        .on_a(
            "rping -c",
            &format!("rping -c -V -a {} -p {port} -C {n} -S {S}", c.peer),
        )?
        .success(LOSSY_JOB);
    let t2 = secs(t) / f64::from(n);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            srv.kill();
            return Err(e);
        }
    };
    let served = match srv.success(JOB) {
        Ok(s) => s,
        // rping disconnects and destroys its id at once (it does not wait
        // for DISCONNECTED), and ib_cm cancels the resends of a destroyed
        // id's DREQ: when that one DREQ is lost, the server hears nothing
        // more and its wait for the next ping runs out. Everything was
        // served, and the client, which checks every pong (-V), exited 0.
        Err(e)
            if format!("{e:#}").contains(&format!(
                "receive the source advert, after {n} ping(s) served: Connection timed out"
            )) =>
        {
            println!("  rping -c's DREQ was lost (rping destroys its id at once): the module's server timed out after serving all {n} pings");
            format!("rping server: {n} ping(s) served")
        }
        Err(e) => return Err(e),
    };
    ensure!(
        served.contains(&format!("rping server: {n} ping(s) served")),
        "module server: {served} (client: {out})"
    );
    // Userspace on both ends.
    let port = c.port();
    let mut s = c.on_b(
        "rping -s",
        &format!("rping -s -V -a {} -p {port} -S {S}", c.peer),
    )?;
    std::thread::sleep(Duration::from_secs(2));
    let t = Instant::now();
    let out = c
        .on_a(
            "rping -c",
            &format!("rping -c -V -a {} -p {port} -C {n} -S {S}", c.peer),
        )?
        .success(LOSSY_JOB);
    let t3 = secs(t) / f64::from(n);
    s.kill();
    out.context("userspace rping")?;
    // The module on both ends.
    let port = c.port();
    let mut srv = c.on_b(
        "module rping server",
        &c.tool(&format!(
            "rping --server --addr {}:{port} --timeout-ms 60000",
            c.peer
        )),
    )?;
    srv.wait_for("listening", UP)?;
    let t = Instant::now();
    let cl = c.tool(&format!(
        "rping --client --addr {}:{port} -C {n} -S {S} -V",
        c.peer
    ));
    let out = c.on_a("module rping client", &cl)?.success(LOSSY_JOB);
    let t4 = secs(t) / f64::from(n);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            srv.kill();
            return Err(e);
        }
    };
    let served = srv.success(JOB)?;
    ensure!(
        out.contains(&format!(
            "rping client: {n} ping(s) of {S} bytes, validated"
        )) && served.contains(&format!("rping server: {n} ping(s) served")),
        "module to module: {out} / {served}"
    );
    Ok([t1, t2, t4, t3])
}

pub(super) fn rping_across(c: &mut Ctx) -> Result<()> {
    let [m, s, k, u] = rpings(c, 50)?;
    println!(
        "  rping -S 65535 -V, 50 iterations, per iteration: module client {:.1} ms, module server {:.1} ms, module both ends {:.1} ms, rping both ends {:.1} ms",
        m * 1e3,
        s * 1e3,
        k * 1e3,
        u * 1e3
    );
    c.time("rping module both ends", k);
    c.time("rping module client", m);
    c.time("rping module server", s);
    c.time("rping userspace", u);
    Ok(())
}
