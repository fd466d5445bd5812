# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# 100 cycles of two files of the module connecting (kernel to kernel),
# echoing one 4 KiB message (verified), disconnecting (either side, or by
# closing) and closing leave nothing behind. After a warm-up of 10 cycles
# and with the caches settled, the kmalloc objects in use must grow by less
# than 64 KiB over the 100 cycles (655 B per cycle), and SUnreclaim by less
# than 2 MiB. Measured on the main kernel over 100 cycles, in 13 runs:
# kmalloc objects -1 to +13 KiB (idle 2 s: -0.5 to 0), SUnreclaim -106 to
# +315 KiB. Each cycle allocates, per connection, a Conn, cm ids, a QP and
# CQs (objects of 328 B and more) and 40 receive buffers of 64 KiB (beyond
# the slab caches, counted in SUnreclaim): one of them leaked per cycle
# exceeds a threshold. Under KASAN (the debug kernel) freed objects wait in
# a quarantine: the growth is printed, not asserted; kmemleak_clean looks
# for leaks there.

DESCRIPTION="100 connect, echo, disconnect and close cycles leave the slab caches where they were"

test_main() {
	ensure_loaded
	[ -r /proc/slabinfo ] || fail "no /proc/slabinfo"
	local out b_obj b_unr a_obj a_unr d_obj d_unr
	out=$("$KIT" cycles --count 10 --port "$PORT" 2>&1) || fail "warm-up: $out"
	slab_settle
	cp /proc/slabinfo "$T/slabinfo.before"
	b_obj=$(kmalloc_bytes)
	b_unr=$(sunreclaim)
	out=$("$KIT" cycles --count 100 --port "$PORT" 2>&1) || fail "cycles: $out"
	echo "  $out"
	grep -q '^cycles: 100 connect/disconnect cycles, 200 messages of 4096 bytes verified' <<<"$out" ||
		fail "cycles: $out"
	slab_settle
	cp /proc/slabinfo "$T/slabinfo.after"
	a_obj=$(kmalloc_bytes)
	a_unr=$(sunreclaim)
	d_obj=$((a_obj - b_obj))
	d_unr=$((a_unr - b_unr))
	echo "  kmalloc objects: $b_obj -> $a_obj bytes: $d_obj bytes, $((d_obj / 100)) per cycle"
	echo "  SUnreclaim:      $b_unr -> $a_unr bytes: $d_unr bytes, $((d_unr / 100)) per cycle"
	if grep -qw __asan_load8 /proc/kallsyms; then
		echo "  KASAN kernel: quarantined objects count as in use; growth not asserted"
		return 0
	fi
	if [ $d_obj -ge $((64 * 1024)) ] || [ $d_unr -ge $((2 * 1024 * 1024)) ]; then
		slab_growers "$T/slabinfo.before" "$T/slabinfo.after" | sed 's/^/  grew: /'
		fail "growth over 100 cycles: kmalloc objects $d_obj bytes (limit 64 KiB), SUnreclaim $d_unr (limit 2 MiB)"
	fi
}

# slab_shrink: SLUB gives back its per-CPU slabs, whose free objects
# /proc/slabinfo would otherwise count as active.
slab_shrink() {
	local f
	for f in /sys/kernel/slab/*/shrink; do echo 1 >"$f" 2>/dev/null || true; done
}

# slab_settle: drop the page cache with its dentries and inodes, give RCU
# callbacks and deferred frees a second, then shrink the slabs.
slab_settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1
	slab_shrink
}

# kmalloc_bytes: bytes of objects in use (active_objs * objsize) in the
# kmalloc caches, where the module, rdma_cm, ib_cm, ib_core and rxe allocate
# their objects. The other caches follow the test's own processes and files
# (proc inodes, task structs: +13 KiB in 2 s of idling) and vmalloc's lazily
# freed bookkeeping (vmap_area: +/- 43 KiB).
kmalloc_bytes() { awk 'NR > 2 && $1 ~ /kmalloc-/ { s += $2 * $4 } END { print s }' /proc/slabinfo; }

# sunreclaim: unreclaimable slab memory in bytes; it also counts kmallocs too
# large for a slab cache (the 64 KiB receive buffers), which slabinfo does not.
sunreclaim() { awk '/^SUnreclaim:/ { print $2 * 1024 }' /proc/meminfo; }

# slab_growers BEFORE AFTER: the caches that grew most between two copies of
# /proc/slabinfo.
slab_growers() {
	awk 'NR > 2 { print $1, $2 * $4 }' "$1" | sort >"$T/slab.b"
	awk 'NR > 2 { print $1, $2 * $4 }' "$2" | sort >"$T/slab.a"
	join "$T/slab.b" "$T/slab.a" | awk '$3 > $2 { print $3 - $2, $1 }' | sort -rn | head -5
}
