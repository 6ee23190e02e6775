#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Installs a built tree into a scratch prefix, then builds the programs of
# tests/install/consumer/ against that prefix twice, with its CMake package
# (find_package(ukern)) and with its pkg-config files (ukern.pc,
# ukern-aio.pc), and runs each build's programs. Also checks the soname of
# libukern_aio.so. Nothing is written outside the scratch directory, which
# is removed at the end.
# Usage: run_install_test.sh BUILD_DIR LIBDIR CMAKE GENERATOR CC CXX
set -eu
BUILD=$1 LIBDIR=$2 CMAKE=$3 GENERATOR=$4 CC=$5 CXX=$6
SRC=$(cd "$(dirname "$0")/consumer" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ukern_install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix
# libukern_aio.so's nullb0 (its command line, docs/libaio.md): memory
# backed, so that reads return the data written.
CMDLINE="null_blk.memory_backed=1 null_blk.gb=1 null_blk.irqmode=1"

# expect PROGRAM RC LINE...: PROGRAM exited with RC and printed ($TMP/out)
# each LINE.
expect() {
	cat "$TMP/out"
	[ "$2" = 0 ] || { echo "$1: exit $2"; exit 1; }
	prog=$1
	shift 2
	for want in "$@"; do
		grep -qxF "$want" "$TMP/out" || { echo "$prog: no line '$want'"; exit 1; }
	done
}
run_consumers() { # DIR: the programs built there
	rc=0
	"$1/ukern_consumer" >"$TMP/out" 2>&1 || rc=$?
	expect ukern_consumer $rc "sbitmap: got 0 and 1, weight 2, 0 after put" \
		"aio on nullb0: write 4096, read 4096, data matches" "ukern_consumer: ok"
	for prog in "$1"/libaio_consumer*; do
		rm -f "$TMP/host_file"
		rc=0
		UKERN_CMDLINE=$CMDLINE "$prog" "$TMP/host_file" >"$TMP/out" 2>&1 || rc=$?
		expect "$prog" $rc "libaio on $TMP/host_file: write 4096, read 4096, data matches" \
			"libaio on /dev/ukern/nullb0: write 4096, read 4096, data matches" \
			"libaio_consumer: ok"
	done
}

echo "== cmake --install $BUILD --prefix $PREFIX"
"$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log"
LIB=$PREFIX/$LIBDIR
for f in libukern_shim.a libukern_blk.a libukern_devices.a libukern_aio_core.a \
	libukern_aio.so libukern_aio.so.1 cmake/ukern/ukernConfig.cmake \
	cmake/ukern/ukernConfigVersion.cmake cmake/ukern/ukernTargets.cmake \
	pkgconfig/ukern.pc pkgconfig/ukern-aio.pc; do
	[ -e "$LIB/$f" ] || { echo "not installed: $LIB/$f"; exit 1; }
done
for f in ukern/libaio.h uk/linux/sbitmap.h uk/linux/aio.h uk/devices/null_blk.h \
	uk/shim/cpu.h; do
	[ -e "$PREFIX/include/$f" ] || { echo "not installed: include/$f"; exit 1; }
done
soname=$(readelf -d "$LIB/libukern_aio.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
echo "soname: $soname"
[ "$soname" = libukern_aio.so.1 ]

echo "== find_package(ukern) with CMAKE_PREFIX_PATH=$PREFIX"
"$CMAKE" -S "$SRC" -B "$TMP/cmake" -G "$GENERATOR" -DCMAKE_PREFIX_PATH="$PREFIX" \
	-DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
	-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$TMP/configure.log" ||
	{ cat "$TMP/configure.log"; exit 1; }
grep -qxF "ukern_DIR:PATH=$LIB/cmake/ukern" "$TMP/cmake/CMakeCache.txt"
"$CMAKE" --build "$TMP/cmake" >"$TMP/build.log" || { cat "$TMP/build.log"; exit 1; }
run_consumers "$TMP/cmake"

echo "== pkg-config with PKG_CONFIG_PATH=$LIB/pkgconfig"
export PKG_CONFIG_PATH="$LIB/pkgconfig"
mkdir "$TMP/pc"
# shellcheck disable=SC2046
"$CXX" -std=gnu++20 -o "$TMP/pc/ukern_consumer" "$SRC/ukern_consumer.cc" \
	$(pkg-config --cflags --libs ukern)
# shellcheck disable=SC2046
"$CC" -o "$TMP/pc/libaio_consumer" "$SRC/libaio_consumer.c" \
	$(pkg-config --cflags --libs ukern-aio)
# The same program from the system's <libaio.h>, where libaio-dev is there.
if [ -e /usr/include/libaio.h ]; then
	# shellcheck disable=SC2046
	"$CC" -DUKERN_SYSTEM_LIBAIO_H -o "$TMP/pc/libaio_consumer_system_h" \
		"$SRC/libaio_consumer.c" $(pkg-config --cflags --libs ukern-aio)
fi
export LD_LIBRARY_PATH="$LIB"
run_consumers "$TMP/pc"
echo "install: ok"
