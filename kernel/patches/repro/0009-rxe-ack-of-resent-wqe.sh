#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0009 ("RDMA/rxe: Fix an ACK of a resent WQE moving the
# completer past it"), with rdma-core's libraries only (rc.c), on rxe.
#
# Four RC connections between two ends of one program, with the local ACK
# timeout exponent at 1 (rxe's retry timer then fires on its first tick),
# each streaming 16 KiB SENDs and RDMA WRITEs, two to one, 32 requests in
# flight, for 90 s, every end polling (the load). When the first try's ACK
# of a WQE's last packet arrives after the retry timer reset it, rxe moves
# past the WQE without completing it; the next retry resends it as an
# empty SEND and every later packet one PSN late: without the fix a
# connection fails with a remote error (IB_WC_REM_INV_REQ_ERR,
# IB_WC_REM_OP_ERR, or a receive error at the passive end), or the passive
# end receives a message that was never sent. With it every message
# arrives whole.
#
#   0009-rxe-ack-of-resent-wqe.sh ADDR [PORT]
#
# Exit 0: every message right and no connection lost; 1: otherwise; 2:
# could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7179}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
build_rc 0009
rc_retry 0009 "${REPRO_SECONDS:-90}" 4 stream \
	'status (9|10|11) |receive status|message [0-9]+: [0-9]+ bytes' \
	"a connection failed with a remote error or a message arrived wrong" \
	"every message arrived whole, no connection lost"
