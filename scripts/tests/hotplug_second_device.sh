# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A second rxe device shows up in the list when added and leaves when deleted.

DESCRIPTION="a second device shows up in the list when added and leaves when deleted"

test_main() {
	ensure_loaded
	veth_dev ${PROV}1 0
	expect_eq "$("$TOOL" devices --brief | grep "^${PROV}1 ")" \
		"$("$TOOL" devices --verbs --brief | grep "^${PROV}1 ")" "${PROV}1, ioctl vs libibverbs"
	listed $DEV || fail "$DEV lost"
	rdma link delete ${PROV}1 || fail "rdma link delete ${PROV}1"
	wait_for 10 not_listed ${PROV}1 || fail "${PROV}1 still listed after delete"
	verbs_not_listed ${PROV}1 || fail "${PROV}1 still in libibverbs"
	listed $DEV || fail "$DEV lost"
	ip link del kv0
	expect_eq "$(klog | grep -c "add ${PROV}1:")" 1 "add ${PROV}1 messages"
	expect_eq "$(klog | grep -c "remove ${PROV}1")" 1 "remove ${PROV}1 messages"
}
