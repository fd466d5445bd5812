#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the rdma-krust guest kernel (Debian's linux-source-6.12, LLVM=1,
# CONFIG_RUST=y) from allnoconfig plus kernel/rdma-krust.config and cache it
# outside the repository.
#
# The cache key covers everything that changes the result: the kernel source
# package version, the config fragment(s), the changes kernel/patches/*
# make (the fixes and the kernel::rdma series in kernel/patches/rust-rdma/:
# their hunks, not their messages), the toolchain
# versions (rustc, clang, bindgen), and BUILD_RECIPE below, which stands for
# this script: it is bumped whenever the way the script builds changes (edits
# that do not change the build, such as comments, keep the cache). A rerun
# with the same key reuses the build; any change rebuilds into a new
# directory, linux-<flavour>-<key>.
#
# After a build, the kernels of the same flavour beyond the newest
# KRUST_KEEP_KERNELS (default 2; "all" keeps every one) are removed, the
# newest being the last built or reused. Never removed: the kernel just
# built, a kernel a process is using (its working directory, command line
# or environment names the directory: make -C, qemu's -kernel), a directory
# whose build has not finished, and anything else in the cache.
#
#   scripts/build-kernel.sh                 build (or reuse) the main kernel
#   scripts/build-kernel.sh --print-kdir    print the build directory only
#   scripts/build-kernel.sh --prune         prune now, build nothing
#   KRUST_FLAVOR=debug scripts/build-kernel.sh   also apply kernel/debug.config
#   KRUST_FLAVOR=upstream scripts/build-kernel.sh
#       6.12 as Debian ships it: no patch of kernel/patches/ (neither the
#       fixes nor the series), the test config without the series' options;
#       the unpatched kernel of scripts/upstream-check.sh
#
# The compile's output goes to .krust-build.log in the kernel's directory;
# a line every KRUST_PROGRESS_SECONDS (60) shows how far it is, and a failed
# build prints the log's last lines.
#
# Environment: KRUST_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/rdma-krust),
# KRUST_JOBS, KRUST_KEEP_KERNELS, KRUST_PROGRESS_SECONDS.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# SRC_TAR, CACHE, kernel_patches.
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"
FLAVOR=${KRUST_FLAVOR:-main}
BUILD_RECIPE=1
export PATH="$HOME/.cargo/bin:$PATH"

fragments=("$ROOT/kernel/rdma-krust.config")
case "$FLAVOR" in
main) ;;
upstream)
	# The test config without what only the series adds.
	fragments=("$CACHE/upstream.config")
	mkdir -p "$CACHE"
	grep -vE '^CONFIG_(RUST_RDMA_ABSTRACTIONS|SAMPLE_RUST_RDMA_[A-Z_]+)=' \
		"$ROOT/kernel/rdma-krust.config" >"$CACHE/upstream.config"
	# No patch at all.
	kernel_patches() { :; }
	;;
*) fragments+=("$ROOT/kernel/$FLAVOR.config") ;;
esac

cache_key() {
	{
		dpkg-query -W -f='${Version}\n' linux-source-6.12 2>/dev/null || echo "no linux-source"
		cat "${fragments[@]}"
		# What a patch changes, not how it is told: its hunks, from its
		# first file header on (the message, notes and diffstat come
		# before), without git's extended headers or the function names
		# after the hunk ranges.
		while read -r p; do
			sed -n '/^\(diff --git \|--- a\/\|--- \/dev\/null\)/,$p' "$p" |
				grep -v '^\(diff --git \|index \|new file mode \|deleted file mode \)' |
				sed 's/^\(@@ [^@]* @@\).*/\1/'
		done < <(kernel_patches)
		echo "recipe $BUILD_RECIPE"
		rustc --version 2>/dev/null || echo "no rustc"
		{ clang --version 2>/dev/null || echo "no clang"; } | head -1
		bindgen --version 2>/dev/null || echo "no bindgen"
	} | sha256sum | cut -c1-16
}

KDIR="$CACHE/linux-$FLAVOR-$(cache_key)"
if [ "${1:-}" = "--print-kdir" ]; then
	echo "$KDIR"
	exit 0
fi

KEEP=${KRUST_KEEP_KERNELS:-2}
case "$KEEP" in
all) ;;
'' | *[!0-9]*) KEEP=bad ;;
*) KEEP=$((10#$KEEP)) ;;
esac
if [ "$KEEP" = bad ] || [ "$KEEP" = 0 ]; then
	echo "build-kernel: KRUST_KEEP_KERNELS is a number of kernels per flavour (1 or more) or all," \
		"not '$KRUST_KEEP_KERNELS'" >&2
	exit 2
fi

# in_use DIR: whether a process works in DIR or names it in its command
# line or environment. Processes of other users are not all visible; the
# ones that build and boot here are this user's.
in_use() {
	local d=$1
	{ find /proc/[0-9]*/cwd -maxdepth 0 -printf '%l\n' 2>/dev/null || true; } |
		awk -v d="$d" 'index($0, d) == 1 && substr($0, length(d) + 1, 1) ~ /^\/?$/ { f = 1 } END { exit !f }' &&
		return 0
	grep -qsF -- "$d" /proc/[0-9]*/cmdline /proc/[0-9]*/environ
}

# last_used DIR: when DIR's kernel was last built (.krust-built) or reused
# (.krust-used), in seconds since the epoch.
last_used() {
	if [ -f "$1/.krust-used" ] && [ "$1/.krust-used" -nt "$1/.krust-built" ]; then
		stat -c %Y "$1/.krust-used"
	else
		stat -c %Y "$1/.krust-built"
	fi
}

# prune: keep $KDIR (when built) and the newest others of this flavour, up
# to $KEEP in all; remove the rest that are finished and not in use, saying
# so. Only directories named linux-$FLAVOR-<16 hex digits> count.
prune() {
	[ "$KEEP" = all ] && return 0
	local d t kept=0 size
	[ -f "$KDIR/.krust-built" ] && kept=1
	for d in "$CACHE/linux-$FLAVOR-"*; do
		[[ "${d##*/}" =~ ^linux-$FLAVOR-[0-9a-f]{16}$ ]] || continue
		[ "$d" != "$KDIR" ] && [ -f "$d/.krust-built" ] || continue
		t=$(last_used "$d") || continue
		echo "$t $d"
	done | sort -rn | while read -r t d; do
		if [ "$kept" -lt "$KEEP" ]; then
			kept=$((kept + 1))
			continue
		fi
		if in_use "$d"; then
			echo "build-kernel: keeping ${d##*/} beyond the newest $KEEP: in use"
			continue
		fi
		size=$(du -sh "$d" 2>/dev/null | cut -f1) || true
		if rm -rf -- "$d"; then
			echo "build-kernel: removed ${d##*/} (${size:-?}, last used $(date -d "@$t" '+%F %R');" \
				"KRUST_KEEP_KERNELS=$KEEP per flavour)"
		else
			echo "build-kernel: could not remove $d" >&2
		fi
	done
}

if [ "${1:-}" = "--prune" ]; then
	prune
	exit 0
fi

if [ -f "$KDIR/.krust-built" ]; then
	# For prune's order: the newest are the last built or reused.
	touch "$KDIR/.krust-used" 2>/dev/null || true
	echo "build-kernel: cached: $KDIR"
	exit 0
fi

[ -f "$SRC_TAR" ] || { echo "build-kernel: $SRC_TAR missing: run scripts/setup.sh" >&2; exit 1; }
for tool in rustc bindgen clang ld.lld flex bison; do
	command -v "$tool" >/dev/null || { echo "build-kernel: $tool missing: run scripts/setup.sh" >&2; exit 1; }
done

echo "build-kernel: building $KDIR"
start=$(date +%s)
rm -rf "$KDIR" "$KDIR.tmp"
mkdir -p "$KDIR.tmp"
tar -xf "$SRC_TAR" -C "$KDIR.tmp" --strip-components=1
mv "$KDIR.tmp" "$KDIR"
cd "$KDIR"

# The fixes first, then the kernel::rdma series (its cover letter aside).
while read -r p; do
	echo "build-kernel: applying $(basename "$p")"
	patch -p1 --forward --quiet <"$p"
done < <(kernel_patches)

cat "${fragments[@]}" >.krust-fragment
make -s LLVM=1 KCONFIG_ALLCONFIG=.krust-fragment allnoconfig
make -s LLVM=1 olddefconfig

# Every option the fragments ask for must have survived dependency resolution.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		if ! grep -qx "$line" .config; then
			echo "build-kernel: option not set as asked: $line (got: $(grep "^${line%%=*}=" .config || echo unset))" >&2
			bad=1
		fi
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		if grep -q "^$opt=" .config; then
			echo "build-kernel: option should be unset: $opt" >&2
			bad=1
		fi
		;;
	esac
done <.krust-fragment
[ "$bad" = 0 ] || exit 1

# The build itself takes minutes: its output goes to .krust-build.log in the
# kernel's directory, and every KRUST_PROGRESS_SECONDS (60) a line says how
# far it is: the time so far, the objects (*.o) built, of about how many the
# last build of this flavour made, and the last step of the log.
LOG=$KDIR/.krust-build.log
elapsed() {
	local s=$(($(date +%s) - start))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}
objects() { # DIR
	{ find "$1" -name '*.o' 2>/dev/null || true; } | wc -l
}
newest() { # FILE: the newest FILE in this flavour's kernel directories
	local f best=
	for f in "$CACHE/linux-$FLAVOR-"*/"$1"; do
		[ -f "$f" ] && { [ -z "$best" ] || [ "$f" -nt "$best" ]; } && best=$f
	done
	echo "$best"
}
# The estimate: .krust-objects of the newest build that wrote one, else a
# count in the newest finished build.
expect=
prev=$(newest .krust-objects)
if [ -n "$prev" ]; then
	expect=$(cat "$prev")
else
	prev=$(newest .krust-built)
	[ -z "$prev" ] || expect=$(objects "${prev%/.krust-built}")
fi
progress() {
	local sleeper n last
	set +e
	trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
	while :; do
		sleep "${KRUST_PROGRESS_SECONDS:-60}" &
		sleeper=$!
		wait "$sleeper"
		kill -0 $$ 2>/dev/null || exit 0 # the script is gone
		n=$(objects "$KDIR")
		last=$(grep -E '^  [A-Z]' "$LOG" 2>/dev/null | tail -1 | sed -E 's/^ +//; s/ +/ /g')
		echo "build-kernel: $(elapsed) so far, $n objects${expect:+ of about $expect}${last:+, last: $last}"
	done
}
echo "build-kernel: compiling (log: $LOG)"
progress &
progress_pid=$!
trap 'kill "$progress_pid" 2>/dev/null || true' EXIT
rc=0
make LLVM=1 -j"${KRUST_JOBS:-$(($(nproc) + 1))}" >"$LOG" 2>&1 || rc=$?
kill "$progress_pid" 2>/dev/null || true
wait "$progress_pid" 2>/dev/null || true
trap - EXIT
if [ "$rc" != 0 ]; then
	echo "build-kernel: the kernel build failed (make exit $rc) after $(elapsed); the end of $LOG:" >&2
	tail -n 40 "$LOG" >&2
	exit 1
fi
warnings=$(grep -c 'warning:' "$LOG" || true)
if [ "$warnings" != 0 ]; then
	echo "build-kernel: $warnings warning line(s) in $LOG, the first:"
	grep -m 10 'warning:' "$LOG" || true
fi
objects "$KDIR" >.krust-objects
touch .krust-built
echo "build-kernel: done in $(($(date +%s) - start)) s ($(elapsed)), $(cat .krust-objects) objects: $KDIR"
# The kernel is built: whatever happens in pruning does not fail the build.
prune || echo "build-kernel: pruning $CACHE failed" >&2
