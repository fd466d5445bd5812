# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Once a connection has had its requests in flight, posting and completing
# them allocates nothing: kernel::rdma keeps the boxes of completed work
# requests for the next posts (Documentation/kernel-rdma.rst). Counted
# with the kmem:kmalloc trace event: Rust's allocations all go through
# one function of the kernel crate's allocator (ReallocFunc::call), which
# the event names as its call site. Two SEND ping-pongs (both ends in the
# kernel, reaping their own CQs) that differ only in their iterations
# must differ by less than one Rust allocation per 100 round trips; before
# the box cache each round trip allocated four boxes (a SEND's and a
# receive's, at each end).

DESCRIPTION="the data path allocates nothing: a ping-pong's Rust allocations do not grow with its iterations"

TRACING=/sys/kernel/tracing

requires() {
	[ -d $TRACING/events ] || mount -t tracefs nodev $TRACING 2>/dev/null
	[ -d $TRACING/events/kmem/kmalloc ] && return 0
	echo "no kmem:kmalloc trace event in this kernel"
	return 1
}

# rust_allocs PORT ITERS: the kmalloc calls of Rust code, system-wide,
# while a SEND ping-pong of ITERS round trips runs from connection to
# teardown.
rust_allocs() {
	echo 0 >$TRACING/tracing_on
	: >$TRACING/trace
	echo 1 >$TRACING/events/kmem/kmalloc/enable
	echo 1 >$TRACING/tracing_on
	# Only the count goes to stdout (the caller's $(...)); what went wrong
	# goes to stderr.
	local rc=0
	bench_pair "$1" --op send --mode lat --size 8 --iters "$2" >"$T/json.$1" || rc=1
	echo 0 >$TRACING/tracing_on
	echo 0 >$TRACING/events/kmem/kmalloc/enable
	[ $rc = 0 ] || { cat "$T/json.$1" >&2; return 1; }
	! grep -q 'LOST' $TRACING/trace || { fail "the trace lost events" >&2; return 1; }
	grep -c 'call_site=.*ReallocFunc' $TRACING/trace
	: >$TRACING/trace
}

test_main() {
	ensure_loaded
	local old_kb few many rc=0
	old_kb=$(awk '{ print $1; exit }' $TRACING/buffer_size_kb)
	echo 8192 >$TRACING/buffer_size_kb
	few=$(rust_allocs $((PORT + 1)) 100) && many=$(rust_allocs $((PORT + 2)) 2100) || rc=1
	# Back to the size it had, whatever happened.
	echo "$old_kb" >$TRACING/buffer_size_kb
	[ $rc = 0 ] || return 1
	echo "  Rust allocations: $few with 100 round trips, $many with 2100"
	[ "$few" -gt 0 ] || fail "no Rust allocation seen: the count does not see the module"
	[ $((many - few)) -lt 20 ] ||
		fail "$((many - few)) more Rust allocations for 2000 more round trips"
}
