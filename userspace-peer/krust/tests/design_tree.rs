// SPDX-License-Identifier: GPL-2.0

//! `Documentation/design.rst` opens with the tree, a folder a line. This
//! holds that list to the folders that hold tracked files (`git ls-files`):
//! each such folder is listed, or falls under an entry ending in `*/`
//! (any folder below it), and each entry names a folder that exists.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The entries of the literal block under "The tree".
fn listed(design: &str) -> Vec<String> {
    let start = design
        .find("\nThe tree\n")
        .expect("design.rst has no section \"The tree\"");
    let block = design[start..]
        .split_once("::\n\n")
        .expect("no literal block under \"The tree\"")
        .1;
    block
        .lines()
        .take_while(|l| l.starts_with("    "))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// The folders that hold tracked files, with a trailing `/`.
fn tracked_folders(root: &Path) -> BTreeSet<String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
        .expect("run git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    let mut dirs = BTreeSet::new();
    for f in out.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let f = String::from_utf8_lossy(f);
        if let Some((d, _)) = f.rsplit_once('/') {
            dirs.insert(format!("{d}/"));
        }
    }
    dirs
}

#[test]
fn design_tree_matches_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let design = std::fs::read_to_string(root.join("Documentation/design.rst"))
        .expect("read Documentation/design.rst");
    let entries = listed(&design);
    assert!(
        entries.len() > 10,
        "the tree lists {} folders",
        entries.len()
    );
    let (globs, plain): (Vec<_>, Vec<_>) = entries.iter().partition(|e| e.ends_with("*/"));
    let globs: Vec<&str> = globs.iter().map(|g| g.trim_end_matches("*/")).collect();
    for e in &entries {
        assert!(
            e.ends_with('/'),
            "{e:?}: an entry is a folder, ending in '/'"
        );
    }
    let dirs = tracked_folders(&root);
    let plain: BTreeSet<&str> = plain.iter().map(|s| s.as_str()).collect();
    for d in &dirs {
        let under_glob = globs.iter().any(|g| d.starts_with(g) && d.len() > g.len());
        assert!(
            plain.contains(d.as_str()) || under_glob,
            "{d} holds tracked files but design.rst's tree does not list it"
        );
    }
    for e in &plain {
        assert!(
            dirs.contains(*e),
            "design.rst lists {e}, which holds no tracked file"
        );
    }
    for g in &globs {
        assert!(
            dirs.iter().any(|d| d.starts_with(g) && d.len() > g.len()),
            "design.rst lists {g}*/, which has no folder below it"
        );
    }
}
