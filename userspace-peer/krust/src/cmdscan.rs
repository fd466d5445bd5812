// SPDX-License-Identifier: GPL-2.0

//! Finds the binaries' command lines in the repository's scripts and
//! documents, for their tests: each binary's `cmdlines` tests check that
//! what others write for it (`scripts/*.sh`, README.md,
//! `Documentation/*.rst`) still means something to it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's top directory.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files of `dir` whose names end in `ext`, with their text, sorted.
pub fn files(dir: &str, ext: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|f| f.ok().map(|f| f.path()))
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            (
                format!(
                    "{dir}/{}",
                    p.file_name().unwrap_or_default().to_string_lossy()
                ),
                text,
            )
        })
        .collect();
    out.sort();
    out
}

/// `text`'s lines with the ones continued by a trailing `\` joined, each
/// with its line number (of its first line).
pub fn joined_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    for (i, l) in text.lines().enumerate() {
        let (n, mut s) = cur.take().unwrap_or((i + 1, String::new()));
        match l.trim_end().strip_suffix('\\') {
            Some(head) => {
                s.push_str(head);
                s.push(' ');
                cur = Some((n, s));
            }
            None => {
                s.push_str(l);
                out.push((n, s));
            }
        }
    }
    out.extend(cur);
    out
}

/// The options (`--long` and `-s` forms, aliases too) `sub` takes,
/// including the binary's global ones (a binary's option that is not
/// global is refused after the subcommand).
pub fn options(cmd: &clap::Command, sub: &str) -> Option<BTreeSet<String>> {
    let s = cmd.find_subcommand(sub)?;
    let mut out = BTreeSet::new();
    let global = cmd.get_arguments().filter(|a| a.is_global_set());
    for a in global.chain(s.get_arguments()) {
        for l in a
            .get_long()
            .into_iter()
            .chain(a.get_all_aliases().unwrap_or_default())
        {
            out.insert(format!("--{l}"));
        }
        for c in a
            .get_short()
            .into_iter()
            .chain(a.get_all_short_aliases().unwrap_or_default())
        {
            out.insert(format!("-{c}"));
        }
    }
    Some(out)
}

/// Where a shell word ends the command it is part of: a redirection, a
/// pipe, a list operator, the end of a command substitution.
pub fn ends_command(w: &str) -> bool {
    w.contains('>')
        || w.contains('<')
        || w.starts_with('#')
        || matches!(w, "|" | "||" | "&&" | "&" | ";")
}

/// Checks that every option the scripts (`scripts/*.sh`, the guest suite's
/// `scripts/tests/*.sh`) give a binary,
/// directly or through a helper, is one the subcommand takes: a script line
/// that a change of the command line broke fails here, even one that no
/// test quotes. (Values are not checked: they are variables.)
///
/// `cmd` is the binary's command line, built; `is_tool` says whether a
/// shell word names the binary (`"$TOOL"`, a path to it); `helpers` are the
/// scripts' functions that pass their arguments on to it, with the
/// subcommands they run. Returns how many invocations it found, or the
/// first line that is wrong.
pub fn check_script_options(
    cmd: &clap::Command,
    is_tool: impl Fn(&str) -> bool,
    helpers: &[(&str, &[&str])],
) -> Result<usize, String> {
    let mut seen = 0;
    let scripts = files("scripts", ".sh")
        .into_iter()
        .chain(files("scripts/tests", ".sh"));
    for (name, text) in scripts {
        for (n, line) in joined_lines(&text) {
            if line.trim_start().starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            for (i, w) in words.iter().enumerate() {
                // `out=$("$TOOL" ...`, `j=$(bench_pair ...`: the command in
                // the substitution.
                let w = w.rsplit("$(").next().unwrap_or(w);
                // The subcommands, and where their arguments start.
                let (subs, from): (Vec<&str>, usize) = if is_tool(w) {
                    // Global options first, then the subcommand.
                    let takes_value = |g: &str| {
                        cmd.get_arguments().any(|a| {
                            a.get_long().is_some_and(|l| g == format!("--{l}"))
                                && a.get_action().takes_values()
                        })
                    };
                    let mut j = i + 1;
                    while let Some(g) = words.get(j).filter(|g| g.starts_with('-')) {
                        // Before the subcommand, only the binary's own
                        // options: a subcommand's is refused there.
                        let own = cmd.get_arguments().any(|a| {
                            a.get_long().is_some_and(|l| *g == format!("--{l}"))
                                || a.get_short().is_some_and(|c| *g == format!("-{c}"))
                        });
                        if !own {
                            return Err(format!(
                                "{name}:{n}: {g} before the subcommand is not an option \
                                 of the binary's own (give it after the subcommand): {line}"
                            ));
                        }
                        j += if takes_value(g) { 2 } else { 1 };
                    }
                    match words.get(j).map(|s| s.trim_end_matches(')')) {
                        Some(s) if s.chars().all(|c| c.is_ascii_lowercase() || c == '-') => {
                            (vec![s], j + 1)
                        }
                        // "$sender", `]`, the end of a message: not a
                        // literal subcommand.
                        _ => continue,
                    }
                } else {
                    match helpers.iter().find(|(h, _)| *h == w) {
                        Some((_, subs)) => (subs.to_vec(), i + 1),
                        None => continue,
                    }
                };
                seen += 1;
                for sub in subs {
                    let known = options(cmd, sub)
                        .ok_or_else(|| format!("{name}:{n}: no subcommand {sub}: {line}"))?;
                    for word in &words[from..] {
                        let a = word.trim_end_matches(')');
                        if ends_command(a) {
                            break;
                        }
                        let flag = a.split('=').next().unwrap_or(a);
                        let is_flag = flag.len() > 1
                            && flag.starts_with('-')
                            && !flag[1..].starts_with(|c: char| c.is_ascii_digit());
                        if is_flag && !known.contains(flag) {
                            return Err(format!("{name}:{n}: {sub} takes no {flag}: {line}"));
                        }
                        // The end of a command substitution.
                        if a.len() < word.len() {
                            break;
                        }
                    }
                }
            }
        }
    }
    Ok(seen)
}

/// The command lines of the binary `prog` that README.md and
/// Documentation/*.rst quote (literal blocks: `rdma-krust ...`, after `A$ `,
/// `sudo `, `target/release/`): the words after `prog`, with their
/// continuations, comments and trailing `&` off; each with its file and
/// line number.
pub fn doc_command_lines(prog: &str) -> Vec<(String, usize, String)> {
    let mut docs = files("Documentation", ".rst");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap_or_default();
    docs.push(("README.md".into(), readme));
    let mut out = Vec::new();
    for (name, text) in docs {
        for (n, line) in joined_lines(&text) {
            // A literal block's line is indented; README's code block
            // names the binary by its path.
            if !line.starts_with(' ') && !line.starts_with("target/release/") {
                continue;
            }
            let mut l = line.trim();
            for prefix in ["A$ ", "B$ ", "sudo ", "target/release/"] {
                l = l.strip_prefix(prefix).unwrap_or(l);
            }
            let Some(args) = l.strip_prefix(prog).and_then(|a| a.strip_prefix(' ')) else {
                continue;
            };
            let args = args.split(" #").next().unwrap_or(args).trim();
            let args = args.strip_suffix('&').unwrap_or(args).trim();
            out.push((name.clone(), n, args.to_string()));
        }
    }
    out
}
