#!/bin/bash
# Soft-RoCE smoke test: in ONE boot of the rxe test VM, run the standard
# RDMA tools and the project's own verbs program between the two rxe
# devices, and check that their packets really crossed the veth pair.
#
# Usage: test/rdma/smoke.sh [-v]
#   -v  show the output of every check, not only of failed ones
#
# Exit status: 0 all checks passed, 1 a check failed or the VM failed,
# 77 the VM cannot be provided here (no qemu or no kernel package could
# be installed).  Set PXFER_REQUIRE_RXE=1 (CI) to turn that into a
# failure.  PXFER_SKIP_VM=1 ("make check") skips the test (77).
#
# build/rxe/verbs_selftest is built (with the top-level Makefile when
# there is one) only when it is missing or older than its source, so a
# sanitizer build from "make SAN=1 rxe-progs" is used as it is.
#
# The part after "--in-vm" runs inside the VM (test/vm/run).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SELFTEST=$ROOT/build/rxe/verbs_selftest

# ============================================================================
# Inside the VM
# ============================================================================

in_vm() {
	local verbose=$1
	local log=/tmp/rxe-smoke
	local pass=0 fail=0
	local sdev=$PXFER_RXE_SERVER_DEV cdev=$PXFER_RXE_CLIENT_DEV
	local sgid=$PXFER_RXE_SERVER_GID cgid=$PXFER_RXE_CLIENT_GID
	local saddr=$PXFER_RXE_SERVER_ADDR caddr=$PXFER_RXE_CLIENT_ADDR
	local sif=$PXFER_RXE_SERVER_IF cif=$PXFER_RXE_CLIENT_IF

	# Every check reports its own failure; never stop half way.
	set +e
	mkdir -p "$log"

	stat_of() {
		local v=0
		read -r v 2>/dev/null < "/sys/class/net/$1/statistics/$2" || true
		echo "$v"
	}

	# Packets the server interface sent and received; with veth these are
	# exactly the client interface's received and sent packets.
	snap() {
		echo "$(stat_of "$sif" tx_packets) $(stat_of "$sif" rx_packets)"
	}

	# Milliseconds since the epoch.
	now_ms() {
		local t=${EPOCHREALTIME/./}
		echo $((t / 1000))
	}

	# check_min F TX RX MIN: MIN is "TX/RX", the least packets expected
	# from the server to the client and back; logs and fails when short.
	check_min() {
		local f=$1 tx=$2 rx=$3 mtx=${4%/*} mrx=${4#*/}
		[ "$tx" -ge "$mtx" ] && [ "$rx" -ge "$mrx" ] && return 0
		echo "# expected at least $mtx packets server->client and $mrx client->server over the veth" >> "$f"
		return 1
	}

	report() {
		local name=$1 rc=$2 extra=$3 f=$4
		local ms=$(($(now_ms) - t0)) took
		took=$(printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100)))
		if [ "$rc" -eq 0 ]; then
			pass=$((pass + 1))
			printf 'ok     %-34s %6s  %s\n' "$name" "$took" "$extra"
			if [ "$verbose" -eq 1 ] && [ -s "$f" ]; then
				sed 's/^/       | /' "$f"
			fi
		else
			fail=$((fail + 1))
			printf 'FAIL   %-34s %6s  %s\n' "$name" "$took" "$extra"
			[ -s "$f" ] && tail -n 30 "$f" | sed 's/^/       | /'
		fi
		return 0
	}

	# Wait until the server listens: tcp:PORT (perftest and the
	# pingpongs exchange their QP numbers over TCP), cm:PORT (rdma_cm
	# listener) or - (nothing to wait for).
	wait_listen() {
		local kind=${1%%:*} port=${1#*:} hex n
		[ "$1" = - ] && return 0
		hex=$(printf '%04X' "$port")
		for ((n = 0; n < 200; n++)); do
			case $kind in
			tcp)
				grep -q "^ *[0-9]*: [0-9A-F]*:$hex [0-9A-F]*:0000 0A" \
					/proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
				;;
			cm)
				rdma res show cm_id 2>/dev/null |
					grep -q "state LISTEN .*src-addr [^ ]*:$port " && return 0
				;;
			esac
			sleep 0.1
		done
		return 1
	}

	# pair NAME TX/RX tcp:PORT|cm:PORT|- SERVER-CMD -- CLIENT-CMD
	# Runs the server in the background, the client once the server
	# listens, and checks both exit statuses and that at least TX packets
	# went from the server to the client over the veth, and RX back.
	pair() {
		local name=$1 min=$2 port=$3
		shift 3
		local scmd=() ccmd=() spid src crc a0 b0 a1 b1 tx rx rc=0 f t0
		while [ "$1" != -- ]; do scmd+=("$1"); shift; done
		shift
		ccmd=("$@")
		f=$log/${name//[^A-Za-z0-9_.-]/_}.log

		t0=$(now_ms)
		read -r a0 b0 <<< "$(snap)"
		{ echo "# server: ${scmd[*]}"; } > "$f"
		timeout 60 "${scmd[@]}" > "$f.server" 2>&1 &
		spid=$!
		wait_listen "$port" || echo "# server did not listen ($port)" >> "$f"
		timeout 60 "${ccmd[@]}" > "$f.client" 2>&1
		crc=$?
		wait "$spid"
		src=$?
		read -r a1 b1 <<< "$(snap)"
		tx=$((a1 - a0))
		rx=$((b1 - b0))
		{
			cat "$f.server"
			echo "# client: ${ccmd[*]}"
			cat "$f.client"
			echo "# server exit $src, client exit $crc; veth: $tx pkts server->client, $rx pkts client->server"
		} >> "$f"
		[ $src -eq 0 ] && [ $crc -eq 0 ] || rc=1
		check_min "$f" $tx $rx "$min" || rc=1
		report "$name" $rc "(veth: $tx/$rx pkts)" "$f"
	}

	# single NAME TX/RX CMD...: a program that is server and client.
	single() {
		local name=$1 min=$2 a0 b0 a1 b1 tx rx rc=0 f t0
		shift 2
		f=$log/${name//[^A-Za-z0-9_.-]/_}.log
		t0=$(now_ms)
		read -r a0 b0 <<< "$(snap)"
		echo "# $*" > "$f"
		timeout 90 "$@" >> "$f" 2>&1 || rc=$?
		read -r a1 b1 <<< "$(snap)"
		tx=$((a1 - a0))
		rx=$((b1 - b0))
		echo "# exit $rc; veth: $tx pkts server->client, $rx pkts client->server" >> "$f"
		if [ $rc -eq 0 ]; then
			check_min "$f" $tx $rx "$min" || rc=1
		fi
		report "$name" $rc "(veth: $tx/$rx pkts)" "$f"
	}

	# lossy_selftest KLOG ARGS...: verbs_selftest ARGS, once more if it
	# timed out (exit 1 with "timed out"); the kernel's rxe messages of a
	# run that timed out go to KLOG (called through single)
	# shellcheck disable=SC2317
	lossy_selftest() {
		local klog=$1 out rc=0
		shift
		out=$("$SELFTEST" "$@" 2>&1) || rc=$?
		echo "$out"
		if [ "$rc" -ne 0 ] && grep -q "timed out" <<<"$out"; then
			dmesg | tail -n 50 > "$klog" 2>&1
			echo "# timed out: kernel log in $klog; once more"
			"$SELFTEST" "$@" 2>&1
			return
		fi
		return "$rc"
	}

	# expect_fail NAME CMD...: the command must fail.
	expect_fail() {
		local name=$1 rc=0 f t0
		shift
		f=$log/${name//[^A-Za-z0-9_.-]/_}.log
		t0=$(now_ms)
		echo "# $* (must fail)" > "$f"
		timeout 60 "$@" >> "$f" 2>&1 || rc=$?
		echo "# exit $rc" >> "$f"
		if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then rc=0; else rc=1; fi
		report "$name" $rc "" "$f"
	}

	echo "rxe_smoke: kernel $(uname -r); server $sdev/$sif $saddr gid $sgid," \
	     "client $cdev/$cif $caddr gid $cgid"

	# --- the provider and both devices are visible to user space
	local f=$log/devices.log rc=0 t0
	t0=$(now_ms)
	ibv_devinfo -d "$sdev" > "$f" 2>&1 && ibv_devinfo -d "$cdev" >> "$f" 2>&1 || rc=1
	grep -q 'PORT_ACTIVE' "$f" || rc=1
	report "rxe provider, devices active" $rc "($sdev, $cdev)" "$f"

	# --- standard tools
	pair "rping -V" 20/20 cm:7174 \
		rping -s -a "$saddr" -p 7174 -C 20 -V -S 1024 -- \
		rping -c -a "$saddr" -I "$caddr" -p 7174 -C 20 -V -S 1024

	pair "ibv_rc_pingpong" 400/400 tcp:18515 \
		ibv_rc_pingpong -d "$sdev" -g "$sgid" -n 100 -s 4096 -c -p 18515 -- \
		ibv_rc_pingpong -d "$cdev" -g "$cgid" -n 100 -s 4096 -c -p 18515 "$saddr"

	pair "ibv_ud_pingpong" 100/100 tcp:18516 \
		ibv_ud_pingpong -d "$sdev" -g "$sgid" -n 100 -s 512 -c -p 18516 -- \
		ibv_ud_pingpong -d "$cdev" -g "$cgid" -n 100 -s 512 -c -p 18516 "$saddr"

	pair "ib_write_bw" 20/12800 tcp:18517 \
		ib_write_bw -d "$sdev" -x "$sgid" -F -n 200 -s 65536 --report_gbits -p 18517 -- \
		ib_write_bw -d "$cdev" -x "$cgid" -F -n 200 -s 65536 --report_gbits -p 18517 "$saddr"

	pair "ib_send_lat" 200/200 tcp:18518 \
		ib_send_lat -d "$sdev" -x "$sgid" -F -n 200 -s 64 -p 18518 -- \
		ib_send_lat -d "$cdev" -x "$cgid" -F -n 200 -s 64 -p 18518 "$saddr"

	# --- the project's own verbs program
	if [ -x "$SELFTEST" ]; then
		single "verbs_selftest (threads)" 1000/1000 "$SELFTEST" -n 8
		pair "verbs_selftest (processes)" 100/100 cm:20080 \
			"$SELFTEST" -r server -p 20080 -n 4 -s 16384 -- \
			"$SELFTEST" -r client -p 20080 -n 4 -s 16384
	else
		report "verbs_selftest" 1 "($SELFTEST missing: make rxe-progs)" /dev/null
	fi

	# --- the fault helpers do what they claim
	if [ -x "$SELFTEST" ]; then
		expect_fail "rxe-as-user -l 64: reg_mr fails" \
			rxe-as-user -l 64 "$SELFTEST" -n 1 -t 20
		single "rxe-as-user -l 8192: passes" 10/10 \
			rxe-as-user -l 8192 "$SELFTEST" -n 1 -s 4096 -t 20
		rxe-link flap 0.2 >> "$log/link.log" 2>&1
		single "rxe-link flap: traffic resumes" 20/20 \
			"$SELFTEST" -n 2 -s 4096 -t 30
		# Under loss a lost packet costs a local ACK timeout (-A 14:
		# 67 ms, not rdma_cm's default of about a second) and a lost
		# CM message a CM retry (2-8 s): 20 runs in one boot took
		# 0.3 to 7.5 s. It once ran past its 60 s in CI, which could
		# not be reproduced: the program says each step (-v) and the
		# kernel log is kept, so that a next time shows which wait it
		# was. A run that times out is run once more, and both count.
		rxe-netem both loss 2% >> "$log/netem.log" 2>&1
		export -f lossy_selftest
		export SELFTEST
		single "rxe-netem loss 2%: data intact" 30/30 \
			bash -c 'lossy_selftest "$@"' lossy "$log/netem-kernel.log" \
			-n 2 -s 8192 -t 60 -A 14 -v
		rxe-netem clear >> "$log/netem.log" 2>&1
	fi

	echo "rxe_smoke: $pass passed, $fail failed"
	[ $fail -eq 0 ]
}

if [ "${1:-}" = --in-vm ]; then
	shift
	if [ -z "${PXFER_RXE_VM:-}" ]; then
		echo "error: --in-vm runs inside the test VM only; run $0 without it" >&2
		exit 2
	fi
	in_vm "${1:-0}"
	exit
fi

# ============================================================================
# On the host
# ============================================================================

verbose=0
case ${1:-} in
-v) verbose=1 ;;
"") ;;
-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) echo "error: unknown argument '$1' (see $0 --help)" >&2; exit 2 ;;
esac

skip() {
	echo "rxe_smoke: SKIP: $*" >&2
	if [ "${PXFER_REQUIRE_RXE:-0}" = 1 ]; then
		echo "rxe_smoke: FAIL: PXFER_REQUIRE_RXE=1 forbids skipping" >&2
		exit 1
	fi
	exit 77
}

if [ "${PXFER_SKIP_VM:-0}" = 1 ]; then
	echo "rxe_smoke: SKIP: PXFER_SKIP_VM=1"
	exit 77
fi

start=$SECONDS

# Host packages and the VM image.  Failing here means the test bed cannot
# exist on this machine (no apt access, no qemu): that is a skip.
if ! "$ROOT/test/vm/install-deps.sh"; then
	skip "cannot install the VM packages (test/vm/install-deps.sh failed)"
fi
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 unavailable"
if ! "$ROOT/test/vm/build.sh"; then
	skip "cannot build the VM image (test/vm/build.sh failed: no kernel package?)"
fi

# The project's verbs program, built on the host.
if [ ! -x "$SELFTEST" ] || [ "$HERE/verbs_selftest.c" -nt "$SELFTEST" ]; then
	if [ -f "$ROOT/Makefile" ]; then
		mk=(make -s -C "$ROOT" rxe-progs)
	else
		mk=(make -s -C "$ROOT" -f "$ROOT/test/vm/rxe.mk" rxe-progs)
	fi
	if ! "${mk[@]}"; then
		echo "rxe_smoke: FAIL: building $SELFTEST failed (${mk[*]})" >&2
		exit 1
	fi
fi

set +e
"$ROOT/test/vm/run" --timeout 170 -- bash "$HERE/smoke.sh" --in-vm "$verbose"
rc=$?
set -e

echo "rxe_smoke: $((SECONDS - start)) s"
case $rc in
0) exit 0 ;;
124) echo "rxe_smoke: FAIL: the VM timed out" >&2 ;;
125) echo "rxe_smoke: FAIL: the VM did not boot or set up (see above)" >&2 ;;
esac
exit 1
