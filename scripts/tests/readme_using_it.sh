# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# README's "Using it" block, run as written on the guest's address (the
# build and insmod lines aside, done already): every command must succeed,
# and every server started with & must end by itself with status 0 once its
# client is done. Before the next line, a server started with & must say it
# is listening, as it has by the time a person types the next line. The
# block once sent two messages to a server that echoes one. Its bench is
# -n 200 (13 MB): perftest's default 5000 x 64 KiB takes minutes on the
# debug kernel.
#
# Guards: bb5ddec (the block sent two messages to a server that echoes one)

DESCRIPTION="README's 'Using it' block runs as written, its servers ending with status 0"

test_main() {
	ensure_loaded
	local line cmd out n=0 i rc
	# The servers started with &: their pids, README line numbers and logs.
	local -a lines pids=() bg_n=() bg_log=()
	# When the test fails: the servers' output so far, and the servers
	# still running killed.
	stop_bg() {
		local j
		for j in "${!pids[@]}"; do
			echo "  output of README line ${bg_n[j]}:"
			sed 's/^/    /' "${bg_log[j]}"
			kill "${pids[j]}" 2>/dev/null || true
		done
	}
	# (A here-string: the guest has no /dev/fd for process substitution.)
	mapfile -t lines <<<"$(awk '/^## Using it/ { f = 1 } f && /^```sh/ { b = 1; next } b && /^```/ { exit } b' "$ROOT/README.md")"
	[ ${#lines[@]} -gt 5 ] || fail "no sh block under README's \"## Using it\""
	for line in "${lines[@]}"; do
		cmd=${line%%#*}
		cmd=$(echo "$cmd" | sed 's/[[:space:]]*$//')
		case "$cmd" in
		"" | make* | insmod* | "cd "*) continue ;;
		esac
		n=$((n + 1))
		if [[ $cmd == *"&" ]]; then
			(cd "$ROOT/userspace-peer" && exec bash -c "${cmd%&}") >"$T/readme-bg-$n.log" 2>&1 &
			pids+=("$!")
			bg_n+=("$n: ${cmd%&}")
			bg_log+=("$T/readme-bg-$n.log")
			wait_for 30 grep -q '^listening' "$T/readme-bg-$n.log" || {
				stop_bg
				fail "README line $n, started with &, did not say it listens within 30 s: $cmd; its output: $(cat "$T/readme-bg-$n.log")"
			}
			echo "  README line $n (background): $cmd"
			continue
		fi
		rc=0
		# 600 s: a guard against a hang, not a bound on a slow run.
		out=$(cd "$ROOT/userspace-peer" && timeout 600 bash -c "$cmd" 2>&1) || rc=$?
		[ $rc = 0 ] || {
			stop_bg
			fail "README line $n failed ($rc): $cmd; output: $out"
		}
		echo "  README line $n: $cmd: ok, $(echo "$out" | wc -l) lines of output:"
		head -12 <<<"$out" | sed 's/^/    /'
	done
	for i in "${!pids[@]}"; do
		rc=0
		wait_for 60 eval "! kill -0 ${pids[i]}" || {
			stop_bg
			fail "README background line ${bg_n[i]} still running 60 s after its client ended"
		}
		wait "${pids[i]}" || rc=$?
		[ $rc = 0 ] || fail "README background line ${bg_n[i]} exited $rc: $(cat "${bg_log[i]}")"
	done
	echo "  $n commands, ${#pids[@]} of them servers in the background, all ended with status 0"
}
