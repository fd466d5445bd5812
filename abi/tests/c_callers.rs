// SPDX-License-Identifier: GPL-2.0

//! The uapi header as C callers see it:
//! - [`header_compiles_alone`]: as strict C90 and as C++;
//! - [`user_guide_c_sketches_compile`]: every `.. code-block:: c` sketch of
//!   the user guide (and of the design document, which has none today)
//!   compiles with `clang -fsyntax-only` against it.

use std::path::Path;

mod common;
use common::{clang, read, root, HEADER, INCLUDE_DIR};

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
