# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# bash completion for pxfer. It asks the command itself what to offer
# ('pxfer --complete-words [COMMAND]', from the table --help prints), so
# it cannot drift from the options of the pxfer the command line runs.
# Installed as share/bash-completion/completions/pxfer; bash-completion
# loads it (and gives _init_completion, _filedir, _known_hosts_real).

# _pxfer_values KIND... - add to COMPREPLY what an argument of these kinds
# completes to: words, or @file, @dir, @host, @address, @rdma-device (the
# values field of 'pxfer --complete-words CMD', src/cli/cli.h)
_pxfer_values()
{
	local v pre='' words=() found=()

	for v in "$@"; do
		case $v in
		@file) _filedir ;;
		@dir) _filedir -d ;;
		@host) _known_hosts_real -- "$cur" ;;
		@address)
			# this host's addresses, as ip lists them
			mapfile -t found < <(ip -o addr show up 2>/dev/null |
				awk '{ sub(/\/.*/, "", $4); print $4 }')
			words+=("${found[@]}") ;;
		@rdma-device)
			# one more after those before the last comma
			[[ $cur == *,* ]] && pre=${cur%,*},
			if [ -d /sys/class/infiniband ]; then
				mapfile -t found < <(command ls /sys/class/infiniband)
			else
				mapfile -t found < <(rdma link show 2>/dev/null |
					awk '$1 == "link" { sub(/\/.*/, "", $2); print $2 }')
			fi
			words+=("${found[@]}") ;;
		*) words+=("$v") ;;
		esac
	done
	[ ${#words[@]} -gt 0 ] || return 0
	mapfile -t found < <(IFS=$'\n'; compgen -P "$pre" -W "${words[*]}" -- "${cur#"$pre"}")
	COMPREPLY+=("${found[@]}")
	[ -z "$pre" ] || compopt -o nospace
}

_pxfer()
{
	local cur prev words cword split
	_init_completion -s || return

	# the pxfer this command line runs, which knows its own options
	local pxfer=${words[0]} i cmd='' at=0
	[[ $pxfer == \~/* ]] && pxfer=$HOME/${pxfer#\~/}
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} != -* ]]; then
			cmd=${words[i]} at=$i
			break
		fi
	done
	if [ -z "$cmd" ] || { [ "$cmd" = help ] && [ $at -eq $((cword - 1)) ]; }; then
		# the commands, and (before one) --help and --version
		mapfile -t COMPREPLY < <(compgen -W "$("$pxfer" --complete-words 2>/dev/null |
			awk -F'|' -v help="$cmd" '!help || $1 !~ /^-/ { print $1 }')" -- "$cur")
		return
	fi

	# a line an option: --name|-c|ARG|values|help; the last, with no name,
	# says what the operands complete to
	local name short arg values names=() takes=() operands=''
	local -A vals=()
	while IFS='|' read -r name short arg values _; do
		if [ -z "$name" ]; then
			operands=$values
			continue
		fi
		names+=("$name")
		[ -n "$arg" ] && takes+=("$name" ${short:+"$short"})
		vals[$name]=$values
		[ -n "$short" ] && vals[$short]=$values
	done < <("$pxfer" --complete-words "$cmd" 2>/dev/null)

	# the argument of an option: --opt VALUE, or --opt=VALUE (split)
	local t
	for t in "${takes[@]}"; do
		[ "$prev" = "$t" ] || continue
		# shellcheck disable=SC2086 # the values are words
		[ -n "${vals[$t]}" ] && _pxfer_values ${vals[$t]}
		return
	done
	$split && return

	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(IFS=$'\n'; compgen -W "${names[*]}" -- "$cur")
		return
	fi
	# shellcheck disable=SC2086 # the kinds are words
	[ -n "$operands" ] && _pxfer_values $operands
}
complete -F _pxfer pxfer
