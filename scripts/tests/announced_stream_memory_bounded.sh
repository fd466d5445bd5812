# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A one-way stream of 2 MiB messages between two files of the module
# (rdma-krust-kit msg-bench: 300 of them, 629 MB, announced and READ):
# what the sender keeps after each DONE, its regions during the grace a
# duplicate READ may still come in (Conn::retire_grace: on RoCE the
# retry time and a second; on iWARP none), must go once that grace is
# over, each on its own time. So what the stream holds scales with its
# rate, not with all it sent: the peak of SUnreclaim (/proc/meminfo, where
# the regions' large kmallocs are counted) above the level before the
# stream must stay under 64 MiB plus 4.6 s of the stream at its measured
# rate, three times the default grace on RoCE (1.54 s: 8 ACK timeouts of
# 67 ms, and a second). Seen with the fix on rxe: 123 to 240 MiB at 73 to
# 81 MB/s (about 3 s of the stream: the grace, the receiver's copies and
# what rxe frees late), 14 MiB on siw. When one deadline for all was
# moved on by every DONE, nothing went while the stream lasted: the peak
# grew with all that was sent (606 MiB at 52 MB/s, where this allows 292),
# and beside the hostile peer's connections the guest ran out of memory.
# Above about 120 MB/s the allowance passes all that 300 messages send,
# and the test can no longer tell.
#
# Guards: retire's one deadline (the hostile test's bystander: a page
# allocation failure, SUnreclaim 1.9 GiB)

DESCRIPTION="a stream of announced messages holds at most a grace's worth of the sender's regions"

sunreclaim_kb() {
	awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo
}

test_main() {
	ensure_loaded
	local base peak=0 now pid out rc rate limit_kb
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
	rate=$(sed -n 's/^msg-bench: stream 2097152 bytes, 300 messages: \([0-9.]*\) MB\/s.*/\1/p' <<<"$out")
	[ -n "$rate" ] || fail "no stream line"
	# 64 MiB, and 4.6 s at $rate MB/s, in kB.
	limit_kb=$(awk -v r="$rate" 'BEGIN { printf "%d", 65536 + r * 4.6 * 1e6 / 1024 }')
	echo "  SUnreclaim: $base kB before, peak $peak kB during the stream: $(((peak - base) / 1024)) MiB more"
	[ $((peak - base)) -lt $limit_kb ] ||
		fail "the stream held $(((peak - base) / 1024)) MiB (limit at $rate MB/s: $((limit_kb / 1024)) MiB)"
}
