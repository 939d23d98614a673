#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# docs: every diagram in docs/ is what its graphviz source gives (make
# docs renders them): a source changed without its SVG, or the other way
# round, fails. Skips (77) where graphviz is not installed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v dot >/dev/null || { echo "SKIP: graphviz (dot) is not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
rc=0 n=0
for src in "$top"/docs/*.dot; do
	[ -e "$src" ] || continue
	svg=${src%.dot}.svg
	n=$((n + 1))
	if ! dot -Tsvg -o "$tmp/out.svg" "$src"; then
		echo "FAIL: ${src#"$top"/} does not render"
		rc=1
	elif ! cmp -s "$tmp/out.svg" "$svg"; then
		echo "FAIL: ${svg#"$top"/} is not what ${src#"$top"/} gives: run 'make docs'"
		rc=1
	fi
done
[ $rc -ne 0 ] || echo "docs: $n diagram(s) match their sources"
exit $rc
