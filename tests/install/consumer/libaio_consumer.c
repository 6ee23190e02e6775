/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A libaio program linked against libukern_aio.so: io_setup, io_submit and
 * io_getevents on a host file (argv[1]) and on /dev/ukern/nullb0, the
 * null_blk device of UKERN_CMDLINE's null_blk.* parameters (the path exists
 * only inside ukern, so I/O there proves which library served it). Built with
 * <ukern/libaio.h>, or with the system <libaio.h> under
 * -DUKERN_SYSTEM_LIBAIO_H (the same ABI). Exits 1 on a mismatch.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef UKERN_SYSTEM_LIBAIO_H
#include <libaio.h>
#else
#include <ukern/libaio.h>
#endif

#define BS 4096

/* Writes a pattern at @off, reads it back: 0 when both went through whole. */
static int write_read(io_context_t ctx, const char *path, int flags,
                      long long off) {
  struct iocb cb, *cbs[1] = {&cb};
  struct io_event ev;
  struct timespec ts = {10, 0};
  unsigned char *wbuf, *rbuf;
  int fd, i, ret = 1;
  long w = -1, r = -1;

  fd = open(path, O_RDWR | flags, 0600);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  wbuf = aligned_alloc(BS, BS);
  rbuf = aligned_alloc(BS, BS);
  for (i = 0; i < BS; i++) wbuf[i] = (unsigned char)(i * 5 + 3);
  memset(rbuf, 0, BS);

  io_prep_pwrite(&cb, fd, wbuf, BS, off);
  if (io_submit(ctx, 1, cbs) == 1 && io_getevents(ctx, 1, 1, &ev, &ts) == 1 &&
      ev.obj == &cb)
    w = (long)ev.res;
  io_prep_pread(&cb, fd, rbuf, BS, off);
  if (io_submit(ctx, 1, cbs) == 1 && io_getevents(ctx, 1, 1, &ev, &ts) == 1 &&
      ev.obj == &cb)
    r = (long)ev.res;
  if (w == BS && r == BS && !memcmp(wbuf, rbuf, BS)) ret = 0;
  printf("libaio on %s: write %ld, read %ld, data %s\n", path, w, r,
         ret ? "differs" : "matches");
  free(wbuf);
  free(rbuf);
  close(fd);
  return ret;
}

int main(int argc, char **argv) {
  io_context_t ctx = 0;
  int err;

  if (argc != 2) {
    fprintf(stderr, "usage: %s HOST_FILE\n", argv[0]);
    return 2;
  }
  err = io_setup(8, &ctx);
  if (err) {
    printf("io_setup: %d\n", err);
    return 1;
  }
  err = write_read(ctx, argv[1], O_CREAT, 0);
  err |= write_read(ctx, "/dev/ukern/nullb0", O_DIRECT, 2 * BS);
  err |= io_destroy(ctx) != 0;
  if (!err) printf("libaio_consumer: ok\n");
  return err;
}
