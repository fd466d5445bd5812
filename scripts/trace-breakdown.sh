#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# trace-breakdown.sh TRACE...: where the microseconds of a SEND ping-pong on
# siw go, from an ftrace taken by scripts/guest-bench.sh (KRUST_TRACE=1:
# function tracer on siw's send and receive path, plus sched_wakeup and
# sched_switch). Each half round trip is cut at the functions one message
# passes through:
#
#   post      siw_post_send() by the sending thread (not siw's tx thread)
#   handoff   to siw_qp_sq_process(), in the poster or in siw_tx_thread
#   tx        to tcp_sendmsg_locked(): siw builds the frame
#   wire      to siw_tcp_rx_data(): TCP over loopback, into the peer's softirq
#   rx        to siw_rqe_complete(): the receive is placed and completed
#   reap      to the peer's siw_post_send() of the answer: its poll finds
#             the completion, and it answers
#
# and prints, per trace, the median of each part over the half round trips
# in microseconds, their median sum, and the median count of wake-ups and
# context switches in one, with the tasks woken most. Absolute times carry
# the function tracer's own cost; the parts compare.
#
# Timestamps are ftrace's: seconds with six decimals (the default clocks),
# or, from a trace that starts with "# tsc_mhz: F" (guest-bench.sh's, on
# x86), TSC cycles at F MHz, which resolve fractions of a microsecond.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: trace-breakdown.sh TRACE..." >&2; exit 2; }

# median: the middle value of the numbers on stdin (one per line).
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.1f\n", v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for trace in "$@"; do
	rows=$(awk '
	/^# tsc_mhz: / { mhz = $3; next }
	/^#/ { next }
	{
		t = ""; ev = ""
		for (i = 2; i <= NF; i++) {
			if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = substr($i, 1, length($i) - 1) * 1e6; ev = $(i + 1); break }
			if (mhz > 0 && $i ~ /^[0-9]+:$/) { t = substr($i, 1, length($i) - 1) / mhz; ev = $(i + 1); break }
		}
		if (t == "") next
		task = $1; sub(/-[0-9]+$/, "", task)
		if (ev == "sched_wakeup:") {
			if (phase > 0) { wakes++; for (j = 1; j <= NF; j++) if ($j ~ /^comm=/) woken[substr($j, 6)]++ }
			next
		}
		if (ev == "sched_switch:") { if (phase > 0) switches++; next }
		if (ev == "siw_post_send" && task !~ /^siw_tx/) {
			if (phase == 5) {
				printf "trip %.1f %.1f %.1f %.1f %.1f %.1f %d %d\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3, t - t4, t - t0, wakes, switches
				for (w in woken) printf "woken %s %d\n", w, woken[w]
			}
			delete woken
			t0 = t; phase = 1; wakes = 0; switches = 0
			next
		}
		if (phase == 1 && ev == "siw_qp_sq_process") { t1 = t; phase = 2; next }
		if (phase == 2 && ev == "tcp_sendmsg_locked") { t2 = t; phase = 3; next }
		if (phase == 3 && ev == "siw_tcp_rx_data") { t3 = t; phase = 4; next }
		if (phase == 4 && ev == "siw_rqe_complete") { t4 = t; phase = 5; next }
	}' "$trace")
	n=$(grep -c '^trip' <<<"$rows" || true)
	echo "$(basename "$trace"): $n half round trips"
	[ "$n" -gt 0 ] || continue
	col=2
	for part in handoff tx wire rx reap total; do
		printf '  %-8s %8s us\n' "$part" "$(awk -v c=$col '$1 == "trip" { print $c }' <<<"$rows" | median)"
		col=$((col + 1))
	done
	printf '  %-8s %8s\n' wake-ups "$(awk '$1 == "trip" { print $8 }' <<<"$rows" | median)"
	printf '  %-8s %8s\n' switches "$(awk '$1 == "trip" { print $9 }' <<<"$rows" | median)"
	echo "  woken per half round trip: $(awk -v n="$n" '$1 == "woken" { c[$2] += $3 } END { for (w in c) printf "%s %.2f\n", w, c[w] / n }' <<<"$rows" |
		sort -k2 -gr | head -4 | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')"
done
