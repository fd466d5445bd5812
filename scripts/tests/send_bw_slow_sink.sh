# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# SEND bandwidth against a sink that starts 2 s late: the sender has 200
# messages to send and the sink RECV_DEPTH (40) receives posted. On RoCE the
# responder answers the 41st with RNR NAK and the sender retries; iWARP has
# no such retry (the 41st SEND would find no receive and end the connection:
# siw "got TERMINATE ... type 2, code 2", IOCTL_BENCH EIO), so there the
# module paces the loop by the sink's counts. Both ends finish all 200.

DESCRIPTION="SEND bandwidth against a sink that starts 2 s late: both ends finish all 200 messages"

test_main() {
	ensure_loaded
	local port=$PORT j
	j=$(bench_pair $port --op send --mode bw --size 1024 --iters 200 --depth 8 --sink-delay-ms 2000)
	echo "  $j"
	expect_eq "$(json_num "$j" iterations)" 200 "iterations" || return 1
	awk -v t="$(json_num "$j" bw_avg)" 'BEGIN { exit !(t > 0) }' || fail "no bandwidth: $j"
	grep -q '^bench peer done$' "$T/bench.$port" || fail "sink: $(cat "$T/bench.$port")"
}
