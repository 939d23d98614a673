# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# The resume group of bench/bench.sh, which sources this file: what a
# transfer that starts again costs, against the whole one, and against
# rsync doing the same.
#
# Sections (select them with --only '?/res-*'):
#   A/res-full       pxfer (default -j): the whole of A, the reference
#   A/res-90         the same command after a transfer of A was cut at 90%
#                    of its chunks (test/helper/relay resets every
#                    connection then; --retries 0):
#                    the receiver holds 90% as a partial; the sender checks
#                    what it holds against the source (a read) and sends
#                    the rest
#   A/res-90-trust   the same with --resume trust: no read of the source
#   B/res-first      pxfer (default -j): the whole of B into an empty
#                    directory, the reference
#   B/res-second     the same command again over the complete copy: every
#                    file is skipped (same size and mtime)
#   B/res-rsync-first, B/res-rsync-second
#                    the same two runs with the rsync daemon (rsync -a)
#
# Only the second run of each pair is measured in the res-90 and -second
# sections: the first one (the cut transfer, or the full copy) runs just
# before, in the same directory, and is not timed. Their MiB/s column is
# the workload's size over the second run's time: how fast the workload
# is "moved" when most of it is there.

RELAY=$PXFER_BUILD/test/helper/relay

res_sections() {        # the group's lines for SECTIONS
	SECTIONS+=("A/res-full;A;pxfer, whole;peer_res_full A"
		   "A/res-90;A;pxfer, resumed at 90%;peer_res_90 check"
		   "A/res-90-trust;A;resumed, --resume trust;peer_res_90 trust"
		   "B/res-first;B;pxfer, first run;peer_res_full B"
		   "B/res-second;B;pxfer, second run;peer_res_second"
		   "B/res-rsync-first;B;rsync, first run;peer_rsync_B"
		   "B/res-rsync-second;B;rsync, second run;peer_res_rsync_second")
}

res_tools() {
	local s
	for s in "${SECTIONS[@]}"; do
		[[ ${s%%;*} == A/res-90* ]] || continue
		[ -x "$RELAY" ] || { echo "bench: $RELAY is missing (make all)" >&2; return 1; }
		return 0
	done
}

res_path() {            # $1 workload: what to send, and its copy
	if [ "$1" = A ]; then RES_SRC=$DATA/a.bin RES_DST=$DST/a.bin
	else RES_SRC=$DATA/tree RES_DST=$DST/tree; fi
}

res_send() {            # $1 workload, [$2...] more options: the pxfer pair
	local w=$1
	shift
	res_path "$w"
	# shellcheck disable=SC2153 # PORT is bench.sh's, set for each run
	measure "exec '$PXFER' recv --dir '$DST' --once --bind 127.0.0.1 --port $PORT --transport tcp -q" \
		"exec '$PXFER' send $* --transport tcp --json '$RES_SRC' 127.0.0.1:$PORT"
}

res_verify() {          # $1 workload
	res_path "$1"
	if [ "$1" = A ]; then verify_file "$RES_SRC" "$RES_DST"
	else verify_tree "$RES_SRC" "$RES_DST"; fi
}

peer_res_full() { res_send "$1" && res_verify "$1"; }

# the chunk size the receiver picks for the default -j (it decides)
res_chunk() {
	local port log=$RUN.probe
	[ -n "${RES_CHUNK:-}" ] && return 0
	port=$((PORT + 1))
	: >"$WORK/probe.one" || return 1
	"$PXFER" recv --dir "$DST" --once --bind 127.0.0.1 --port $port --transport tcp -q \
		>/dev/null 2>&1 &
	local rp=$!
	wait_listen $port $rp || return 1
	"$PXFER" send -v --transport tcp "$WORK/probe.one" 127.0.0.1:$port >/dev/null 2>"$log"
	wait $rp
	rm -f "$DST/probe.one"
	RES_CHUNK=$(sed -n 's/.* \([0-9]*\) KiB chunks.*/\1/p' "$log" | head -n 1)
	[ -n "$RES_CHUNK" ] || { echo "no chunk size in $log" >>"$RUN.cli.log"; return 1; }
	RES_CHUNK=$((RES_CHUNK << 10))
}

# the receiver keeps 90% of A: a transfer through the relay, which resets
# every connection when the chunk at 90% passes; the sender does not
# retry
res_cut() {
	local port rport rp lp n rc
	res_chunk || return 1
	n=$(((A_BYTES + RES_CHUNK - 1) / RES_CHUNK))
	n=$((n * 9 / 10))
	port=$((PORT + 2))
	"$PXFER" recv --dir "$DST" --once --bind 127.0.0.1 --port $port --transport tcp -q \
		>"$RUN.cut.recv" 2>&1 &
	rp=$!
	wait_listen $port $rp || return 1
	"$RELAY" -n "$n" 0 127.0.0.1 $port reset >"$RUN.relay" 2>"$RUN.relay.err" &
	lp=$!
	for ((rc = 0; rc < 100; rc++)); do
		rport=$(head -n 1 "$RUN.relay" 2>/dev/null)
		[ -n "$rport" ] && break
		sleep 0.05
	done
	[ -n "$rport" ] || { kill $lp $rp 2>/dev/null; return 1; }
	"$PXFER" send --retries 0 -q --transport tcp "$DATA/a.bin" "127.0.0.1:$rport" \
		>/dev/null 2>"$RUN.cut.send"
	rc=$?
	wait $rp
	kill $lp 2>/dev/null
	wait $lp 2>/dev/null
	# it must have failed, leaving a partial and no file
	if [ $rc -eq 0 ] || [ -e "$DST/a.bin" ]; then
		echo "the cut transfer did not leave a partial (exit $rc)" >>"$RUN.cli.log"
		return 1
	fi
}

peer_res_90() {         # $1 check or trust
	res_cut || return 1
	res_send A --resume "$1" && res_verify A || return 1
	# what the receiver held, as the sender saw it
	grep -o '"bytes_resumed":[0-9]*' "$RUN.cli.log" | cut -d: -f2 >"$RUN.resumed"
}

# a first run, untimed, then the measured second run over the copy
peer_res_second() {
	res_path B
	"$PXFER" recv --dir "$DST" --once --bind 127.0.0.1 --port $((PORT + 1)) \
		--transport tcp -q >/dev/null 2>&1 &
	local rp=$!
	wait_listen $((PORT + 1)) $rp || return 1
	"$PXFER" send -q --transport tcp "$RES_SRC" 127.0.0.1:$((PORT + 1)) || return 1
	wait $rp || return 1
	res_send B && res_verify B || return 1
	grep -q '"bytes_sent":0,' "$RUN.cli.log" ||
		{ echo "the second run sent file data" >>"$RUN.cli.log"; return 1; }
}

peer_res_rsync_second() {
	# the first run into the same daemon module, untimed
	rsync_pair "$DATA/tree" || return 1
	mv "$RUN.cli.log" "$RUN.first.log"
	rsync_pair "$DATA/tree" && verify_tree "$DATA/tree" "$DST/tree"
}

time_ratio_line() {     # $1 text, $2 section a, $3 section b: wall a / wall b
	local a b
	selected "$2" && selected "$3" || return 0
	if a=$(field "$2" 1) && b=$(field "$3" 1); then
		RATIOS_TXT+=$(printf '%-44s %6.3fx   (%s / %s s)' "$1" "$(calc "$a / $b" .4f)" \
			"$(calc "$a" .3f)" "$(calc "$b" .3f)")$'\n'
	else
		RATIOS_TXT+=$(printf '%-44s %6s' "$1" "n/a")$'\n'
	fi
}

time_le() {             # $1 section a, $2 section b, $3 factor: wall a <= factor x wall b
	local a b
	a=$(field "$1" 1) && b=$(field "$2" 1) && calc "$a <= $3 * $b" d
}

res_report() {          # the group's ratios and targets, in report
	local t held f
	time_ratio_line "A: resumed at 90% / whole (time)" A/res-90 A/res-full
	time_ratio_line "A: resumed, trust / whole (time)" A/res-90-trust A/res-full
	time_ratio_line "B: pxfer second run / first (time)" B/res-second B/res-first
	time_ratio_line "B: rsync second run / first (time)" B/res-rsync-second B/res-rsync-first
	time_ratio_line "B: pxfer second run / rsync second run" B/res-second B/res-rsync-second
	held=$(cat "$LOGS"/A_res-90.*.resumed 2>/dev/null | sort -n | head -n 1)
	[ -z "$held" ] || RATIOS_TXT+=$(printf '%-44s %6.3f    (%s of %s bytes, the least of the runs)' \
		"A: held by the receiver when resumed" "$(calc "$held / $A_BYTES" .4f)" "$held" "$A_BYTES")$'\n'
	if selected A/res-90 && selected A/res-full; then
		t=$(time_le A/res-90 A/res-full 0.15)
		f=$(field A/res-90 1 2>/dev/null) && f="$(calc "$f" .3f) vs $(calc "$(field A/res-full 1)" .3f) s"
		target "A: interrupted at 90% and resumed <= 0.15x the whole transfer's time" "$t" "${f:-}"
	fi
	if selected B/res-second && selected B/res-first; then
		t=$(time_le B/res-second B/res-first 0.2)
		f=$(field B/res-second 1 2>/dev/null) && f="$(calc "$f" .3f) vs $(calc "$(field B/res-first 1)" .3f) s"
		target "B: second run over the unchanged tree <= 0.2x the first" "$t" "${f:-}"
	fi
}
