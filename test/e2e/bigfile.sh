#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_bigfile: one 1 GiB file of random data, sent with 1, 2 and 8 workers,
# arrives identical byte for byte with its mode and mtime; and a sparse
# 5 GiB file with data before and after the 4 GiB mark arrives with the same
# content and its holes still holes.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/src
mkdir -p "$src" || fail "mkdir"

# random bytes, fast: AES-CTR over zeros (falls back to the kernel's)
random_bytes()
{
	if command -v openssl >/dev/null; then
		openssl enc -aes-128-ctr -nosalt -pass "pass:pxfer-$RANDOM" \
			-in /dev/zero 2>/dev/null | head -c "$1"
	else
		head -c "$1" /dev/urandom
	fi
}

note "making a 1 GiB file of random data"
timer_start
random_bytes 1G >"$src/big.bin" || fail "cannot write the test file"
[ "$(stat -c %s "$src/big.bin")" -eq $((1 << 30)) ] || fail "the test file is not 1 GiB"
chmod 0640 "$src/big.bin"
touch -d '2021-03-04 05:06:07.123456789' "$src/big.bin"
ok "made in $(timer_secs) s"

for j in 1 2 8; do
	note "1 GiB with -j $j"
	dst=$T/dst.$j
	mkdir "$dst"
	start_recv "$dst"
	timer_start
	send_ok -q -j "$j" "$src/big.bin" "$(target)"
	secs=$(timer_secs)
	wait_recv
	expect_rc 0 "$WAIT_RC" "receiver (-j $j)"
	[ -s "$SEND_OUT" ] && fail "-q printed on stdout: $(head -c 200 "$SEND_OUT")"
	file_equal "$src/big.bin" "$dst/big.bin"
	no_part_files "$dst"
	# and the receiver's store (.pxfer), which stays once made
	[ "$(find "$dst" -mindepth 1 -maxdepth 1 ! -name .pxfer -printf '%f\n')" = big.bin ] ||
		fail "unexpected entries in '$dst': $(ls -A "$dst")"
	ok "-j $j: identical, mode $(stat -c %a "$dst/big.bin"), mtime $(stat -c %y "$dst/big.bin"), sent in $secs s"
	rm -rf "$dst"
done
rm -f "$src/big.bin"

note "making a sparse 5 GiB file with data around the 2 GiB and 4 GiB marks"
sparse=$src/sparse.img
truncate -s 5G "$sparse" || fail "truncate"
# offset (bytes) and length of each data region; the others are holes
regions=(
	0 1048576				# the start
	$(((2 << 30) - 300000)) 600000		# across 2 GiB (31-bit offsets)
	$(((4 << 30) - 65536)) 131072		# across 4 GiB (32-bit offsets)
	$(((4 << 30) + 123456789)) 1000000	# past 4 GiB, unaligned
	$(((5 << 30) - 4096)) 4096		# the last block
)
for ((i = 0; i < ${#regions[@]}; i += 2)); do
	random_bytes "${regions[i + 1]}" |
		dd of="$sparse" bs=64K seek="${regions[i]}" oflag=seek_bytes \
		   conv=notrunc status=none || fail "dd"
done
[ "$(stat -c %s "$sparse")" -eq $((5 << 30)) ] || fail "the sparse file is not 5 GiB"
chmod 0600 "$sparse"
touch -d '1999-12-31 23:59:59.5' "$sparse"
src_blocks=$(stat -c %b "$sparse")
holes=1
if [ "$src_blocks" -ge $((64 << 11)) ]; then
	holes=0
	echo "SKIP (subcase): this file system does not keep holes ($src_blocks blocks of 512 bytes for the sparse source); only the content is compared"
fi
ok "source: 5 GiB, $src_blocks blocks allocated"

note "sparse 5 GiB with -j 4"
dst=$T/dst.sparse
mkdir "$dst"
start_recv "$dst"
timer_start
send_ok -q -j 4 "$sparse" "$(target)"
secs=$(timer_secs)
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (sparse)"
no_part_files "$dst"
[ "$(stat -c %s "$dst/sparse.img")" -eq $((5 << 30)) ] ||
	fail "the sparse file arrived with $(stat -c %s "$dst/sparse.img") bytes"
file_equal "$sparse" "$dst/sparse.img"
dst_blocks=$(stat -c %b "$dst/sparse.img")
# the same data regions; allow 1 MiB for different block rounding
[ "$holes" = 0 ] || [ "$dst_blocks" -le $((src_blocks + 2048)) ] ||
	fail "holes were filled: $dst_blocks blocks on the receiver, $src_blocks in the source (du: $(du -h "$dst/sparse.img" | cut -f1) vs $(du -h "$sparse" | cut -f1))"
ok "sparse: identical, $dst_blocks blocks on the receiver vs $src_blocks in the source, sent in $secs s"
