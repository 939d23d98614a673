#!/bin/bash
# Stage 2 of the Soft-RoCE test VM: runs as PID 1 with the host's root file
# system (read-only 9p) as /, after test/vm/init has loaded the modules.
#
# Builds the two veth pairs, their four rxe devices and the policy routing
# that forces RoCEv2 traffic over the veths (layout in lib.sh), then runs the
# command from /run/rxe-vm/cmd (or an interactive shell) on ttyS0, writes
# its exit status to /run/rxe-vm/status and powers off.
#
# Any setup error goes to /run/rxe-vm/setup-error; the host reports it and
# exits with status 125.
set -uo pipefail

CTL=/run/rxe-vm
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

power_off() {
	sync
	echo o > /proc/sysrq-trigger
	sleep 2
	echo b > /proc/sysrq-trigger
	sleep 60
	exit 1
}

setup_fail() {
	echo "rxe-vm: setup failed: $*" > /dev/console
	echo "$*" > "$CTL/setup-error"
	power_off
}

sysw() {
	echo "$2" > "/proc/sys/$1" || setup_fail "cannot set sysctl $1=$2"
}

# shellcheck source=/dev/null
. "$CTL/config" || setup_fail "cannot read $CTL/config"
# shellcheck source=lib.sh
. "${BASH_SOURCE[0]%/*}/lib.sh" || setup_fail "cannot read lib.sh"
SRV_IF=$RXE_SRV_IF SRV_DEV=$RXE_SRV_DEV SRV_ADDR=$RXE_SRV_ADDR
CLI_IF=$RXE_CLI_IF CLI_DEV=$RXE_CLI_DEV CLI_ADDR=$RXE_CLI_ADDR
SRV2_IF=$RXE_SRV2_IF SRV2_DEV=$RXE_SRV2_DEV SRV2_ADDR=$RXE_SRV2_ADDR
CLI2_IF=$RXE_CLI2_IF CLI2_DEV=$RXE_CLI2_DEV CLI2_ADDR=$RXE_CLI2_ADDR
PREFIX=$RXE_PREFIX
IP=$RXE_IP
RDMA=$RXE_RDMA

mark() {
	echo "rxe-vm: $*" > /dev/kmsg
}
mark "stage 2"

echo rxe-vm > /proc/sys/kernel/hostname
# Cores from crashing test programs land in the scratch space.
echo '/tmp/core.%e.%p' > /proc/sys/kernel/core_pattern

[ -x "$IP" ] || setup_fail "$IP (iproute2) missing on the host; run test/vm/install-deps.sh"
[ -x "$RDMA" ] || setup_fail "$RDMA (iproute2) missing on the host; run test/vm/install-deps.sh"

# ---- network ------------------------------------------------------------------
mark "network"

# All addresses are local to this kernel: without help the stack would
# deliver client->server packets over lo.  Route locally generated packets
# from each address out of its own veth end (one table per interface, the
# rules ahead of the local table), and accept packets that arrive with a
# local source address.  The second pair is a second rail, set up the
# same way.  Few ip processes: every exec costs tens of milliseconds under
# TCG.
for c in all default; do
	sysw "net/ipv4/conf/$c/rp_filter" 0
	sysw "net/ipv4/conf/$c/accept_local" 1
done
out=$($IP -batch - 2>&1 <<EOF
link set lo up
link add $SRV_IF mtu $RXE_VM_MTU type veth peer name $CLI_IF mtu $RXE_VM_MTU
addr add $SRV_ADDR/$PREFIX dev $SRV_IF
addr add $CLI_ADDR/$PREFIX dev $CLI_IF
link add $SRV2_IF mtu $RXE_VM_MTU type veth peer name $CLI2_IF mtu $RXE_VM_MTU
addr add $SRV2_ADDR/$PREFIX dev $SRV2_IF
addr add $CLI2_ADDR/$PREFIX dev $CLI2_IF
link set $SRV_IF up
link set $CLI_IF up
link set $SRV2_IF up
link set $CLI2_IF up
EOF
) || setup_fail "network setup failed: $out"
out=$($IP -batch - 2>&1 <<EOF
$(rxe_route_cmds 1 2)
rule add pref 100 from $SRV_ADDR iif lo lookup $RXE_SRV_TABLE
rule add pref 101 from $CLI_ADDR iif lo lookup $RXE_CLI_TABLE
rule add pref 102 from $SRV2_ADDR iif lo lookup $RXE_SRV2_TABLE
rule add pref 103 from $CLI2_ADDR iif lo lookup $RXE_CLI2_TABLE
rule add pref 200 lookup local
rule del pref 0 lookup local
EOF
) || setup_fail "network setup failed: $out"
for c in "$SRV_IF" "$CLI_IF" "$SRV2_IF" "$CLI2_IF"; do
	sysw "net/ipv4/conf/$c/rp_filter" 0
	sysw "net/ipv4/conf/$c/accept_local" 1
done

# ---- rxe ------------------------------------------------------------------------
mark "rxe"

out=$($RDMA -b - 2>&1 <<EOF
link add $SRV_DEV type rxe netdev $SRV_IF
link add $CLI_DEV type rxe netdev $CLI_IF
link add $SRV2_DEV type rxe netdev $SRV2_IF
link add $CLI2_DEV type rxe netdev $CLI2_IF
EOF
) || setup_fail "creating the rxe devices failed: $out"

# GID of an IPv4 address as sysfs prints it (IPv4-mapped IPv6).
gid_of() {
	local a b c d
	IFS=. read -r a b c d <<< "$1"
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
}

# Index of the RoCE v2 GID carrying address $2 on device $1; the table is
# filled asynchronously after the address is configured.
find_gid() {
	local dev=$1 want port i g v t n
	want=$(gid_of "$2")
	port=/sys/class/infiniband/$dev/ports/1
	for ((n = 0; n < 200; n++)); do
		for g in "$port"/gids/*; do
			i=${g##*/}
			v=
			read -r v 2>/dev/null < "$g"
			[ "$v" = "$want" ] || continue
			t=
			read -r t 2>/dev/null < "$port/gid_attrs/types/$i"
			[ "$t" = "RoCE v2" ] || continue
			echo "$i"
			return 0
		done
		sleep 0.05
	done
	return 1
}

wait_active() {
	local n st
	for ((n = 0; n < 200; n++)); do
		st=
		read -r st 2>/dev/null < "/sys/class/infiniband/$1/ports/1/state"
		case $st in
		*ACTIVE*) return 0 ;;
		esac
		sleep 0.05
	done
	return 1
}

for dev in "$SRV_DEV" "$CLI_DEV" "$SRV2_DEV" "$CLI2_DEV"; do
	wait_active "$dev" || setup_fail "$dev port did not become ACTIVE"
done
SRV_GID=$(find_gid "$SRV_DEV" "$SRV_ADDR") ||
	setup_fail "no RoCE v2 GID for $SRV_ADDR on $SRV_DEV"
CLI_GID=$(find_gid "$CLI_DEV" "$CLI_ADDR") ||
	setup_fail "no RoCE v2 GID for $CLI_ADDR on $CLI_DEV"
SRV2_GID=$(find_gid "$SRV2_DEV" "$SRV2_ADDR") ||
	setup_fail "no RoCE v2 GID for $SRV2_ADDR on $SRV2_DEV"
CLI2_GID=$(find_gid "$CLI2_DEV" "$CLI2_ADDR") ||
	setup_fail "no RoCE v2 GID for $CLI2_ADDR on $CLI2_DEV"

mark "provider check"
# User space must find the rxe provider through /etc/libibverbs.d.
if ! out=$(ibv_devinfo -d "$SRV_DEV" 2>&1); then
	setup_fail "libibverbs cannot open $SRV_DEV (rxe provider missing? install ibverbs-providers): $out"
fi

# ---- environment of the command -------------------------------------------------

# Variables passed on by the host first, so that ours win.
# shellcheck source=/dev/null
[ -r "$CTL/env" ] && . "$CTL/env"

export PXFER_RXE_VM=1
export PXFER_RXE_SERVER_DEV=$SRV_DEV PXFER_RXE_SERVER_IF=$SRV_IF
export PXFER_RXE_SERVER_ADDR=$SRV_ADDR PXFER_RXE_SERVER_GID=$SRV_GID
export PXFER_RXE_CLIENT_DEV=$CLI_DEV PXFER_RXE_CLIENT_IF=$CLI_IF
export PXFER_RXE_CLIENT_ADDR=$CLI_ADDR PXFER_RXE_CLIENT_GID=$CLI_GID
export PXFER_RXE_SERVER_DEV2=$SRV2_DEV PXFER_RXE_SERVER_IF2=$SRV2_IF
export PXFER_RXE_SERVER_ADDR2=$SRV2_ADDR PXFER_RXE_SERVER_GID2=$SRV2_GID
export PXFER_RXE_CLIENT_DEV2=$CLI2_DEV PXFER_RXE_CLIENT_IF2=$CLI2_IF
export PXFER_RXE_CLIENT_ADDR2=$CLI2_ADDR PXFER_RXE_CLIENT_GID2=$CLI2_GID
export PXFER_RXE_MTU=$RXE_VM_MTU
export PATH=$RXE_VM_HELPERS:$PATH
export HOME=/root TMPDIR=/tmp LANG=C.UTF-8 TERM=${RXE_VM_TERM:-dumb}
export USER=root LOGNAME=root SHELL=/bin/bash

if ! cd "$RXE_VM_CWD" 2>/dev/null; then
	echo "$RXE_VM_CWD does not exist in the VM (scratch directories such as /tmp are the guest's own); running in /" >> "$CTL/notes"
	cd /
fi
# Two kernel defects, with rxe on 6.1, can hang the guest; a process
# caught in either never returns and cannot be killed, so the VM records
# what is stuck and powers off rather than wait for the timeout, and the
# host reports it (exit 126):
# - the IB CM waits for the completion of a MAD it sent (the DREQ of a
#   connection being destroyed) that rxe lost; the kernel says so every
#   10 s (cm_destroy_id_wait_timeout): 3 of those lines;
# - a task, such as ip taking a link down, blocked in the kernel; the
#   kernel's hung task detector, set here to 60 s, names it.
hang_watch() {
	local pid why

	echo 60 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
	while sleep 5; do
		if [ "$(dmesg 2>/dev/null | grep -c cm_destroy_id_wait_timeout)" -ge 3 ]; then
			why="its IB CM waits for ever for a MAD completion that rxe lost (destroying a connection)"
		elif dmesg 2>/dev/null | grep -q 'blocked for more than'; then
			why="a task is blocked in the kernel (its hung task detector)"
		else
			continue
		fi
		{
			echo "$why:"
			dmesg | grep -E -m 4 'cm_destroy_id_wait_timeout|blocked for more than'
			for pid in $(ps -eo pid=,stat= | awk '$2 ~ /^D/ { print $1 }'); do
				echo "stuck: pid $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)"
				sed 's/^/    /' "/proc/$pid/stack" 2>/dev/null
			done
		} > "$CTL/kernel-hang"
		mark "kernel hang: $why; powering off"
		power_off
	done
}

mark "command start"

tty=/dev/ttyS0
rc=0
if [ "$RXE_VM_MODE" = shell ]; then
	stty -F $tty sane 2>/dev/null
	# The window size lives only while the tty is open: set it from the
	# shell itself.
	cat > /root/.bashrc <<-EOF
		stty rows $RXE_VM_ROWS cols $RXE_VM_COLS 2>/dev/null
	EOF
	cat >> /root/.bashrc <<-'EOF'
		PS1='rxe-vm:\w\$ '
		echo "rxe-vm: server $PXFER_RXE_SERVER_DEV/$PXFER_RXE_SERVER_IF $PXFER_RXE_SERVER_ADDR gid $PXFER_RXE_SERVER_GID," \
		     "client $PXFER_RXE_CLIENT_DEV/$PXFER_RXE_CLIENT_IF $PXFER_RXE_CLIENT_ADDR gid $PXFER_RXE_CLIENT_GID"
		echo "rxe-vm: second rail: server $PXFER_RXE_SERVER_DEV2/$PXFER_RXE_SERVER_IF2 $PXFER_RXE_SERVER_ADDR2 gid $PXFER_RXE_SERVER_GID2," \
		     "client $PXFER_RXE_CLIENT_DEV2/$PXFER_RXE_CLIENT_IF2 $PXFER_RXE_CLIENT_ADDR2 gid $PXFER_RXE_CLIENT_GID2"
		echo "rxe-vm: helpers: rxe-info rxe-link rxe-netem rxe-kill rxe-as-user; exit or ^D powers off"
	EOF
	# (the console is the shell's input and its output)
	# shellcheck disable=SC2094
	setsid -c -w bash -i < $tty > $tty 2>&1
	rc=$?
else
	# Raw output: no \n -> \r\n translation on the way to the host.
	stty -F $tty raw -echo 115200 2>/dev/null
	hang_watch &
	watch=$!
	bash -c "$(< "$CTL/cmd")" < /dev/null > $tty 2>&1
	rc=$?
	kill $watch 2>/dev/null
fi

mark "command exited with status $rc"
# Kernel complaints during the run are worth a look even when the command
# passed; the host prints them on stderr.
dmesg 2>/dev/null | grep -E 'BUG:|WARNING:|Oops|general protection|Call Trace' \
	> "$CTL/kernel-warnings" || true

echo "$rc" > "$CTL/status"
power_off
