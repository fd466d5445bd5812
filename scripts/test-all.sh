#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Every test of rdma-krust, from a fresh Debian 12 machine:
#   1. scripts/setup.sh installs what is missing (apt, rust-src, bindgen);
#      with KRUST_NO_INSTALL=1 it installs nothing and, if something is
#      missing, says what in one line: then this exits 2 too;
#   2. formatting: rustfmt over the module crate and the userspace crate;
#      the kernel::rdma series against its sources (scripts/kernel-series.sh);
#      the provider fixes sendable as they are (scripts/kernel-fixes.sh);
#      the documentation built and its facts in one place
#      (scripts/docs-check.sh);
#   3. the kernel build (cached), then clippy over the module (its build, on
#      the kernel's kernel::rdma bindings, and again on its own) and the tool;
#   4. cargo test of userspace-peer (ABI layout, the C header, argument
#      parsing, printing), then scripts/install-test.sh (modules_install);
#   5. scripts/qemu-test.sh: module, tool, guest suite, once per provider
#      in KRUST_PROVIDERS (default "rxe siw": soft-RoCE and soft-iWARP);
#   6. the two-host suite (scripts/qemu-test.sh --pair; KRUST_PAIR=never
#      skips it);
#   7. the guest suite on the debug kernel (lockdep, KASAN, kmemleak,
#      DEBUG_ATOMIC_SLEEP, DEBUG_LIST), once per provider in
#      KRUST_DEBUG_PROVIDERS (default "rxe"), when KRUST_DEBUG says so: "auto"
#      (the default) runs it if that kernel is cached, so a cold machine
#      builds only the main kernel; "always" builds it if needed (about 9
#      min more); "never" skips it.
# The last line is "total: N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
cd "$ROOT"

bash scripts/setup.sh || {
	rc=$?
	echo "test-all: setup failed"
	echo "total: 0 passed, 1 failed"
	exit "$rc"
}

passed=0
failed=0
# What failed, one line each, repeated before the last line: the end of a
# long log names its failures.
failures=()
count() { # VERDICT NAME
	if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	[ "$1" = PASS ] || failures+=("$2")
	echo "test-all: $1 $2"
}

# Formatting, as the kernel's `make rustfmtcheck` would.
if rustfmt --check rdma_krust.rs && rustfmt --edition 2021 --check kernel/rust/kernel/rdma.rs &&
	(cd userspace-peer && cargo fmt --check); then
	count PASS rustfmt
else
	count FAIL rustfmt
fi

# The kernel::rdma series is what its sources make (scripts/kernel-series.sh:
# kernel/rust/ and kernel/series/ against kernel/patches/rust-rdma/).
if scripts/kernel-series.sh check; then
	count PASS kernel_series_matches_sources
else
	count FAIL kernel_series_matches_sources
fi

# The provider fixes are sendable (scripts/kernel-fixes.sh): git
# format-patch form, applied in order to the pristine 6.12 files,
# checkpatch --strict clean but for the sign-off, a short subject, Fixes:.
if scripts/kernel-fixes.sh check; then
	count PASS provider_fixes_sendable
else
	count FAIL provider_fixes_sendable
fi

# The documentation builds with Sphinx, warnings as errors, and states no
# test count and no build, CI or suite time outside
# Documentation/timings.rst (scripts/docs-check.sh).
if scripts/docs-check.sh; then
	count PASS docs_build_and_facts
else
	count FAIL docs_build_and_facts
fi

# Lints: the module under the kernel's clippy setup (make CLIPPY=1, which is
# also its build), and the tool under clippy with warnings as errors.
kdir=$(scripts/build-kernel.sh --print-kdir)
scripts/build-kernel.sh || { echo "test-all: kernel build failed"; echo "total: $passed passed, $((failed + 1)) failed"; exit 1; }
# warnings LOG: whether a build's LOG holds a warning or an error: rustc's
# and clippy's (at the start of a line), the compiler's and objtool's
# ("file.o: warning: objtool: ..."), and modpost's.
warnings() { grep -qE '^(warning|error)|: (warning|error):|objtool:|^WARNING:' "$1"; }
clippy_log=$(mktemp)
touch rdma_krust.rs # make the crate rebuild under clippy
if make -s KDIR="$kdir" CLIPPY=1 modules >"$clippy_log" 2>&1 && ! warnings "$clippy_log"; then
	count PASS module_clippy
else
	cat "$clippy_log"
	count FAIL module_clippy
fi
rm -f "$clippy_log"
# The test kernels carry the series: the module built above must use the
# kernel's RDMA bindings and helpers and define none of its own; built with
# KRUST_OWN_RDMA=1 (what a kernel without the series gets), it must build
# them from the same sources, warning-free. Then the default build again.
own_log=$(mktemp)
# helpers KO: how many rust_helper_* functions KO defines. grep -c reads
# all of nm's output: grep -q would stop at the first match, and nm, with
# more than a pipe's buffer still to write, would die of SIGPIPE, which
# pipefail makes the pipeline's status.
helpers() { nm "$1" | grep -c ' T rust_helper_'; }
if grep -q '^CONFIG_RUST_RDMA_ABSTRACTIONS=y' "$kdir/.config" &&
	[ "$(helpers rdma_krust.ko)" = 0 ]; then
	count PASS module_uses_kernel_rdma
else
	echo "test-all: the module defines rust_helper_* or the kernel lacks CONFIG_RUST_RDMA_ABSTRACTIONS"
	count FAIL module_uses_kernel_rdma
fi
if make -s KDIR="$kdir" KRUST_OWN_RDMA=1 CLIPPY=1 modules >"$own_log" 2>&1 && ! warnings "$own_log" &&
	[ "$(helpers rdma_krust.ko)" -gt 0 ]; then
	count PASS module_own_rdma_build
else
	cat "$own_log"
	count FAIL module_own_rdma_build
fi
make -s KDIR="$kdir" modules >"$own_log" 2>&1 || cat "$own_log"
# The out-of-tree recipe of Documentation/kernel-rdma.rst: its skeleton
# (kernel/examples/out-of-tree/), in a copy of kernel/, builds against the
# kernel's kernel::rdma and with its own copy (OWN_RDMA=1), warning-free.
skel=$(mktemp -d)
cp -r kernel "$skel/"
if (cd "$skel/kernel/examples/out-of-tree" &&
	make -s KDIR="$kdir" CLIPPY=1 && [ "$(helpers rust_rdma_ulp.ko)" = 0 ] &&
	make -s KDIR="$kdir" clean && make -s KDIR="$kdir" OWN_RDMA=1 CLIPPY=1 &&
	[ "$(helpers rust_rdma_ulp.ko)" -gt 0 ]) >"$own_log" 2>&1 && ! warnings "$own_log"; then
	count PASS ulp_skeleton_builds
else
	cat "$own_log"
	count FAIL ulp_skeleton_builds
fi
rm -rf "$skel" "$own_log"
if (cd userspace-peer && cargo clippy --release --all-targets --quiet -- -D warnings); then
	count PASS tool_clippy
else
	count FAIL tool_clippy
fi

# Userspace unit tests.
cargo_log=$(mktemp)
(cd userspace-peer && cargo test --release 2>&1) | tee "$cargo_log"
cargo_rc=${PIPESTATUS[0]}
cp=$(grep -Eo '[0-9]+ passed' "$cargo_log" | awk '{ s += $1 } END { print s + 0 }')
cf=$(grep -Eo '[0-9]+ failed' "$cargo_log" | awk '{ s += $1 } END { print s + 0 }')
[ "$cargo_rc" = 0 ] || [ "$cf" != 0 ] || cf=1 # a build failure counts
passed=$((passed + cp))
failed=$((failed + cf))
n=${#failures[@]}
while read -r t; do failures+=("cargo test: $t"); done < <(sed -nE 's/^test (.*) \.\.\. FAILED$/\1/p' "$cargo_log")
[ "$cf" = 0 ] || [ "${#failures[@]}" != "$n" ] || failures+=("cargo test: the build, or a test not named")
rm -f "$cargo_log"
echo "test-all: cargo test: $cp passed, $cf failed"

# suite LABEL PREFIX CMD...: runs a guest suite and adds its last
# "PREFIX: N passed, N failed" line to the totals (no line: one failure).
suite() {
	local label=$1 prefix=$2 log line gp gf
	shift 2
	log=$(mktemp)
	"$@" 2>&1 | tee "$log"
	line=$(grep -E "^$prefix: [0-9]+ passed, [0-9]+ failed\$" "$log" | tail -1)
	if [ -n "$line" ]; then
		gp=$(sed -E "s/^$prefix: ([0-9]+) passed.*/\\1/" <<<"$line")
		gf=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
	else
		gp=0
		gf=1
		failures+=("$label: no \"$prefix: N passed, N failed\" line")
	fi
	# The suites print "PREFIX: FAIL NAME: why" as a test fails, and
	# again in a closing list: each name once.
	while read -r t; do failures+=("$label: $t"); done < <(sed -nE "s/^$prefix: FAIL (\\[[0-9\/]+\\] )?([^:]+)(:.*)?\$/\\2/p" "$log" | sort -u)
	rm -f "$log"
	passed=$((passed + gp))
	failed=$((failed + gf))
	echo "test-all: $label: $gp passed, $gf failed"
}

# The compile-fail half of kernel::rdma's misuse suite: modules that
# misuse the API must not build (kernel/tests/misuse/compile-fail/).
suite "misuse compile-fail" misuse-compile-fail scripts/misuse.sh compile-fail "$kdir"

# Installing: the module built against the cached kernel, `make
# modules_install` into a scratch root, and the Makefile's refusal of
# kernels it cannot build against (scripts/install-test.sh).
suite "install" install-test scripts/install-test.sh

# The guest suites run once per provider in KRUST_PROVIDERS: soft-RoCE
# (rxe) and soft-iWARP (siw), both built into the project's kernels
# (Documentation/providers.rst). siw adds about 8 minutes.
providers=${KRUST_PROVIDERS:-rxe siw}
for p in $providers; do
	suite "main kernel, $p" guest env KRUST_FLAVOR=main KRUST_PROVIDER="$p" scripts/qemu-test.sh "$@"
done

# The two-host suite: two guests of the main kernel over a relay that
# makes the link lossy and cuts it (Documentation/two-hosts.rst).
if [ "${KRUST_PAIR:-always}" != never ] && [ $# = 0 ]; then
	suite "two hosts" pair scripts/qemu-test.sh --pair
fi

debug_kdir=$(KRUST_FLAVOR=debug scripts/build-kernel.sh --print-kdir)
case "${KRUST_DEBUG:-auto}" in
always) run_debug=1 ;;
never) run_debug=0 ;;
*) [ -f "$debug_kdir/.krust-built" ] && run_debug=1 || run_debug=0 ;;
esac
if [ "$run_debug" = 1 ]; then
	# The debug kernel runs rxe by default: its suite takes 25 to 40 min a
	# provider, and both would not fit CI's 90 min beside the rest.
	# KRUST_DEBUG_PROVIDERS="rxe siw" runs siw too, and so does
	# KRUST_PROVIDER=both make test-debug
	# (Documentation/providers.rst, "Status").
	# Its time limit: the suite took 32 min on a quiet host, but a CI run
	# on a busy one (2026-11-27) was still at its 54th test of 64 when the
	# old limit of 40 min ran out. 60 min leaves room and still fits CI's
	# 90 min beside the rest (about 25 min on that busy host).
	for p in ${KRUST_DEBUG_PROVIDERS:-rxe}; do
		suite "debug kernel, $p" guest env KRUST_FLAVOR=debug KRUST_PROVIDER="$p" \
			KRUST_TIMEOUT="${KRUST_TIMEOUT:-3600}" scripts/qemu-test.sh "$@"
	done
else
	echo "test-all: debug-kernel suite skipped (KRUST_DEBUG=${KRUST_DEBUG:-auto}, debug kernel not cached; see README)"
fi

if [ "${#failures[@]}" != 0 ]; then
	echo "test-all: failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "total: $passed passed, $failed failed"
[ "$failed" = 0 ]
