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
//! - [`header_compiles_alone`]: as strict C90 and as C++.
//! - [`user_guide_c_sketches_compile`]: every `.. code-block:: c` sketch of
//!   the user guide (and of the design document, which has none today)
//!   compiles with `clang -fsyntax-only` against the header.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The header, relative to the root, and the directory to pass to `-I`.
const HEADER: &str = "include/uapi/linux/rdma_krust.h";
const INCLUDE_DIR: &str = "include/uapi";
/// bindgen's input, which carries the command numbers across.
const HELPER: &str = "abi/uapi_helper.h";
/// The Rust names of the header's items.
const ABI_RS: &str = "abi/src/abi/mod.rs";

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

/// Builds `prog` for `arch` (`-m64`, `-m32`) as `NAME.c`, `NAME-m64` and so
/// on, and returns its output.
fn build_and_run(name: &str, prog: &str, arch: &str) -> String {
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
