# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# The integrity group of bench/bench.sh, which sources this file: what
# each chunk protection costs pxfer, and pxfer --encrypt against the
# tools that encrypt too, scp and rsync -e ssh, over loopback.
#
# Sections (both workloads, W = A or B; select them with --only 'W/int-*'):
#   W/int-mac        pxfer with its defaults: a GMAC tag on every chunk
#   W/int-poly       pxfer --cipher chacha20-poly1305: a Poly1305 tag
#   W/int-encrypt    pxfer --encrypt (AES-256-GCM)
#   W/int-checksum   pxfer --integrity checksum: unkeyed XXH3, the reference
#   W/int-scp        scp to an sshd of the benchmark's own
#   W/int-rsync-ssh  rsync -a -e ssh to the same sshd
#
# The sshd runs from a directory under the work directory with a host key
# and an authorized key made for the run, on the run's port, as the
# benchmark's user; nothing of the system's ssh configuration is read or
# changed. (Run as root, sshd needs its privilege separation directory,
# /run/sshd, which the openssh-server service makes when it starts; the
# benchmark makes it when it is missing.) Before the runs, a quick probe
# pushes the same bytes through ssh with each cipher both sides offer
# here and keeps the fastest for every ssh run.
#
# Also, before the runs: bench/mac_speed, the speed of each candidate
# chunk tag on this CPU, one thread.

MAC_SPEED=$PXFER_BUILD/bench/mac_speed
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
SSH_CIPHERS=(aes128-gcm@openssh.com aes256-gcm@openssh.com chacha20-poly1305@openssh.com)
SSH_DIR='' SSH_CIPHER='' INT_TXT='' MAC_TXT=''

int_sections() {        # the group's lines for SECTIONS
	local w
	for w in A B; do
		SECTIONS+=("$w/int-mac;$w;pxfer mac (default);peer_int $w mac"
			   "$w/int-poly;$w;pxfer mac, poly1305;peer_int $w poly"
			   "$w/int-encrypt;$w;pxfer --encrypt;peer_int $w encrypt"
			   "$w/int-checksum;$w;pxfer checksum (ref);peer_int $w checksum"
			   "$w/int-scp;$w;scp;peer_scp $w"
			   "$w/int-rsync-ssh;$w;rsync -e ssh;peer_rsync_ssh $w")
	done
}

int_selected() {        # $1 pattern: does the run have such a section?
	local s
	for s in "${SECTIONS[@]}"; do
		# shellcheck disable=SC2053
		[[ ${s%%;*} == $1 ]] && return 0
	done
	return 1
}

int_tools() {           # the tools the selected sections need; 2 when missing
	int_selected '?/int-*' || return 0
	[ -x "$MAC_SPEED" ] || { echo "bench: no $MAC_SPEED (run 'make' first)" >&2; return 2; }
	int_selected '?/int-scp' || int_selected '?/int-rsync-ssh' || return 0
	local t miss=()
	[ -x "$SSHD" ] || miss+=("sshd (Debian package: openssh-server)")
	for t in ssh scp ssh-keygen; do
		command -v $t >/dev/null || miss+=("$t (Debian package: openssh-client)")
	done
	[ ${#miss[@]} -eq 0 ] && return 0
	printf 'bench: missing: %s\n' "${miss[@]}" >&2
	return 2
}

# the payload of a workload, and the path to send of it
int_src() { if [ "$1" = A ]; then echo "$DATA/a.bin"; else echo "$DATA/tree"; fi; }
int_verify() {
	if [ "$1" = A ]; then verify_file "$DATA/a.bin" "$DST/a.bin"
	else verify_tree "$DATA/tree" "$DST/tree"; fi
}

peer_int() {            # $1 workload, $2 mac, poly, encrypt or checksum
	local flags=''
	case $2 in
	poly) flags='--cipher chacha20-poly1305';;
	encrypt) flags='--encrypt';;
	checksum*) flags='--integrity checksum';;
	esac
	measure "exec '$PXFER' recv --dir '$DST' --once --bind 127.0.0.1 --port $PORT --transport tcp -q" \
		"exec '$PXFER' send $flags --transport tcp -q '$(int_src "$1")' 127.0.0.1:$PORT" &&
		int_verify "$1"
}

# ---------------------------------------------------------------- sshd
ssh_setup() {
	SSH_DIR=$WORK/ssh
	rm -rf "$SSH_DIR"
	mkdir -m 0700 "$SSH_DIR" || return 1
	ssh-keygen -q -t ed25519 -N '' -C pxfer-bench -f "$SSH_DIR/host_key" &&
		ssh-keygen -q -t ed25519 -N '' -C pxfer-bench -f "$SSH_DIR/id" &&
		cp "$SSH_DIR/id.pub" "$SSH_DIR/authorized_keys" || return 1
	if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then
		mkdir -m 0755 /run/sshd || return 1
	fi
	cat >"$SSH_DIR/sshd_config" <<-EOF
	HostKey $SSH_DIR/host_key
	AuthorizedKeysFile $SSH_DIR/authorized_keys
	PidFile none
	StrictModes no
	UsePAM no
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	PermitRootLogin prohibit-password
	Ciphers $(IFS=,; echo "${SSH_CIPHERS[*]}")
	Subsystem sftp internal-sftp
	EOF
	cat >"$SSH_DIR/ssh_config" <<-EOF
	Host bench
	    HostName 127.0.0.1
	    User $(id -un)
	    IdentityFile $SSH_DIR/id
	    IdentitiesOnly yes
	    StrictHostKeyChecking no
	    UserKnownHostsFile /dev/null
	    GlobalKnownHostsFile /dev/null
	    BatchMode yes
	    LogLevel ERROR
	    Compression no
	EOF
}

# the server side of a run: sshd in the foreground, the daemon of measure
sshd_cmd() {            # $1 file for its pid
	echo "echo \$\$ >'$1'; exec '$SSHD' -D -e -f '$SSH_DIR/sshd_config' -o ListenAddress=127.0.0.1:$PORT"
}
ssh_cmd() { echo "ssh -F '$SSH_DIR/ssh_config' -o Port=$PORT -c ${1:-$SSH_CIPHER}"; }

# Pushes the same bytes (a quarter of A) through ssh into cat >/dev/null
# with each cipher, best of 3, less the time a bare login takes, and
# keeps the fastest in SSH_CIPHER.
ssh_pick_cipher() {
	local mib=$((A_BYTES >> 22)) c t0 t try best bw rate setup txt='' pid log=$WORK/ssh/probe.log
	next_port
	sh -c "$(sshd_cmd "$SSH_DIR/probe.pid")" >"$log" 2>&1 &
	pid=$!
	wait_listen "$PORT" "$pid" || { echo "bench: sshd did not start (log: $log)" >&2; return 1; }
	bw=0
	for c in "${SSH_CIPHERS[@]}"; do
		best=0 setup=999
		# what connecting and logging in take, to leave out below
		for ((try = 0; try < 3; try++)); do
			t0=$EPOCHREALTIME
			sh -c "$(ssh_cmd "$c") bench true" 2>>"$log" </dev/null || {
				echo "bench: ssh with $c failed (log: $log)" >&2; kill "$pid"; wait "$pid"; return 1; }
			t=$(calc "$EPOCHREALTIME - $t0" .4f)
			[ "$(calc "$t < $setup" d)" = 1 ] && setup=$t
		done
		for ((try = 0; try < 3; try++)); do
			t0=$EPOCHREALTIME
			head -c $((mib << 20)) /dev/zero |
				sh -c "$(ssh_cmd "$c") bench 'cat >/dev/null'" 2>>"$log" || {
				echo "bench: ssh with $c failed (log: $log)" >&2; kill "$pid"; wait "$pid"; return 1; }
			t=$(calc "$EPOCHREALTIME - $t0 - $setup" .4f)
			rate=$(calc "$t > 0 ? $mib / $t : 0" .0f)
			[ "$rate" -gt "$best" ] && best=$rate
		done
		txt+="${txt:+, }${c%@*} $best"
		if [ "$best" -gt "$bw" ]; then bw=$best SSH_CIPHER=$c; fi
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	INT_TXT+="ssh:     $(ssh -V 2>&1); "
	INT_TXT+="cipher $SSH_CIPHER, the fastest here ($txt MiB/s: $mib MiB through ssh into cat >/dev/null, best of 3, less the time of logging in)"$'\n'
}

peer_scp() {            # $1 workload
	local pidf=$WORK/sshd.pid
	rm -f "$pidf"
	measure "$(sshd_cmd "$pidf")" \
		"exec scp -r -F '$SSH_DIR/ssh_config' -o Port=$PORT -c $SSH_CIPHER '$(int_src "$1")' bench:'$DST/'" \
		"$pidf" && int_verify "$1"
}

peer_rsync_ssh() {      # $1 workload
	local pidf=$WORK/sshd.pid
	rm -f "$pidf"
	measure "$(sshd_cmd "$pidf")" \
		"exec rsync -a -e \"$(ssh_cmd)\" '$(int_src "$1")' bench:'$DST/'" \
		"$pidf" && int_verify "$1"
}

# ---------------------------------------------------------------- before and after
int_prepare() {         # before the runs: the tags' speeds, the ssh cipher
	int_selected '?/int-*' || return 0
	local t
	echo "chunk tags on this CPU (bench/mac_speed):"
	t=$("$MAC_SPEED") || { echo "bench: mac_speed failed" >&2; return 1; }
	echo "$t"
	# shellcheck disable=SC2034 # bench.sh prints it with the results
	MAC_TXT=$t
	if int_selected '?/int-scp' || int_selected '?/int-rsync-ssh'; then
		ssh_setup || { echo "bench: cannot set up sshd in $SSH_DIR" >&2; return 1; }
		ssh_pick_cipher || return 1
		printf '%s' "$INT_TXT"
	fi
}

int_report() {          # the group's ratios and targets, in report
	local w t c m
	for w in A B; do
		ratio_line "$w: pxfer mac (default) / checksum" "$w/int-mac" "$w/int-checksum"
		ratio_line "$w: pxfer --encrypt / mac (default)" "$w/int-encrypt" "$w/int-mac"
		ratio_line "$w: pxfer --encrypt / scp" "$w/int-encrypt" "$w/int-scp"
		ratio_line "$w: pxfer --encrypt / rsync -e ssh" "$w/int-encrypt" "$w/int-rsync-ssh"
		if c=$(cpu_per_gib "$w/int-checksum" 2>/dev/null) &&
		   m=$(cpu_per_gib "$w/int-mac" 2>/dev/null); then
			RATIOS_TXT+=$(printf '%-44s %6.2fx   (%s / %s CPU s/GiB)' \
				"$w: CPU per GiB, mac (default) / checksum" "$(calc "$m / $c" .4f)" "$m" "$c")$'\n'
		fi
	done
	ratio_line "A: pxfer mac, poly1305 / mac (default, gmac)" A/int-poly A/int-mac
	selected A/int-mac || selected A/int-checksum || selected A/int-encrypt || return 0
	t=$(ge A/int-mac A/int-checksum 0.85)
	target "A: pxfer default (mac) >= 0.85x --integrity checksum" "$t" \
		"$(mibps A/int-mac 2>/dev/null) vs $(mibps A/int-checksum 2>/dev/null) MiB/s"
	t=$(ge A/int-encrypt A/int-scp 3)
	target "A: pxfer --encrypt >= 3x scp" "$t" \
		"$(mibps A/int-encrypt 2>/dev/null) vs $(mibps A/int-scp 2>/dev/null) MiB/s"
	t=$(ge A/int-encrypt A/int-rsync-ssh 3)
	target "A: pxfer --encrypt >= 3x rsync -e ssh" "$t" \
		"$(mibps A/int-encrypt 2>/dev/null) vs $(mibps A/int-rsync-ssh 2>/dev/null) MiB/s"
}
