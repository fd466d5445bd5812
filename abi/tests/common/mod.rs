// SPDX-License-Identifier: GPL-2.0

//! What the tests that compile C against the uapi header share. Each test
//! crate compiles this module and uses part of it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The header, relative to the root, and the directory to pass to `-I`.
pub const HEADER: &str = "include/uapi/linux/rdma_krust.h";
pub const INCLUDE_DIR: &str = "include/uapi";

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `clang` with `args`; panics with a clear message when clang is not
/// installed (`scripts/setup.sh` installs it).
pub fn clang(args: &[&str]) -> std::process::Output {
    match Command::new("clang").args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "clang not found: this test compiles C against {HEADER}; \
             install clang (scripts/setup.sh does)"
        ),
        Err(e) => panic!("running clang: {e}"),
    }
}

/// Builds `prog` for `arch` (`-m64`, `-m32`) as `NAME.c`, `NAME-m64` and so
/// on, and returns its output.
pub fn build_and_run(name: &str, prog: &str, arch: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("uapi_header");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let src = dir.join(format!("{name}{arch}.c"));
    let exe = dir.join(format!("{name}{arch}"));
    std::fs::write(&src, prog).expect("write the C program");
    let inc = root().join(INCLUDE_DIR);
    let out = clang(&[
        arch,
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-I",
        inc.to_str().expect("a UTF-8 path"),
        "-o",
        exe.to_str().expect("a UTF-8 path"),
        src.to_str().expect("a UTF-8 path"),
    ]);
    assert!(
        out.status.success(),
        "clang {arch} failed on the program that includes {HEADER} (left in {}):\n{}{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr),
        if arch == "-m32" {
            "(32-bit: needs the i386 libc headers, gcc-multilib; scripts/setup.sh installs them)"
        } else {
            ""
        }
    );
    let run = Command::new(&exe).output().expect("run the C program");
    assert!(run.status.success(), "{} failed", exe.display());
    String::from_utf8(run.stdout).expect("ASCII output")
}
