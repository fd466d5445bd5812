# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A listening file is closed while a connect to it is being handled, 300
# times, the close 0 to 20 ms after the connect starts (rdma-krust
# listen-close-race), on a device of its own. Every round's connect ends
# (connected, refused, reset or timed out); then the device is deleted,
# which rdma_cm only completes once every id on it is destroyed: a request
# set up after its listener's file closed used to stay behind, held by a
# reference cycle, and the delete hung. Then the module unloads.
# On siw, a close that came after the module accepted a request made the
# handler tear the accepted child down inside itself, which waits for the
# accept's ESTABLISHED event from iw_cm's one ordered workqueue, the one
# running the handler: round 2 hung, and every iWARP event with it. The
# accept and the keeping of the child are now one step under the file's
# lock, so a close refuses a request unaccepted or finds it kept.
#
# Guards: c437eca (a request set up after its listener closed stayed behind), 6a14f7f (siw: round 2 hung iw_cm), kernel/patches/0003

DESCRIPTION="a listening file closed while a connect is handled, 300 times: every connect ends, no id left behind"

test_main() {
	ensure_loaded
	veth_dev ${PROV}12 12 198.51.100.25
	local out t rc=0
	out=$(run_bounded 300 "$KIT" listen-close-race --ip 198.51.100.25 --port "$PORT" --rounds 300 --seed "$RANDOM") ||
		fail "listen-close-race failed: $out"
	echo "$out" | sed 's/^/  /'
	# A listener that goes refuses or resets a request; none is left to
	# the connector's timeout. 6.12's iw_cm dropped a request queued as
	# its listener went, and siw kept the new endpoint: a connect that
	# timed out after siw's 10 s MPA timeout, and a leak kmemleak showed
	# (kernel/patches/0003-iwcm-fix-a-connect-request-dropped-while-its-listener-goes.patch).
	! grep -q 'ETIMEDOUT' <<<"${out%%slowest*}" || fail "a connect timed out: its request was dropped"
	t=$(date +%s%N)
	out=$(run_bounded 20 rdma link delete ${PROV}12) || rc=$?
	if [ $rc = 124 ]; then
		echo "$out" | sed 's/^/  /'
		echo "  cm ids left:"
		rdma resource show cm_id 2>&1 | sed 's/^/    /'
		fail "rdma link delete ${PROV}12 still waiting after 20 s: an id was left behind"
	fi
	[ $rc = 0 ] || fail "rdma link delete ${PROV}12 failed: $out"
	echo "  rdma link delete took $((($(date +%s%N) - t) / 1000000)) ms"
	ip link del kv12
	rmmod rdma_krust || fail "rmmod failed"
	insmod "$KO" || fail "insmod failed"
}
