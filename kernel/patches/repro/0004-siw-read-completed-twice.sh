#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0004 ("RDMA/siw: Fix a queued READ completed twice on
# flush"), with rdma-core's libraries only (rc.c).
#
# Per round a siw connection is made between two ends of one program; the
# active end posts 64-byte RDMA READs eight at a time while the passive
# end disconnects after 1 to 20 ms. When the close stops siw's transmit
# loop right after it moved a READ into the ORQ, the flush completes that
# READ twice (once as an ORQ entry, once as the send queue's current
# WQE): without the fix the program sees a wr_id completed a second time.
# With it each READ completes once.
#
#   0004-siw-read-completed-twice.sh ADDR [PORT]
#
# Exit 0: no READ completed twice in any round; 1: one did; 2: could not
# run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7176}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
build_rc 0004
timeout 240 "$tmp/rc" reads "$addr" "$port" "${REPRO_ROUNDS:-40}" | sed 's/^rc: /repro 0004: /'
rc=${PIPESTATUS[0]}
case $rc in
0) echo "repro 0004: fixed: every READ completed once" ;;
1) echo "repro 0004: bug: a flushed READ completed twice" ;;
*) echo "repro 0004: rc reads failed ($rc)"; exit 2 ;;
esac
exit $rc
