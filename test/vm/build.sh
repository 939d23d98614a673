#!/bin/bash
# Build the Soft-RoCE test VM image: a Debian 6.1 kernel and a small
# initramfs holding busybox and the modules for 9p, veth, rdma_rxe,
# rdma_ucm and sch_netem.
#
# Usage: test/vm/build.sh [--force] [--update]
#   --force   rebuild vmlinux and the initramfs from the cached .debs
#   --update  also download the current linux-image-amd64 again
#
# Everything goes to $RXE_VM_DIR (default: <project>/build/rxe-vm):
#   debs/           linux-image-amd64 and the versioned kernel package
#   kroot/          the unpacked kernel package (dpkg-deb -x)
#   vmlinux         uncompressed kernel, booted through the PVH entry
#   bzImage         the packaged kernel (RXE_VM_BOOT=bzimage, or when no
#                   vmlinux could be extracted)
#   kroot.deb       name of the package unpacked in kroot/
#   initrd.cpio     the initramfs (uncompressed: nothing to inflate in TCG)
#   kver            the kernel release string
#   image.stamp     hash of the inputs; the image is rebuilt when it changes
#
# Nothing is installed on the host except the packages listed in
# test/vm/install-deps.sh.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${RXE_VM_DIR:-$ROOT/build/rxe-vm}

# Modules loaded at boot, by name; build.sh expands them into a list of
# files in dependency order with modprobe --show-depends.
MODULES=(
	virtio_pci 9pnet_virtio 9p	# host filesystem shares
	virtio_rng			# entropy for the guest
	veth crc32_generic		# rxe needs the "crc32" crypto algorithm
	rdma_rxe rdma_ucm ib_umad	# Soft-RoCE, rdma_cm for user space
	sch_netem			# fault injection
)

force=0
update=0
for arg in "$@"; do
	case $arg in
	--force) force=1 ;;
	--update) force=1; update=1 ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "error: unknown option '$arg' (see $0 --help)" >&2; exit 2 ;;
	esac
done

die() {
	echo "error: $*" >&2
	exit 1
}

log() {
	echo "rxe-vm: $*" >&2
}

apt_update() {
	if [ "$(id -u)" -eq 0 ]; then
		apt-get update -qq >/dev/null 2>&1
	else
		sudo apt-get update -qq >/dev/null 2>&1
	fi
}

input_hash() {
	cat "$HERE/build.sh" "$HERE/init" /bin/busybox | sha256sum | cut -d' ' -f1
}

image_ok() {
	[ -s "$OUT/bzImage" ] &&
	[ -s "$OUT/initrd.cpio" ] && [ -s "$OUT/kver" ] &&
	[ -s "$OUT/image.stamp" ] &&
	[ "$(cat "$OUT/image.stamp")" = "$(input_hash)" ]
}

"$HERE/install-deps.sh"

mkdir -p "$OUT"
# Several runs may start at once (make -j): build under a lock.
exec 9>"$OUT/.build.lock"
flock 9

if [ $force -eq 0 ] && image_ok; then
	exit 0
fi

for tool in apt-get dpkg-deb depmod modprobe cpio xz zstd gzip; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "'$tool' not found; run test/vm/install-deps.sh"
done
{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } ||
	die "/bin/busybox is missing or not static; run test/vm/install-deps.sh (busybox-static)"

# ---- kernel package -------------------------------------------------------

fetch_kernel() {
	local meta dep

	rm -rf "$OUT/debs.new"
	mkdir -p "$OUT/debs.new"
	dep=$(apt-cache depends linux-image-amd64 2>/dev/null |
	      sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' |
	      head -n1)
	if [ -z "$dep" ]; then
		log "refreshing the package lists"
		apt_update ||
			die "apt-get update failed; check the network and the apt sources"
		dep=$(apt-cache depends linux-image-amd64 2>/dev/null |
		      sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' |
		      head -n1)
		[ -n "$dep" ] ||
			die "apt knows no linux-image-amd64; add a Debian 12 main source to /etc/apt/sources.list.d"
	fi
	meta=linux-image-amd64
	log "downloading $meta and $dep"
	if ! (cd "$OUT/debs.new" &&
	      apt-get download -q -o APT::Sandbox::User=root "$meta" "$dep" \
		>/dev/null 2>&1); then
		# Stale lists point at files the mirror no longer has.
		apt_update || true
		(cd "$OUT/debs.new" &&
		 apt-get download -q -o APT::Sandbox::User=root "$meta" "$dep" \
			>/dev/null) ||
			die "apt-get download $dep failed; check the network and the apt sources"
	fi
	rm -rf "$OUT/debs"
	mv "$OUT/debs.new" "$OUT/debs"
}

if [ $update -eq 1 ] || ! ls "$OUT"/debs/linux-image-[0-9]*.deb >/dev/null 2>&1; then
	fetch_kernel
fi
debs=("$OUT"/debs/linux-image-[0-9]*.deb)
deb=${debs[0]}

# The unpacked kernel is reused when only the initramfs inputs changed.
unpacked=$(cat "$OUT/kroot.deb" 2>/dev/null || true)
if [ $force -eq 1 ] || [ "$unpacked" != "$(basename "$deb")" ] ||
   [ ! -s "$OUT/bzImage" ]; then
	rm -f "$OUT/kroot.deb"
	log "unpacking $(basename "$deb")"
	rm -rf "$OUT/kroot"
	mkdir -p "$OUT/kroot"
	dpkg-deb -x "$deb" "$OUT/kroot" ||
		die "dpkg-deb -x $deb failed; delete $OUT/debs and retry"
	fresh=1
else
	fresh=0
fi

kvers=("$OUT"/kroot/lib/modules/*)
kver=${kvers[0]##*/}
{ [ -n "$kver" ] && [ -f "$OUT/kroot/boot/vmlinuz-$kver" ]; } ||
	die "no kernel found in $deb"
mdir=$OUT/kroot/lib/modules/$kver

# ---- uncompressed kernel for the PVH entry ---------------------------------

# Same approach as the kernel's scripts/extract-vmlinux: find the payload
# by its compression magic and inflate until the result is an ELF image.
extract_vmlinux() {
	local img=$1 out=$2 magic cmd off

	for pair in '\x1f\x8b\x08:gzip -dc' '\xfd7zXZ\x00:xz -dc' \
		    '\x28\xb5\x2f\xfd:zstd -dcq' '\x5d\x00\x00\x00:xz -dc --format=lzma'; do
		magic=${pair%%:*}
		cmd=${pair#*:}
		while read -r off; do
			tail -c +$((off + 1)) "$img" | $cmd > "$out" 2>/dev/null || true
			if [ "$(head -c4 "$out" | od -An -c | tr -d ' ')" = '177ELF' ]; then
				return 0
			fi
		done < <(LC_ALL=C grep -obUaP "$magic" "$img" | cut -d: -f1)
	done
	rm -f "$out"
	return 1
}

if [ $fresh -eq 1 ]; then
	log "extracting vmlinux from vmlinuz-$kver"
	cp "$OUT/kroot/boot/vmlinuz-$kver" "$OUT/bzImage"
	if extract_vmlinux "$OUT/bzImage" "$OUT/vmlinux.tmp"; then
		mv "$OUT/vmlinux.tmp" "$OUT/vmlinux"
	else
		# run falls back to the bzImage when there is no vmlinux
		log "warning: could not extract vmlinux from vmlinuz-$kver; booting the bzImage (slower)"
		rm -f "$OUT/vmlinux"
	fi
	basename "$deb" > "$OUT/kroot.deb"
fi

# ---- initramfs --------------------------------------------------------------

log "building the initramfs for $kver"
depmod -b "$OUT/kroot" "$kver" || die "depmod failed on $mdir"

ird=$OUT/initrd.d
rm -rf "$ird"
mkdir -p "$ird"/{bin,sbin,dev,proc,sys,newroot,lib/modules,usr/bin,usr/sbin}
cp /bin/busybox "$ird/bin/busybox"
cp "$HERE/init" "$ird/init"
chmod 755 "$ird/init"

: > "$ird/lib/modules/load.order"
declare -A seen=()
for m in "${MODULES[@]}"; do
	deps=$(modprobe -d "$OUT/kroot" -S "$kver" --show-depends "$m") ||
		die "module $m not found in $kver"
	while read -r kw path _; do
		[ "$kw" = insmod ] || continue
		name=$(basename "$path")
		name=${name%.xz}
		name=${name%.zst}
		name=${name%.gz}
		[ -n "${seen[$name]:-}" ] && continue
		seen[$name]=1
		# busybox insmod cannot read compressed modules
		case $path in
		*.xz) xz -dc "$path" > "$ird/lib/modules/$name" ;;
		*.zst) zstd -dcq "$path" > "$ird/lib/modules/$name" ;;
		*.gz) gzip -dc "$path" > "$ird/lib/modules/$name" ;;
		*) cp "$path" "$ird/lib/modules/$name" ;;
		esac
		echo "$name" >> "$ird/lib/modules/load.order"
	done <<< "$deps"
done
echo "$kver" > "$ird/kver"

(cd "$ird" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet -R 0:0) > "$OUT/initrd.cpio.tmp" ||
	die "cpio failed"
mv "$OUT/initrd.cpio.tmp" "$OUT/initrd.cpio"
rm -rf "$ird"

echo "$kver" > "$OUT/kver"
input_hash > "$OUT/image.stamp"
log "image ready in $OUT (kernel $kver)"
