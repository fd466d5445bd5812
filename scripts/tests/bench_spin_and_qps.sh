# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The latency loops spinning without a yield (--spin, CONN_SPIN), and
# bandwidth over several connections at once (-q): the figures are sane,
# the WRITE ping-pong leaves its last tag in the peer's window, each of
# the -q connections moved its share (iterations add up over the QPs), and
# --meminfo saw the connections take memory.

DESCRIPTION="latency loops that spin, and bandwidth over several connections: sane figures, every connection its share"

test_main() {
	ensure_loaded
	local port=$PORT j t op mode n
	for op in send write read; do
		port=$((port + 1))
		mode=lat
		[ $op != write ] || mode=pingpong
		j=$(bench_pair $port --op $op --mode $mode --size 8 --iters 50 --spin)
		t=$(json_num "$j" t_typical)
		echo "  $mode $op --spin: t_typical ${t} us"
		awk -v t="$t" 'BEGIN { exit !(t > 0 && t < 1000000) }' || fail "$op --spin: $j"
	done
	grep -q '^window value 3602879701896396800$' "$T/bench.$((port - 1))" ||
		fail "ping-pong --spin window: $(cat "$T/bench.$((port - 1))")"
	for op in write send; do
		port=$((port + 10))
		n=4
		j=$(bench_pair $port --op $op --mode bw --size 4096 --iters 64 --depth 8 -q $n --meminfo)
		echo "  bw $op -q $n: $j"
		expect_eq "$(json_num "$j" qps)" $n "$op -q: connections" || return 1
		expect_eq "$(json_num "$j" iterations)" $((64 * n)) "$op -q: iterations" || return 1
		awk -v t="$(json_num "$j" bw_avg)" 'BEGIN { exit !(t > 0 && t < 100000) }' ||
			fail "bw $op -q: $j"
		awk -v m="$(json_num "$j" mem_free_drop_kib)" -v s="$(json_num "$j" slab_growth_kib)" \
			'BEGIN { exit !(m > 0 && s > 0) }' || fail "bw $op -q --meminfo: $j"
		grep -q "^bench peer done ($n QPs)\$" "$T/bench.$port" || fail "-q peer: $(cat "$T/bench.$port")"
	done
}
