/* Fuzz target: the text parsers fed from the environment and tools'
 * flags. The first byte picks the parser; the rest is the text. Any input
 * must give success or zcclInvalidArgument, never a crash, and what parses
 * must format and parse back to the same setting. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zccl.h"
#include "zu_log.h"
#include "zu_param.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  char* text = malloc(size);
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  switch (data[0] % 3) {
    case 0: {
      zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
      zcclResult_t r = zcclCompressionFromString(text, &c);
      if (r != zcclSuccess && r != zcclInvalidArgument) abort();
      if (r == zcclSuccess) {
        char buf[256];
        if (zcclCompressionToString(&c, buf, sizeof buf) != zcclSuccess) abort();
        zcclCompression_t d = ZCCL_COMPRESSION_INITIALIZER;
        if (zcclCompressionFromString(buf, &d) != zcclSuccess) abort();
        if (d.codec != c.codec || d.mode != c.mode || d.eb != c.eb || d.hasFill != c.hasFill ||
            (c.hasFill && d.fillValue != c.fillValue) || d.minBytes != c.minBytes)
          abort();
      }
      break;
    }
    case 1: {
      uint32_t mask = 0;
      (void)zu_log_parse_subsys(text, &mask);
      break;
    }
    default: {
      int64_t v;
      (void)zu_parse_size(text, &v);
      break;
    }
  }
  free(text);
  return 0;
}
