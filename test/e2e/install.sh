#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# e2e_install: the library as a program outside the tree uses it.
#   - make install DESTDIR=... PREFIX=/usr puts the command, libpxfer.so
#     with its soname and development links, <pxfer/pxfer.h>, pxfer.pc,
#     the man page, the systemd unit and the shell completions in place;
#     make uninstall takes them all away again
#   - libpxfer.so exports the calls pxfer.h marks PXFER_API and nothing
#     else (not the engine's error(), die(), info()...)
#   - the header compiles on its own, as C99 and as C++
#   - examples/send_tree.c and recv_once.c build against the installed
#     library through pkg-config alone, and load it from there: send_tree
#     sends a tree to 'pxfer recv --once', recv_once receives one from
#     'pxfer send', and the trees arrive intact
# It installs the build under test ($PXFER_BUILD). When that is a
# sanitizer build, the library needs the sanitizer runtime loaded first,
# so the examples are built with the same -fsanitize flags.
. "$(dirname "$0")/../lib/common.sh"

for tool in make pkg-config nm readelf cc; do
	command -v $tool >/dev/null || skip "$tool is needed"
done

root=$T/root
# make as it would run from a shell, not as the test runner's child
unset MAKEFLAGS MFLAGS MAKELEVEL
# the build dir as the Makefile names it, relative to the top if it can be
bdir=${build#"$top"/}
san=0
sanflags=()
if readelf -d "$PXFER" | grep -q 'NEEDED.*libasan'; then
	san=1
	# one option whose value holds a comma, not two array elements
	# shellcheck disable=SC2054
	sanflags=(-fsanitize=address,undefined -fno-omit-frame-pointer)
fi
mk()
{
	make -s --no-print-directory -C "$top" SAN=$san BUILD="$bdir" \
		DESTDIR="$root" PREFIX=/usr "$@"
}

note "make install DESTDIR=$root PREFIX=/usr ($bdir)"
mk install >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; fail "make install failed"; }
version=$("$PXFER" --version | awk '{ print $2 }')
[ -n "$version" ] || fail "pxfer --version printed no version"
lib=$root/usr/lib
for f in bin/pxfer lib/libpxfer.so.$version include/pxfer/pxfer.h \
	 lib/pkgconfig/pxfer.pc share/man/man1/pxfer.1 \
	 lib/systemd/system/pxfer-recv.service \
	 share/bash-completion/completions/pxfer share/zsh/vendor-completions/_pxfer; do
	[ -f "$root/usr/$f" ] || fail "make install did not install /usr/$f"
done
[ -x "$root/usr/bin/pxfer" ] || fail "/usr/bin/pxfer is not executable"
# the soname the Makefile gives (it changes with the ABI, before 1.0)
sov=$(sed -n 's/^SOVERSION := //p' "$top/Makefile")
[ -n "$sov" ] || fail "no SOVERSION in the Makefile"
so=libpxfer.so.$sov
[ "$(readlink "$lib/$so")" = "libpxfer.so.$version" ] ||
	fail "$so links to '$(readlink "$lib/$so")', not libpxfer.so.$version"
[ "$(readlink "$lib/libpxfer.so")" = "$so" ] ||
	fail "libpxfer.so links to '$(readlink "$lib/libpxfer.so")', not $so"
soname=$(readelf -d "$lib/libpxfer.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "$so" ] || fail "the soname is '$soname', not $so"
ok "installed: $(cd "$root" && find . \( -type f -o -type l \) -printf '%P ' )"

note "the systemd unit runs the installed command, confined to its DIR"
unit=$root/usr/lib/systemd/system/pxfer-recv.service
grep -q '^ExecStart=/usr/bin/pxfer recv --dir /srv/pxfer ' "$unit" ||
	fail "the unit does not start /usr/bin/pxfer recv: $(grep ExecStart "$unit")"
for want in '^User=pxfer' '^NoNewPrivileges=yes' '^ProtectSystem=strict' \
	    '^ReadWritePaths=/srv/pxfer$' '^LimitMEMLOCK=infinity' '^SuccessExitStatus=130'; do
	grep -q "$want" "$unit" || fail "the unit has no line matching '$want'"
done
if command -v systemd-analyze >/dev/null; then
	# verify checks the syntax and that ExecStart's binary exists
	sed 's|^ExecStart=/usr/bin/pxfer|ExecStart='"$root"'/usr/bin/pxfer|' "$unit" >"$T/pxfer-recv.service"
	systemd-analyze verify --man=no "$T/pxfer-recv.service" >"$T/verify.log" 2>&1 ||
		{ cat "$T/verify.log" >&2; fail "systemd-analyze verify found problems in the unit"; }
	[ ! -s "$T/verify.log" ] ||
		{ cat "$T/verify.log" >&2; fail "systemd-analyze verify warns about the unit"; }
	ok "systemd-analyze verify: no complaint"
fi

note "pkg-config finds the installed library"
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
pcv=$(pkg-config --modversion pxfer) || fail "pkg-config does not find pxfer"
[ "$pcv" = "$version" ] || fail "pxfer.pc says version $pcv, pxfer --version $version"
read -ra pcflags <<<"$(pkg-config --cflags --libs pxfer)"
case " ${pcflags[*]} " in
*" -I$root/usr/include "*"-L$lib "*) ;;
*) fail "pkg-config --cflags --libs pxfer: '${pcflags[*]}' does not point into $root/usr";;
esac
ok "pkg-config --cflags --libs pxfer: ${pcflags[*]}"

note "libpxfer.so exports the calls in pxfer.h and nothing else"
sed -n 's/^PXFER_API .*[ *]\(pxfer_[a-z0-9_]*\)(.*/\1/p' "$root/usr/include/pxfer/pxfer.h" |
	sort >"$T/api"
[ "$(wc -l <"$T/api")" -ge 6 ] || fail "found only $(wc -l <"$T/api") PXFER_API calls in pxfer.h"
nm -D --defined-only "$lib/libpxfer.so.$version" >"$T/nm" || fail "nm -D failed"
# a function, with its version (pxfer_send@@PXFER_0.1), or a version node
awk '$2 == "T" && $3 ~ /^pxfer_[a-z0-9_]*@@PXFER_/ { sub(/@.*/, "", $3); print $3; next }
     $2 == "A" && $3 ~ /^PXFER_[0-9.]*$/ { next }
     { print "unexpected: " $0 }' "$T/nm" | sort >"$T/exported"
if ! cmp -s "$T/api" "$T/exported"; then
	echo "--- differences (< pxfer.h, > exported):" >&2
	diff "$T/api" "$T/exported" >&2
	fail "libpxfer.so does not export exactly the PXFER_API calls"
fi
ok "exported: $(tr '\n' ' ' <"$T/exported")"

note "the installed header compiles on its own"
printf '#include <pxfer/pxfer.h>\n' >"$T/hdr.c"
cc -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only \
	-I"$root/usr/include" "$T/hdr.c" || fail "pxfer.h does not compile as C99"
if command -v c++ >/dev/null; then
	c++ -Wall -Wextra -Werror -fsyntax-only -x c++ -I"$root/usr/include" "$T/hdr.c" ||
		fail "pxfer.h does not compile as C++"
fi
ok "as C99$(command -v c++ >/dev/null && echo ' and as C++')"

note "the examples build with pkg-config${sanflags[*]:+ and ${sanflags[*]}}"
for ex in send_tree recv_once; do
	cc "${sanflags[@]}" -Wall -Wextra -Werror -o "$T/$ex" "$top/examples/$ex.c" \
		"${pcflags[@]}" || fail "examples/$ex.c does not build against the installed library"
done
export LD_LIBRARY_PATH=$lib
loaded=$(ldd "$T/send_tree" | awk -v so="$so" '$1 == so { print $3 }')
[ "$loaded" = "$lib/$so" ] ||
	fail "send_tree loads $so from '$loaded', not from $lib"
ok "built; $so => $loaded"

src=$T/src
mkdir -p "$src/sub/deeper" || fail "mkdir"
head -c 3000000 /dev/urandom >"$src/big"
head -c 777 /dev/urandom >"$src/sub/small"
: >"$src/sub/deeper/empty"
ln -s ../big "$src/sub/link"

note "send_tree (the library) to pxfer recv --once"
dst=$T/dst.lib-send
mkdir "$dst"
start_recv "$dst"
timeout -k 5 60 "$T/send_tree" 127.0.0.1 "$RECV_PORT" "$src" >"$T/send_tree.out" 2>&1
rc=$?
wait_recv
if [ "$rc" -ne 0 ]; then
	cat "$T/send_tree.out" "$RECV_LOG" >&2
	fail "send_tree exited $rc"
fi
expect_rc 0 "$WAIT_RC" "pxfer recv --once"
expect_grep '^sent: 3 files \(3000777 bytes\), 3 directories, 1 links in [0-9.]+ s over tcp$' \
	"$T/send_tree.out" "send_tree's summary"
tree_equal "$src" "$dst/src"
ok "send_tree: $(cat "$T/send_tree.out")"

note "pxfer send to recv_once (the library)"
dst=$T/dst.lib-recv
mkdir "$dst"
port=$(free_port)
"$T/recv_once" "$dst" "$port" >"$T/recv_once.log" 2>&1 &
rpid=$!
track $rpid
wait_for 10 port_listening "$port" || { cat "$T/recv_once.log" >&2; fail "recv_once did not listen"; }
send_ok -q "$src" "127.0.0.1:$port"
wait_pid $rpid 30
[ "$WAIT_RC" -eq 0 ] || { cat "$T/recv_once.log" >&2; fail "recv_once exited $WAIT_RC"; }
tree_equal "$src" "$dst/src"
ok "recv_once: $(tr '\n' ' ' <"$T/recv_once.log")"

note "make uninstall"
mk uninstall >"$T/uninstall.log" 2>&1 || { cat "$T/uninstall.log" >&2; fail "make uninstall failed"; }
left=$(cd "$root" && find . \( -type f -o -type l \) -printf '%P ')
[ -z "$left" ] || fail "make uninstall left: $left"
ok "nothing left but directories"
finish
