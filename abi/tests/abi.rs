// SPDX-License-Identifier: GPL-2.0

//! The ioctl ABI's command numbers as the `abi` crate has them, and the
//! compat test's C caller.
//!
//! The command numbers are pinned to the values they have had (from a C
//! program: `_IOR(0xb9, 0, 136-byte struct)` and so on): bindgen takes them
//! from the header, and a header change that moves one is an ABI break this
//! test makes visible. Layouts are the header's own (`tests/uapi_header.rs`
//! checks them for 32-bit callers and padding). The module compiles the
//! same `abi` module; the guest test `abi_agreement` checks its compiled
//! numbers against the tools' at run time. The wire protocol's logic is
//! tested in `tests/wire.rs`.

#[test]
fn command_numbers_match_the_c_macros() {
    // From a C program: printf("%#x", _IOR(0xb9, 0, struct { char b[136]; }))
    // and so on for each command.
    assert_eq!(abi::IOCTL_VERSION, 0x8088_b900);
    assert_eq!(abi::IOCTL_LIST_DEVICES, 0xc018_b901);
    assert_eq!(abi::IOCTL_CONNECT, 0xc0bc_b910);
    assert_eq!(abi::IOCTL_LISTEN, 0x4034_b911);
    assert_eq!(abi::IOCTL_ACCEPT, 0xc090_b912);
    assert_eq!(abi::IOCTL_CONN_INFO, 0x8088_b913);
    assert_eq!(abi::IOCTL_DISCONNECT, 0x0000_b914);
    assert_eq!(abi::IOCTL_SEND, 0x4018_b920);
    assert_eq!(abi::IOCTL_RECV, 0xc018_b921);
    assert_eq!(abi::IOCTL_EXPOSE, 0xc020_b930);
    assert_eq!(abi::IOCTL_REVOKE, 0x4008_b931);
    assert_eq!(abi::IOCTL_WINDOW_READ, 0x4020_b932);
    assert_eq!(abi::IOCTL_WINDOW_WRITE, 0x4020_b933);
    assert_eq!(abi::IOCTL_RDMA_WRITE, 0x4020_b934);
    assert_eq!(abi::IOCTL_RDMA_READ, 0x4020_b935);
    assert_eq!(abi::IOCTL_ATOMIC, 0xc030_b936);
    assert_eq!(abi::IOCTL_BENCH, 0xc048_b940);
    assert_eq!(abi::ALL_CMDS.len(), 17);
    assert_eq!(abi::ioc(abi::IOC_READ, 0xb9, 0, 4), 0x8004_b900);
    assert_eq!(abi::ioc(abi::IOC_WRITE, 0xb9, 0, 40), 0x4028_b900);
}

#[test]
fn command_fields_decode() {
    for &cmd in abi::ALL_CMDS {
        assert_eq!(abi::ioc_type(cmd), abi::IOC_MAGIC);
    }
    assert_eq!(abi::ioc_nr(abi::IOCTL_VERSION), 0);
    assert_eq!(abi::ioc_nr(abi::IOCTL_LIST_DEVICES), 1);
    let mut nrs: Vec<u32> = abi::ALL_CMDS.iter().map(|&c| abi::ioc_nr(c)).collect();
    nrs.dedup();
    assert_eq!(
        nrs.len(),
        abi::ALL_CMDS.len(),
        "numbers are unique and sorted"
    );
    assert!(abi::ALL_CMDS.len() <= abi::MAX_CMDS);
}

/// The C caller of the compat test (scripts/compat32.c) takes the ABI from
/// the uapi header, as the module and the tools do, and defines none of it
/// itself.
#[test]
fn compat32_uses_the_uapi_header() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/compat32.c"
    ))
    .expect("scripts/compat32.c");
    assert!(
        src.lines().any(|l| l == "#include <linux/rdma_krust.h>"),
        "scripts/compat32.c includes <linux/rdma_krust.h>"
    );
    for l in src.lines() {
        let l = l.trim_start();
        assert!(
            !(l.starts_with("#define") && l.contains("RDMA_KRUST") || l.starts_with("struct rk_")),
            "scripts/compat32.c defines ABI items of its own: {l}"
        );
    }
    assert!(
        src.contains("RDMA_KRUST_ABI_VERSION"),
        "scripts/compat32.c checks the module's version against the header's"
    );
}

/// The retries' time the module waits for after a peer's close: 8 ACK
/// timeouts of 67.1 ms at the defaults, and no overflow at the largest
/// exponent.
#[test]
fn transport_retries_ms() {
    let t = |ack_timeout, retry_count| abi::Transport {
        ack_timeout,
        retry_count,
        ..Default::default()
    };
    assert_eq!(t(abi::DEFAULT_ACK_TIMEOUT, 7).retries_ms(), 537);
    assert_eq!(t(14, 0).retries_ms(), 68);
    assert_eq!(t(1, 0).retries_ms(), 1);
    assert_eq!(t(31, 7).retries_ms(), 70_368_745);
}
