#!/usr/bin/env bash
# A first run of pxfer: a receiver and a sender on this machine, over
# loopback, moving a generated directory tree; then proof that it matches.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
pxfer=${PXFER_BUILD:-$top/build/release}/pxfer
[ -x "$pxfer" ] || { echo "error: $pxfer is not built; run 'make' first" >&2; exit 1; }

work=$(mktemp -d /tmp/pxfer-demo.XXXXXX)
src=$work/src
dst=$work/received
mkdir -p "$src/dataset/shards" "$src/dataset/empty" "$dst"

echo "== generating a tree in $src"
head -c $((256 << 20)) /dev/urandom > "$src/dataset/checkpoint.bin"
for i in $(seq 1 500); do
	head -c $(( (i * 7919) % 65536 + 1 )) /dev/urandom > "$src/dataset/shards/part-$i"
done
: > "$src/dataset/EMPTY"
ln -s shards/part-1 "$src/dataset/latest"
truncate -s 1G "$src/dataset/sparse.img"
printf 'header' | dd of="$src/dataset/sparse.img" conv=notrunc status=none
echo 'ünïcødé' > "$src/dataset/name with spaces ✓"

port=$(( 20000 + RANDOM % 20000 ))
secret_file=$work/secret
# readable by its owner only: pxfer refuses a secret file others can read
(umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret_file")

echo "== starting the receiver: pxfer recv --dir $dst --port $port --once"
"$pxfer" recv --dir "$dst" --port "$port" --once --secret-file "$secret_file" &
recv=$!
trap 'kill $recv 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	ss -ltn 2>/dev/null | grep -q ":$port " && break
	sleep 0.1
done

echo "== sending: pxfer send -j 4 $src/dataset 127.0.0.1:$port"
"$pxfer" send -j 4 --secret-file "$secret_file" "$src/dataset" "127.0.0.1:$port"
wait $recv
trap - EXIT

echo "== the files landed in $dst/dataset:"
# (a listing for the reader, not parsed)
# shellcheck disable=SC2012
ls -la "$dst/dataset" | sed 's/^/   /'
echo "== proof that they match:"
diff -r "$src/dataset" "$dst/dataset" && echo "   diff -r: identical (contents, symlink, empty file and directory)"
sha=$(sha256sum < "$src/dataset/checkpoint.bin" | cut -c1-16)
shb=$(sha256sum < "$dst/dataset/checkpoint.bin" | cut -c1-16)
echo "   checkpoint.bin sha256 $sha (sent) = $shb (received)"
echo "   sparse.img uses $(du -k "$dst/dataset/sparse.img" | cut -f1) KiB on disk for $(stat -c %s "$dst/dataset/sparse.img") bytes: holes kept"
[ "$sha" = "$shb" ]
echo "== done; remove $work when you are finished looking"
