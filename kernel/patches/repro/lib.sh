# SPDX-License-Identifier: GPL-2.0
#
# Shared by the reproducers: $repro_dir (this directory), $tmp (a fresh
# directory removed on exit), rc.c built into it (librdmacm and libibverbs,
# from rdma-core's libibverbs-dev and librdmacm-dev), and waits for a peer
# or a listener.

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

# wait_listening PORT: until a TCP socket listens on PORT (up to 10 s).
wait_listening() {
	for _ in $(seq 100); do
		ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.1
	done
	return 1
}

# load_listener NNNN PORT: an rping -s on PORT, stopped on exit, whose
# connections keep siw's connection workqueue busy (mpa.busy_cm), or exit 2.
load_listener() {
	rping -s -a "$addr" -p "$2" >/dev/null 2>&1 &
	load=$!
	trap 'kill $load 2>/dev/null; wait $load 2>/dev/null; rm -rf "$tmp"' EXIT
	wait_listening "$2" || { echo "repro $1: rping -s did not listen"; exit 2; }
}

# rc_retry NNNN SECONDS CONNS MIX BUG-PATTERN BUG-LINE FIXED-LINE [TRIES]:
# rc retry on rxe, up to TRIES times (default 1) until a run shows the
# bug, its lines, the retries rxe counted; exit 1 when a line of a run's
# output matches BUG-PATTERN, 0 when every run passed, 2 otherwise.
rc_retry() {
	local n=$1 rc before try tries=${8:-1}
	retries() { cat /sys/class/infiniband/*/ports/1/hw_counters/completer_retry_err 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
	for try in $(seq "$tries"); do
		before=$(retries)
		timeout 240 "$tmp/rc" retry "$addr" "$port" "$2" "$3" "$4" >"$tmp/out" 2>&1
		rc=$?
		sed "s/^rc: /repro $n: run $try: /" "$tmp/out" | head -20
		echo "repro $n: run $try: rxe retried $(($(retries) - before)) times"
		if grep -Eq "$5" "$tmp/out"; then
			echo "repro $n: bug: $6"
			exit 1
		elif [ $rc != 0 ]; then
			echo "repro $n: rc retry failed ($rc) otherwise"
			exit 2
		fi
	done
	echo "repro $n: fixed: $7"
	exit 0
}
