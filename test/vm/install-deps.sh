#!/bin/bash
# Install the host packages the Soft-RoCE test VM needs (Debian 12).
#
# Usage: test/vm/install-deps.sh [--debug]
#   --debug  also install gdb, strace and tcpdump (the VM runs the host's
#            programs, so they are then available inside it as well)
#
# Idempotent and quiet: does nothing when every package is already
# installed, and runs "apt-get update" only when a package has no
# installation candidate in the current package lists.
#
# The guest kernel itself (linux-image-amd64) is NOT installed here: it is
# downloaded and unpacked under build/rxe-vm/ by test/vm/build.sh.
set -euo pipefail

PKGS=(
	qemu-system-x86		# the emulator (TCG)
	busybox-static		# /init and early userspace in the initramfs
	kmod			# modprobe --show-depends, insmod for .ko.xz
	cpio			# initramfs archive
	xz-utils zstd gzip	# kernel payload / module decompression
	iproute2		# ip, tc, rdma (guest uses the host's copy)
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	libibverbs-dev librdmacm-dev gcc make	# build the verbs programs
	ca-certificates		# apt-get download over https mirrors
	util-linux coreutils procps	# setpriv, setsid, timeout in the guest
)

case ${1:-} in
"") ;;
--debug) PKGS+=(gdb strace tcpdump) ;;
-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) echo "error: unknown option '$1' (see $0 --help)" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
	if ! command -v sudo >/dev/null 2>&1; then
		echo "error: not root and sudo is missing; run $0 as root" >&2
		exit 1
	fi
else
	SUDO=
fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null |
	     grep -qx installed; then
		missing+=("$p")
	fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

need_update=0
for p in "${missing[@]}"; do
	cand=$(apt-cache policy "$p" 2>/dev/null |
	       sed -n 's/^  Candidate: //p')
	if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
		need_update=1
		break
	fi
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT

export DEBIAN_FRONTEND=noninteractive
if [ $need_update -eq 1 ]; then
	if ! $SUDO apt-get update -qq >"$log" 2>&1; then
		cat "$log" >&2
		echo "error: apt-get update failed; check the network and /etc/apt/sources.list*" >&2
		exit 1
	fi
fi

echo "rxe-vm: installing ${missing[*]}" >&2
apt_install() {
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>"$log" 2>&1
}
# Stale package lists give 404s on download: refresh once and retry.
if ! apt_install && { [ $need_update -eq 1 ] ||
		      ! $SUDO apt-get update -qq >>"$log" 2>&1 || ! apt_install; }; then
	cat "$log" >&2
	echo "error: apt-get install ${missing[*]} failed; fix the apt error above and rerun $0" >&2
	exit 1
fi
