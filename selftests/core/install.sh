#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make install into a temporary DESTDIR (PREFIX=/usr, a multiarch LIBDIR):
# every part lands where it should (the .so with its soname, the .a,
# headers, uapi header, libortmem.pc, tools, man pages, udev rule, dkms.conf
# and the module's sources); an outside C program builds against it with
# nothing but "pkg-config --cflags --libs libortmem" (and --static) and
# runs; the installed tools run; make uninstall leaves no file behind.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
[ -r "$src/Makefile" ] || { echo "no source tree beside this test"; exit $KSFT_SKIP; }
case $(basename "$build") in
*-*) echo "a sanitizer build (its library needs the sanitizer runtime in every program)"; exit $KSFT_SKIP ;;
esac
command -v pkg-config >/dev/null || { echo "pkg-config not installed"; exit $KSFT_SKIP; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=gcc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root="$tmp/root"
libdir=/usr/lib/x86_64-linux-gnu
n=0 status=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n $1"; status=1; }
echo "TAP version 13"

if make -s -C "$src" O="$build" install DESTDIR="$root" PREFIX=/usr LIBDIR=$libdir \
	> "$tmp/install.log" 2>&1; then
	ok "make install DESTDIR PREFIX LIBDIR"
else
	sed 's/^/# /' "$tmp/install.log"; not_ok "make install DESTDIR PREFIX LIBDIR"
	echo "1..$n"; exit 1
fi
ver=$(sed -n 's/^Version: //p' "$root$libdir/pkgconfig/libortmem.pc")
missing=
for f in $libdir/libortmem.so $libdir/libortmem.a $libdir/pkgconfig/libortmem.pc \
	/usr/include/ortmem/ortmem.h /usr/include/ortmem/governor.h /usr/include/linux/ortmem.h \
	/usr/bin/ortmem-stat /usr/share/man/man1/ortmem-stat.1 /usr/share/man/man3/ortmem_gov_open.3 \
	/usr/lib/udev/rules.d/60-ortmem.rules /usr/src/ortmem-$ver/dkms.conf \
	/usr/src/ortmem-$ver/kmod/Kbuild /usr/src/ortmem-$ver/kmod/main.c \
	/usr/src/ortmem-$ver/kmod/conftest.sh /usr/src/ortmem-$ver/include/uapi/linux/ortmem.h; do
	[ -e "$root$f" ] || missing="$missing $f"
done
soname=$(readelf -d "$root$libdir/libortmem.so" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
if [ -z "$missing" ] && [ -n "$soname" ] && [ -e "$root$libdir/$soname" ] &&
	grep -q "^PACKAGE_VERSION=\"$ver\"" "$root/usr/src/ortmem-$ver/dkms.conf"; then
	ok "every part installed ($soname, dkms.conf for $ver)"
else
	echo "# missing:$missing; soname '$soname'"; not_ok "every part installed"
fi

cat > "$tmp/outside.c" <<'C'
#include <stdio.h>
#include <linux/ortmem.h>
#include <ortmem/ortmem.h>

int main(void)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 1 << 20 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h;
	struct ortmem_gov *gov;

	if (ortmem_gov_open(&o, &gov) ||
	    ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, 0, 4096, &h) ||
	    ortmem_gov_stats(gov, &st))
		return 1;
	printf("%s %llu %u\n", ortmem_version_string(),
	       (unsigned long long)st.tier[ORTMEM_TIER_HOST].used,
	       (unsigned)ORTMEM_ABI_VERSION);
	ortmem_gov_close(gov);
	return 0;
}
C
export PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR="$root$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs libortmem) || flags=
# shellcheck disable=SC2086
if [ -n "$flags" ] && "$cc" -o "$tmp/outside" "$tmp/outside.c" $flags > "$tmp/cc.log" 2>&1 &&
	LD_LIBRARY_PATH="$root$libdir" "$tmp/outside" > "$tmp/run.out" &&
	grep -q " 4096 " "$tmp/run.out"; then
	ok "an outside program builds with pkg-config only and runs ($(cat "$tmp/run.out"))"
else
	echo "# flags: $flags"; sed 's/^/# /' "$tmp/cc.log"; not_ok "an outside program builds with pkg-config only and runs"
fi
sflags=$(pkg-config --static --cflags --libs libortmem | sed 's/-lortmem/-Wl,-Bstatic -lortmem -Wl,-Bdynamic/')
# shellcheck disable=SC2086
if "$cc" -o "$tmp/outside-static" "$tmp/outside.c" $sflags > "$tmp/cc.log" 2>&1 &&
	"$tmp/outside-static" | grep -q " 4096 " && ! ldd "$tmp/outside-static" | grep -q libortmem; then
	ok "and links the static library with pkg-config --static"
else
	sed 's/^/# /' "$tmp/cc.log"; not_ok "and links the static library with pkg-config --static"
fi
if LD_LIBRARY_PATH="$root$libdir" "$root/usr/bin/ortmem-stat" --version | grep -q "^ortmem-stat $ver" &&
	! readelf -d "$root/usr/bin/ortmem-stat" | grep -q "$build"; then
	ok "the installed tools run and have no run path into the build"
else
	not_ok "the installed tools run and have no run path into the build"
fi

if make -s -C "$src" O="$build" uninstall DESTDIR="$root" PREFIX=/usr LIBDIR=$libdir \
	> "$tmp/uninstall.log" 2>&1 && [ -z "$(find "$root" ! -type d)" ]; then
	ok "make uninstall removes every file"
else
	sed 's/^/# /' "$tmp/uninstall.log"; find "$root" ! -type d | sed 's/^/# left: /'
	not_ok "make uninstall removes every file"
fi
echo "1..$n"
exit $status
