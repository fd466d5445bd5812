#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The two-host suite: two guests from the same cached kernel, A at
# 192.0.2.1 and B at 192.0.2.2 (TEST-NET-1), each with rxe on its NIC. Their
# NICs are QEMU "dgram" netdevs whose frames go through krust-relay on the
# host's loopback, which drops, reorders, duplicates and delays frames, or
# cuts the link, as its control file says. A runs `rdma-krust-kit pair`
# (the tests, in Rust, which run rdma-krust's commands on both guests); B
# runs `rdma-krust-kit agent`, which executes A's requests. Both share a
# host directory for that (and for the relay's control file), so the
# control path never crosses the faulty link.
#
# Run it through scripts/qemu-test.sh --pair [NAME...], which builds first.
# The last line is "N passed, N failed": A's tests, plus one failure for
# any splat in either guest's kernel log.
#
# Environment: KRUST_TIMEOUT (seconds, default 2400), KRUST_LOGDIR,
# KRUST_MEM (per guest, default 1G), KRUST_SMP (per guest, default 1).
set -euo pipefail

: "${ROOT:?run through scripts/qemu-test.sh --pair}" "${BZIMAGE:?}" "${KDIR:?}"
tests=$(IFS=,; echo "$*")

LOGDIR=${KRUST_LOGDIR:-$(mktemp -d /tmp/rdma-krust-pair.XXXXXX)}
mkdir -p "$LOGDIR/a/out" "$LOGDIR/b/out" "$LOGDIR/ctl"
rm -f "$LOGDIR"/ctl/* "$LOGDIR"/ctl/.??* 2>/dev/null || true
echo clean >"$LOGDIR/ctl/link"

# Four loopback UDP ports: the relay's side for A and B, and each guest's.
base=$((20000 + RANDOM % 20000))
a_relay=$base a_guest=$((base + 1)) b_relay=$((base + 2)) b_guest=$((base + 3))

# QEMU's dgram sockets take the host's default receive buffer (208 KiB),
# which a burst of rxe frames overflows while a vCPU is busy: loss on the
# "clean" link that nobody counts. 4 MiB for the guests' lifetime, restored
# after.
old_rmem=$(sysctl -n net.core.rmem_default 2>/dev/null || echo)
if [ -n "$old_rmem" ] && [ "$old_rmem" -lt 4194304 ]; then
	sysctl -qw net.core.rmem_default=4194304 && trap 'sysctl -qw net.core.rmem_default=$old_rmem' EXIT
fi

source "$ROOT/scripts/qemu-guest.sh"
RELAY="$ROOT/userspace-peer/target/release/krust-relay"
"$RELAY" --a-listen $a_relay --a-guest $a_guest --b-listen $b_relay --b-guest $b_guest \
	--control "$LOGDIR/ctl/link" --stats "$LOGDIR/relay.stats" --seed "${KRUST_PAIR_SEED:-1}" \
	>"$LOGDIR/relay.log" 2>&1 &
relay=$!

# guest ROLE IP MAC GUESTPORT RELAYPORT: runs one guest to its end.
guest() {
	local role=$1 ip=$2 mac=$3 port=$4 rport=$5 dir=$LOGDIR/$1
	qemu_guest "$dir/out"
	timeout --foreground -k 10 "${KRUST_TIMEOUT:-2400}" \
		qemu-system-x86_64 -accel tcg -cpu max \
		-smp "${KRUST_SMP:-1}" -m "${KRUST_MEM:-1G}" -kernel "$BZIMAGE" \
		-append "$GUEST_APPEND KRUST_MODE=pair KRUST_ROLE=$role KRUST_IP=$ip KRUST_TESTS=$tests" \
		"${GUEST_ARGS[@]}" \
		-fsdev local,id=ctl,path="$LOGDIR/ctl",security_model=none \
		-device virtio-9p-pci,fsdev=ctl,mount_tag=krust_ctl \
		-netdev dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$port,remote.type=inet,remote.host=127.0.0.1,remote.port=$rport \
		-device virtio-net-pci,netdev=n0,mac=$mac \
		</dev/null >"$dir/console.log" 2>&1
}

echo "qemu-pair: booting two guests of $(basename "$KDIR") under TCG; log: $LOGDIR"
start=$(date +%s)
guest b 192.0.2.2 52:54:00:4b:00:02 $b_guest $b_relay &
b_pid=$!
guest a 192.0.2.1 52:54:00:4b:00:01 $a_guest $a_relay &
a_pid=$!
# A's results as they come.
tail -n +1 -F "$LOGDIR/a/console.log" 2>/dev/null | grep --line-buffered -E '^(pair|  )' &
tailer=$!
# udp_drops PORT: what the host dropped for the loopback socket on PORT
# (its receive buffer was full), from /proc/net/udp's last column.
udp_drops() {
	awk -v p="$(printf ':%04X' "$1")" '$2 ~ p"$" { d += $NF } END { print d + 0 }' /proc/net/udp
}
while sleep 5; do
	echo "guest A $(udp_drops $a_guest), guest B $(udp_drops $b_guest)" >"$LOGDIR/qemu-drops"
done &
sampler=$!
set +e
wait $a_pid
a_rc=$?
kill $sampler 2>/dev/null
echo "qemu-pair: frames the host dropped at the guests' full sockets: $(cat "$LOGDIR/qemu-drops" 2>/dev/null)"
# B ends when A's runner says stop (or was powered off by a test).
for _ in $(seq 60); do kill -0 $b_pid 2>/dev/null || break; sleep 1; done
kill $b_pid 2>/dev/null
wait $b_pid
kill $tailer $relay 2>/dev/null
wait $relay
set -e
echo "qemu-pair: guests ran $(($(date +%s) - start)) s (A's qemu exit $a_rc)"
cat "$LOGDIR/relay.stats" 2>/dev/null | sed 's/^/qemu-pair: /' || true

splat_re='WARNING:|BUG:|Oops|KASAN|UBSAN|circular locking|recursive locking|inconsistent lock state|possible deadlock|unreferenced object|Call Trace:|rcu.*stall|blocked for more than|soft lockup|general protection|Kernel panic'
splats=0
for f in "$LOGDIR"/a/out/dmesg*.txt "$LOGDIR"/b/out/dmesg*.txt; do
	[ -f "$f" ] || continue
	if grep -qE "$splat_re" "$f"; then
		echo "qemu-pair: kernel splat in ${f#"$LOGDIR"/}:" >&2
		grep -E "$splat_re" "$f" | head -5 | sed 's/^/    /' >&2
		splats=1
	fi
done
line=$(grep -E '^pair: [0-9]+ passed, [0-9]+ failed' "$LOGDIR/a/console.log" | tail -1 || true)
if [ -z "$line" ]; then
	echo "qemu-pair: guest A reported no result; consoles: $LOGDIR/{a,b}/console.log" >&2
	echo "pair: 0 passed, $((1 + splats)) failed"
	exit 1
fi
passed=$(sed -E 's/^pair: ([0-9]+) passed.*/\1/' <<<"$line")
failed=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
failed=$((failed + splats))
if [ "$failed" != 0 ]; then
	echo "qemu-pair: failures:" >&2
	grep '^pair: FAIL' "$LOGDIR/a/console.log" >&2 || true
	echo "qemu-pair: consoles and dmesg under $LOGDIR/{a,b}" >&2
fi
echo "pair: $passed passed, $failed failed"
[ "$failed" = 0 ]
