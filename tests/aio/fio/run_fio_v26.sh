#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Runs unmodified fio (ioengine=libaio) on the retry-based 2.6 engine:
# libukern_aio.so preloaded with UKERN_CMDLINE=aio.engine=v26. Writes
# --size at --iodepth 32 and verifies it (crc32c); fio must exit 0 and its
# JSON report must show no error and size/bs writes and as many reads.
# The job runs as a thread (--thread), as in run_fio.sh.
# Usage: run_fio_v26.sh LIB FIO MODE   (MODE: file, file-direct, nullb)
LIB="$1"
FIO="$2"
MODE="$3"
[ -x "$FIO" ] || { echo "fio not found: skipped"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
DIR=$(mktemp -d /tmp/ukern_fio_v26.XXXXXX) || exit 1
trap 'rm -rf "$DIR"' EXIT
set -e
CMDLINE="aio.engine=v26"
case "$MODE" in
file) SIZE=1m; TARGET="--filename=$DIR/f" ;;
file-direct) SIZE=1m; TARGET="--filename=$DIR/f --direct=1" ;;
nullb)
	# The path does not exist on the host: only null_blk serves it.
	[ ! -e /dev/ukern/nullb0 ]
	SIZE=8m
	TARGET="--filename=/dev/ukern/nullb0 --direct=1"
	CMDLINE="$CMDLINE null_blk.irqmode=1 null_blk.hw_queue_depth=32 null_blk.memory_backed=1 null_blk.gb=1"
	;;
*) echo "unknown mode $MODE"; exit 2 ;;
esac
# shellcheck disable=SC2086
UKERN_CMDLINE="$CMDLINE" LD_PRELOAD="$LIB" "$FIO" --name=v26 $TARGET --size=$SIZE \
	--bs=4k --rw=randwrite --ioengine=libaio --iodepth=32 --thread --verify=crc32c \
	--output-format=json >"$DIR/out" 2>"$DIR/err"
python3 - "$DIR/out" "$SIZE" "$MODE" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
report = json.loads(text[text.index("{"):])
ios = {"1m": 256, "8m": 2048}[sys.argv[2]]
job = report["jobs"][0]
got = (job["error"], job["write"]["total_ios"], job["read"]["total_ios"])
print("fio v26 %s: error=%d writes=%d reads=%d" % ((sys.argv[3],) + got))
sys.exit(0 if got == (0, ios, ios) else 1)
PY
