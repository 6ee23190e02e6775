#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Runs unmodified fio (ioengine=libaio) against a host file and against
# /dev/ukern/nullb0 (an emulated null_blk) with
# libukern_aio.so preloaded: plain, O_DIRECT, and userspace_reap. Checks
# that fio reports no error and that the I/O went through ukern (the
# LD_DEBUG bindings show io_submit bound to libukern_aio.so).
# Usage: run_fio.sh /path/to/libukern_aio.so [/usr/bin/fio]
LIB="$1"
FIO="${2:-$(command -v fio)}"
[ -x "$FIO" ] || { echo "fio not found: skipped"; exit 77; }
DIR=$(mktemp -d /tmp/ukern_fio.XXXXXX) || exit 1
trap 'rm -rf "$DIR"' EXIT
set -e
LD_DEBUG=bindings LD_PRELOAD="$LIB" "$FIO" --name=bind --filename="$DIR/f" --size=256k \
	--rw=read --bs=4k --ioengine=libaio --iodepth=2 --minimal >/dev/null 2>"$DIR/bind"
grep -q "normal symbol \`io_submit'" "$DIR/bind"
grep "normal symbol \`io_submit'" "$DIR/bind" | grep -q libukern_aio
for opts in "--iodepth=8" "--direct=1 --iodepth=16" \
	"--userspace_reap=1 --iodepth_batch_complete_min=0 --iodepth=8"; do
	# shellcheck disable=SC2086
	LD_PRELOAD="$LIB" "$FIO" --name=ukern --directory="$DIR" --size=4m --rw=randrw \
		--bs=4k --ioengine=libaio $opts --numjobs=2 --thread --group_reporting \
		--verify=crc32c --output-format=terse >"$DIR/out"
	err=$(cut -d';' -f5 "$DIR/out")
	echo "fio $opts: err=$err"
	[ "$err" = 0 ]
done

# Emulated block device: /dev/ukern/nullb0 (null_blk.* from UKERN_CMDLINE) for
# each irqmode, O_DIRECT with two jobs on disjoint halves, then buffered.
# The path does not exist on the host: the I/O can only reach null_blk.
[ ! -e /dev/ukern/nullb0 ]
for irq in 0 1 2; do
	for opts in "--direct=1 --numjobs=2 --offset_increment=8m --iodepth=16" \
		"--numjobs=1 --iodepth=8"; do
		# shellcheck disable=SC2086
		UKERN_CMDLINE="null_blk.submit_queues=2 null_blk.hw_queue_depth=64 null_blk.irqmode=$irq null_blk.memory_backed=1 null_blk.gb=1" \
		LD_PRELOAD="$LIB" "$FIO" --name=nullb --filename=/dev/ukern/nullb0 --size=8m \
			--rw=randrw --bs=4k --ioengine=libaio $opts --thread --group_reporting \
			--verify=crc32c --output-format=terse >"$DIR/out" 2>"$DIR/err"
		err=$(grep '^3;' "$DIR/out" | cut -d';' -f5)
		echo "fio nullb irqmode=$irq $opts: err=$err"
		[ "$err" = 0 ]
	done
done
# With null_blk.nr_devices=0 there is no device: fio's open fails with ENOENT.
if UKERN_CMDLINE="null_blk.nr_devices=0" LD_PRELOAD="$LIB" "$FIO" --name=none \
	--filename=/dev/ukern/nullb0 --size=1m --rw=read \
	--ioengine=libaio --thread --output-format=terse >"$DIR/out" 2>&1; then
	echo "fio without a device succeeded"; exit 1
fi
grep -q "No such file" "$DIR/out"
# A bad UKERN_CMDLINE stops fio before it starts, with status 1.
rc=0
UKERN_CMDLINE="aio.lookup=hash" LD_PRELOAD="$LIB" "$FIO" --name=bad --filename="$DIR/f" \
	--size=64k --rw=read --ioengine=libaio >"$DIR/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { echo "fio with a bad UKERN_CMDLINE: exit $rc"; exit 1; }
grep -q "aio.lookup" "$DIR/out"
