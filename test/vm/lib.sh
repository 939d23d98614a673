# shellcheck shell=bash disable=SC2034  # sourced; the users are elsewhere
# Layout of the Soft-RoCE test network, shared by guest-setup.sh and the
# guest helpers in bin/.  Sourced by bash inside the VM.
#
# Two veth pairs, each a rail: on the first the server side is
# veth0/rxe0 and the client side veth1/rxe1, on the second veth2/rxe2 and
# veth3/rxe3.  All ends stay in the initial network namespace: rxe in 6.1
# only works there.

RXE_SRV_IF=veth0 RXE_SRV_DEV=rxe0 RXE_SRV_ADDR=10.77.0.1 RXE_SRV_TABLE=100
RXE_CLI_IF=veth1 RXE_CLI_DEV=rxe1 RXE_CLI_ADDR=10.77.0.2 RXE_CLI_TABLE=101
RXE_SRV2_IF=veth2 RXE_SRV2_DEV=rxe2 RXE_SRV2_ADDR=10.78.0.1 RXE_SRV2_TABLE=102
RXE_CLI2_IF=veth3 RXE_CLI2_DEV=rxe3 RXE_CLI2_ADDR=10.78.0.2 RXE_CLI2_TABLE=103
RXE_PREFIX=24

RXE_IP=/usr/sbin/ip
RXE_TC=/usr/sbin/tc
RXE_RDMA=/usr/bin/rdma

# Policy routes that send locally generated packets from each address out
# of its own veth end, and static neighbour entries for the two ends of
# each pair.  Without the latter, the first connection after boot or
# after a link flap often loses its CM REQ while ARP resolves and waits
# for the CM retry (about 4 s).  The kernel drops both when a link goes
# down, so they are (re)installed after every "link up" (a route through
# an interface that is down cannot be added: name the pairs that are up,
# 1 and/or 2, default both).  Prints ip -batch input.
rxe_route_cmds() {
	local pair m0 m1 sif sa st cif ca ct pairs=("$@")
	[ ${#pairs[@]} -gt 0 ] || pairs=(1 2)
	for pair in "${pairs[@]}"; do
		if [ "$pair" = 1 ]; then
			sif=$RXE_SRV_IF sa=$RXE_SRV_ADDR st=$RXE_SRV_TABLE
			cif=$RXE_CLI_IF ca=$RXE_CLI_ADDR ct=$RXE_CLI_TABLE
		else
			sif=$RXE_SRV2_IF sa=$RXE_SRV2_ADDR st=$RXE_SRV2_TABLE
			cif=$RXE_CLI2_IF ca=$RXE_CLI2_ADDR ct=$RXE_CLI2_TABLE
		fi
		m0='' m1=''
		read -r m0 2>/dev/null < "/sys/class/net/$sif/address"
		read -r m1 2>/dev/null < "/sys/class/net/$cif/address"
		echo "route replace $ca dev $sif src $sa table $st"
		echo "route replace $sa dev $cif src $ca table $ct"
		echo "neigh replace $ca lladdr $m1 dev $sif nud permanent"
		echo "neigh replace $sa lladdr $m0 dev $cif nud permanent"
	done
}

# Interfaces for a side argument: server, client or both (the first
# pair), server2, client2 or both2 (the second pair), or all.
rxe_side_ifs() {
	case ${1:-both} in
	server) echo "$RXE_SRV_IF" ;;
	client) echo "$RXE_CLI_IF" ;;
	both) echo "$RXE_SRV_IF $RXE_CLI_IF" ;;
	server2) echo "$RXE_SRV2_IF" ;;
	client2) echo "$RXE_CLI2_IF" ;;
	both2) echo "$RXE_SRV2_IF $RXE_CLI2_IF" ;;
	all) echo "$RXE_SRV_IF $RXE_CLI_IF $RXE_SRV2_IF $RXE_CLI2_IF" ;;
	*) return 1 ;;
	esac
}

# The pairs (1, 2) a side argument touches
rxe_side_pairs() {
	case ${1:-both} in
	server|client|both) echo 1 ;;
	server2|client2|both2) echo 2 ;;
	all) echo "1 2" ;;
	*) return 1 ;;
	esac
}

# The rxe devices of pairs (1, 2): one end of a pair down takes the
# other's carrier, and so both ports, down with it
rxe_pair_devs() {
	local pair out=
	for pair in "$@"; do
		if [ "$pair" = 1 ]; then
			out+="$RXE_SRV_DEV $RXE_CLI_DEV "
		else
			out+="$RXE_SRV2_DEV $RXE_CLI2_DEV "
		fi
	done
	echo "${out% }"
}
