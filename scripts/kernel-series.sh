#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel::rdma patch series (kernel/patches/rust-rdma/), made from its
# one source: the files under kernel/rust/, which the module builds itself
# on a kernel without the series, and per patch a directory
# kernel/series/NNNN-<slug>/ holding
#
#   message     the commit message (no Signed-off-by: the sender adds it)
#   files       the new files, tree paths, copied from kernel/<path>
#   tree.diff   the edits to files the tree already has (a/ b/ prefixes):
#               6.12's own, or files an earlier patch of the series added
#
# and kernel/series/cover-letter (first paragraph: its subject).
#
#   scripts/kernel-series.sh generate   rewrite kernel/patches/rust-rdma/
#   scripts/kernel-series.sh check      fail if kernel/patches/rust-rdma/ is
#                                       not what generate would write
#   scripts/kernel-series.sh am-build   git am the series onto a pristine 6.12
#                                       tree, build after every patch (the
#                                       test kernel's config), checkpatch
#
# The commits are made with a fixed author and date and written with
# --zero-commit, so the same sources give the same patches, byte for byte.
#
# Environment: KRUST_CACHE (as scripts/build-kernel.sh), KRUST_JOBS.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SERIES=$ROOT/kernel/series
OUT=$ROOT/kernel/patches/rust-rdma
# SRC_TAR, CACHE, series_patches.
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"

die() {
	echo "kernel-series: $*" >&2
	exit 1
}

author=$(head -1 "$SERIES/AUTHOR")
export GIT_AUTHOR_NAME=${author% <*} GIT_AUTHOR_EMAIL=${author##*<}
GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL%>}
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
export GIT_AUTHOR_DATE='2026-11-25 00:00:00 +0000' GIT_COMMITTER_DATE='2026-11-25 00:00:00 +0000'
gitq() { git -c user.name="$GIT_AUTHOR_NAME" -c user.email="$GIT_AUTHOR_EMAIL" \
	-c core.autocrlf=false -c init.defaultBranch=rust-rdma "$@"; }

patch_dirs() { find "$SERIES" -mindepth 1 -maxdepth 1 -type d -name '[0-9][0-9][0-9][0-9]-*' | sort; }

# The files the series adds, from every patch's list.
added_files() {
	local d
	for d in $(patch_dirs); do
		[ -f "$d/files" ] && grep -v '^$' "$d/files"
	done | sort -u
}

# The 6.12 files the series edits, from every tree.diff: what it edits of
# the files it adds itself is not in 6.12.
edited_files() {
	local d
	for d in $(patch_dirs); do
		[ -f "$d/tree.diff" ] && sed -n 's|^+++ b/||p' "$d/tree.diff"
	done | sort -u | comm -23 - <(added_files)
}

# later_dirs DIR: the patch directories after DIR, the last first.
later_dirs() {
	patch_dirs | awk -v d="$1" '$0 > d' | sort -r
}

# place DIR FILE TREE: kernel/FILE into TREE as patch DIR adds it. kernel/
# holds the file as the whole series leaves it, so the edits that later
# patches make to it (their tree.diff) are taken back, the last first.
place() {
	local d=$1 f=$2 tree=$3 l
	mkdir -p "$tree/$(dirname "$f")"
	cp "$ROOT/kernel/$f" "$tree/$f"
	for l in $(later_dirs "$d"); do
		[ -f "$l/tree.diff" ] && grep -qxF "+++ b/$f" "$l/tree.diff" || continue
		gitq -C "$tree" apply -R --include="$f" "$l/tree.diff" ||
			die "$l/tree.diff does not take back from kernel/$f"
	done
}

# pristine_files DIR: the edited files as 6.12 has them, under DIR; extracted
# once from the source package and kept in the cache.
pristine_files() {
	local files key base
	files=$(edited_files)
	[ -r "$SRC_TAR" ] || die "$SRC_TAR missing (scripts/setup.sh installs linux-source-6.12)"
	key=$({ stat -c '%s %Y' "$SRC_TAR"; echo "$files"; } | sha256sum | cut -c1-16)
	base=$CACHE/series-base-$key
	if [ ! -d "$base" ]; then
		rm -rf "$base.tmp"
		mkdir -p "$base.tmp"
		# shellcheck disable=SC2086 # one path per word
		tar -xJf "$SRC_TAR" -C "$base.tmp" --strip-components=1 \
			$(sed 's|^|linux-source-6.12/|' <<<"$files")
		mv "$base.tmp" "$base"
	fi
	cp -a "$base/." "$1/"
}

# make_commits TREE: one commit per patch directory on TREE's base commit.
make_commits() {
	local tree=$1 d f
	for d in $(patch_dirs); do
		if [ -f "$d/files" ]; then
			while read -r f; do
				[ -n "$f" ] || continue
				[ -f "$ROOT/kernel/$f" ] || die "$d/files: kernel/$f missing"
				place "$d" "$f" "$tree"
			done <"$d/files"
		fi
		[ -f "$d/tree.diff" ] && gitq -C "$tree" apply --whitespace=error "$d/tree.diff"
		gitq -C "$tree" add -A
		gitq -C "$tree" commit -q -F "$d/message"
	done
}

# generate DIR: write the series (cover letter first) into DIR.
generate() {
	local dir=$1 work tree
	work=$(mktemp -d)
	tree=$work/tree
	mkdir -p "$tree"
	gitq -C "$tree" init -q
	pristine_files "$tree"
	gitq -C "$tree" add -A
	gitq -C "$tree" commit -q -m "base: linux-source-6.12, the files the series edits"
	gitq -C "$tree" tag base
	make_commits "$tree"
	gitq -C "$tree" config branch.rust-rdma.description "$(cat "$SERIES/cover-letter")"
	rm -rf "$dir"
	mkdir -p "$dir"
	gitq -C "$tree" format-patch -q --zero-commit --no-signature --cover-letter \
		--cover-from-description=subject -o "$dir" base..HEAD
	# The cover letter's date is the time of the run: use the commits'.
	sed -i "s/^Date: .*/Date: $(date -R -d "$GIT_AUTHOR_DATE")/" "$dir/0000-cover-letter.patch"
	rm -rf "$work"
}

case "${1:-}" in
generate)
	generate "$OUT"
	ls "$OUT"
	;;
check)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	generate "$tmp/out"
	if ! diff -ru "$OUT" "$tmp/out"; then
		die "kernel/patches/rust-rdma/ is not what kernel/rust/ and kernel/series/ make: run scripts/kernel-series.sh generate"
	fi
	echo "kernel-series: kernel/patches/rust-rdma/ matches its sources ($(series_patches | wc -l) patches)"
	;;
am-build)
	exec "$ROOT/scripts/kernel-series-am-build.sh"
	;;
*)
	sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 2
	;;
esac
