/* Logging for every layer, NCCL_DEBUG-style: a level, a subsystem mask and
 * an optional file. The level and mask are checked before any formatting. */
#ifndef ZU_LOG_H_
#define ZU_LOG_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ZU_LOG_NONE = 0,
  ZU_LOG_VERSION = 1,
  ZU_LOG_WARN = 2,
  ZU_LOG_INFO = 3,
  ZU_LOG_TRACE = 4
} zu_log_level_t;

/* Subsystems (ZCCL_DEBUG_SUBSYS). ZU_LOG_ALL passes every mask. */
#define ZU_LOG_INIT      (1u << 0)
#define ZU_LOG_COLL      (1u << 1)
#define ZU_LOG_P2P       (1u << 2)
#define ZU_LOG_NET       (1u << 3)
#define ZU_LOG_BOOTSTRAP (1u << 4)
#define ZU_LOG_CODEC     (1u << 5)
#define ZU_LOG_DEVICE    (1u << 6)
#define ZU_LOG_TUNING    (1u << 7)
#define ZU_LOG_ENV       (1u << 8)
#define ZU_LOG_ALL       (~0u)

/* Current level and mask (initialised from the environment on first use). */
zu_log_level_t zu_log_level(void);
uint32_t zu_log_mask(void);
/* Reads ZCCL_DEBUG, ZCCL_DEBUG_FILE and ZCCL_DEBUG_SUBSYS again
 * (zcclResetDebugInit). */
void zu_log_reset(void);

void zu_log(zu_log_level_t level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The rank shown in this thread's log lines (-1: none). */
void zu_log_set_rank(int rank);

/* Parses a ZCCL_DEBUG_SUBSYS value ("INIT,NET", "^CODEC", "ALL") into a mask.
 * Returns 0 on success, -1 on an unknown name (mask untouched). */
int zu_log_parse_subsys(const char* text, uint32_t* mask);

#define ZU_LOG_ENABLED(level, subsys) \
  (zu_log_level() >= (level) && (zu_log_mask() & (subsys)))

#define ZU_LOG_AT(level, subsys, ...)                              \
  do {                                                             \
    if (ZU_LOG_ENABLED(level, subsys))                             \
      zu_log((level), (subsys), __FILE__, __LINE__, __VA_ARGS__);  \
  } while (0)

#define ZU_WARN(...) ZU_LOG_AT(ZU_LOG_WARN, ZU_LOG_ALL, __VA_ARGS__)
#define ZU_INFO(subsys, ...) ZU_LOG_AT(ZU_LOG_INFO, (subsys), __VA_ARGS__)
#define ZU_TRACE(subsys, ...) ZU_LOG_AT(ZU_LOG_TRACE, (subsys), __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* ZU_LOG_H_ */
