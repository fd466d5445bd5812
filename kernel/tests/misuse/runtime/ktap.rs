// SPDX-License-Identifier: GPL-2.0

//! The KTAP lines of the run-time checks, shared by the test modules of
//! this folder (each includes this file with `mod ktap;`).

use kernel::prelude::*;

/// A KTAP result list: one `ok`/`not ok` line per check, counted.
pub(crate) struct Tap {
    pub(crate) n: u32,
    pub(crate) passed: u32,
    pub(crate) failed: u32,
}

impl Tap {
    pub(crate) const fn new() -> Self {
        Self {
            n: 0,
            passed: 0,
            failed: 0,
        }
    }

    /// Prints `ok N name` for `Ok`, `not ok N name # errno E` for an error.
    pub(crate) fn check(&mut self, name: &str, r: Result) {
        self.n += 1;
        match r {
            Ok(()) => {
                self.passed += 1;
                pr_info!("ok {} {}\n", self.n, name);
            }
            Err(e) => {
                self.failed += 1;
                pr_info!("not ok {} {} # errno {}\n", self.n, name, e.to_errno());
            }
        }
    }

    /// A check that cannot run here, counted as passed (KTAP's `SKIP`).
    #[allow(dead_code)] // Not every module skips.
    pub(crate) fn skip(&mut self, name: &str, why: &str) {
        self.n += 1;
        self.passed += 1;
        pr_info!("ok {} {} # SKIP {}\n", self.n, name, why);
    }
}

/// `Ok` if `r` failed with `want`; the errno seen (or `ERANGE` for a
/// success) otherwise. For the calls that hand back what they were given
/// with the error.
pub(crate) fn expect_err<T, C>(r: core::result::Result<T, (Error, C)>, want: Error) -> Result {
    match r {
        Err((e, _)) if e == want => Ok(()),
        Err((e, _)) => Err(e),
        Ok(_) => Err(ERANGE),
    }
}

/// `Ok` if `r` failed with `want`; the errno seen (or `ERANGE` for a
/// success) otherwise.
pub(crate) fn expect_errno<T>(r: Result<T>, want: Error) -> Result {
    match r {
        Err(e) if e == want => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Err(ERANGE),
    }
}
