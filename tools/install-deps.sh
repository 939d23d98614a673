#!/usr/bin/env bash
# Installs the Debian packages pxfer needs to build, test and benchmark.
# Idempotent; runs apt-get update only when something is missing.
# Usage: tools/install-deps.sh [--no-vm]   (--no-vm: skip the RDMA test bed)
set -euo pipefail

build_pkgs=(build-essential pkg-config liburing-dev libibverbs-dev librdmacm-dev
	    libxxhash-dev libsodium-dev libssl-dev)
# prometheus: promtool, for test/e2e/metrics.sh
test_pkgs=(iproute2 procps psmisc libseccomp-dev python3 bash-completion zsh prometheus)
# fpart: fpsync, a peer of bench/scaleout.sh; uftp: multicast, a peer of
# bench/broadcast.sh
bench_pkgs=(iperf3 rsync netcat-openbsd time openssh-client openssh-server gnuplot-nox fpart
	    uftp)
# CI's checks: the clang build and make lint
check_pkgs=(clang shellcheck graphviz)
rdma_pkgs=(rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest)
# make fuzz: the libFuzzer runtime clang only recommends
fuzz_pkgs=(libclang-rt-dev)
# the Debian packages (debian/, dpkg-buildpackage) and test/e2e/package.sh
pkg_pkgs=(dpkg-dev debhelper fakeroot lintian)
# scale-out (docs/scaleout.md): PMIx to wire a job's ranks up, and the two
# launchers test/e2e/launch.sh runs them under, a one-node Slurm (munge,
# slurmctld, slurmd, srun) and Open MPI's mpirun
scale_pkgs=(libpmix-dev munge slurmctld slurmd slurm-client openmpi-bin)

want_vm=1
[ "${1:-}" = --no-vm ] && want_vm=0

sudo=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "error: run as root or install sudo" >&2; exit 1; }
	sudo=sudo
fi

missing=()
for p in "${build_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}" "${check_pkgs[@]}" \
	 "${rdma_pkgs[@]}" "${fuzz_pkgs[@]}" "${pkg_pkgs[@]}" "${scale_pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
	# the uftp package starts uftpd as a service, taking files from anyone
	# on the network into /tmp; the benchmark runs its own
	if [[ " ${missing[*]} " == *" uftp "* ]] && [ -d /run/systemd/system ]; then
		$sudo systemctl disable --now uftp.service >/dev/null 2>&1 || true
	fi
fi

top=$(cd "$(dirname "$0")/.." && pwd)
if [ $want_vm -eq 1 ]; then
	$sudo "$top/test/vm/install-deps.sh"
fi
