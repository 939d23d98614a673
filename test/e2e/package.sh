#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_package: the Debian packages (debian/), built and installed.
#   - dpkg-buildpackage -us -uc -b builds pxfer, libpxfer3 and
#     libpxfer-dev from a copy of the tree; lintian (where installed)
#     reports no error and no warning
#   - installed with dpkg: /usr/bin/pxfer runs, the system user pxfer
#     and the secret (/etc/pxfer/secret, root's, 0600) exist, the unit is
#     installed but not enabled, systemd-analyze verify accepts it (where
#     installed), bash-completion loads the completion
#   - a loopback transfer with the installed command, and one from
#     examples/send_tree.c built against libpxfer-dev with pkg-config
#     alone, loading the installed libpxfer.so.3
#   - an enabled unit, then purge: no file of the packages, no user,
#     group, secret or unit link is left
# It installs on this machine (as root, when none of the packages and no
# user pxfer is there, and purges however it ends): a root made for
# 'dpkg --root' would need its own dpkg database, shell, adduser and
# libraries, that is a debootstrap, which needs the network, and 'dpkg
# -x' runs no maintainer script, so the user, the secret and the purge
# would go unchecked. It builds the release flags' objects once more:
# about 30 s on two cores.
. "$(dirname "$0")/../lib/common.sh"

# the packages are built from the tree with their own flags, whatever
# build the suite runs against: make test runs this once, make tsan
# (the same tests under ThreadSanitizer) need not again
case $build in
*tsan*) skip "the packages do not depend on the ThreadSanitizer build; make test builds them" ;;
esac

for tool in dpkg-buildpackage dpkg-checkbuilddeps dh fakeroot pkg-config cc; do
	command -v $tool >/dev/null ||
		skip "$tool is needed (the packaging tools: tools/install-deps.sh)"
done
[ "$(id -u)" -eq 0 ] || skip "it installs the packages on this machine: run it as root"
pkgs=(pxfer libpxfer3 libpxfer-dev)
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$' &&
		skip "$p is on this machine already: it would be purged"
done
getent passwd pxfer >/dev/null && skip "a user pxfer exists here already: it would be removed"
[ -e /usr/bin/pxfer ] && skip "/usr/bin/pxfer exists already"
[ -e /etc/pxfer ] && skip "/etc/pxfer exists already: purging would remove it"

# dpkg, waiting (60 s at most) while another one holds its lock
dpkg_wait()
{
	local i

	for ((i = 0; i < 30; i++)); do
		dpkg "$@" >"$T/dpkg.log" 2>&1 && return 0
		grep -q 'lock' "$T/dpkg.log" || return 1
		sleep 2
	done
	return 1
}

installed=0
# however the test ends, nothing of the packages stays (the EXIT trap)
# shellcheck disable=SC2317
pkg_cleanup()
{
	local rc=$?

	if [ "$installed" -eq 1 ]; then
		dpkg_wait --purge "${pkgs[@]}" || cat "$T/dpkg.log" >&2
	fi
	(exit "$rc")
	_cleanup
}
trap pkg_cleanup EXIT

note "dpkg-buildpackage -us -uc -b, in a copy of the tree"
src=$T/build/pxfer
mkdir -p "$src" || fail "mkdir"
# the files of the checkout, changed or new ones too, without its builds
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - -cf -) | tar -x -C "$src"
else
	tar -C "$top" --exclude=./build -cf - . | tar -x -C "$src"
fi || fail "cannot copy the tree"
[ -f "$src/debian/control" ] || fail "no debian/control in the copy of the tree"
(cd "$src" && dpkg-checkbuilddeps) >"$T/deps.log" 2>&1 ||
	skip "missing build dependencies: $(sed -n 's/.*Unmet build dependencies: //p' "$T/deps.log")"
(cd "$src" && DEB_BUILD_OPTIONS="noautodbgsym parallel=2" \
	timeout 600 dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1 ||
	{ tail -40 "$T/build.log" >&2; fail "dpkg-buildpackage failed"; }
version=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
debs=()
for p in "${pkgs[@]}"; do
	debs+=("$T/build/${p}_${version}_$arch.deb")
	[ -f "${debs[-1]}" ] || fail "no ${p}_${version}_$arch.deb was built"
done
ok "built: $(cd "$T/build" && echo ./*.deb)"

if command -v lintian >/dev/null; then
	note "lintian"
	lintian --allow-root --fail-on error,warning "$T/build/pxfer_${version}_$arch.changes" \
		>"$T/lintian.log" 2>&1 || { cat "$T/lintian.log" >&2; fail "lintian found errors or warnings"; }
	ok "no error, no warning; $(grep -c . "$T/lintian.log") other line(s)"
fi

note "dpkg -i the packages"
dpkg_wait --install "${debs[@]}" || { cat "$T/dpkg.log" >&2; installed=1; fail "dpkg -i failed"; }
installed=1
dpkg -L "${pkgs[@]}" | sort -u >"$T/files"
PXFER=/usr/bin/pxfer
got=$("$PXFER" --version) || fail "/usr/bin/pxfer --version failed"
[[ $got == "pxfer $version "* ]] || fail "/usr/bin/pxfer --version says '$got', not version $version"
ok "$got"
IFS=: read -r _ _ uid _ _ home shell < <(getent passwd pxfer) || fail "no user pxfer"
[ "$uid" -lt 1000 ] || fail "the user pxfer has uid $uid, not a system one"
[ "$shell" = /usr/sbin/nologin ] || fail "the user pxfer has the shell $shell"
[ ! -e "$home" ] || fail "the user pxfer has a home, $home"
getent group pxfer >/dev/null || fail "no group pxfer"
[ "$(stat -c '%U %a' /etc/pxfer/secret)" = "root 600" ] ||
	fail "/etc/pxfer/secret is $(stat -c '%U %a' /etc/pxfer/secret), not root's 600"
grep -qxE '[0-9a-f]{64}' /etc/pxfer/secret || fail "/etc/pxfer/secret is not 32 bytes in hex"
ok "user pxfer (uid $uid), /etc/pxfer/secret"

unit=/lib/systemd/system/pxfer-recv.service
[ -f "$unit" ] || fail "no $unit"
grep -q '^ExecStart=/usr/bin/pxfer recv ' "$unit" || fail "the unit does not run /usr/bin/pxfer"
links=$(find /etc/systemd/system -name pxfer-recv.service 2>/dev/null)
[ -z "$links" ] || fail "the unit is enabled on installation: $links"
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify --man=no "$unit" >"$T/verify.log" 2>&1 ||
		{ cat "$T/verify.log" >&2; fail "systemd-analyze verify found problems in $unit"; }
	ok "the unit, not enabled; systemd-analyze verify: $(grep -c . "$T/verify.log") line(s)"
else
	ok "the unit, not enabled (no systemd-analyze to verify it)"
fi
if [ -r /usr/share/bash-completion/bash_completion ]; then
	bash --norc --noprofile -c '. /usr/share/bash-completion/bash_completion
		__load_completion pxfer && complete -p pxfer' >"$T/complete.log" 2>&1
	grep -q '_pxfer pxfer$' "$T/complete.log" ||
		{ cat "$T/complete.log" >&2; fail "bash-completion does not load the pxfer completion"; }
	ok "bash-completion: $(cat "$T/complete.log")"
fi

tree=$T/tree
mkdir -p "$tree/sub" || fail "mkdir"
head -c 2000000 /dev/urandom >"$tree/big"
head -c 333 /dev/urandom >"$tree/sub/small"

note "the installed pxfer, send to recv over loopback"
mkdir "$T/dst.cmd"
start_recv "$T/dst.cmd"
send_ok -q "$tree" "$(target)"
wait_recv
expect_rc 0 "$WAIT_RC" "pxfer recv --once"
tree_equal "$tree" "$T/dst.cmd/tree"
ok "arrived"

note "examples/send_tree.c against libpxfer-dev, by pkg-config alone"
read -ra pcflags <<<"$(env -u PKG_CONFIG_PATH pkg-config --cflags --libs pxfer)" ||
	fail "pkg-config does not find pxfer"
cc -Wall -Wextra -Werror -o "$T/send_tree" /usr/share/doc/libpxfer-dev/examples/send_tree.c \
	"${pcflags[@]}" || fail "send_tree.c does not build against the installed package"
loaded=$(env -u LD_LIBRARY_PATH ldd "$T/send_tree" | awk '$1 == "libpxfer.so.3" { print $3 }')
owner=$(dpkg -S "$(readlink -f "${loaded:-/nonexistent}")" 2>/dev/null | cut -d: -f1)
[ "$owner" = libpxfer3 ] || fail "send_tree loads libpxfer.so.3 from '$loaded', not from libpxfer3"
mkdir "$T/dst.lib"
start_recv "$T/dst.lib"
timeout -k 5 60 env -u LD_LIBRARY_PATH "$T/send_tree" 127.0.0.1 "$RECV_PORT" "$tree" \
	>"$T/send_tree.out" 2>&1 || { cat "$T/send_tree.out" "$RECV_LOG" >&2; fail "send_tree failed"; }
wait_recv
expect_rc 0 "$WAIT_RC" "pxfer recv --once"
tree_equal "$tree" "$T/dst.lib/tree"
ok "built with '${pcflags[*]}', loads $loaded; the tree arrived"

note "enabled, then purged: nothing left"
if command -v systemctl >/dev/null; then
	# as the administrator would; systemctl needs no running systemd for it
	systemctl enable pxfer-recv.service >"$T/enable.log" 2>&1 ||
		{ cat "$T/enable.log" >&2; fail "systemctl enable pxfer-recv failed"; }
	[ -n "$(find /etc/systemd/system -name pxfer-recv.service)" ] ||
		fail "systemctl enable made no link"
fi
dpkg_wait --purge "${pkgs[@]}" || { cat "$T/dpkg.log" >&2; fail "dpkg --purge failed"; }
installed=0
left=()
while IFS= read -r f; do
	# the directories others share (/usr/bin, ...) stay; those of the
	# packages alone do not
	if [ -d "$f" ]; then
		case $f in
		*/pxfer | */pxfer/* | */libpxfer* ) left+=("$f") ;;
		esac
	elif [ -e "$f" ] || [ -L "$f" ]; then
		left+=("$f")
	fi
done <"$T/files"
[ ${#left[@]} -eq 0 ] || fail "purge left: ${left[*]}"
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = not-installed ] || fail "$p is still '$st' after purge"
done
getent passwd pxfer >/dev/null && fail "purge left the user pxfer"
getent group pxfer >/dev/null && fail "purge left the group pxfer"
[ ! -e /etc/pxfer ] || fail "purge left /etc/pxfer: $(ls -A /etc/pxfer)"
links=$(find /etc/systemd /var/lib/systemd -name '*pxfer*' 2>/dev/null)
[ -z "$links" ] || fail "purge left: $links"
ok "no file, user, group, secret or unit link left"
finish
