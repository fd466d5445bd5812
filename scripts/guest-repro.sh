#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# In the guest (KRUST_MODE=repro, from scripts/guest-init.sh): each provider
# fix's reproducer, kernel/patches/repro/NNNN-*.sh, on a device of its
# provider on the guest's NIC (the name says which: -siw-, -rxe-, -iwcm-
# on siw). A line each, "repro: NNNN exit N" (0: the fixed behaviour, 1:
# the bug, 2: could not run), then any BUG, Oops, KASAN or WARNING report
# the kernel logged, then "done" in the output directory.

cd "$KRUST_ROOT" || exit 1
modprobe rdma_rxe
modprobe siw
for r in kernel/patches/repro/[0-9][0-9][0-9][0-9]-*.sh; do
	name=$(basename "$r" .sh)
	# qemu-test.sh --repro NNNN...: only those.
	[ -z "${KRUST_TESTS:-}" ] || [[ ",$KRUST_TESTS," == *",${name:0:4},"* ]] || continue
	case "$name" in
	*-rxe-*) prov=rxe ;;
	*) prov=siw ;;
	esac
	rdma link add "${prov}0" type "$prov" netdev "$KRUST_NIC"
	sleep 1
	dmesg -C
	# Each reproducer bounds its own rounds (0001's, the longest, to
	# 420 s); this only stops one that hangs.
	out=$(timeout 600 bash "$r" "$KRUST_IP" 2>&1)
	rc=$?
	sed "s/^/  /" <<<"$out"
	echo "repro: ${name:0:4} exit $rc ($name on $prov)"
	dmesg | grep -E 'BUG|Oops|KASAN|WARNING|refcount_t' | head -5 | sed 's/^/  kernel: /'
	timeout 30 rdma link delete "${prov}0"
done | tee "$KRUST_OUT/repro.txt"
touch "$KRUST_OUT/done"
