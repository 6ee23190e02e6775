// SPDX-License-Identifier: GPL-2.0-only
// Uses an installed ukern's kernel layers: an sbitmap get and put
// (ukern::blk), then a null_blk device (ukern::devices) written and read
// back through fs/aio (ukern::aio). Prints what it saw; exits 1 on a
// mismatch.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/sbitmap.h>

namespace {

constexpr size_t kBs = 4096;

int Fail(const char *what, long err) {
  printf("FAIL: %s: %ld\n", what, err);
  return 1;
}

// One request on `ctx`, reaped: its io_event.res.
long Rw(unsigned long ctx, int fd, int op, void *buf, long long off) {
  struct iocb cb;
  memset(&cb, 0, sizeof(cb));
  cb.aio_fildes = fd;
  cb.aio_lio_opcode = op;
  cb.aio_buf = reinterpret_cast<uintptr_t>(buf);
  cb.aio_nbytes = kBs;
  cb.aio_offset = off;
  cb.aio_data = 7;
  struct iocb *cbs[1] = {&cb};
  long r = ukern_io_submit(ctx, 1, cbs);
  if (r != 1) return r < 0 ? r : -1;
  struct io_event ev;
  struct timespec ts = {10, 0};
  r = ukern_io_getevents(ctx, 1, 1, &ev, &ts);
  if (r != 1 || ev.data != 7) return r < 0 ? r : -1;
  return static_cast<long>(ev.res);
}

}  // namespace

int main() {
  // Round-robin: the allocation hints start at 0, so the bits are 0 and 1.
  struct sbitmap sb;
  int err =
      sbitmap_init_node(&sb, 64, -1, GFP_KERNEL, NUMA_NO_NODE, true, true);
  if (err) return Fail("sbitmap_init_node", err);
  int a = sbitmap_get(&sb);
  int b = sbitmap_get(&sb);
  unsigned int held = sbitmap_weight(&sb);
  sbitmap_clear_bit(&sb, a);
  sbitmap_clear_bit(&sb, b);
  printf("sbitmap: got %d and %d, weight %u, %u after put\n", a, b, held,
         sbitmap_weight(&sb));
  sbitmap_free(&sb);
  if (a < 0 || b < 0 || a == b || held != 2) return Fail("sbitmap", held);

  err = null_blk_module_params("nr_devices=1 memory_backed=1 gb=1 irqmode=1");
  if (!err) err = null_init();
  if (err) return Fail("null_blk", err);
  int fd = uk::aio_open_blkdev("/dev/ukern/nullb0", O_RDWR | O_DIRECT);
  if (fd < 0) return Fail("aio_open_blkdev", fd);
  unsigned long ctx = 0;
  long r = ukern_io_setup(8, &ctx);
  if (r) return Fail("io_setup", r);
  auto *wbuf = static_cast<unsigned char *>(aligned_alloc(kBs, kBs));
  auto *rbuf = static_cast<unsigned char *>(aligned_alloc(kBs, kBs));
  for (size_t i = 0; i < kBs; i++)
    wbuf[i] = static_cast<unsigned char>(i * 13 + 1);
  memset(rbuf, 0, kBs);
  long w = Rw(ctx, fd, IOCB_CMD_PWRITE, wbuf, 3 * kBs);
  long rd = Rw(ctx, fd, IOCB_CMD_PREAD, rbuf, 3 * kBs);
  bool same = memcmp(wbuf, rbuf, kBs) == 0;
  printf("aio on nullb0: write %ld, read %ld, data %s\n", w, rd,
         same ? "matches" : "differs");
  free(wbuf);
  free(rbuf);
  if ((r = ukern_io_destroy(ctx))) return Fail("io_destroy", r);
  if ((r = uk::aio_close_blkdev(fd))) return Fail("aio_close_blkdev", r);
  null_exit();
  if (w != static_cast<long>(kBs) || rd != static_cast<long>(kBs) || !same)
    return Fail("aio", w);
  printf("ukern_consumer: ok\n");
  return 0;
}
