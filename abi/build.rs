// SPDX-License-Identifier: GPL-2.0

//! Generates `uapi.rs`, the ioctl ABI's types and numbers, from the uapi
//! header through `uapi_helper.h`: the same input, allowlists and derives
//! as the module's Kbuild rule for `bindings/uapi_generated.rs`.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let helper = root.join("abi/uapi_helper.h");
    let header = root.join("include/uapi/linux/rdma_krust.h");
    for f in [&helper, &header] {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("uapi.rs");
    bindgen::Builder::default()
        .header(helper.to_str().expect("a UTF-8 path"))
        .use_core()
        .ctypes_prefix("core::ffi")
        .derive_default(true)
        .derive_partialeq(true)
        .derive_eq(true)
        .layout_tests(false)
        .allowlist_type("rdma_krust_.*")
        .allowlist_var("RDMA_KRUST_.*|RKRUST_CMD_.*")
        .generate()
        .expect("bindgen: abi/uapi_helper.h")
        .write_to_file(&out)
        .expect("write uapi.rs");
}
