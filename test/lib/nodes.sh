# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Nodes on one machine for the tests that need links of their own
# (e2e/nodes.sh, e2e/broadcast.sh): network namespaces joined by a
# bridge, each with its own address and its link shaped with tc tbf.
# Sourced after common.sh:
#
#   nodes_start PREFIX RATE   a bridge PREFIXb with $NODES_NET.1/24 on
#                             it (NODES_NET: 10.x.y, from the test's
#                             pid); the EXIT trap removes it and every
#                             node (their processes killed), then runs
#                             common.sh's cleanup; skips where no bridge
#                             can be made
#   node NAME ADDR            a namespace NAME with a veth (NAMEn inside,
#                             NAMEh on the bridge, MTU 9000) at ADDR/24,
#                             its egress shaped to RATE
#   node_recv NAME LOG ARGS...
#                             pxfer recv --port 7471 ARGS in node NAME,
#                             its output appended to LOG, tracked: once it
#                             listens, NODE_PID is its pid; else the test
#                             fails with LOG
#
# A test that must run more at exit (Slurm's daemons) calls
# _nodes_cleanup from its own trap.

_nodes=()
NODES_NET=10.$(($$ % 200 + 20)).$(($$ / 200 % 250 + 1))

# shellcheck disable=SC2317  # run by the trap
_nodes_cleanup()
{
	local rc=$? n

	for n in "${_nodes[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -CONT 2>/dev/null
		ip netns pids "$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	ip link del "${_nodes_pfx}b" 2>/dev/null
	(exit "$rc")
	_cleanup
}

nodes_start()
{
	_nodes_pfx=$1 _nodes_rate=$2
	trap _nodes_cleanup EXIT
	ip link add "${_nodes_pfx}b" type bridge 2>/dev/null ||
		skip "cannot make a bridge here (no CAP_NET_ADMIN, or no bridge module)"
	ip addr add "$NODES_NET.1/24" dev "${_nodes_pfx}b"
	ip link set "${_nodes_pfx}b" mtu 9000 up
}

node()
{
	ip netns add "$1" || fail "ip netns add $1"
	_nodes+=("$1")
	ip link add "$1h" mtu 9000 type veth peer name "$1n" mtu 9000 || fail "veth for $1"
	ip link set "$1n" netns "$1"
	ip link set "$1h" master "${_nodes_pfx}b" up
	ip -n "$1" addr add "$2/24" dev "$1n"
	ip -n "$1" link set "$1n" up
	ip -n "$1" link set lo up
	ip netns exec "$1" tc qdisc add dev "$1n" root tbf rate "$_nodes_rate" \
		burst 1mb latency 50ms || fail "tc on $1"
}

node_recv()
{
	local n=$1 log=$2 k

	shift 2
	ip netns exec "$n" "$PXFER" recv --port 7471 "$@" >>"$log" 2>&1 &
	NODE_PID=$!
	track "$NODE_PID"
	for ((k = 0; k < 100; k++)); do
		ip netns exec "$n" ss -ltn 2>/dev/null | grep -q ':7471 ' && return 0
		sleep 0.1
	done
	cat "$log" >&2
	fail "the receiver in $n did not listen"
}
