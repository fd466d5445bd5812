#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0008 ("RDMA/rxe: Fix a read or atomic completed by a plain
# ACK"), with rdma-core's libraries only (rc.c), on rxe.
#
# Two RC connections between two ends of one program, with the local ACK
# timeout exponent at 1 (rxe's retry timer then fires on its first tick,
# well before an answer comes under load), each repeating: a 16 KiB SEND
# (16 packets), a FETCH_AND_ADD of 1 and a 32 KiB READ of a known pattern,
# for 60 s, with every end polling (the load); up to three such runs,
# until one shows the bug (one run on 6.12 missed it in 11,217 retries).
# A retry that resends the SEND and the FETCH_AND_ADD gets a plain ACK for
# the repeated SEND at the add's PSN: without the fix rxe completes the
# add on it, without its old value (the program sees its poison
# 0xdeadbeefdeadbeef or another stale value), or a READ with part of its
# data (and a WARNING in rxe_comp.c).
# With it every add returns the counter's old value and every READ the
# pattern.
#
#   0008-rxe-read-or-atomic-completed-by-ack.sh ADDR [PORT]
#
# Exit 0: every result right; 1: a wrong one or a lost connection; 2: could
# not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7178}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
build_rc 0008
rc_retry 0008 "${REPRO_SECONDS:-60}" 2 atomic \
	'FETCH_AND_ADD returned|READ returned' \
	"a FETCH_AND_ADD or READ completed with the wrong data" \
	"every FETCH_AND_ADD and READ returned the right data" 3
