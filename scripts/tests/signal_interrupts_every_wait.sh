# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A signal ends, with EINTR and within 3 s, every blocking wait that
# signal_interrupts_blocked_waits (ACCEPT, RECV) does not cover, on
# event-driven and on busy-polling connections: CONNECT resolving an address
# nobody answers; CONNECT waiting for a userspace listener that never
# accepts; SEND waiting for credits from a peer that does not read; RDMA
# READ and fetch-and-add waiting on a peer whose QP drops every request;
# IOCTL_BENCH waiting as SEND responder. Afterwards: an interrupted CONNECT
# leaves the file CLOSED, refusing reuse with EISCONN; the interrupted SEND
# sent nothing (the peer gets the message before it, then nothing) and the
# next 2 MiB SEND goes through, verified; the operation after an
# interrupted READ or FADD runs (and times out: the peer is still mute); the
# responder answers the next ping; every file then closes in under 5 s.
#
# Guards: a1d232d (send-queued, op-queued: the send and operation locks were uninterruptible mutexes)

DESCRIPTION="a signal ends every other blocking wait with EINTR within 3 s, and the file is sane after"

test_main() {
	ensure_loaded
	local c p port=$PORT cases=(connect-resolve connect-establish send-credits rdma atomic bench
		send-queued op-queued)
	if ! has_atomics; then
		cases=("${cases[@]/atomic/}")
		echo "  no atomic case: $PROV has no atomics"
	fi
	if [ "$PROV" = siw ]; then
		# The case needs a connection that stays up while the peer drops
		# every request. On iWARP a QP in the error state ends its TCP
		# stream (TERMINATE), as does a READ at a key the peer does not
		# have: the READ fails with ECONNRESET, there is no wait to
		# interrupt (seen: ECONNRESET at once on siw).
		cases=("${cases[@]/rdma/}")
		echo "  no rdma case: on iWARP a peer that drops requests ends the connection, so no READ waits"
	fi
	for p in "" --poll; do
		for c in ${cases[@]}; do
			port=$((port + 1))
			sig_case $c $port $p
		done
	done
}

# sig_case CASE PORT [ARGS...]: `rdma-krust-kit block --case CASE` blocks in one
# of the module's waits, and SIGUSR1 interrupts it: the tool sends it to
# itself 300 ms into the call, and again every 300 ms in case one lands
# before the wait starts. The tool checks EINTR, that the call returned
# within 3 s of the first signal, and the file afterwards.
sig_case() {
	local c=$1 port=$2 out prompt=()
	shift 2
	# iWARP: an interrupted connect returns once iw_cm lets its id go, which
	# for an unanswered request is siw's 10 s MPA timeout (rdma_destroy_id
	# waits for the connect's outcome). The wait itself ends at the signal.
	[ "$PROV" = siw ] && [ "$c" = connect-establish ] && prompt=(--prompt-ms 15000)
	out=$(timeout 60 "$KIT" --eintr-on-usr1 block --case "$c" --port "$port" --signal-after-ms 300 "${prompt[@]}" "$@" 2>&1) ||
		fail "$c $*: $out"
	grep -q "^$c: Interrupted system call (os error 4) after [0-9]* ms, [0-9]* ms after the first signal$" <<<"$out" ||
		fail "$c $*: $out"
	grep -q "^block $c: ok$" <<<"$out" || fail "$c $*: $out"
	sed -n "s/^$c: /  $c${1:+ $*}: /p; s/^after: /    /p; s/^note: /    note: /p" <<<"$out"
}
