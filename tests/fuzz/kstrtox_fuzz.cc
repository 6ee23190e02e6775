// SPDX-License-Identifier: GPL-2.0-only
// lib/kstrtox.c against a model built on the C library's strtoull(): the
// kernel's rules (an optional '+', or '-' for the signed forms; base 0
// picks 16 for "0x" before a hex digit, 8 for a leading 0, else 10; "0x"
// is skipped in base 16; at least one digit; one '\n' may end the string;
// an overflow is -ERANGE even before trailing garbage, anything else bad
// -EINVAL; the narrow forms give -ERANGE outside their type). Input: byte 0
// picks the function, byte 1 the base, the rest is the string (up to its
// first NUL).
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <uk/linux/kstrtox.h>

#include "fuzz_common.h"

namespace {

constexpr unsigned kBases[] = {0, 10, 16, 8, 2, 0, 10, 16,
                               3, 4,  5,  6, 7, 9, 11, 15};

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// The model of _kstrtoull(): the string after any sign.
int ModelUll(const char *s, unsigned base, unsigned long long *res) {
  if (base == 0) {
    if (s[0] == '0') {
      base = ((s[1] == 'x' || s[1] == 'X') && DigitValue(s[2]) < 16) ? 16 : 8;
    } else {
      base = 10;
    }
  }
  if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  size_t n = 0;
  while (s[n] && DigitValue(s[n]) < static_cast<int>(base)) n++;
  if (n == 0) return -EINVAL;
  // strtoull() would take white space, a sign or "0x" first: the span
  // holds digits only, so it reads exactly them.
  std::string digits(s, n);
  char *end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(digits.c_str(), &end, static_cast<int>(base));
  if (end != digits.c_str() + n) {
    fprintf(stderr, "model: strtoull stopped early in \"%s\"\n",
            digits.c_str());
    abort();
  }
  if (errno == ERANGE) return -ERANGE;
  s += n;
  if (*s == '\n') s++;
  if (*s) return -EINVAL;
  *res = v;
  return 0;
}

int ModelKstrtoull(const char *s, unsigned base, unsigned long long *res) {
  if (s[0] == '+') s++;
  return ModelUll(s, base, res);
}

int ModelKstrtoll(const char *s, unsigned base, long long *res) {
  unsigned long long v;
  int err;

  if (s[0] == '-') {
    err = ModelUll(s + 1, base, &v);
    if (err) return err;
    if (v > (1ULL << 63)) return -ERANGE;
    *res = v == (1ULL << 63) ? INT64_MIN : -static_cast<long long>(v);
    return 0;
  }
  err = ModelKstrtoull(s, base, &v);
  if (err) return err;
  if (v > static_cast<unsigned long long>(INT64_MAX)) return -ERANGE;
  *res = static_cast<long long>(v);
  return 0;
}

// An unsigned form of @bits bits.
int ModelUnsigned(const char *s, unsigned base, int bits,
                  unsigned long long *res) {
  unsigned long long v;
  int err = ModelKstrtoull(s, base, &v);
  if (err) return err;
  if (bits < 64 && v >> bits) return -ERANGE;
  *res = v;
  return 0;
}

int ModelSigned(const char *s, unsigned base, int bits, long long *res) {
  long long v;
  int err = ModelKstrtoll(s, base, &v);
  if (err) return err;
  if (bits < 64) {
    long long lo = -(1LL << (bits - 1)), hi = (1LL << (bits - 1)) - 1;
    if (v < lo || v > hi) return -ERANGE;
  }
  *res = v;
  return 0;
}

int ModelKstrtobool(const char *s, bool *res) {
  switch (s[0]) {
    case 'y':
    case 'Y':
    case 't':
    case 'T':
    case '1':
      *res = true;
      return 0;
    case 'n':
    case 'N':
    case 'f':
    case 'F':
    case '0':
      *res = false;
      return 0;
    case 'o':
    case 'O':
      if (s[1] == 'n' || s[1] == 'N') {
        *res = true;
        return 0;
      }
      if (s[1] == 'f' || s[1] == 'F') {
        *res = false;
        return 0;
      }
      return -EINVAL;
    default:
      return -EINVAL;
  }
}

[[noreturn]] void Mismatch(const char *fn, const char *s, unsigned base,
                           int got, int want, long long gv, long long wv) {
  fprintf(stderr,
          "kstrtox: %s(\"%s\", %u): returned %d (value %lld), the model %d "
          "(value %lld)\n",
          fn, s, base, got, gv, want, wv);
  abort();
}

template <typename T, typename Fn>
void CheckUnsigned(const char *name, Fn fn, int bits, const char *s,
                   unsigned base) {
  T v = 0;
  unsigned long long want = 0;
  int got = fn(s, base, &v);
  int exp = ModelUnsigned(s, base, bits, &want);
  if (got != exp || (got == 0 && static_cast<unsigned long long>(v) != want))
    Mismatch(name, s, base, got, exp, static_cast<long long>(v),
             static_cast<long long>(want));
}

template <typename T, typename Fn>
void CheckSigned(const char *name, Fn fn, int bits, const char *s,
                 unsigned base) {
  T v = 0;
  long long want = 0;
  int got = fn(s, base, &v);
  int exp = ModelSigned(s, base, bits, &want);
  if (got != exp || (got == 0 && static_cast<long long>(v) != want))
    Mismatch(name, s, base, got, exp, static_cast<long long>(v), want);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  unsigned fn = data[0] % 12;
  unsigned base = kBases[data[1] % 16];
  std::string s(reinterpret_cast<const char *>(data + 2), size - 2);
  const char *str = s.c_str();  // up to the first NUL, as the kernel reads it

  switch (fn) {
    case 0:
      CheckUnsigned<unsigned long long>("kstrtoull", kstrtoull, 64, str, base);
      break;
    case 1:
      CheckSigned<long long>("kstrtoll", kstrtoll, 64, str, base);
      break;
    case 2:
      CheckUnsigned<unsigned long>("kstrtoul", kstrtoul, 64, str, base);
      break;
    case 3:
      CheckSigned<long>("kstrtol", kstrtol, 64, str, base);
      break;
    case 4:
      CheckUnsigned<unsigned int>("kstrtouint", kstrtouint, 32, str, base);
      break;
    case 5:
      CheckSigned<int>("kstrtoint", kstrtoint, 32, str, base);
      break;
    case 6:
      CheckUnsigned<u16>("kstrtou16", kstrtou16, 16, str, base);
      break;
    case 7:
      CheckSigned<s16>("kstrtos16", kstrtos16, 16, str, base);
      break;
    case 8:
      CheckUnsigned<u8>("kstrtou8", kstrtou8, 8, str, base);
      break;
    case 9:
      CheckSigned<s8>("kstrtos8", kstrtos8, 8, str, base);
      break;
    case 10:
      CheckUnsigned<unsigned long>("_kstrtoul", _kstrtoul, 64, str, base);
      break;
    default: {
      bool v = false, want = false;
      int got = kstrtobool(str, &v);
      int exp = ModelKstrtobool(str, &want);
      if (got != exp || (got == 0 && v != want))
        Mismatch("kstrtobool", str, 0, got, exp, v, want);
      break;
    }
  }
  uk::fuzz::LeakSanitizerDue();
  return 0;
}
