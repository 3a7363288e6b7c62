#include "zu_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char zu_last_msg[512];
static _Thread_local unsigned long zu_last_seq;

const char* zu_error_string(zcclResult_t code) {
  switch (code) {
    case zcclSuccess: return "no error";
    case zcclUnhandledCudaError: return "unhandled cuda error (run with ZCCL_DEBUG=INFO for details)";
    case zcclSystemError: return "unhandled system error (run with ZCCL_DEBUG=INFO for details)";
    case zcclInternalError: return "internal error - please report this issue to the zccl developers";
    case zcclInvalidArgument: return "invalid argument (run with ZCCL_DEBUG=WARN for details)";
    case zcclInvalidUsage: return "invalid usage (run with ZCCL_DEBUG=WARN for details)";
    case zcclRemoteError: return "remote process exited or there was a network error";
    case zcclInProgress: return "zccl operation in progress";
    default: return "unknown result code";
  }
}

const char* zu_error_name(zcclResult_t code) {
  static const char* names[zcclNumResults] = {
      "zcclSuccess",       "zcclUnhandledCudaError", "zcclSystemError", "zcclInternalError",
      "zcclInvalidArgument", "zcclInvalidUsage",     "zcclRemoteError", "zcclInProgress"};
  return (code >= 0 && code < zcclNumResults) ? names[code] : "unknown";
}

const char* zu_basename(const char* path) {
  const char* s = strrchr(path, '/');
  return s ? s + 1 : path;
}

zcclResult_t zu_error_set(zcclResult_t code, const char* file, int line, const char* fmt, ...) {
  int n = snprintf(zu_last_msg, sizeof zu_last_msg, "%s:%d: ", zu_basename(file), line);
  if (n > 0 && (size_t)n < sizeof zu_last_msg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(zu_last_msg + n, sizeof zu_last_msg - n, fmt, ap);
    va_end(ap);
  }
  zu_last_seq++;
  if (ZU_LOG_ENABLED(ZU_LOG_WARN, ZU_LOG_ALL))
    zu_log(ZU_LOG_WARN, ZU_LOG_ALL, file, line, "%s (%s)", zu_last_msg, zu_error_name(code));
  return code;
}

const char* zu_error_last(void) { return zu_last_msg; }
unsigned long zu_error_seq(void) { return zu_last_seq; }
void zu_error_clear(void) { zu_last_msg[0] = '\0'; }
