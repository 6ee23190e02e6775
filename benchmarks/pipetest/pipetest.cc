// SPDX-License-Identifier: GPL-2.0-only
//
// pipetest, the shape of Ben LaHaise's AIO pipe test (from Davide
// Libenzi's epoll pipe test) that "AIO workqueue context switch reduction"
// (2004) was measured with: N non-blocking pipe pairs, T tokens of
// {generation, destination, thread}; every pipe has an AIO read
// outstanding, and each completed read forwards its token, generation + 1,
// to another pipe until the token is <generations> old. One process, one
// thread (or --reapers R threads that share the context).
//
//   ukern_bench_pipetest [--state before|after|running|all] [--no-stall-fix]
//                        [--reapers R] <pipes> <threads> <generations>
//
// Runs on the retry-based 2.6 engine (aio.engine=v26) over ukern pipes,
// and prints for each state passes/s and context switches: process-wide
// voluntary + involuntary (getrusage) and the aio_wq worker's wake-ups
// (aio_kick_handler runs). With --state all (the default) the three states
// run side by side and two ratio lines end the output.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_v26.h>
#include <uk/linux/pipe_fs_i.h>

namespace {

namespace a26 = uk::aio26;

struct Token {
  unsigned generation;
  unsigned destination;
  unsigned thread;
};

struct Result {
  double seconds = 0;
  unsigned long passes = 0;
  unsigned long cs = 0;      // process-wide nvcsw + nivcsw
  unsigned long worker = 0;  // aio_kick_handler runs
  unsigned long queued = 0;  // queue_work / queue_delayed_work that queued
};

double Now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

unsigned long ContextSwitches() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (unsigned long)(ru.ru_nvcsw + ru.ru_nivcsw);
}

[[noreturn]] void Die(const char *what, long err) {
  fprintf(stderr, "pipetest: %s: %s\n", what, strerror((int)-err));
  exit(1);
}

class PipeTest {
 public:
  PipeTest(unsigned pipes, unsigned tokens, unsigned generations)
      : n_(pipes),
        t_(tokens),
        g_(generations),
        rfd_(pipes),
        wfd_(pipes),
        buf_(pipes),
        cbs_(pipes) {}

  Result Run(unsigned reapers) {
    long ret;
    ctx_ = 0;
    if ((ret = ukern_io_setup(2 * n_ + 16, &ctx_)) < 0) Die("io_setup", ret);
    for (unsigned i = 0; i < n_; i++) {
      int fds[2];
      if ((ret = a26::do_pipe2(fds, O_NONBLOCK)) < 0) Die("pipe2", ret);
      rfd_[i] = fds[0];
      wfd_[i] = fds[1];
      Submit(i);
    }
    done_ = 0;
    passes_ = 0;

    Result r;
    unsigned long cs0 = ContextSwitches();
    a26::Stats s0 = a26::stats();
    double t0 = Now();
    for (unsigned k = 0; k < t_; k++) {
      Token tok = {0, k % n_, k};
      Write(tok);
    }
    std::vector<std::thread> extra;
    for (unsigned k = 1; k < reapers; k++)
      extra.emplace_back([this] { Reap(); });
    Reap();
    for (auto &th : extra) th.join();
    r.seconds = Now() - t0;
    a26::Stats s1 = a26::stats();
    r.cs = ContextSwitches() - cs0;
    r.worker = s1.kick_handler_runs - s0.kick_handler_runs;
    r.queued = s1.queue_work_calls - s0.queue_work_calls;
    r.passes = passes_.load();

    if ((ret = ukern_io_destroy(ctx_)) < 0) Die("io_destroy", ret);
    for (unsigned i = 0; i < n_; i++) {
      a26::sys_close(rfd_[i]);
      a26::sys_close(wfd_[i]);
    }
    return r;
  }

 private:
  void Submit(unsigned i) {
    struct iocb *cb = &cbs_[i];
    memset(cb, 0, sizeof(*cb));
    cb->aio_lio_opcode = IOCB_CMD_PREAD;
    cb->aio_fildes = (uint32_t)rfd_[i];
    cb->aio_buf = (uint64_t)(uintptr_t)&buf_[i];
    cb->aio_nbytes = sizeof(Token);
    cb->aio_data = i;
    struct iocb *cbs[1] = {cb};
    long ret = ukern_io_submit(ctx_, 1, cbs);
    if (ret != 1) Die("io_submit", ret);
  }

  void Write(const Token &tok) {
    ssize_t ret = a26::sys_write(wfd_[tok.destination], &tok, sizeof(tok));
    if (ret != (ssize_t)sizeof(tok)) Die("write", ret < 0 ? ret : -EIO);
  }

  void Reap() {
    std::vector<struct io_event> ev(n_);
    struct timespec ts = {0, 10 * 1000 * 1000};
    while (done_.load(std::memory_order_relaxed) < t_) {
      long got = ukern_io_getevents(ctx_, 1, (long)n_, ev.data(), &ts);
      if (got < 0) Die("io_getevents", got);
      for (long e = 0; e < got; e++) {
        unsigned i = (unsigned)ev[e].data;
        if (ev[e].res != (long long)sizeof(Token)) Die("short read", -EIO);
        Token tok = buf_[i];
        Submit(i);
        passes_.fetch_add(1, std::memory_order_relaxed);
        if (++tok.generation >= g_) {
          done_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        // the next pipe: a fixed walk that spreads tokens over all pipes
        tok.destination =
            (i * 7 + tok.generation * 13 + tok.thread * 31 + 1) % n_;
        Write(tok);
      }
    }
  }

  unsigned n_, t_, g_;
  unsigned long ctx_ = 0;
  std::vector<int> rfd_, wfd_;
  std::vector<Token> buf_;
  std::vector<struct iocb> cbs_;
  std::atomic<unsigned> done_{0};
  std::atomic<unsigned long> passes_{0};
};

const char *StateName(a26::RetryMode m) {
  switch (m) {
    case a26::RetryMode::kBefore:
      return "before";
    case a26::RetryMode::kAfter:
      return "after";
    case a26::RetryMode::kRunning:
      return "after+running";
  }
  return "?";
}

void Usage() {
  fprintf(stderr,
          "usage: ukern_bench_pipetest [--state before|after|running|all] "
          "[--no-stall-fix] [--reapers R] <pipes> <threads> <generations>\n");
  exit(2);
}

}  // namespace

int main(int argc, char **argv) {
  std::string state = "all";
  bool stall_fix = true;
  unsigned reapers = 1;
  std::vector<unsigned> nums;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--state" && i + 1 < argc) {
      state = argv[++i];
    } else if (a == "--no-stall-fix") {
      stall_fix = false;
    } else if (a == "--reapers" && i + 1 < argc) {
      reapers = (unsigned)atoi(argv[++i]);
    } else if (!a.empty() && a[0] != '-') {
      nums.push_back((unsigned)strtoul(a.c_str(), nullptr, 10));
    } else {
      Usage();
    }
  }
  if (nums.size() != 3 || !nums[0] || !nums[1] || !nums[2] || !reapers) Usage();

  std::vector<a26::RetryMode> modes;
  if (state == "before")
    modes = {a26::RetryMode::kBefore};
  else if (state == "after")
    modes = {a26::RetryMode::kAfter};
  else if (state == "running")
    modes = {a26::RetryMode::kRunning};
  else if (state == "all")
    modes = {a26::RetryMode::kBefore, a26::RetryMode::kAfter,
             a26::RetryMode::kRunning};
  else
    Usage();

  a26::aio_engine = a26::Engine::kV26;
  a26::aio_stall_fix = stall_fix;
  printf(
      "pipetest: %u pipes, %u tokens, %u generations, %u reaper(s), stall fix "
      "%s\n",
      nums[0], nums[1], nums[2], reapers, stall_fix ? "on" : "off");
  printf("%-14s %12s %12s %10s %12s %10s\n", "state", "passes/s", "cs/s",
         "cs/pass", "worker/s", "queued/s");
  std::vector<Result> res;
  for (auto m : modes) {
    a26::aio_retry_mode = m;
    PipeTest t(nums[0], nums[1], nums[2]);
    Result r = t.Run(reapers);
    res.push_back(r);
    printf("%-14s %12.0f %12.0f %10.4f %12.0f %10.0f\n", StateName(m),
           (double)r.passes / r.seconds, (double)r.cs / r.seconds,
           (double)r.cs / (double)r.passes, (double)r.worker / r.seconds,
           (double)r.queued / r.seconds);
  }
  if (res.size() == 3) {
    auto per_pass = [](const Result &r) {
      return (double)r.cs / (double)r.passes;
    };
    auto rate = [](const Result &r) { return (double)r.passes / r.seconds; };
    printf("passes/s running/after: %.3f\n", rate(res[2]) / rate(res[1]));
    printf("cs per pass after/before: %.5f\n",
           per_pass(res[1]) / per_pass(res[0]));
    printf("passes/s after/before: %.3f\n", rate(res[1]) / rate(res[0]));
  }
  return 0;
}
