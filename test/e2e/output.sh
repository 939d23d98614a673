#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_output: what pxfer send prints.
#   - --json: one JSON object on stdout (and nothing else there), with
#     status, files and bytes matching what was sent; also on failure
#   - -q: nothing at all on success
#   - the default: a one-line summary on stderr, nothing on stdout
#   - the progress line appears when stderr is a terminal (script(1)
#     gives it one) and not otherwise, nor with -q or --json
#   - -v names the chunk size and slots agreed: chosen by the receiver
#     unless --chunk-size is given (both bounded by its --max-chunk)
#   - -vv puts the seconds since the start before every verbose line
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

command -v python3 >/dev/null || skip "python3 is needed to parse the JSON"

src=$T/src
mkdir -p "$src/sub" || fail "mkdir"
head -c 5000000 /dev/urandom >"$src/a"
head -c 12345 /dev/urandom >"$src/sub/b"
: >"$src/sub/empty"
ln -s a "$src/link"
nfiles=3
nbytes=$((5000000 + 12345))

# json_check FILE PYTHON-EXPR... - FILE holds exactly one JSON object, d,
# for which every expression is true
json_check()
{
	local file=$1

	shift
	python3 - "$file" "$@" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
try:
    d = json.loads(text)
except ValueError as e:
    sys.exit("not one JSON object (%s): %r" % (e, text[:300]))
if not isinstance(d, dict):
    sys.exit("not a JSON object: %r" % text[:300])
if text.count("\n") != 1 or not text.endswith("\n"):
    sys.exit("not exactly one line: %r" % text[:300])
for expr in sys.argv[2:]:
    if not eval(expr, {}, {"d": d}):
        sys.exit("false: %s  (in %s)" % (expr, json.dumps(d)))
print(json.dumps(d))
EOF
}

note "--json on success"
dst=$T/dst.json
mkdir "$dst"
start_recv "$dst"
send_ok --json -j 2 "$src" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver"
tree_equal "$src" "$dst/src"
out=$(json_check "$SEND_OUT" \
	'd["status"] == "ok"' 'd["exit_code"] == 0' \
	"d[\"files\"] == $nfiles" "d[\"bytes\"] == $nbytes" \
	'd["dirs"] == 2' 'd["links"] == 1' 'd["files_failed"] == 0' \
	'd["workers"] == 2' 'd["transport"] == "tcp"' \
	'isinstance(d["seconds"], (int, float))') || fail "--json: $out"
ok "--json: $out"
if grep -q 'ETA' "$SEND_ERR"; then
	fail "--json drew a progress line: $(cat -v "$SEND_ERR")"
fi

note "--json on failure (nothing listening)"
psend --json "$src" "127.0.0.1:$(free_port)"
expect_rc 4 "$SEND_RC" "--json with nothing listening"
out=$(json_check "$SEND_OUT" 'd["status"] == "failed"' 'd["exit_code"] == 4' \
	'd["files"] == 0') || fail "--json on failure: $out"
ok "--json on failure: $out"
expect_grep "cannot connect" "$SEND_ERR" "--json on failure: the error on stderr"

note "-q on success prints nothing"
dst=$T/dst.q
mkdir "$dst"
start_recv "$dst"
send_ok -q "$src" "$(target)"
wait_recv
[ -s "$SEND_OUT" ] && fail "-q printed on stdout: $(cat -v "$SEND_OUT")"
[ -s "$SEND_ERR" ] && fail "-q printed on stderr: $(cat -v "$SEND_ERR")"
tree_equal "$src" "$dst/src"
ok "-q: stdout and stderr empty"

note "the default: a summary on stderr"
dst=$T/dst.default
mkdir "$dst"
start_recv "$dst"
send_ok "$src" "$(target)"
wait_recv
[ -s "$SEND_OUT" ] && fail "stdout is not empty: $(cat -v "$SEND_OUT")"
expect_grep "sent $nfiles files" "$SEND_ERR" "the summary"
grep -q $'\r' "$SEND_ERR" && fail "a progress line was drawn although stderr is not a terminal: $(cat -v "$SEND_ERR")"
grep -q 'ETA' "$SEND_ERR" && fail "a progress line was drawn although stderr is not a terminal"
[ "$(wc -l <"$SEND_ERR")" -eq 1 ] || fail "more than the summary on stderr: $(cat "$SEND_ERR")"
ok "summary: $(cat "$SEND_ERR")"

note "a progress line when stderr is a terminal"
command -v script >/dev/null || skip "script (util-linux) is needed for the terminal cases"
# tty_send ARGS... - pxfer send with a terminal for stdin, stdout and
# stderr; what the terminal showed goes to $T/tty.out
tty_send()
{
	local cmd

	cmd=$(printf '%q ' "$PXFER" send "$@")
	timeout -k 5 120 script -qec "$cmd" /dev/null >"$T/tty.out" 2>&1 </dev/null
	TTY_RC=$?
}
dst=$T/dst.tty
mkdir "$dst"
start_recv "$dst"
tty_send -j 2 "$src" "$(target)"
wait_recv
expect_rc 0 "$TTY_RC" "send on a terminal"
grep -q 'ETA' "$T/tty.out" || fail "no progress line on a terminal: $(cat -v "$T/tty.out")"
grep -q "files $nfiles/$nfiles" "$T/tty.out" ||
	fail "the progress line never showed all files: $(cat -v "$T/tty.out")"
grep -q "sent $nfiles files" "$T/tty.out" || fail "no summary on a terminal: $(cat -v "$T/tty.out")"
tree_equal "$src" "$dst/src"
ok "terminal: $(tr '\r' '\n' <"$T/tty.out" | grep -m 1 ETA | sed 's/\x1b\[K//g')"

for opt in -q --json; do
	dst=$T/dst.tty$opt
	mkdir "$dst"
	start_recv "$dst"
	tty_send "$opt" "$src" "$(target)"
	wait_recv
	expect_rc 0 "$TTY_RC" "send $opt on a terminal"
	grep -q 'ETA' "$T/tty.out" && fail "$opt drew a progress line on a terminal: $(cat -v "$T/tty.out")"
	ok "terminal with $opt: no progress line"
done

# -v says what was agreed; left to the receiver, the chunk is the largest
# (up to 4 MiB, at least 1 MiB) that leaves 8 slots per worker of its ring
# memory; an explicit --chunk-size is taken as it is (up to --max-chunk)
check_chunk()	# WANT_KIB WANT_SLOTS RECV_ARGS -- SEND_ARGS
{
	local kib=$1 slots=$2 rargs=() sargs=()

	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do rargs+=("$1"); shift; done
	shift
	sargs=("$@")
	dst=$T/dst.chunk
	rm -rf "$dst"
	mkdir "$dst"
	start_recv "$dst" "${rargs[@]}"
	send_ok -v "${sargs[@]}" "$src" "$(target)"
	wait_recv
	expect_rc 0 "$WAIT_RC" "receiver (${rargs[*]}; send ${sargs[*]})"
	expect_grep " $kib KiB chunks, $slots slots each" "$SEND_ERR" \
		"chunk size with recv ${rargs[*]}, send ${sargs[*]}"
	tree_equal "$src" "$dst/src"
	ok "recv ${rargs[*]:-(defaults)}, send ${sargs[*]}: $(grep -o '[0-9]* KiB chunks, [0-9]* slots each' "$SEND_ERR")"
}
check_chunk 4096 8 -- -j 1
check_chunk 2048 8 -- -j 2
check_chunk 1024 8 -- -j 4
check_chunk 1024 4 -- -j 8
check_chunk 4096 16 --ring-mem 64M --max-sessions 1 -- -j 1
check_chunk 1024 16 --ring-mem 64M --max-sessions 1 -- -j 4 --chunk-size 1M
check_chunk 1024 4 --ring-mem 32M --max-sessions 2 -- -j 4
check_chunk 512 64 -- -j 1 --chunk-size 512K
check_chunk 2048 16 --max-chunk 2M -- -j 1

# -vv puts the seconds since the start before each verbose line, and says
# when the data connections were ready and the transfer was acknowledged
dst=$T/dst.vv
mkdir "$dst"
start_recv "$dst"
send_ok -vv -j 2 "$src" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "receiver for -vv"
expect_grep '^pxfer: \[[0-9]+\.[0-9]{3}\] 2 data connections ready$' "$SEND_ERR" "-vv timestamps"
expect_grep '^pxfer: \[[0-9]+\.[0-9]{3}\] ACK from the receiver$' "$SEND_ERR" "-vv end of the transfer"
grep '^pxfer: ' "$SEND_ERR" | grep -v '^pxfer: sent ' | grep -qv '^pxfer: \[[0-9.]*\] ' &&
	fail "a verbose line without a timestamp under -vv: $(cat "$SEND_ERR")"
tree_equal "$src" "$dst/src"
ok "-vv: $(grep -c '^pxfer: \[' "$SEND_ERR") verbose lines, each with a timestamp"
