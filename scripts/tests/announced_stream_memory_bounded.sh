# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A one-way stream of 2 MiB messages between two files of the module
# (rdma-krust-kit msg-bench: 300 of them, 629 MB, announced and READ):
# what the sender keeps after each DONE, its regions during the grace a
# duplicate READ may still come in (Conn::retire_grace: on RoCE the
# retry time and a second; on iWARP none), must go once that grace is
# over, each on its own time. The peak of SUnreclaim (/proc/meminfo, where
# the regions' large kmallocs are counted) above the level before the
# stream must stay under 256 MiB: a few times what a grace's worth of the
# stream holds at this guest's rates. When one deadline for all was moved
# on by every DONE, nothing went while the stream lasted: the peak grew
# with all that was sent (about 600 MiB), and beside the hostile peer's
# connections the guest ran out of memory.
#
# Guards: retire's one deadline (the hostile test's bystander: a page
# allocation failure, SUnreclaim 1.9 GiB)

DESCRIPTION="a stream of announced messages holds at most a grace's worth of the sender's regions"

sunreclaim_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

test_main() {
	ensure_loaded
	local base peak=0 now pid out rc limit_kb=$((256 * 1024))
	base=$(sunreclaim_kb)
	"$KIT" msg-bench --ip "$IP" --port "$PORT" --sizes 2097152 --count 300 \
		--lat-iters 10 >"$T/msg-bench.out" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		now=$(sunreclaim_kb)
		[ "$now" -le "$peak" ] || peak=$now
		sleep 0.2
	done
	wait "$pid" && rc=0 || rc=$?
	out=$(cat "$T/msg-bench.out")
	sed 's/^/  /' <<<"$out"
	[ $rc = 0 ] || fail "msg-bench failed ($rc)"
	grep -q '^msg-bench: stream 2097152 bytes, 300 messages' <<<"$out" ||
		fail "no stream line"
	echo "  SUnreclaim: $base kB before, peak $peak kB during the stream: $(((peak - base) / 1024)) MiB more"
	[ $((peak - base)) -lt $limit_kb ] ||
		fail "the stream held $(((peak - base) / 1024)) MiB (limit $((limit_kb / 1024)) MiB)"
}
