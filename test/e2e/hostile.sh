#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_hostile: a crafted sender (test/helper/hostile_sender) proves the secret and
# then misbehaves in every way it knows: paths out of the directory, links
# leading out of it, chunks that do not fit, lies in FILE_END, broken
# frames. The receiver serves DIR, which sits next to an "outside"
# directory in a common parent. After each scenario:
#   - nothing outside DIR changed (outside stays empty, the parent as it was)
#   - no file under DIR has a final name the receiver did not complete
#   - no temporary (.pxfer-*.part) file is left once the session is over
#   - the receiver refused (the connection, session or file) or ended the
#     session, and said why (silent-before-data must instead complete: a
#     connection that says nothing may not keep the sender's data
#     connection out; rejoin-live and rejoin-lost must see the data
#     connection that replaces nothing, or the wrong generation, refused
#     and their session complete)
#   - it is still alive and listening
# At the end a normal transfer to the same receiver must succeed, also
# while connections that never say anything (no secret needed to open
# them) are open, and the receiver never warned that it could not accept
# a connection.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

HS=$HELPERS/hostile_sender
[ -x "$HS" ] || skip "$HS is not built"

parent=$T/parent
dir=$parent/dir
outside=$parent/outside
mkdir -p "$dir" "$outside" || fail "mkdir"
echo "do not touch" >"$parent/sentinel"

# everything in the parent except DIR itself: name, type, mode, size, mtime
parent_state()
{
	(cd "$parent" && find . -path ./dir -prune -o \
		-printf '%p %y %m %s %T@\n' | sort)
}

# the receiver has no connection left from the last session (run by
# wait_for)
# shellcheck disable=SC2317
session_over()
{
	[ -z "$(ss -Htn state established state close-wait state syn-recv \
		"( sport = :$RECV_PORT )" 2>/dev/null)" ]
}

start_server "$dir" -v
before=$(parent_state)
scenarios=$("$HS" -l | awk '{ print $1 }')
[ -n "$scenarios" ] || fail "hostile_sender -l listed nothing"
n=0

for sc in $scenarios; do
	out=$T/hostile.$sc.out
	log_lines=$(wc -l <"$RECV_LOG")
	note "scenario $sc: $("$HS" -l | awk -v s="$sc" '$1 == s { $1 = ""; print substr($0, 2) }')"

	PXFER_HS_RECV_PID=$RECV_PID timeout -k 5 60 "$HS" -o "$outside" 127.0.0.1 "$RECV_PORT" "$sc" \
		>"$out" 2>&1
	rc=$?
	sed 's/^/    | /' "$out"
	[ $rc -eq 0 ] || fail "$sc: hostile_sender exited $rc (it could not play the scenario)"
	outcome=$(sed -n 's/^outcome: //p' "$out")

	# the receiver must refuse or end the session; only setid-mode (its
	# file arrives, its set-id bits must not) and file-over-link (the file
	# replaces the link) may complete. A chunk sent after its file is done
	# races the FIN on another connection: the receiver either refuses it
	# or has already acknowledged the FIN and drops it unread; either way
	# the checks below prove nothing was written.
	case $sc:$outcome in
	rejoin-*:refused) ;;
	rejoin-*:*) fail "$sc: the receiver's answer was '$outcome', not the wrong connection refused and the session completed";;
	silent-before-data:completed) ;;
	silent-before-data:*) fail "$sc: a silent connection kept the sender's data connection out ($outcome)";;
	setid-mode:completed | file-over-link:completed | *:refused | *:aborted) ;;
	chunk-after-done:accepted) ;;
	*) fail "$sc: the receiver's answer was '$outcome'";;
	esac

	wait_for 20 session_over ||
		fail "$sc: the receiver still holds the session 20 s after the sender is done"
	recv_alive || fail "$sc: the receiver is not alive and listening any more"

	# nothing escaped
	[ -z "$(ls -A "$outside")" ] ||
		fail "$sc: something was written outside DIR: $(ls -A "$outside")"
	[ "$(parent_state)" = "$before" ] ||
		fail "$sc: the parent of DIR changed"

	# no leftovers, and no final name that was not completed
	no_part_files "$dir"
	sed -n 's/^done //p' "$out" >"$T/allowed"
	while IFS= read -r -d '' f; do
		grep -qxF -- "$f" "$T/allowed" ||
			fail "$sc: '$f' exists in DIR but the receiver never completed it"
	done < <(cd "$dir" && find . -mindepth 1 ! -type d -printf '%P\0')
	while IFS= read -r -d '' f; do
		grep -q -- "^$f/" "$T/allowed" || grep -qxF -- "$f" "$T/allowed" ||
			echo "note: directory '$f' was left (created for a file that did not arrive)"
	done < <(cd "$dir" && find . -mindepth 1 -type d -printf '%P\0')

	if [ "$sc" = file-over-link ] && { [ -L "$dir/evil" ] || [ ! -f "$dir/evil" ]; }; then
		fail "$sc: 'evil' is not the regular file that was sent"
	fi

	# set-id bits never come from a peer
	if [ -n "$(find "$dir" -perm /6000 -print -quit)" ]; then
		fail "$sc: set-id bits arrived: $(find "$dir" -perm /6000 -printf '%m %P\n')"
	fi

	# and the receiver said why, in its log or to the sender; a late chunk
	# dropped unread after the session ended (accepted) has nothing to say
	if [ "$outcome" != completed ] && [ "$outcome" != accepted ]; then
		tail -n +$((log_lines + 1)) "$RECV_LOG" >"$T/newlog"
		sed 's/^/    recv: /' "$T/newlog"
		grep -qiE 'refused|error|dropped|warning|failed' "$T/newlog" ||
			grep -qE "^<- (REFUSE|FILE_ERR|ABORT) .*'.+'" "$out" ||
			fail "$sc: the receiver gave no reason"
	fi
	ok "$sc: $outcome, nothing escaped, nothing left behind"
	n=$((n + 1))

	find "$dir" -mindepth 1 -delete
done

note "after $n scenarios: a normal transfer to the same receiver"
src=$T/src
mkdir -p "$src/sub"
head -c 300000 /dev/urandom >"$src/sub/data"
echo hello >"$src/hello"
send_ok -q -j 2 "$src" "$(target)"
tree_equal "$src" "$dir/src"
[ -z "$(ls -A "$outside")" ] || fail "something was written outside DIR"

note "two idle connections (no HELLO, no secret) do not keep a sender out"
exec {idle1}<>"/dev/tcp/127.0.0.1/$RECV_PORT" {idle2}<>"/dev/tcp/127.0.0.1/$RECV_PORT" ||
	fail "cannot open the idle connections"
sleep 0.2
rm -rf "$dir/src"
timer_start
psend -q -j 2 "$src" "$(target)"
secs=$(timer_secs)
exec {idle1}>&- {idle2}>&-
if [ "$SEND_RC" -eq 0 ]; then
	tree_equal "$src" "$dir/src"
	ok "the sender got through in $secs s"
else
	fail_later "with two idle connections open, pxfer send exited $SEND_RC after $secs s: $(tr '\n' ' ' <"$SEND_ERR")"
fi
wait_for 20 session_over || fail "the receiver still holds a connection 20 s after the idle ones closed"

note "the receiver ends on SIGTERM"
stop_recv
expect_rc 130 "$WAIT_RC" "receiver after SIGTERM"
# every connection of the scenarios was accepted (what came over it is
# another matter): a warning that one could not be is a false alarm
if grep -q "could not accept" "$RECV_LOG"; then
	fail_later "the receiver warned that it could not accept a connection $(grep -c "could not accept" "$RECV_LOG") times: $(grep -m 1 "could not accept" "$RECV_LOG")"
fi
ok "all $n hostile scenarios handled"
finish
