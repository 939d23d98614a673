# shellcheck shell=bash disable=SC2034  # sourced; the users are elsewhere
# Layout of the Soft-RoCE test network, shared by guest-setup.sh and the
# guest helpers in bin/.  Sourced by bash inside the VM.
#
# The server side is veth0/rxe0, the client side veth1/rxe1.  Both ends
# stay in the initial network namespace: rxe in 6.1 only works there.

RXE_SRV_IF=veth0 RXE_SRV_DEV=rxe0 RXE_SRV_ADDR=10.77.0.1 RXE_SRV_TABLE=100
RXE_CLI_IF=veth1 RXE_CLI_DEV=rxe1 RXE_CLI_ADDR=10.77.0.2 RXE_CLI_TABLE=101
RXE_PREFIX=24

RXE_IP=/usr/sbin/ip
RXE_TC=/usr/sbin/tc
RXE_RDMA=/usr/bin/rdma

# Policy routes that send locally generated packets from each address out
# of its own veth end, and static neighbour entries for the two ends.
# Without the latter, the first connection after boot or after a link
# flap often loses its CM REQ while ARP resolves and waits for the CM
# retry (about 4 s).  The kernel drops both when a link goes down, so
# they are (re)installed after every "link up".  Prints ip -batch input.
rxe_route_cmds() {
	local m0='' m1=''
	read -r m0 2>/dev/null < "/sys/class/net/$RXE_SRV_IF/address"
	read -r m1 2>/dev/null < "/sys/class/net/$RXE_CLI_IF/address"
	echo "route replace $RXE_CLI_ADDR dev $RXE_SRV_IF src $RXE_SRV_ADDR table $RXE_SRV_TABLE"
	echo "route replace $RXE_SRV_ADDR dev $RXE_CLI_IF src $RXE_CLI_ADDR table $RXE_CLI_TABLE"
	echo "neigh replace $RXE_CLI_ADDR lladdr $m1 dev $RXE_SRV_IF nud permanent"
	echo "neigh replace $RXE_SRV_ADDR lladdr $m0 dev $RXE_CLI_IF nud permanent"
}

# Interfaces for a side argument: server, client or both.
rxe_side_ifs() {
	case ${1:-both} in
	server) echo "$RXE_SRV_IF" ;;
	client) echo "$RXE_CLI_IF" ;;
	both) echo "$RXE_SRV_IF $RXE_CLI_IF" ;;
	*) return 1 ;;
	esac
}
