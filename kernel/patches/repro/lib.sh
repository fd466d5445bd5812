# SPDX-License-Identifier: GPL-2.0
#
# Shared by the reproducers: build rc.c (librdmacm and libibverbs, from
# rdma-core's libibverbs-dev and librdmacm-dev) into $tmp, a fresh
# directory removed on exit.

repro_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build_rc NNNN: $tmp/rc, or exit 2.
build_rc() {
	cc -O2 -Wall -o "$tmp/rc" "$repro_dir/rc.c" -lrdmacm -libverbs -lpthread 2>"$tmp/cc.log" || {
		echo "repro $1: rc.c did not build (needs gcc, libibverbs-dev, librdmacm-dev):"
		head -5 "$tmp/cc.log"
		exit 2
	}
}

# wait_for FILE WORD: until FILE holds WORD (up to 20 s).
wait_for() {
	for _ in $(seq 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
