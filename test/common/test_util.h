/* Minimal assertions for plain-C tests driven by CTest: each failed check
 * prints file:line and what differed; TEST_DONE() returns 1 if any failed. */
#ifndef ZCCL_TEST_UTIL_H_
#define ZCCL_TEST_UTIL_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zccl.h"

/* CTest's SKIP_RETURN_CODE for tests that need absent hardware. */
#define TEST_SKIP_CODE 77

static int test_failures = 0;
static int test_checks = 0;

#define CHECK(cond)                                                      \
  do {                                                                   \
    test_checks++;                                                       \
    if (!(cond)) {                                                       \
      test_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                    \
  } while (0)

/* The call returns `expected` (a zcclResult_t). */
#define CHECK_RES(call, expected)                                                      \
  do {                                                                                 \
    test_checks++;                                                                     \
    zcclResult_t r_ = (call);                                                          \
    if (r_ != (expected)) {                                                            \
      test_failures++;                                                                 \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d; last error: %s\n", __FILE__, \
              __LINE__, #call, (int)r_, zcclGetErrorString(r_), (int)(expected),       \
              zcclGetLastError(NULL));                                                 \
    }                                                                                  \
  } while (0)

/* The thread's last error message contains `needle`. */
#define CHECK_LAST_ERROR_HAS(needle)                                                   \
  do {                                                                                 \
    test_checks++;                                                                     \
    const char* m_ = zcclGetLastError(NULL);                                           \
    if (strstr(m_, (needle)) == NULL) {                                                \
      test_failures++;                                                                 \
      fprintf(stderr, "%s:%d: last error \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, m_, (needle)); \
    }                                                                                  \
  } while (0)

/* A buffer of at least bytes in *buf (capacity *cap), grown as needed and
 * kept from call to call: a test's large per-case buffers, which malloc
 * would map afresh every case (page faults that cost more than the calls
 * under test on a virtual machine). Exits when memory runs out. */
static inline void* test_kept(void** buf, size_t* cap, size_t bytes) {
  if (*buf == NULL || bytes > *cap) {
    free(*buf);
    *buf = malloc(bytes ? bytes : 1);
    *cap = bytes;
    if (*buf == NULL) {
      fprintf(stderr, "out of memory for a kept buffer of %zu bytes\n", bytes);
      exit(1);
    }
  }
  return *buf;
}

/* xorshift64: reproducible test inputs from a seed (nothing secret). */
static inline uint64_t test_xorshift(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

#define TEST_DONE()                                                              \
  do {                                                                           \
    printf("%d checks, %d failed\n", test_checks, test_failures);               \
    return test_failures ? 1 : 0;                                                \
  } while (0)

#endif /* ZCCL_TEST_UTIL_H_ */
