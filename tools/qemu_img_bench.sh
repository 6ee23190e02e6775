#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# QEMU's own linux-aio on one raw file, through libukern_aio.so (LD_PRELOAD)
# and on the host kernel's AIO, in alternating runs of the same command:
#   qemu-img bench -w -i native -t none -c COUNT -d 32 -s 4096 -f raw FILE
# Prints every run, each side's median and the ratio ukern / host
# (`tools/ukern bench qemu-img`, docs/libaio.md).
#
# usage: tools/qemu_img_bench.sh LIBUKERN_AIO_SO [--rounds K] [--count N]
#            [--depth D] [--file PATH]
set -euo pipefail

lib=${1:?usage: qemu_img_bench.sh LIBUKERN_AIO_SO [--rounds K] [--count N] [--depth D] [--file PATH]}
shift
rounds=5 count=200000 depth=32 bs=4096 file=build/qemu-img/bench.raw
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--count) count=$2; shift 2 ;;
	--depth) depth=$2; shift 2 ;;
	--file) file=$2; shift 2 ;;
	*) echo "qemu_img_bench: unknown option $1" >&2; exit 2 ;;
	esac
done
[ -f "$lib" ] || { echo "qemu_img_bench: no $lib" >&2; exit 1; }

# The file holds every block the run writes, allocated and written once, so
# that no side pays for block allocation that the other does not.
mkdir -p "$(dirname "$file")"
size=$((count * bs))
if [ ! -f "$file" ] || [ "$(stat -c %s "$file")" -lt "$size" ]; then
	dd if=/dev/zero of="$file" bs=1M count=$(((size + 1048575) / 1048576)) \
		oflag=direct status=none
fi

run() { # run host|ukern: prints the seconds qemu-img reports
	local pre=()
	[ "$1" = ukern ] && pre=(env LD_PRELOAD="$lib")
	"${pre[@]}" qemu-img bench -w -i native -t none -c "$count" -d "$depth" \
		-s "$bs" -f raw "$file" |
		sed -n 's/^Run completed in \([0-9.]*\) seconds\./\1/p'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "qemu-img bench -w -i native -t none -c $count -d $depth -s $bs -f raw $file"
printf '%-6s %10s %10s\n' round host_s ukern_s
host=() ukern=()
run host >/dev/null # warm-up: the file's blocks and the host's caches
for r in $(seq 1 "$rounds"); do
	# Alternate which side goes first, so that drift hits both alike.
	if [ $((r % 2)) = 1 ]; then
		h=$(run host); u=$(run ukern)
	else
		u=$(run ukern); h=$(run host)
	fi
	[ -n "$h" ] && [ -n "$u" ] || { echo "qemu_img_bench: a run failed" >&2; exit 1; }
	host+=("$h") ukern+=("$u")
	printf '%-6s %10s %10s\n' "$r" "$h" "$u"
done
mh=$(printf '%s\n' "${host[@]}" | median)
mu=$(printf '%s\n' "${ukern[@]}" | median)
printf '%-6s %10s %10s\n' median "$mh" "$mu"
awk -v h="$mh" -v u="$mu" 'BEGIN { printf "ratio ukern/host: %.3f\n", u / h }'
