#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# in_netns.sh PREFIX GATEWAY CMD... - run CMD, a rank started by srun or
# mpirun, in network namespace PREFIX<rank> (the rank from SLURM_PROCID or
# OMPI_COMM_WORLD_RANK). The launcher's PMIx server listens on 127.0.0.1
# of this namespace only: a forwarder (tcpfwd.py) on GATEWAY, the
# bridge's address here, takes the rank's PMIx connection to it, and the
# rank is told that address instead. Everything else the rank does goes
# over its own namespace's link.
set -eu
prefix=$1 gw=$2
shift 2
rank=${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-}}
[ -n "$rank" ] || { echo "in_netns.sh: not started by srun or mpirun" >&2; exit 2; }
uri=${PMIX_SERVER_URI41:-${PMIX_SERVER_URI4:-${PMIX_SERVER_URI3:-${PMIX_SERVER_URI2:-}}}}
port=${uri##*:}
case $uri in
*tcp4://127.0.0.1:*) ;;
*) echo "in_netns.sh: the PMIx server is not on 127.0.0.1 ($uri)" >&2; exit 2;;
esac
exec 3< <(exec python3 "$(dirname "$0")/tcpfwd.py" "$gw" 127.0.0.1 "$port")
read -r fwd <&3 || { echo "in_netns.sh: the forwarder did not start" >&2; exit 2; }
exec 3<&-
for v in $(compgen -e); do
	case $v in
	PMIX_SERVER_URI*) export "$v=${!v//127.0.0.1:$port/$gw:$fwd}";;
	esac
done
exec ip netns exec "$prefix$rank" "$@"
