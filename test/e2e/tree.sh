#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_tree: a tree of 1,000 small files in nested directories, with empty
# directories, symbolic links (relative, absolute, dangling, to a
# directory: recreated as links, never followed), an empty file, sparse
# files (20 MiB, and small ones with holes at the end, start, middle, or
# nothing else), names with spaces, UTF-8 and shell metacharacters, a 255-byte name,
# a 3 KiB deep path, sizes around the chunk and page sizes, and unusual
# modes, sent with 1, 2 and 8 workers: the copy equals the source in names,
# types, modes, mtimes and bytes. Also: sending the same tree again
# overwrites it cleanly; HOST:PORT/sub/dir lands below DIR/sub/dir;
# "dir/" arrives as "dir" (over IPv6 when there is ::1); several PATH
# arguments at once (a file, a directory, "dir/." for its contents); and a
# PATH that is a symbolic link is followed, as 'pxfer send --help' says.
# The receiver names complete files each way it can (see the -j loop).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

src=$T/tree
mkdir -p "$src" || fail "mkdir"

note "making the tree"
timer_start
for a in 0 1 2 3 4 5 6 7 8 9; do
	for b in 0 1 2 3 4 5 6 7 8 9; do
		d=$src/d$a/e$b
		mkdir -p "$d"
		for c in 0 1 2 3 4 5 6 7 8 9; do
			head -c $(((a * 997 + b * 101 + c * 13) % 5000)) \
				/dev/urandom >"$d/f$c"
		done
	done
done
[ "$(find "$src" -type f | wc -l)" -eq 1000 ] || fail "the tree does not have 1000 files"
mkdir -p "$src/empty" "$src/d0/nested empty/deeper"
: >"$src/empty-file"
printf 'spaces\n' >"$src/name with spaces.txt"
mkdir -p "$src/dïr wïth ünïcödé"
printf 'utf-8\n' >"$src/dïr wïth ünïcödé/名前 ファイル.txt"
printf 'тест\n' >"$src/d1/файл.dat"
printf 'private\n' >"$src/mode-0600"
printf '#!/bin/sh\n' >"$src/mode-0755"
printf 'read only\n' >"$src/mode-0444"
chmod 0600 "$src/mode-0600"
chmod 0755 "$src/mode-0755"
chmod 0444 "$src/mode-0444"
mkdir -p "$src/locked"
printf 'inside a 0555 directory\n' >"$src/locked/file"
chmod 0555 "$src/locked"
chmod 0700 "$src/d2"
# sizes around the chunk size (1 MiB by default) and the page size
mkdir -p "$src/sizes"
for n in 1 4095 4096 4097 1048575 1048576 1048577 3145728; do
	head -c "$n" /dev/urandom >"$src/sizes/s$n"
done
# names that trip up shells and parsers, one as long as a name can be
for name in "-leading-dash" "it's \"quoted\"" 'back\slash' 'star*?[x]' \
	    "$(printf 'n%.0s' $(seq 255))"; do
	printf '%s\n' "$name" >"$src/$name"
done
# a deep path: 30 levels of 100-byte names, about 3 KiB in all
deep=$src
for i in $(seq -w 1 30); do
	deep=$deep/$i$(printf 'p%.0s' $(seq 98))
done
mkdir -p "$deep"
printf 'deep\n' >"$deep/leaf"
truncate -s 20M "$src/sparse"
head -c 65536 /dev/urandom | dd of="$src/sparse" bs=64K seek=100 conv=notrunc status=none
# small sparse files, which the receiver sizes only at the end: a hole at
# the end, at the start, in the middle, and nothing but a hole
mkdir -p "$src/sparse-small"
printf 'head\n' >"$src/sparse-small/tail-hole"
truncate -s 300K "$src/sparse-small/tail-hole"
truncate -s 200K "$src/sparse-small/head-hole"
printf 'tail\n' >>"$src/sparse-small/head-hole"
printf 'a' >"$src/sparse-small/middle-hole"
head -c 4096 /dev/urandom | dd of="$src/sparse-small/middle-hole" bs=4096 seek=50 conv=notrunc status=none
truncate -s 520K "$src/sparse-small/middle-hole"
truncate -s 64K "$src/sparse-small/all-hole"
ln -s d0/e0/f1 "$src/link-rel"
ln -s ../e1/f2 "$src/d0/e0/link-up"
ln -s /etc/passwd "$src/link-abs"
ln -s "/nonexistent/$(basename "$T")" "$src/link-dangling"
ln -s d3 "$src/link-to-dir"
# distinct times, with nanoseconds, on files, links and directories
touch -d '2001-02-03 04:05:06.111111111' "$src/mode-0600"
touch -h -d '2002-03-04 05:06:07.222222222' "$src/link-rel"
touch -h -d '2003-04-05 06:07:08.333333333' "$src/link-abs"
touch -d '2004-05-06 07:08:09.444444444' "$src/empty"
touch -d '2005-06-07 08:09:10.5' "$src/sparse"
touch -d '2006-07-08 09:10:11' "$src/locked" "$src/d0/nested empty/deeper"
touch -d '2007-08-09 10:11:12.987654321' "$src"
nentries=$(find "$src" | wc -l)
nfiles=$(find "$src" -type f | wc -l)
ok "$nentries entries ($nfiles files) made in $(timer_secs) s"

# each run names the complete files another way (src/recv.c probe_link):
# unnamed and linkat(AT_EMPTY_PATH), unnamed and linkat of /proc/self/fd,
# a temporary name and rename (all files, not only the large ones)
declare -A link_way=([1]="" [2]=proc [8]=rename)
declare -A link_says=([1]="AT_EMPTY_PATH" [2]="/proc/self/fd" [8]="temporary names")
for j in 1 2 8; do
	note "the tree with -j $j, files named by ${link_says[$j]}"
	dst=$T/dst.$j
	mkdir "$dst"
	PXFER_RECV_LINK=${link_way[$j]} start_recv "$dst" -v
	timer_start
	send_ok -j "$j" "$src" "$(target)"
	secs=$(timer_secs)
	wait_recv
	expect_rc 0 "$WAIT_RC" "receiver (-j $j)"
	expect_grep "sent $nfiles files" "$SEND_ERR" "summary of -j $j"
	expect_grep "${link_says[$j]}" "$RECV_LOG" "the way files were named"
	no_part_files "$dst"
	# and the receiver's store (.pxfer), which stays once made
	[ "$(find "$dst" -mindepth 1 -maxdepth 1 ! -name .pxfer -printf '%f\n')" = tree ] ||
		fail "unexpected entries in '$dst': $(ls -A "$dst")"
	tree_equal "$src" "$dst/tree"
	[ "$(readlink "$dst/tree/link-abs")" = /etc/passwd ] || fail "the absolute link was not kept as a link"
	[ -L "$dst/tree/link-to-dir" ] || fail "the link to a directory was followed"
	sblocks=$(stat -c %b "$dst/tree/sparse")
	[ "$sblocks" -le $(($(stat -c %b "$src/sparse") + 256)) ] ||
		fail "the sparse file lost its holes: $sblocks blocks"
	ok "-j $j: equal, sent in $secs s"
	[ "$j" = 8 ] || rm -rf "$dst"
done

note "sending the same tree again overwrites it cleanly"
dst=$T/dst.8
printf 'changed, and shorter\n' >"$src/d5/e5/f5"
touch -d '2010-01-01 00:00:00' "$src/d5/e5/f5" "$src/d5/e5"
chmod 0640 "$src/d4/e4/f4"
rm "$src/link-rel"
ln -s d9/e9/f9 "$src/link-rel"
touch -h -d '2011-01-01 00:00:00.1' "$src/link-rel"
touch -d '2007-08-09 10:11:12.987654321' "$src"
start_recv "$dst"
send_ok -q -j 4 "$src" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (second send)"
no_part_files "$dst"
tree_equal "$src" "$dst/tree"
ok "second send: the changed file, mode and link were replaced, nothing else appeared"

note "destination HOST:PORT/sub/dir"
dst=$T/dst.sub
mkdir "$dst"
small=$T/small
mkdir -p "$small/x"
printf 'one\n' >"$small/one"
printf 'two\n' >"$small/x/two"
start_recv "$dst"
send_ok -q "$small" "127.0.0.1:$RECV_PORT/sub/dir"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (sub/dir)"
[ "$(ls -A "$dst")" = sub ] || fail "HOST:PORT/sub/dir: '$dst' holds $(ls -A "$dst")"
[ "$(ls -A "$dst/sub")" = dir ] || fail "HOST:PORT/sub/dir: '$dst/sub' holds $(ls -A "$dst/sub")"
tree_equal "$small" "$dst/sub/dir/small"

note "destination given with -p PORT and a trailing slash: HOST/sub/"
dst=$T/dst.sub2
mkdir "$dst"
start_recv "$dst"
send_ok -q -p "$RECV_PORT" "$small/one" "127.0.0.1/sub/"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (-p, /sub/)"
file_equal "$small/one" "$dst/sub/one"
[ "$(ls -A "$dst/sub")" = one ] || fail "'$dst/sub' holds $(ls -A "$dst/sub")"
ok "HOST/sub/ with -p lands in DIR/sub"

note "a directory given as 'dir/' arrives as 'dir'; an IPv6 address in brackets"
dst=$T/dst.slash
mkdir "$dst"
start_recv "$dst"
host=127.0.0.1
if ping -6 -c 1 -W 1 ::1 >/dev/null 2>&1 || [ -n "$(ip -6 addr show dev lo 2>/dev/null)" ]; then
	host="[::1]"
fi
send_ok -q "$small/" "$host:$RECV_PORT"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (dir/)"
[ "$(ls -A "$dst")" = small ] || fail "'$small/' arrived as: $(ls -A "$dst")"
tree_equal "$small" "$dst/small"
ok "'small/' arrived as 'small' (sent to $host)"

note "several PATH arguments: a file, a directory and 'dir/.' (its contents)"
dst=$T/dst.multi
mkdir "$dst"
single=$T/single.txt
printf 'a single file\n' >"$single"
chmod 0604 "$single"
touch -d '2012-12-12 12:12:12.12' "$single"
contents=$T/contents
mkdir -p "$contents/c1/c2"
printf 'c\n' >"$contents/top-c"
printf 'cc\n' >"$contents/c1/c2/deep-c"
touch -d '2013-01-01 00:00:00' "$contents/c1"
start_recv "$dst"
send_ok -q -j 2 "$single" "$small" "$contents/." "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver (several paths)"
no_part_files "$dst"
held=$(find "$dst" -mindepth 1 -maxdepth 1 -printf '%P\n' | sort | tr '\n' ' ')
[ "$held" = "c1 single.txt small top-c " ] || fail "several paths: '$dst' holds: $held"
file_equal "$single" "$dst/single.txt"
tree_equal "$small" "$dst/small"
# what is left in DIR came from contents/.
rm -rf "$dst/single.txt" "$dst/small"
tree_equal --no-root "$contents" "$dst"
ok "a file, a directory and a directory's contents arrived side by side"

note "a PATH that is a symbolic link is followed (pxfer send --help)"
dst=$T/dst.links
mkdir "$dst"
ln -s "$single" "$T/link-to-file"
ln -s "$small" "$T/link-to-dir"
start_recv "$dst"
psend -q "$T/link-to-file" "$T/link-to-dir" "$(target)"
wait_recv
if [ "$SEND_RC" -ne 0 ]; then
	fail_later "pxfer send LINK-TO-FILE LINK-TO-DIR HOST exited $SEND_RC: $(tr '\n' ' ' <"$SEND_ERR")"
else
	ok "sent"
fi
if [ -f "$dst/link-to-file" ] && [ ! -L "$dst/link-to-file" ] &&
   cmp -s "$single" "$dst/link-to-file"; then
	ok "a link to a file arrived as the file, under the link's name"
else
	# (a listing for the reader, not parsed)
	# shellcheck disable=SC2012
	fail_later "a PATH that is a link to a file did not arrive as that file: $(ls -l "$dst" | tr '\n' ' ')"
fi
if [ -d "$dst/link-to-dir" ] && [ ! -L "$dst/link-to-dir" ]; then
	tree_equal --no-root "$small" "$dst/link-to-dir"
else
	fail_later "a PATH that is a link to a directory did not arrive as that directory"
fi
finish
