// SPDX-License-Identifier: GPL-2.0

//! `include/uapi/linux/rdma_krust.h`, the one definition of the ioctl ABI,
//! and what its generation cannot guarantee.
//!
//! bindgen makes the Rust types and numbers of the module and of this
//! crate from the header, so their layouts are the header's. What is left:
//! - [`header_layout_is_the_same_for_32_and_64_bit_callers`]: a C program
//!   generated from the header's own structures prints every size,
//!   alignment and field offset, built for 64-bit and for 32-bit x86; the
//!   two outputs must be equal (a 32-bit process's ioctls reach the module
//!   through `compat_ioctl` unconverted) and no structure has implicit
//!   padding (its bytes would leak kernel memory on output).
//! - [`rust_names_are_the_headers`]: `abi.rs` names each header item by
//!   hand (`RECV_DEPTH = RDMA_KRUST_RECV_DEPTH`); each name must be the
//!   header's without its prefix, every value constant of the header must
//!   have one, every command must have its line in `uapi_helper.h`, and
//!   `abi::ALL_CMDS` must be the header's commands, in order, with the
//!   values the C macros give.
//!
//! `tests/c_callers.rs` compiles the header alone and the documents' C
//! sketches against it.

use std::collections::BTreeSet;
use std::fmt::Write as _;

mod common;
use common::{build_and_run, read, root, HEADER};

/// bindgen's input, which carries the command numbers across.
const HELPER: &str = "abi/uapi_helper.h";
/// The Rust names of the header's items.
const ABI_RS: &str = "abi/src/abi/mod.rs";

/// `text` without its `/* */` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find("*/").map_or(rest.len(), |j| i + j + 2);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// What the header defines: its structures with their fields in order, its
/// value constants (`RDMA_KRUST_*` but the commands and the include guard)
/// and its commands (`RDMA_KRUST_IOCTL_*`), each in the header's order.
struct Header {
    structs: Vec<(String, Vec<String>)>,
    consts: Vec<String>,
    cmds: Vec<String>,
}

fn parse_header() -> Header {
    let text = strip_comments(&read(&root().join(HEADER)));
    let mut h = Header {
        structs: Vec::new(),
        consts: Vec::new(),
        cmds: Vec::new(),
    };
    let mut cur: Option<(String, Vec<String>)> = None;
    for l in text.lines().map(str::trim) {
        if let Some((_, fields)) = cur.as_mut() {
            if l == "};" {
                h.structs.extend(cur.take());
            } else if let Some(decl) = l.strip_suffix(';') {
                let name = decl.split('[').next().unwrap_or(decl);
                let name = name.rsplit([' ', '\t']).next().unwrap_or(name);
                fields.push(name.to_string());
            }
        } else if let Some(r) = l.strip_prefix("struct ") {
            if let Some(name) = r.strip_suffix(" {") {
                cur = Some((name.to_string(), Vec::new()));
            }
        } else if let Some(r) = l.strip_prefix("#define RDMA_KRUST_") {
            let name = r.split([' ', '\t']).next().unwrap_or(r);
            match name.strip_prefix("IOCTL_") {
                Some(cmd) => h.cmds.push(cmd.to_string()),
                None => h.consts.push(name.to_string()),
            }
        }
    }
    assert!(cur.is_none(), "{HEADER}: a structure without its `}};`");
    assert!(
        !h.structs.is_empty() && !h.consts.is_empty() && !h.cmds.is_empty(),
        "{HEADER}: nothing parsed"
    );
    h
}

/// A C program that prints, for every structure of the header, `S name
/// size align`, then `F name.field offset size` for each field, and for
/// every command `C NAME value`.
fn layout_program(h: &Header) -> String {
    let mut p = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <linux/rdma_krust.h>\n\
         #define FIELD(s, f) printf(\"F %s.%s %zu %zu\\n\", #s, #f, \
         offsetof(struct s, f), sizeof(((struct s *)0)->f))\n\
         int main(void)\n{\n",
    );
    for (s, fields) in &h.structs {
        writeln!(
            p,
            "\tprintf(\"S {s} %zu %zu\\n\", sizeof(struct {s}), _Alignof(struct {s}));"
        )
        .unwrap();
        for f in fields {
            writeln!(p, "\tFIELD({s}, {f});").unwrap();
        }
    }
    for c in &h.cmds {
        writeln!(
            p,
            "\tprintf(\"C {c} %#x\\n\", (unsigned int)RDMA_KRUST_IOCTL_{c});"
        )
        .unwrap();
    }
    p.push_str("\treturn 0;\n}\n");
    p
}

#[test]
fn header_layout_is_the_same_for_32_and_64_bit_callers() {
    let h = parse_header();
    let prog = layout_program(&h);
    let m64 = build_and_run("layout", &prog, "-m64");
    let m32 = build_and_run("layout", &prog, "-m32");
    let diff: Vec<String> = m64
        .lines()
        .zip(m32.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("64-bit: {a}\n    32-bit: {b}"))
        .collect();
    assert!(
        diff.is_empty() && m64.lines().count() == m32.lines().count(),
        "{HEADER} lays out differently for 32-bit callers:\n  {}",
        diff.join("\n  ")
    );
    // No implicit padding: each field starts where the previous one ended
    // and the last one ends the structure.
    let mut bad = Vec::new();
    let mut cur: Option<(String, usize, usize)> = None;
    let close = |cur: &Option<(String, usize, usize)>, bad: &mut Vec<String>| {
        if let Some((s, size, end)) = cur {
            if size != end {
                bad.push(format!("struct {s}: fields end at {end}, size {size}"));
            }
        }
    };
    for l in m64.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        let num = |i: usize| w[i].parse::<usize>().expect("a number");
        match w[0] {
            "S" => {
                close(&cur, &mut bad);
                cur = Some((w[1].to_string(), num(2), 0));
            }
            "F" => {
                let (_, _, end) = cur.as_mut().expect("a field after its structure");
                if num(2) != *end {
                    bad.push(format!(
                        "{} at {}, the previous field ends at {end}",
                        w[1], w[2]
                    ));
                }
                *end = num(2) + num(3);
            }
            _ => {}
        }
    }
    close(&cur, &mut bad);
    assert!(
        bad.is_empty(),
        "implicit padding in {HEADER}:\n  {}",
        bad.join("\n  ")
    );
    let fields: usize = h.structs.iter().map(|(_, f)| f.len()).sum();
    println!(
        "{HEADER}: {} structures, {fields} fields, the same for 64-bit and 32-bit \
         callers, no padding",
        h.structs.len()
    );
}

/// The `NAME: TYPE = C_NAME;` lines of `abi.rs`'s `from_header!` blocks,
/// with the `pub mod` each is in.
fn abi_rs_names() -> Vec<(Option<String>, String, String)> {
    let text = read(&root().join(ABI_RS));
    let mut names = Vec::new();
    let mut module = None;
    for l in text.lines() {
        let t = l.trim();
        if let Some(m) = t
            .strip_prefix("pub mod ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            module = Some(m.to_string());
        } else if l == "}" {
            module = None;
        } else if let Some((name, rest)) = t.split_once(": ") {
            let Some(c) = rest.split_once(" = ").map(|(_, c)| c) else {
                continue;
            };
            let Some(c) = c.strip_suffix(';') else {
                continue;
            };
            if c.starts_with("RDMA_KRUST_") || c.starts_with("RKRUST_CMD_") {
                names.push((module.clone(), name.to_string(), c.to_string()));
            }
        }
    }
    names
}

#[test]
fn rust_names_are_the_headers() {
    let h = parse_header();
    let names = abi_rs_names();
    let mut bad = Vec::new();
    let mut named = BTreeSet::new();
    let mut cmds = Vec::new();
    for (module, name, c) in &names {
        let want = match (module.as_deref(), name.strip_prefix("IOCTL_")) {
            (None, Some(cmd)) => {
                cmds.push(cmd.to_string());
                format!("RKRUST_CMD_{cmd}")
            }
            (None, None) => format!("RDMA_KRUST_{name}"),
            (Some(m), _) => format!("RDMA_KRUST_{}_{name}", m.to_uppercase()),
        };
        if *c != want {
            bad.push(format!("{ABI_RS}: {name} names {c}, not {want}"));
        }
        named.insert(c.trim_start_matches("RDMA_KRUST_").to_string());
    }
    for c in &h.consts {
        if !named.contains(c) {
            bad.push(format!("{HEADER}: RDMA_KRUST_{c} has no name in {ABI_RS}"));
        }
    }
    if cmds != h.cmds {
        bad.push(format!(
            "{ABI_RS} names the commands {cmds:?}, {HEADER} has {:?}",
            h.cmds
        ));
    }
    let helper = read(&root().join(HELPER));
    for c in &h.cmds {
        if !helper.lines().any(|l| l == format!("RKRUST_CMD({c});")) {
            bad.push(format!("{HELPER}: no RKRUST_CMD({c}); line"));
        }
    }
    assert!(bad.is_empty(), "the Rust names:\n  {}", bad.join("\n  "));

    // ALL_CMDS: the header's commands, in its order, with the C values.
    let c_values: Vec<String> = build_and_run("cmds", &layout_program(&h), "-m64")
        .lines()
        .filter_map(|l| l.strip_prefix("C "))
        .map(|l| l.split(' ').nth(1).unwrap_or("").to_string())
        .collect();
    let rust: Vec<String> = abi::ALL_CMDS.iter().map(|c| format!("{c:#x}")).collect();
    assert_eq!(rust, c_values, "abi::ALL_CMDS against {HEADER}'s commands");
    println!(
        "{ABI_RS}: {} names, {} commands, as in {HEADER}",
        names.len(),
        rust.len()
    );
}
