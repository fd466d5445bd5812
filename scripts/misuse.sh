#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The misuse suite of kernel::rdma (kernel/tests/misuse/), against a kernel
# that carries the series (CONFIG_RUST_RDMA_ABSTRACTIONS):
#
#   scripts/misuse.sh compile-fail [KDIR]  each kernel/tests/misuse/compile-fail/*.rs
#                                          is built alone as a module (the module
#                                          boilerplate appended); it must
#                                          fail with the error its "// expect:"
#                                          line names ("builds": must build)
#   scripts/misuse.sh build [KDIR]         builds the run-time check module,
#                                          kernel/tests/misuse/runtime/rdma_misuse.ko,
#                                          which the guest test kernel_rdma_misuse loads
#
# KDIR defaults to the project's cached main kernel. compile-fail prints
# one line a check and ends with "misuse-compile-fail: N passed, N failed".
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MISUSE=$ROOT/kernel/tests/misuse
export PATH="$HOME/.cargo/bin:$PATH"
mode=${1:-}
KDIR=${2:-$("$ROOT/scripts/build-kernel.sh" --print-kdir)}

# module_boilerplate: the module each compile-fail check is built as; the
# check itself only misuses the API (and imports the prelude).
module_boilerplate() {
	cat <<'EOT'

module! {
    type: M,
    name: "misuse_cf",
    author: "rdma-krust developers",
    description: "compile-fail check",
    license: "GPL",
}

struct M;

impl kernel::Module for M {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(M)
    }
}
EOT
}

has_series() { grep -q '^CONFIG_RUST_RDMA_ABSTRACTIONS=y' "$KDIR/.config" 2>/dev/null; }

case "$mode" in
build)
	has_series || { echo "misuse: $KDIR has no kernel::rdma (CONFIG_RUST_RDMA_ABSTRACTIONS)" >&2; exit 1; }
	make -s -C "$KDIR" LLVM=1 M="$MISUSE/runtime" modules
	;;
compile-fail)
	passed=0
	failed=0
	if ! has_series; then
		echo "misuse-compile-fail: FAIL $KDIR has no kernel::rdma (CONFIG_RUST_RDMA_ABSTRACTIONS)"
		echo "misuse-compile-fail: 0 passed, 1 failed"
		exit 1
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	for src in "$MISUSE"/compile-fail/*.rs; do
		name=$(basename "$src" .rs)
		want=$(sed -n 's|^// expect: ||p' "$src" | head -1)
		d=$work/$name
		mkdir -p "$d"
		# The check, then what makes it a module (the same for all).
		{ cat "$src"; module_boilerplate; } >"$d/misuse_cf.rs"
		echo 'obj-m := misuse_cf.o' >"$d/Kbuild"
		if make -s -C "$KDIR" LLVM=1 M="$d" modules >"$d/log" 2>&1; then
			built=1
		else
			built=0
		fi
		if [ "$want" = builds ]; then
			if [ "$built" = 1 ]; then
				verdict=PASS why="builds"
			else
				verdict=FAIL why="does not build: $(grep -m1 '^error' "$d/log" || tail -1 "$d/log")"
			fi
		elif [ "$built" = 1 ]; then
			verdict=FAIL why="builds; expected $want"
		elif grep -qF -- "$want" "$d/log"; then
			verdict=PASS why="$(grep -m1 -F -- "$want" "$d/log")"
		else
			verdict=FAIL why="failed, but not with $want: $(grep -m1 '^error' "$d/log" || tail -1 "$d/log")"
		fi
		if [ "$verdict" = PASS ]; then
			passed=$((passed + 1))
			echo "misuse-compile-fail: PASS $name: $why"
		else
			failed=$((failed + 1))
			echo "misuse-compile-fail: FAIL $name: $why"
			sed 's/^/    /' "$d/log" | head -40
		fi
	done
	echo "misuse-compile-fail: $passed passed, $failed failed"
	[ "$failed" = 0 ]
	;;
*)
	sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
