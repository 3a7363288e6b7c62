/* The compression setting: ZCCL_COMPRESSION syntax (good and malformed),
 * round trips through the text form, which source wins at comm init, and
 * zcclCompressRoundtrip (one rank's compression error).
 * Run without arguments for the parser; with "env-good", "env-bad" or
 * "env-config-wins" CTest sets ZCCL_COMPRESSION for the process. */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

static zcclUniqueId zero_id;

/* Field by field: the struct has padding that copies need not preserve. */
static int same_compression(const zcclCompression_t* a, const zcclCompression_t* b) {
  return a->codec == b->codec && a->mode == b->mode && a->eb == b->eb && a->hasFill == b->hasFill &&
         (!a->hasFill || a->fillValue == b->fillValue) && a->minBytes == b->minBytes;
}

static void test_parse_good(void) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  CHECK(c.codec == zcclCodecNone && c.mode == zcclErrorRel && c.eb == 1e-3 && !c.hasFill);

  CHECK_RES(zcclCompressionFromString("codec=hz,mode=rel,eb=1e-3", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecHz && c.mode == zcclErrorRel && c.eb == 1e-3);
  CHECK_RES(zcclCompressionFromString(" codec = SZP , mode=abs , eb=0.5 ,min_bytes=1M", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecSzp && c.mode == zcclErrorAbs && c.eb == 0.5 && c.minBytes == (1u << 20));
  CHECK_RES(zcclCompressionFromString("fill=-1e34", &c), zcclSuccess); /* other keys kept */
  CHECK(c.codec == zcclCodecSzp && c.hasFill && c.fillValue == -1e34);
  CHECK_RES(zcclCompressionFromString("fill=none", &c), zcclSuccess);
  CHECK(!c.hasFill);
  CHECK_RES(zcclCompressionFromString("zfp,eb=1e-4", &c), zcclSuccess); /* bare codec first */
  CHECK(c.codec == zcclCodecZfp && c.eb == 1e-4);
  CHECK_RES(zcclCompressionFromString("mode=target", &c), zcclSuccess);
  CHECK(c.mode == zcclErrorTargetAbs);
  CHECK_RES(zcclCompressionFromString("mode=target-rel", &c), zcclSuccess);
  CHECK(c.mode == zcclErrorTargetRel);
  CHECK_RES(zcclCompressionFromString("codec=rle,min_bytes=64K", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecRle && c.minBytes == 65536);
  CHECK_RES(zcclCompressionFromString("codec=auto", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecAuto);
  CHECK_RES(zcclCompressionFromString("off", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecNone);
  c.codec = zcclCodecHz;
  CHECK_RES(zcclCompressionFromString("", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecNone);
  CHECK_RES(zcclCompressionFromString("none", &c), zcclSuccess);
  CHECK(c.codec == zcclCodecNone);
  zcclConfig_t cfg = ZCCL_CONFIG_INITIALIZER; /* codec "not set" */
  CHECK_RES(zcclCompressionFromString("eb=1e-4", &cfg.compression), zcclSuccess);
  CHECK(cfg.compression.codec == zcclCodecNone && cfg.compression.eb == 1e-4);
}

static void test_parse_malformed(void) {
  static const struct {
    const char* text;
    const char* msg;
  } bad[] = {
      {"codec=lz4", "unknown codec 'lz4'"},
      {"codec=hz,eb=abc", "eb='abc' is not a number"},
      {"codec=hz,eb=1e-3x", "eb='1e-3x'"},
      {"codec=hz,eb=0", "must be finite and > 0"},
      {"codec=hz,eb=-1e-3", "must be finite and > 0"},
      {"codec=hz,eb=inf", "must be finite"},
      {"codec=hz,eb=nan", "must be finite"},
      {"codec=hz,eb=1e999", "eb='1e999' is not a number"},
      {"codec=hz,mode=relative", "unknown mode 'relative'"},
      {"codec=hz,speed=fast", "unknown key 'speed'"},
      {"codec=", "codec has no value"},
      {"codec=hz,,eb=1", "'' is not key=value"},
      {"eb=1e-3,hz", "'hz' is not key=value"},
      {"codec=hz,fill=land", "fill='land'"},
      {"codec=hz,fill=inf", "fill value must be finite"},
      {"codec=hz,min_bytes=-5", "min_bytes='-5'"},
      {"codec=hz,min_bytes=12Q", "min_bytes='12Q'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
    zcclCompression_t before = c;
    CHECK_RES(zcclCompressionFromString(bad[i].text, &c), zcclInvalidArgument);
    CHECK_LAST_ERROR_HAS(bad[i].msg);
    CHECK(same_compression(&c, &before)); /* untouched on error */
  }
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  CHECK_RES(zcclCompressionFromString(NULL, &c), zcclInvalidArgument);
  CHECK_RES(zcclCompressionFromString("hz", NULL), zcclInvalidArgument);
  char longtext[600];
  memset(longtext, 'a', sizeof longtext - 1);
  longtext[sizeof longtext - 1] = '\0';
  CHECK_RES(zcclCompressionFromString(longtext, &c), zcclInvalidArgument);
}

static void test_round_trip(void) {
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  c.codec = zcclCodecHz;
  c.mode = zcclErrorTargetRel;
  c.eb = 0.1; /* not exact in binary: %.17g must round-trip it */
  c.hasFill = 1;
  c.fillValue = -9.99e33;
  c.minBytes = 12345;
  char text[200];
  CHECK_RES(zcclCompressionToString(&c, text, sizeof text), zcclSuccess);
  zcclCompression_t d = ZCCL_COMPRESSION_INITIALIZER;
  CHECK_RES(zcclCompressionFromString(text, &d), zcclSuccess);
  CHECK(same_compression(&c, &d));
  CHECK_RES(zcclCompressionToString(&c, text, 10), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("too small");
  c.mode = 9;
  CHECK_RES(zcclCompressionToString(&c, text, sizeof text), zcclInvalidArgument);
}

static void test_comm_setting(void) {
  zcclComm_t comm;
  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  CHECK(c.codec == zcclCodecNone); /* default: off */
  zcclCompression_t want = ZCCL_COMPRESSION_INITIALIZER;
  want.codec = zcclCodecSzp;
  want.eb = 1e-5;
  CHECK_RES(zcclCommSetCompression(comm, &want), zcclSuccess);
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  CHECK(c.codec == zcclCodecSzp && c.eb == 1e-5);
  want.eb = NAN;
  CHECK_RES(zcclCommSetCompression(comm, &want), zcclInvalidArgument);
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  CHECK(c.eb == 1e-5); /* the bad setting was not applied */
  CHECK_RES(zcclCommSetCompression(comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommGetCompression(comm, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCommSetCompression(NULL, &want), zcclInvalidArgument);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
}

/* CTest: ZCCL_COMPRESSION=codec=hz,mode=abs,eb=2.5e-4,fill=-1e34 */
static void test_env_good(void) {
  zcclComm_t comm, sub;
  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  CHECK(c.codec == zcclCodecHz && c.mode == zcclErrorAbs && c.eb == 2.5e-4 && c.hasFill &&
        c.fillValue == -1e34);
  /* A split inherits its parent's setting. */
  c.eb = 1e-2;
  CHECK_RES(zcclCommSetCompression(comm, &c), zcclSuccess);
  CHECK_RES(zcclCommSplit(comm, 0, 0, &sub, NULL), zcclSuccess);
  zcclCompression_t s;
  CHECK_RES(zcclCommGetCompression(sub, &s), zcclSuccess);
  CHECK(s.eb == 1e-2 && s.codec == zcclCodecHz);
  CHECK_RES(zcclCommDestroy(sub), zcclSuccess);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
}

/* CTest: ZCCL_COMPRESSION=codec=hz,eb=abc */
static void test_env_bad(void) {
  zcclComm_t comm = (zcclComm_t)(void*)&comm;
  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("ZCCL_COMPRESSION is malformed");
  CHECK_LAST_ERROR_HAS("eb='abc'");
  CHECK(comm == NULL);
  /* An explicit config does not read the environment. */
  zcclConfig_t cfg = ZCCL_CONFIG_INITIALIZER;
  cfg.compression.codec = zcclCodecSzp;
  CHECK_RES(zcclCommInitRankConfig(&comm, 1, zero_id, 0, &cfg), zcclSuccess);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
}

/* CTest: ZCCL_COMPRESSION=codec=hz,eb=1e-3; the config says zfp. */
static void test_env_config_wins(void) {
  zcclComm_t comm;
  zcclConfig_t cfg = ZCCL_CONFIG_INITIALIZER;
  cfg.compression.codec = zcclCodecZfp;
  cfg.compression.mode = zcclErrorAbs;
  cfg.compression.eb = 0.25;
  CHECK_RES(zcclCommInitRankConfig(&comm, 1, zero_id, 0, &cfg), zcclSuccess);
  zcclCompression_t c;
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  CHECK(c.codec == zcclCodecZfp && c.mode == zcclErrorAbs && c.eb == 0.25);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
  /* Without config the environment applies. */
  CHECK_RES(zcclCommInitRank(&comm, 1, zero_id, 0), zcclSuccess);
  CHECK_RES(zcclCommGetCompression(comm, &c), zcclSuccess);
  CHECK(c.codec == zcclCodecHz && c.eb == 1e-3);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);
}

/* zcclCompressRoundtrip: every element within the bound it reports, what
 * rel resolves to, lossless codecs copy, bad arguments refused. */
static void test_compress_roundtrip(void) {
  enum { n = 10007 };
  static float x[n], y[n];
  static double xd[n], yd[n];
  for (int i = 0; i < n; i++) xd[i] = x[i] = (float)(sin(i * 0.01) * 40.0 + (i % 7) * 0.125);
  x[5] = NAN, x[6] = INFINITY, xd[5] = NAN;
  zcclCompression_t c = ZCCL_COMPRESSION_INITIALIZER;
  const int codecs[] = {zcclCodecHz, zcclCodecSzp};
  for (int k = 0; k < 2; k++)
    for (int mode = zcclErrorAbs; mode <= zcclErrorRel; mode++) {
      c.codec = codecs[k], c.mode = mode, c.eb = mode == zcclErrorAbs ? 1e-2 : 1e-4;
      double eb = 0, ebd = 0;
      CHECK_RES(zcclCompressRoundtrip(&c, x, y, n, zcclFloat32, &eb), zcclSuccess);
      CHECK_RES(zcclCompressRoundtrip(&c, xd, yd, n, zcclFloat64, &ebd), zcclSuccess);
      /* rel: eb x (max - min) of the finite values, here 80.75 */
      double want = mode == zcclErrorAbs ? 1e-2 : 1e-4 * (40.0 + 0.75 - (-40.0));
      CHECK(fabs(eb - want) < 1e-3 * want && fabs(ebd - want) < 1e-3 * want);
      int bad = 0, same = 0;
      for (int i = 0; i < n; i++) {
        if (i == 5 || i == 6) continue;
        bad += !(fabs((double)y[i] - x[i]) <= eb) + !(fabs(yd[i] - xd[i]) <= ebd);
        same += y[i] == x[i];
      }
      CHECK(bad == 0);
      CHECK(same < n / 2); /* it did quantize */
      CHECK(isnan(y[5]) && y[6] == INFINITY && isnan(yd[5]));
    }
  /* in place gives the same values */
  static float z[n];
  memcpy(z, x, sizeof z);
  c.codec = zcclCodecHz, c.mode = zcclErrorAbs, c.eb = 1e-3;
  CHECK_RES(zcclCompressRoundtrip(&c, x, y, n, zcclFloat32, NULL), zcclSuccess);
  CHECK_RES(zcclCompressRoundtrip(&c, z, z, n, zcclFloat32, NULL), zcclSuccess);
  CHECK(memcmp(y, z, sizeof z) == 0);
  /* lossless: a copy, bound 0 */
  double eb = 1;
  int ints[4] = {1, 2, 3, 4}, iout[4] = {0};
  c.codec = zcclCodecRle;
  CHECK_RES(zcclCompressRoundtrip(&c, ints, iout, 4, zcclInt32, &eb), zcclSuccess);
  CHECK(eb == 0 && memcmp(ints, iout, sizeof ints) == 0);
  c.codec = zcclCodecNone;
  CHECK_RES(zcclCompressRoundtrip(&c, x, y, n, zcclFloat32, NULL), zcclSuccess);
  CHECK(y[0] == x[0] && y[n - 1] == x[n - 1]);
  /* refused, with a reason */
  c.codec = zcclCodecAuto;
  CHECK_RES(zcclCompressRoundtrip(&c, x, y, n, zcclFloat32, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("codec=auto");
  c.codec = zcclCodecHz, c.mode = zcclErrorTargetAbs;
  CHECK_RES(zcclCompressRoundtrip(&c, x, y, n, zcclFloat32, NULL), zcclInvalidArgument);
  CHECK_LAST_ERROR_HAS("abs or rel");
  c.mode = zcclErrorAbs;
  CHECK_RES(zcclCompressRoundtrip(&c, ints, iout, 4, zcclInt32, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCompressRoundtrip(&c, NULL, y, n, zcclFloat32, NULL), zcclInvalidArgument);
  CHECK_RES(zcclCompressRoundtrip(NULL, x, y, n, zcclFloat32, NULL), zcclInvalidArgument);
  c.eb = -1;
  CHECK_RES(zcclCompressRoundtrip(&c, x, y, n, zcclFloat32, NULL), zcclInvalidArgument);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "parser";
  if (strcmp(mode, "parser") == 0) {
    const char* env = getenv("ZCCL_COMPRESSION");
    CHECK(env == NULL || env[0] == '\0'); /* empty counts as unset */
    test_parse_good();
    test_parse_malformed();
    test_round_trip();
    test_comm_setting();
    test_compress_roundtrip();
  } else if (strcmp(mode, "env-good") == 0) {
    test_env_good();
  } else if (strcmp(mode, "env-bad") == 0) {
    test_env_bad();
  } else if (strcmp(mode, "env-config-wins") == 0) {
    test_env_config_wins();
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  TEST_DONE();
}
