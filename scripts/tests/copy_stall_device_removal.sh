# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Every copy between user memory and the module stalls in turn while the
# device goes. SEND, WRITE and the window's copies lose their connection
# with the device and fail with ENODEV once the page comes; a READ whose
# data had all arrived before the device went delivers it, and so does a
# RECV: its message (over 64 KiB, announced) was READ whole into kernel
# memory before the copy to user memory began (wire version 2; version 1
# copied fragment by fragment and lost the rest with the device).

DESCRIPTION="the device leaves while a user copy stalls (userfaultfd): the removal does not wait for the copy"

test_main() {
	ensure_loaded
	stall_case recv ok
	stall_case send "No such device"
	stall_case write "No such device"
	stall_case read ok
	stall_case window-read "No such device"
	stall_case window-write "No such device"
	expect_eq "$(klog | grep -c "remove ${PROV}14: 2 connection(s) torn down")" 6 "teardown messages"
}

# stall_case OP EXPECT: `rdma-krust-kit stall --op OP` on a fresh device of the
# provider: the operation's user buffer has a missing page at 64 KiB that a
# userfaultfd holds back, so the module's copy to or from user memory waits
# on it. Meanwhile the device is deleted: the deletion must finish while the
# copy still waits (nothing of the device may be held across a user copy).
# Then the page is filled, and the operation must end with EXPECT ("ok", or
# an errno's text).
stall_case() {
	local op=$1 expect=$2 out=$T/stall.$1 rel=$T/stall.$1.release
	local pid del t res
	rm -f "$rel"
	veth_dev ${PROV}14 14 198.51.100.33
	"$KIT" stall --op "$op" --ip 198.51.100.33 --port "$PORT" --release "$rel" >"$out" 2>&1 &
	pid=$!
	if ! wait_for 30 grep -q '^stalled' "$out"; then
		kill $pid 2>/dev/null
		wait $pid
		rdma link delete ${PROV}14
		ip link del kv14
		fail "$op: the copy never stalled: $(cat "$out")"
	fi
	t=$(date +%s%N)
	# In the background: a deletion that waits for the copy sleeps in the
	# kernel beyond any signal; only releasing the page ends it.
	rdma link delete ${PROV}14 &
	del=$!
	if ! wait_for 20 eval "! kill -0 $del"; then
		echo "  $op: rdma link delete still waiting after 20 s; its stack:"
		sed 's/^/    /' /proc/$del/stack 2>/dev/null
		touch "$rel"
		wait $del
		wait $pid
		ip link del kv14
		fail "$op: rdma link delete waited for a stalled user copy"
	fi
	wait $del || fail "$op: rdma link delete ${PROV}14 failed"
	t=$((($(date +%s%N) - t) / 1000000))
	kill -0 $pid 2>/dev/null || fail "$op: the operation ended before its page came: $(cat "$out")"
	touch "$rel"
	wait $pid || fail "$op: stall failed: $(cat "$out")"
	ip link del kv14
	res=$(sed -n 's/^result: //p' "$out")
	echo "  $op: rdma link delete took $t ms with the copy stalled; then: $res"
	case $expect in
	ok) expect_eq "$res" ok "$op's result" ;;
	*) [[ "$res" == "$expect"* ]] || fail "$op: expected '$expect', got '$res'" ;;
	esac
	not_listed ${PROV}14 || fail "${PROV}14 still listed"
}
