// SPDX-License-Identifier: GPL-2.0

//! A lossy link: delivery under loss, and the ACK timeout table.

use super::*;

/// The faults the issue measured with: 1 % loss, 1 % reordering, 0.5 %
/// duplication.
pub(super) const LOSSY: &str = "loss=1 reorder=1 dup=0.5";

/// How long both ends of an echo under [`LOSSY`] wait for each message:
/// as long as the transport may take to deliver it (a 2 MiB message
/// outlasts the tool's usual 20 s there).
pub(super) const LOSSY_WAIT: &str = "--msg-timeout-ms 300000";

pub(super) fn lossy_link_delivers(c: &mut Ctx) -> Result<()> {
    c.link(LOSSY)?;
    let w = LOSSY_WAIT;
    let echo_m = echo(
        c,
        "kernel echo",
        &format!("kernel-echo {w}"),
        &format!("kernel-ping --seed 3 {w}"),
    )?;
    let echo_u = echo(
        c,
        "userspace echo",
        &format!("serve --mode echo {w}"),
        &format!("ping --seed 6 {w}"),
    )?;
    let st = stream(c, false)?;
    let (i, _) = target(
        c,
        false,
        2 << 20,
        "r --fill 7",
        "--scenario reads --adds 5 --seed 7",
    )?;
    ensure!(i.contains("reads ok: 5 x 2097152 bytes"), "READs: {i}");
    let [m, s, k, u] = rpings(c, 20)?;
    let clean = |k: &str| c.times.get(k).copied();
    let row = |name: &str, lossy: f64, clean: Option<f64>, unit: f64, u_lossy: f64| {
        let c = clean.map_or("-".to_string(), |v| format!("{:.1}", v * unit));
        println!(
            "  {name:<28} clean {c:>8}  lossy {:>8.1}  userspace lossy {:>8.1}  module/userspace {:.2}",
            lossy * unit,
            u_lossy * unit,
            lossy / u_lossy
        );
    };
    println!("  under {LOSSY} (s for echoes, ms per rping iteration):");
    row(
        "echo, module to module",
        echo_m,
        clean("echo module"),
        1.0,
        echo_u,
    );
    row(
        "echo, userspace (anchor)",
        echo_u,
        clean("echo userspace"),
        1.0,
        echo_u,
    );
    row(
        "rping, module client",
        m,
        clean("rping module client"),
        1e3,
        u,
    );
    row(
        "rping, module both ends",
        k,
        clean("rping module both ends"),
        1e3,
        u,
    );
    row(
        "rping, module server",
        s,
        clean("rping module server"),
        1e3,
        u,
    );
    row(
        "rping, userspace (anchor)",
        u,
        clean("rping userspace"),
        1e3,
        u,
    );
    println!("  one-way stream A -> B {st:.2} s; 5 READs of 2 MiB verified");
    Ok(())
}

/// The module's echo under loss for several local ACK timeouts (set on
/// both ends), beside userspace's echo in the same minute: the table of
/// `Documentation/two-hosts.rst`. Every run's data is verified; the times
/// are reported, not asserted.
pub(super) fn lossy_ack_timeout_table(c: &mut Ctx) -> Result<()> {
    c.link(LOSSY)?;
    let w = LOSSY_WAIT;
    let u = echo(
        c,
        "userspace echo",
        &format!("serve --mode echo {w}"),
        &format!("ping --seed 6 {w}"),
    )?;
    println!("  echo of {SIZES} bytes under {LOSSY}; userspace (librdmacm defaults): {u:.2} s");
    for ack in [10u8, 12, 13, 14, 16, 18] {
        // A long ACK timeout under loss makes a 2 MiB echo outlast the
        // scenario's usual 20 s wait for it: what the transport would still
        // deliver is waited for.
        let r = echo(
            c,
            "kernel echo",
            &format!("kernel-echo --ack-timeout {ack} {w}"),
            &format!("kernel-ping --seed 3 --ack-timeout {ack} {w}"),
        );
        let ms = 4.096e-3 * f64::from(1u32 << ack);
        match r {
            Ok(t) => println!(
                "  module, ack_timeout {ack:>2} ({ms:>7.1} ms): {t:>6.2} s, {:.2} of userspace's",
                t / u
            ),
            // Below the default, rxe resends what is only late, and has
            // failed a connection doing so (a receive completing with
            // IB_WC_LOC_QP_OP_ERR at 10): a row of the table, not a
            // verdict on the module's default.
            Err(e) if ack < abi::DEFAULT_ACK_TIMEOUT => {
                let why = format!("{e:#}");
                let last = why.lines().last().unwrap_or("");
                println!(
                    "  module, ack_timeout {ack:>2} ({ms:>7.1} ms): the connection failed: {last}"
                );
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
