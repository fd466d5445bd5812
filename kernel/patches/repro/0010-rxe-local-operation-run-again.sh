#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0010 ("RDMA/rxe: Fix a local operation run again after a
# retry"), with rdma-core's libraries only (rc.c), on rxe.
#
# Four RC connections between two ends of one program, with the local ACK
# timeout exponent at 1 (rxe's retry timer then fires on its first tick),
# each streaming 512-byte SENDs (one packet each, so 0009's multi-packet
# case stays out of it), 32 requests in flight, every fourth request a
# BIND_MW or a LOCAL_INV of a type 2 memory window, in turn, for 60 s,
# every end polling (the load). A retry rewinds the send queue past a
# BIND_MW that already ran: without the fix rxe runs it again, finds the
# window bound (not free), and fails the QP; every request in flight then
# completes flushed (status 5), or the bind with its own error (6). With
# it every request completes.
#
#   0010-rxe-local-operation-run-again.sh ADDR [PORT]
#
# Exit 0: every request completed and every message arrived whole; 1: a
# request flushed or failed locally; 2: could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7180}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
build_rc 0010
rc_retry 0010 "${REPRO_SECONDS:-60}" 4 bind \
	'completion status (2|5|6) ' \
	"a connection's QP failed at a local operation: its requests flushed" \
	"every request completed, every message arrived whole"
