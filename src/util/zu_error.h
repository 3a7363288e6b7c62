/* One status type (zcclResult_t) for every layer. An error is described once,
 * where it starts (ZU_ERROR / ZU_RETURN_ERR_IF: message with file:line,
 * logged at WARN, kept for zcclGetLastError); callers pass it up with
 * ZU_CHECK or ZU_CHECK_GOTO, which add a file:line trail at INFO. */
#ifndef ZU_ERROR_H_
#define ZU_ERROR_H_

#include "zccl.h"
#include "zu_log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records "file:line: message" as this thread's last error, logs it at
 * WARN and returns code. */
zcclResult_t zu_error_set(zcclResult_t code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Static text for a result code (zcclGetErrorString). */
const char* zu_error_string(zcclResult_t code);

/* The enumerator's name, "zcclInvalidArgument", for log lines. */
const char* zu_error_name(zcclResult_t code);

/* This thread's last error message ("" when none). */
const char* zu_error_last(void);
/* Sequence number of this thread's last error (0: none); lets a caller tell
 * whether an error happened after some point. */
unsigned long zu_error_seq(void);
void zu_error_clear(void);

/* The file name without its directories, for messages. */
const char* zu_basename(const char* path);

#define ZU_ERROR(code, ...) zu_error_set((code), __FILE__, __LINE__, __VA_ARGS__)

#define ZU_RETURN_ERR_IF(cond, code, ...)                           \
  do {                                                              \
    if (cond) return zu_error_set((code), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#define ZU_CHECK(call)                                                        \
  do {                                                                        \
    zcclResult_t zu_res_ = (call);                                            \
    if (zu_res_ != zcclSuccess) {                                             \
      ZU_INFO(ZU_LOG_ALL, "%s:%d -> %d", zu_basename(__FILE__), __LINE__, (int)zu_res_); \
      return zu_res_;                                                         \
    }                                                                         \
  } while (0)

/* res receives the result; jumps to label (named at the call site) on error. */
#define ZU_CHECK_GOTO(call, res, label)                                       \
  do {                                                                        \
    (res) = (call);                                                           \
    if ((res) != zcclSuccess) {                                               \
      ZU_INFO(ZU_LOG_ALL, "%s:%d -> %d", zu_basename(__FILE__), __LINE__, (int)(res)); \
      goto label;                                                             \
    }                                                                         \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* ZU_ERROR_H_ */
