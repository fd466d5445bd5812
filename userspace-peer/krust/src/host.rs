// SPDX-License-Identifier: GPL-2.0

//! What the binaries read of and ask of the machine they run on: its memory
//! (`/proc/meminfo`) and the process's open-file limit.

use anyhow::{Context, Result};
use std::io;

/// MemFree and Slab of /proc/meminfo, KiB.
pub fn meminfo() -> Result<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/meminfo").context("read /proc/meminfo")?;
    let field = |name: &str| -> Result<u64> {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(name)?
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse()
                    .ok()
            })
            .with_context(|| format!("/proc/meminfo has no {name}"))
    };
    Ok((field("MemFree:")?, field("Slab:")?))
}

/// Raises this process's open-file limit to at least `n` files, the hard
/// limit too if need be (which takes root): a file of the module per
/// connection runs past the usual 1,024.
pub fn raise_nofile(n: u64) -> Result<()> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is valid for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error()).context("getrlimit");
    }
    if r.rlim_cur >= n {
        return Ok(());
    }
    r.rlim_cur = n;
    r.rlim_max = r.rlim_max.max(n);
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Err(io::Error::last_os_error())
            .with_context(|| format!("setrlimit(RLIMIT_NOFILE) to {n}"));
    }
    Ok(())
}
