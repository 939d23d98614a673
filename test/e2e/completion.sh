#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_completion: the shell completions (completion/) offer what the
# command takes.
#   - 'pxfer --complete-words CMD' lists exactly the options 'pxfer CMD
#     --help' lists, with their short names and arguments: an option in
#     a table that the completions would not offer fails
#   - bash's completion function, driven as bash-completion drives it,
#     completes commands, options, option values (from the same table:
#     transports, I/O kinds, ciphers, integrity and resume modes), paths
#     and directories, and nothing after an option whose value is free
#   - the zsh completion at least parses (zsh -n), where zsh is installed
# Skips (77) without bash-completion, which the bash script needs.
. "$(dirname "$0")/../lib/common.sh"

bc=${PXFER_BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
[ -r "$bc" ] || skip "bash-completion is needed ($bc)"

note "--complete-words lists what --help lists"
cmds=$("$PXFER" --complete-words | awk -F'|' '$1 !~ /^-/ { print $1 }' | tr '\n' ' ')
[ "$cmds" = "send recv doctor " ] || fail "--complete-words lists the commands '$cmds'"
for cmd in send recv doctor; do
	"$PXFER" "$cmd" --help >"$T/help.$cmd" || fail "pxfer $cmd --help failed"
	# "  -j, --jobs N   help" or "      --json   help", in the options
	sed -n '/^options:$/,/^$/p' "$T/help.$cmd" |
		sed -nE 's/^  (-(.), |    )(--[a-z0-9-]+)( ([A-Z][A-Z:]*))?( .*)?$/\3|\2|\5/p' |
		sed -E 's/\|(.)\|/|-\1|/' | sort >"$T/help.opts"
	[ "$(wc -l <"$T/help.opts")" -ge 4 ] ||
		fail "found only $(wc -l <"$T/help.opts") options in 'pxfer $cmd --help'"
	"$PXFER" --complete-words "$cmd" >"$T/words.$cmd" ||
		fail "pxfer --complete-words $cmd failed"
	awk -F'|' '$1 != "" { print $1 "|" $2 "|" $3 }' "$T/words.$cmd" | sort >"$T/words.opts"
	if ! cmp -s "$T/help.opts" "$T/words.opts"; then
		echo "--- differences (< --help, > --complete-words):" >&2
		diff "$T/help.opts" "$T/words.opts" >&2
		fail "the completions of 'pxfer $cmd' do not offer the options its help lists"
	fi
	ok "$cmd: $(wc -l <"$T/words.opts") options"
done

# complete LINE - what bash offers for LINE (a space at its end: a new
# word), as bash-completion's _pxfer sees it, one candidate a line
complete_line()
{
	bash --norc --noprofile -c '
		. "$1"
		. "$2"
		PATH=$3:$PATH
		COMP_LINE=$4
		COMP_POINT=${#COMP_LINE}
		read -ra COMP_WORDS <<<"$COMP_LINE"
		[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMPREPLY=()
		_pxfer pxfer "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort' \
		bash "$bc" "$top/completion/pxfer.bash" "$build" "$1"
}

# expect LINE CANDIDATES... - bash offers exactly these for LINE
expect()
{
	local line=$1 got want
	shift
	got=$(complete_line "$line" | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	[ "$got" = "$want" ] || { fail_later "'$line<TAB>' offers '$got', not '$want'"; return; }
	ok "'$line<TAB>': ${got:-nothing}"
}

note "bash completes commands, options and their values"
mkdir -p "$T/tree/sub.d" && : >"$T/tree/file.a" && : >"$T/tree/sub.d/x"
expect "pxfer s" send
expect "pxfer " send recv doctor --help --version
expect "pxfer help d" doctor
expect "pxfer send --tr" --transport
expect "pxfer send --transport " auto rdma tcp
expect "pxfer recv -q --io " auto uring sync
expect "pxfer send --cipher " aes-256-gcm chacha20-poly1305
expect "pxfer send --integrity " mac checksum
expect "pxfer send --resume t" trust
expect "pxfer send -j 4 --re" --resume --retries --retry-wait
expect "pxfer doctor --" --bind --transport --device --gid-index --help
expect "pxfer send --secret-file $T/tree/f" "$T/tree/file.a"
expect "pxfer recv --dir $T/tree/" "$T/tree/sub.d"
expect "pxfer send -v $T/tree/s" "$T/tree/sub.d"
expect "pxfer send --chunk-size "
expect "pxfer recv "

note "every option of the table has its completion"
for cmd in send recv doctor; do
	while IFS='|' read -r name _; do
		[ -n "$name" ] || continue
		got=$(complete_line "pxfer $cmd $name")
		[ "$got" = "$name" ] || grep -qx -- "$name" <<<"$got" ||
			fail_later "'pxfer $cmd $name<TAB>' does not offer $name"
	done <"$T/words.$cmd"
done
ok "each of them offered"

if command -v zsh >/dev/null; then
	note "the zsh completion parses"
	zsh -n "$top/completion/_pxfer" || fail "zsh -n completion/_pxfer failed"
	ok "zsh -n"
fi
finish
