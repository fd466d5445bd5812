// SPDX-License-Identifier: GPL-2.0

//! `include/uapi/linux/rdma_krust.h`, the C header, against `src/abi.rs`,
//! the one definition of the ABI, so that the two cannot drift.
//!
//! - [`header_matches_abi_rs`]: a C program generated from the tables below
//!   includes the header and prints every structure's size and alignment,
//!   every field's offset, size and type, every constant and every command
//!   number; it is built with `clang` for 64-bit and for 32-bit x86 and run,
//!   and each line must equal the one computed here from `abi.rs`
//!   (`size_of`, `align_of`, `offset_of!`, the constants themselves).
//! - Completeness: the tables are checked against the items parsed from the
//!   source text of `abi.rs` and the files it includes (`#[path]`): every
//!   `pub const`, every `#[repr(C)]` structure and each of its fields, in
//!   order. A field, structure or constant added to `abi.rs` fails here
//!   until it is in the table, and then in the C program until it is in the
//!   header; the header may define nothing the tables do not list either.
//! - [`header_compiles_alone`]: as strict C90 and as C++.
//! - [`user_guide_c_sketches_compile`]: every `.. code-block:: c` sketch of
//!   the user guide (and of the design document, which has none today)
//!   compiles with `clang -fsyntax-only` against the header.

use krust::abi;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The header, relative to the root, and the directory to pass to `-I`.
const HEADER: &str = "include/uapi/linux/rdma_krust.h";
const INCLUDE_DIR: &str = "include/uapi";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `clang` with `args`; panics with a clear message when clang is not
/// installed (`scripts/setup.sh` installs it).
fn clang(args: &[&str]) -> std::process::Output {
    match Command::new("clang").args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "clang not found: this test compiles C against {HEADER}; \
             install clang (scripts/setup.sh does)"
        ),
        Err(e) => panic!("running clang: {e}"),
    }
}

/// A field of an ABI structure, as `abi.rs` lays it out.
struct Field {
    name: &'static str,
    offset: usize,
    size: usize,
}

/// An ABI structure, as `abi.rs` lays it out.
struct Struct {
    rust: &'static str,
    size: usize,
    align: usize,
    fields: Vec<Field>,
}

/// The size of the field `f` selects, without a value of `T`.
fn field_size<T, F>(_f: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// `Struct`s from `Name { field, ... }`: sizes and offsets from the
/// compiler, names from the list.
macro_rules! structs {
    ($($s:ident { $($f:ident),* $(,)? })*) => {
        vec![$(Struct {
            rust: stringify!($s),
            size: size_of::<abi::$s>(),
            align: align_of::<abi::$s>(),
            fields: vec![$(Field {
                name: stringify!($f),
                offset: offset_of!(abi::$s, $f),
                size: field_size(|s: &abi::$s| &s.$f),
            }),*],
        }),*]
    };
}

/// Every `#[repr(C)]` structure of `abi.rs` and every field, in order.
fn abi_structs() -> Vec<Struct> {
    structs! {
        Version { abi_version, n_cmds, cmds }
        PortInfo { port_num, state, active_mtu, link_layer }
        DeviceInfo {
            name, node_guid, max_mr_size, max_qp_rd_atom, max_qp_init_rd_atom,
            atomic_cap, num_ports, ports, max_window,
        }
        DeviceList { devices, capacity, count, reserved }
        Addr { family, port, reserved, addr }
        Transport { set, ack_timeout, retry_count, rnr_retry, min_rnr_timer, recv_depth }
        ConnInfo {
            state, error, responder_resources, initiator_depth,
            asked_responder_resources, asked_initiator_depth,
            peer_responder_resources, peer_initiator_depth, dev_max_qp_rd_atom,
            dev_max_qp_init_rd_atom, credits, recv_depth, peer_recv_depth, iwarp, read_sinks,
            transport, device,
        }
        ConnectReq {
            dst, timeout_ms, responder_resources, initiator_depth, flags,
            transport, info,
        }
        ListenReq {
            addr, responder_resources, initiator_depth, flags, reserved,
            transport,
        }
        AcceptReq { timeout_ms, reserved, info }
        Xfer { buf, len, timeout_ms, flags }
        Expose { len, access, reserved, addr, rkey, id }
        Revoke { id, reserved }
        WindowIo { id, reserved, offset, buf, len }
        Rdma { remote_addr, rkey, timeout_ms, buf, len }
        AtomicOp {
            remote_addr, rkey, op, compare_add, swap, timeout_ms, reserved,
            result,
        }
        Bench {
            op, mode, size, iters, depth, timeout_ms, remote_addr, rkey, window,
            samples, total_ns, bytes, best_ns,
        }
    }
}

/// Public structures and enums of `abi.rs` that are not in the header, and
/// why.
const NOT_IN_HEADER: &[(&str, &str)] = &[
    (
        "WireHdr",
        "not repr(C): the wire header is 16 big-endian bytes, encoded",
    ),
    ("WireRx", "not repr(C): the receiver's check, code"),
    (
        "SetupData",
        "not repr(C): the setup data is 8 big-endian bytes, encoded",
    ),
    ("WireFault", "an enum of the receiver's check, code"),
];

/// A constant of `abi.rs` and the C expression that must equal it.
struct Const {
    rust: String,
    c: String,
    value: u64,
}

/// `RDMA_KRUST_` and the Rust path in capitals, `::` as `_`.
fn c_const_name(rust: &str) -> String {
    format!("RDMA_KRUST_{}", rust.replace("::", "_").to_uppercase())
}

/// A constant's value as `u64`, whatever its unsigned type.
trait Widen {
    fn widen(self) -> u64;
}

macro_rules! widen {
    ($($t:ty),*) => {$(
        impl Widen for $t {
            fn widen(self) -> u64 {
                u64::try_from(self).expect("fits in u64")
            }
        }
    )*};
}
widen!(u8, u16, u32, u64, usize);

/// `Const`s from paths under `abi`, each optionally `=> "C expression"`
/// (default: [`c_const_name`]).
macro_rules! consts {
    ($($($seg:ident)::+ $(=> $c:literal)?),* $(,)?) => {
        vec![$({
            let rust: String = stringify!($($seg)::+).split_whitespace().collect();
            #[allow(unused_mut, unused_assignments)]
            let mut c = c_const_name(&rust);
            $(c = $c.to_string();)?
            Const { rust, c, value: abi::$($seg)::+.widen() }
        }),*]
    };
}

/// Every `pub const` of `abi.rs` (and its `#[path]` children) but
/// [`NOT_A_VALUE`].
fn abi_consts() -> Vec<Const> {
    consts![
        ABI_VERSION,
        IOC_MAGIC,
        DEVICE_NAME_LEN,
        MAX_PORTS,
        MAX_CMDS,
        // <linux/ioctl.h>'s: the header takes them from there.
        IOC_WRITE => "_IOC_WRITE",
        IOC_READ => "_IOC_READ",
        MAX_LIST_CAPACITY,
        AF_INET,
        AF_INET6,
        state::IDLE,
        state::LISTENING,
        state::CONNECTING,
        state::CONNECTED,
        state::CLOSED,
        CONN_RAW,
        CONN_POLL,
        POLL_SPIN_US,
        CONN_SPIN,
        ACCESS_READ,
        ACCESS_WRITE,
        ACCESS_ATOMIC,
        MAX_WINDOW_SIZE,
        MAX_WINDOWS,
        ATOMIC_CMP_SWAP,
        ATOMIC_FETCH_ADD,
        BENCH_SEND,
        BENCH_WRITE,
        BENCH_READ,
        BENCH_CAS,
        BENCH_FADD,
        BENCH_LAT,
        BENCH_BW,
        BENCH_RESPOND,
        BENCH_SINK,
        BENCH_PINGPONG,
        BENCH_MAX_ITERS,
        BENCH_MAX_DEPTH,
        DEFAULT_TIMEOUT_MS,
        // transport.rs
        TRANSPORT_ACK_TIMEOUT,
        TRANSPORT_RETRY_COUNT,
        TRANSPORT_RNR_RETRY,
        TRANSPORT_MIN_RNR_TIMER,
        TRANSPORT_RECV_DEPTH,
        TRANSPORT_ALL,
        DEFAULT_ACK_TIMEOUT,
        DEFAULT_RETRY_COUNT,
        DEFAULT_RNR_RETRY,
        DEFAULT_MSG_RNR_RETRY,
        DEFAULT_MIN_RNR_TIMER,
        // wire.rs
        MAX_MSG_SIZE,
        RECV_DEPTH,
        MIN_RECV_DEPTH,
        RECV_BUF_SIZE,
        WIRE_HDR_SIZE,
        WIRE_FRAG,
        MAX_MSG_FRAGS,
        GRANT_BATCH,
        SETUP_DATA_SIZE,
        WIRE_FIRST,
        WIRE_LAST,
        WIRE_CREDIT,
        WIRE_LOW,
        WIRE_VERSION,
        WIRE_FLAGS,
        BENCH_COUNT_EVERY,
        // The commands.
        IOCTL_VERSION,
        IOCTL_LIST_DEVICES,
        IOCTL_CONNECT,
        IOCTL_LISTEN,
        IOCTL_ACCEPT,
        IOCTL_CONN_INFO,
        IOCTL_DISCONNECT,
        IOCTL_SEND,
        IOCTL_RECV,
        IOCTL_EXPOSE,
        IOCTL_REVOKE,
        IOCTL_WINDOW_READ,
        IOCTL_WINDOW_WRITE,
        IOCTL_RDMA_WRITE,
        IOCTL_RDMA_READ,
        IOCTL_ATOMIC,
        IOCTL_BENCH,
    ]
}

/// `pub const`s that are no single value, and how they are checked instead.
const NOT_A_VALUE: &[(&str, &str)] = &[(
    "ALL_CMDS",
    "a list: its entries are the IOCTL_* numbers, checked one by one",
)];

/// `Foo` or `FooBar` to `rdma_krust_foo` or `rdma_krust_foo_bar`.
fn c_struct_name(rust: &str) -> String {
    let mut s = String::from("rdma_krust");
    for ch in rust.chars() {
        if ch.is_ascii_uppercase() {
            s.push('_');
        }
        s.push(ch.to_ascii_lowercase());
    }
    s
}

/// A structure as parsed from the source text.
#[derive(Debug)]
struct ParsedStruct {
    name: String,
    repr_c: bool,
    /// Name and type text of each field, in order.
    fields: Vec<(String, String)>,
}

/// What the source text of `abi.rs` and its `#[path]` children declares.
#[derive(Debug, Default)]
struct Parsed {
    /// `NAME`, or `module::NAME` inside a `pub mod`.
    consts: Vec<String>,
    structs: Vec<ParsedStruct>,
    enums: Vec<String>,
}

/// Parses `src/abi.rs` and the files its `#[path = "..."] mod m;` lines
/// include (each must be re-exported whole, `pub use m::*;`). Line-based:
/// the files are rustfmt'ed, one item or field per line.
fn parse_abi() -> Parsed {
    let dir = root().join("src");
    let abi = read(&dir.join("abi.rs"));
    let mut texts = vec![abi.clone()];
    let lines: Vec<&str> = abi.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(file) = line
            .trim()
            .strip_prefix("#[path = \"")
            .and_then(|r| r.strip_suffix("\"]"))
        else {
            continue;
        };
        let module = lines
            .get(i + 1)
            .and_then(|l| l.trim().strip_prefix("mod "))
            .and_then(|r| r.strip_suffix(';'))
            .unwrap_or_else(|| panic!("abi.rs:{}: #[path] without `mod m;`", i + 2));
        assert!(
            abi.contains(&format!("pub use {module}::*;")),
            "abi.rs includes {file} as `mod {module}` without `pub use {module}::*;`: \
             teach this parser which of its items are public"
        );
        texts.push(read(&dir.join(file)));
    }
    let mut p = Parsed::default();
    for text in &texts {
        parse_items(text, &mut p);
    }
    p
}

fn parse_items(text: &str, p: &mut Parsed) {
    let mut attrs: Vec<&str> = Vec::new();
    let mut module: Option<&str> = None;
    let mut cur: Option<ParsedStruct> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(s) = cur.as_mut() {
            if line == "}" {
                p.structs.extend(cur.take());
            } else if !t.is_empty() && !t.starts_with("//") && !t.starts_with("#[") {
                let (name, ty) = t
                    .strip_prefix("pub ")
                    .unwrap_or(t)
                    .split_once(':')
                    .unwrap_or_else(|| panic!("a field, one per line: {line:?}"));
                let ty = ty.trim().strip_suffix(',').unwrap_or(ty.trim());
                s.fields.push((name.trim().to_string(), ty.to_string()));
            }
            continue;
        }
        if t.starts_with("#[") {
            attrs.push(t);
            continue;
        }
        if t.starts_with("//") || t.is_empty() {
            continue;
        }
        if let Some(name) = t
            .strip_prefix("pub mod ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            module = Some(name);
        } else if module.is_some() && line == "}" {
            module = None;
        } else if let Some(r) = t.strip_prefix("pub const ") {
            if !r.starts_with("fn ") {
                let name = r.split(':').next().unwrap_or(r).trim();
                p.consts.push(match module {
                    Some(m) => format!("{m}::{name}"),
                    None => name.to_string(),
                });
            }
        } else if let Some(r) = t.strip_prefix("pub struct ") {
            let name = r.trim_end_matches('{').trim();
            assert!(
                r.ends_with('{') && !name.contains(['(', ';', '<']),
                "a struct with named fields: {line:?}"
            );
            cur = Some(ParsedStruct {
                name: name.to_string(),
                repr_c: attrs.contains(&"#[repr(C)]"),
                fields: Vec::new(),
            });
        } else if let Some(r) = t.strip_prefix("pub enum ") {
            p.enums.push(r.trim_end_matches('{').trim().to_string());
        }
        attrs.clear();
    }
}

/// What the header defines: `RDMA_KRUST_*` macros and `struct rdma_krust_*`
/// definitions.
fn header_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = read(&root().join(HEADER));
    let mut defines = BTreeSet::new();
    let mut structs = BTreeSet::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(r) = t.strip_prefix("#define ") {
            let name = r.split_whitespace().next().unwrap_or("");
            if name.starts_with("RDMA_KRUST_") {
                defines.insert(name.to_string());
            }
        } else if let Some(r) = t.strip_prefix("struct ").and_then(|r| r.strip_suffix(" {")) {
            structs.insert(r.to_string());
        }
    }
    (defines, structs)
}

/// The C type a Rust field type must be in the header, as the generated
/// program names it: `u32`, `u8[64]`, `struct rdma_krust_port_info[4]`.
fn expected_type(ty: &str, size: usize, sizes: &BTreeMap<&str, usize>) -> String {
    let scalar = |t: &str| -> (String, usize) {
        match t {
            "u8" => ("u8".into(), 1),
            "u16" => ("u16".into(), 2),
            "u32" => ("u32".into(), 4),
            "u64" => ("u64".into(), 8),
            s => {
                let n = *sizes
                    .get(s)
                    .unwrap_or_else(|| panic!("field type {s}: not a scalar nor an ABI struct"));
                (format!("struct {}", c_struct_name(s)), n)
            }
        }
    };
    match ty.strip_prefix('[').and_then(|r| r.split_once(';')) {
        Some((elem, _)) => {
            let (name, n) = scalar(elem.trim());
            format!("{name}[{}]", size / n)
        }
        None => scalar(ty).0,
    }
}

/// The lines the C program must print, and the program.
fn expected_and_program(
    structs: &[Struct],
    consts: &[Const],
    parsed: &Parsed,
) -> (Vec<String>, String) {
    let sizes: BTreeMap<&str, usize> = structs.iter().map(|s| (s.rust, s.size)).collect();
    let mut want = Vec::new();
    let mut c = String::new();
    c.push_str(
        "#include <stddef.h>\n\
         #include <stdio.h>\n\
         #include <linux/rdma_krust.h>\n\n\
         #define TYPE(x) _Generic((x), __u8: \"u8\", __u16: \"u16\", __u32: \"u32\", \
         __u64: \"u64\"",
    );
    for s in structs {
        let n = c_struct_name(s.rust);
        let _ = write!(c, ", struct {n}: \"struct {n}\"");
    }
    c.push_str(", default: \"unknown\")\n\nint main(void)\n{\n");
    for s in structs {
        let n = c_struct_name(s.rust);
        let ps = parsed
            .structs
            .iter()
            .find(|p| p.name == s.rust)
            .unwrap_or_else(|| panic!("{} is in the table but not in abi.rs", s.rust));
        want.push(format!("struct {n} size {} align {}", s.size, s.align));
        let _ = writeln!(
            c,
            "\tprintf(\"struct {n} size %zu align %zu\\n\", sizeof(struct {n}), \
             _Alignof(struct {n}));"
        );
        for (f, (_, ty)) in s.fields.iter().zip(&ps.fields) {
            let t = expected_type(ty, f.size, &sizes);
            want.push(format!(
                "field {n}.{} offset {} size {} type {t}",
                f.name, f.offset, f.size
            ));
            let m = format!("((struct {n} *)0)->{}", f.name);
            let (fmt, ty_args) = if t.ends_with(']') {
                (
                    "%s[%zu]",
                    format!("TYPE({m}[0]), sizeof({m}) / sizeof({m}[0])"),
                )
            } else {
                ("%s", format!("TYPE({m})"))
            };
            let _ = writeln!(
                c,
                "\tprintf(\"field {n}.{f} offset %zu size %zu type {fmt}\\n\", \
                 offsetof(struct {n}, {f}), sizeof({m}), {ty_args});",
                f = f.name
            );
        }
    }
    for k in consts {
        let (word, value, fmt) = if k.rust.starts_with("IOCTL_") {
            ("ioctl", format!("0x{:x}", k.value), "0x%llx")
        } else {
            ("const", k.value.to_string(), "%llu")
        };
        want.push(format!("{word} {} {value}", k.c));
        let _ = writeln!(
            c,
            "\tprintf(\"{word} {name} {fmt}\\n\", (unsigned long long)({name}));",
            name = k.c
        );
    }
    c.push_str("\treturn 0;\n}\n");
    (want, c)
}

/// Checks the tables against the parsed source and the header's names;
/// returns the problems.
fn completeness(structs: &[Struct], consts: &[Const], parsed: &Parsed) -> Vec<String> {
    let mut bad = Vec::new();
    // Structures: every repr(C) one in the table, every other one excused.
    let table: BTreeSet<&str> = structs.iter().map(|s| s.rust).collect();
    for p in &parsed.structs {
        let excused = NOT_IN_HEADER.iter().any(|(n, _)| *n == p.name);
        match (p.repr_c, table.contains(p.name.as_str()), excused) {
            (true, true, false) | (false, false, true) => {}
            (true, false, _) => bad.push(format!(
                "abi.rs: #[repr(C)] struct {} is not in this test's table (nor the header?)",
                p.name
            )),
            (false, true, _) => bad.push(format!("abi.rs: struct {} is not #[repr(C)]", p.name)),
            (false, false, false) => bad.push(format!(
                "abi.rs: struct {} is neither #[repr(C)] nor in NOT_IN_HEADER",
                p.name
            )),
            (true, true, true) => bad.push(format!("{} is both in the table and excused", p.name)),
        }
    }
    for e in &parsed.enums {
        if !NOT_IN_HEADER.iter().any(|(n, _)| n == e) {
            bad.push(format!(
                "abi.rs: enum {e} is neither in the header nor in NOT_IN_HEADER"
            ));
        }
    }
    // Fields: the table's, in the order of the source.
    for s in structs {
        let Some(p) = parsed.structs.iter().find(|p| p.name == s.rust) else {
            bad.push(format!("{}: in the table, not found in abi.rs", s.rust));
            continue;
        };
        let src: Vec<&str> = p.fields.iter().map(|(n, _)| n.as_str()).collect();
        let tab: Vec<&str> = s.fields.iter().map(|f| f.name).collect();
        if src != tab {
            bad.push(format!(
                "{}: abi.rs has the fields {src:?}, this test's table {tab:?}",
                s.rust
            ));
        }
        // No implicit padding: each field starts where the previous ended
        // and the last one ends the structure.
        let mut end = 0;
        for f in &s.fields {
            if f.offset != end {
                bad.push(format!(
                    "{}.{} at {}, the previous field ends at {end}",
                    s.rust, f.name, f.offset
                ));
            }
            end = f.offset + f.size;
        }
        if end != s.size {
            bad.push(format!("{}: fields end at {end}, size {}", s.rust, s.size));
        }
    }
    // Constants: the table's are exactly the source's.
    let src: BTreeSet<&str> = parsed.consts.iter().map(String::as_str).collect();
    let mut tab: BTreeSet<&str> = consts.iter().map(|c| c.rust.as_str()).collect();
    tab.extend(NOT_A_VALUE.iter().map(|(n, _)| *n));
    for missing in src.difference(&tab) {
        bad.push(format!(
            "abi.rs: pub const {missing} is not in this test's table (nor the header?)"
        ));
    }
    for extra in tab.difference(&src) {
        bad.push(format!(
            "this test lists {extra}, abi.rs has no such pub const"
        ));
    }
    // The header: nothing the tables do not list.
    let (defines, header_structs) = header_names();
    let c_consts: BTreeSet<String> = consts.iter().map(|c| c.c.clone()).collect();
    for d in defines.difference(&c_consts) {
        bad.push(format!("{HEADER} defines {d}, which abi.rs does not have"));
    }
    let c_structs: BTreeSet<String> = structs.iter().map(|s| c_struct_name(s.rust)).collect();
    for s in header_structs.symmetric_difference(&c_structs) {
        bad.push(format!("struct {s}: in one of {HEADER} and abi.rs only"));
    }
    bad
}

/// Builds `prog.c` for `arch` (`-m64`, `-m32`) and returns its output.
fn build_and_run(dir: &Path, prog: &str, arch: &str) -> String {
    let src = dir.join("uapi_layout.c");
    let exe = dir.join(format!("uapi_layout{arch}"));
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

#[test]
fn header_matches_abi_rs() {
    let structs = abi_structs();
    let consts = abi_consts();
    let parsed = parse_abi();
    let bad = completeness(&structs, &consts, &parsed);
    assert!(
        bad.is_empty(),
        "{HEADER}, abi.rs and this test's tables disagree:\n  {}",
        bad.join("\n  ")
    );
    // Every command is in ALL_CMDS and every entry of ALL_CMDS a command.
    let cmds: Vec<u64> = consts
        .iter()
        .filter(|c| c.rust.starts_with("IOCTL_"))
        .map(|c| c.value)
        .collect();
    let all: Vec<u64> = abi::ALL_CMDS.iter().map(|&c| u64::from(c)).collect();
    assert_eq!(cmds, all, "the IOCTL_* constants, in order, are ALL_CMDS");

    let (want, prog) = expected_and_program(&structs, &consts, &parsed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("uapi_header");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    // Both builds first, then one report of every line that differs.
    let mut diff = Vec::new();
    for arch in ["-m64", "-m32"] {
        let got = build_and_run(&dir, &prog, arch);
        let got: Vec<&str> = got.lines().collect();
        for i in 0..want.len().max(got.len()) {
            let (w, g) = (want.get(i).map(String::as_str), got.get(i).copied());
            if w != g {
                diff.push(format!(
                    "abi.rs: {}\n    C {arch}: {}",
                    w.unwrap_or("(nothing)"),
                    g.unwrap_or("(nothing)")
                ));
            }
        }
    }
    assert!(
        diff.is_empty(),
        "{HEADER} differs from abi.rs in {} of {} lines (64-bit and 32-bit):\n  {}",
        diff.len(),
        2 * want.len(),
        diff.join("\n  ")
    );
    let fields: usize = structs.iter().map(|s| s.fields.len()).sum();
    let ioctls = consts
        .iter()
        .filter(|c| c.rust.starts_with("IOCTL_"))
        .count();
    println!(
        "{HEADER}: {} structs, {fields} fields, {} constants and {ioctls} command numbers \
         agree with abi.rs ({} lines, 64-bit and 32-bit)",
        structs.len(),
        consts.len() - ioctls,
        want.len()
    );
}

/// The header stands alone, as the kernel's own uapi headers must: strict
/// C90 (what the kernel's `usr/include` check uses) and C++, nothing but the
/// header included.
#[test]
fn header_compiles_alone() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("uapi_header");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let src = dir.join("alone.c");
    std::fs::write(
        &src,
        "#include <linux/rdma_krust.h>\n\
         unsigned long rdma_krust_cmd = RDMA_KRUST_IOCTL_BENCH;\n",
    )
    .expect("write the C file");
    let inc = root().join(INCLUDE_DIR);
    let inc = inc.to_str().expect("a UTF-8 path");
    let src = src.to_str().expect("a UTF-8 path");
    for lang in [["-x", "c", "-std=c90"], ["-x", "c++", "-std=c++11"]] {
        let mut args = lang.to_vec();
        args.extend(["-pedantic", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"]);
        args.extend(["-I", inc, src]);
        let out = clang(&args);
        assert!(
            out.status.success(),
            "{HEADER} alone, {}: {}",
            lang.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The documents whose C sketches must compile against the header.
const SKETCH_DOCS: &[&str] = &["Documentation/user-guide.rst", "Documentation/design.rst"];

/// What a sketch may use without declaring it: the parameters of the
/// function each sketch becomes the body of.
const SKETCH_CONTEXT: &str = "int fd, int fd2, const void *msg, size_t n, void *data, \
     void *local, __u64 addr, __u32 rkey, __u64 len, struct rdma_krust_addr a";

/// A literal block of an rst file: the directive that opens it (a line
/// ending in `::`, or `.. code-block:: LANG`), the line number of its first
/// line, and its text without the common indentation.
struct Block {
    opener: String,
    line: usize,
    text: String,
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// Every literal block of `text`: the indented lines after a line that ends
/// in `::` or is a `.. code-block::` directive, up to the first non-blank
/// line indented no deeper than that line.
fn literal_blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        // `.. note::` and other directives hold prose, not literal text.
        let literal =
            t.starts_with(".. code-block::") || (t.ends_with("::") && !t.starts_with(".. "));
        if !literal {
            continue;
        }
        let mut body = Vec::new();
        let mut first = None;
        for (j, b) in lines.iter().enumerate().skip(i + 1) {
            if b.trim().is_empty() {
                if first.is_some() {
                    body.push("");
                }
                continue;
            }
            if indent(b) <= indent(l) {
                break;
            }
            first.get_or_insert(j + 1);
            body.push(b);
        }
        while body.last() == Some(&"") {
            body.pop();
        }
        let (Some(line), false) = (first, body.is_empty()) else {
            continue;
        };
        let cut = body
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| indent(b))
            .min()
            .unwrap_or(0);
        let text = body
            .iter()
            .map(|b| b.get(cut..).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        blocks.push(Block {
            opener: t.to_string(),
            line,
            text,
        });
    }
    blocks
}

/// Every `.. code-block:: c` of [`SKETCH_DOCS`] compiles against the header
/// with `clang -fsyntax-only`. Mechanically, each sketch becomes, unchanged,
/// the body of a block inside `void sketch(SKETCH_CONTEXT)`, after the libc
/// headers the sketches use and `<linux/rdma_krust.h>`; a `#line` directive
/// makes clang's messages point into the document. A literal block of those
/// documents that looks like C but is not marked `.. code-block:: c` fails,
/// so a sketch cannot escape the check.
#[test]
fn user_guide_c_sketches_compile() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("uapi_header");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let inc = root().join(INCLUDE_DIR);
    let mut bad = Vec::new();
    let mut compiled = Vec::new();
    for doc in SKETCH_DOCS {
        let text = read(&root().join(doc));
        for b in literal_blocks(&text) {
            let where_ = format!("{doc}:{}", b.line);
            if b.opener != ".. code-block:: c" {
                if ["ioctl(", "struct ", "RDMA_KRUST_"]
                    .iter()
                    .any(|c| b.text.contains(c))
                {
                    bad.push(format!(
                        "{where_}: C in a block not marked `.. code-block:: c`"
                    ));
                }
                continue;
            }
            if !b.text.contains("RDMA_KRUST_IOCTL_") {
                bad.push(format!(
                    "{where_}: a C sketch that issues no RDMA_KRUST_IOCTL_* command"
                ));
            }
            let src = dir.join(format!("sketch_{}.c", compiled.len()));
            let prog = format!(
                "#include <arpa/inet.h>\n#include <fcntl.h>\n#include <stddef.h>\n\
                 #include <stdint.h>\n#include <stdlib.h>\n#include <sys/ioctl.h>\n\
                 #include <sys/socket.h>\n#include <unistd.h>\n\
                 #include <linux/rdma_krust.h>\n\n\
                 void sketch({SKETCH_CONTEXT});\n\
                 void sketch({SKETCH_CONTEXT})\n{{\n{{\n#line {} \"{}\"\n{}\n}}\n}}\n",
                b.line,
                root().join(doc).display(),
                b.text
            );
            std::fs::write(&src, prog).expect("write the C file");
            let out = clang(&[
                "-std=gnu11",
                "-Wall",
                "-Wextra",
                "-Wno-unused-parameter",
                "-Werror",
                "-fsyntax-only",
                "-I",
                inc.to_str().expect("a UTF-8 path"),
                src.to_str().expect("a UTF-8 path"),
            ]);
            if !out.status.success() {
                bad.push(format!(
                    "{where_}: the sketch does not compile ({}):\n{}",
                    src.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            compiled.push(where_);
        }
    }
    assert!(bad.is_empty(), "C sketches:\n  {}", bad.join("\n  "));
    assert!(
        compiled.iter().any(|w| w.contains("user-guide.rst")),
        "no `.. code-block:: c` found in the user guide"
    );
    println!(
        "{} C sketches compile against {HEADER}: {}",
        compiled.len(),
        compiled.join(", ")
    );
}
