#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fuzz/corpus: every fuzz target (test/fuzz/NAME.c), built with the
# standalone driver into $PXFER_BUILD/test/fuzz/NAME, runs each input of
# its committed corpus (test/fuzz/corpus/NAME/) under the sanitizers and
# its oracle. Then the committed seeds must be what test/fuzz/make_corpus
# writes today: a seed the encoders no longer produce would stop testing
# what its name says ('make fuzz-corpus' writes them again).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${PXFER_BUILD:-$top/build/san}
fail=0

for src in "$top"/test/fuzz/*.c; do
	name=$(basename "$src" .c)
	case $name in driver|make_corpus) continue;; esac
	bin=$build/test/fuzz/$name
	dir=$top/test/fuzz/corpus/$name
	if [ ! -x "$bin" ]; then
		echo "error: '$bin' is missing (make check builds it)"
		fail=1
	elif [ ! -d "$dir" ]; then
		echo "error: fuzz target '$name' has no corpus in '$dir'"
		fail=1
	elif ! "$bin" "$dir" 2>"$build/test/fuzz/$name.log"; then
		tail -n 30 "$build/test/fuzz/$name.log"
		echo "error: fuzz target '$name' failed on its corpus"
		fail=1
	else
		echo "ok: $name, $(find "$dir" -type f | wc -l) inputs"
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$build/test/fuzz/make_corpus" "$tmp"; then
	echo "error: make_corpus failed"
	exit 1
fi
stale=0
for f in "$tmp"/*/*; do
	seed=${f#"$tmp"/}
	if ! cmp -s "$f" "$top/test/fuzz/corpus/$seed"; then
		echo "error: seed '$seed' is missing or out of date"
		stale=1
	fi
done
if [ $stale -ne 0 ]; then
	echo "error: run 'make fuzz-corpus' and commit test/fuzz/corpus/"
	fail=1
fi
exit $fail
