#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One guest of the two-host suite (scripts/qemu-pair.sh), run by
# guest-init.sh: loads the module, puts rxe on the NIC, then runs the tests
# (role a) or the agent that carries out A's requests (role b).

# The test kit: `pair` runs rdma-krust's commands, from next to it.
KIT=$KRUST_ROOT/userspace-peer/target/release/rdma-krust-kit
export KRUST_KO=$KRUST_ROOT/rdma_krust.ko

echo "guest $KRUST_ROLE: $(uname -r), $KRUST_IP on $KRUST_NIC, $(nproc) CPU(s)"
insmod "$KRUST_KO" || { echo "pair: insmod failed"; exit 1; }
rdma link add rxe0 type rxe netdev "$KRUST_NIC" || { echo "pair: rdma link add failed"; exit 1; }
for _ in $(seq 50); do
	rdma link show 2>/dev/null | grep -q 'rxe0.*ACTIVE' && break
	sleep 0.2
done
if [ "$KRUST_ROLE" = a ]; then
	"$KIT" pair --ctl /tmp/ctl --me 192.0.2.1 --peer 192.0.2.2 --tests "${KRUST_TESTS:-}" 2>&1
else
	"$KIT" agent --ctl /tmp/ctl >"$KRUST_OUT/agent.log" 2>&1
fi
