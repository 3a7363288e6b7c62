/* zccl-info: what this zccl build and this machine support, and the
 * environment parameters (like ucc_info / ucx_info). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zb_bootstrap.h"
#include "zc_codec.h"
#include "zd_device.h"
#include "zp_algo.h"
#include "zt_transport.h"
#include "zu_param.h"
#include "zccl.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: zccl-info [--version | --params [--markdown] | --codecs | --algos [link options] | --help]\n"
          "  (no option)  build, dependencies, hardware and codecs\n"
          "  --version    the library version code\n"
          "  --params     every ZCCL_* environment variable, its default and current value\n"
          "  --markdown   with --params: the table as docs/env.md holds it\n"
          "  --codecs     the codecs and whether this build has them\n"
          "  --algos      every collective algorithm, what it needs and its modelled time for\n"
          "               one call, the model's choice marked * (and ZCCL_ALGO's, if set, >):\n"
          "    --ranks N         ranks (default 4)\n"
          "    --bytes SIZE      bytes of the call, per rank for allgather, gather, scatter and\n"
          "                      alltoall (default 1M; K/M/G suffixes)\n"
          "    --gbps G          link bandwidth in Gbit/s (default 10)\n"
          "    --latency-us L    link latency in microseconds (default 20)\n"
          "    --cpu-share S     ranks per core (default 1: host codec rates undivided)\n");
}

/* What an algorithm needs of the call's codec, in words. */
static const char* algo_needs(unsigned needs) {
  if (needs == 0) return "uncompressed";
  if (needs == ZP_NEEDS_HOMOMORPHIC) return "homomorphic (hz)";
  if (needs == ZP_NEEDS_DOC) return "DOC (szp)";
  if (needs == ZP_NEEDS_LOSSY) return "lossy codec";
  if (needs == ZP_NEEDS_LOSSLESS) return "lossless (rle)";
  if (needs == ZP_NEEDS_ANY) return "any codec";
  return "some codecs";
}

/* The codec a compressed algorithm is priced with: the first it takes. */
static int algo_codec(unsigned needs) {
  for (int c = 1; c < zcclNumCodecs; c++)
    if (needs & zc_codec_info(c)->caps) return c;
  return zcclCodecNone;
}

typedef struct {
  int nranks;
  double bytes, gbps, latency_us, cpu_share;
} algo_opts_t;

static int print_algos(const algo_opts_t* o) {
  zd_dev_t* dev = NULL;
  if (zd_dev_create(ZD_HOST, &dev) != zcclSuccess) {
    fprintf(stderr, "zccl-info: %s\n", zcclGetLastError(NULL));
    return 1;
  }
  zp_link_t link = {.alpha = o->latency_us * 1e-6, .bandwidth = o->gbps * 1e9 / 8, .incast = 1,
                    .cpu_share = o->cpu_share};
  zp_algo_rules_t rules;
  zp_algo_rules_parse(zu_param_is_set(ZU_PARAM_ALGO) ? zu_param_str(ZU_PARAM_ALGO) : NULL, &rules);
  zp_ctx_t ctx = {.dev = dev, .link = &link, .rank = 0, .nranks = o->nranks};
  printf("%d ranks, %.0f bytes, link %.3g Gbit/s and %.3g us, cpu share %.3g%s%s\n", o->nranks, o->bytes, o->gbps,
         o->latency_us, o->cpu_share, rules.n ? "; ZCCL_ALGO=" : "", rules.n ? zu_param_str(ZU_PARAM_ALGO) : "");
  printf("%-14s %-18s %-17s %-6s %12s  %s\n", "collective", "algorithm", "needs", "usable", "model us", "what");
  for (size_t i = 0; i < zp_algo_count(); i++) {
    const zp_algo_t* al = zp_algo_at(i);
    zp_coll_args_t a = {.coll = al->coll, .count = (size_t)(o->bytes / 4), .datatype = zcclFloat32, .op = zcclSum,
                        .nranks = o->nranks};
    a.compression.codec = algo_codec(al->needs);
    int usable = !al->usable || al->usable(&ctx, &a, zd_buf_largest(dev));
    double t = 0, tr = 0;
    const zp_algo_t* pick = zp_algo_select(&ctx, &a, NULL, &t, NULL);
    const zp_algo_t* ruled = rules.n ? zp_algo_select(&ctx, &a, &rules, &tr, NULL) : NULL;
    printf("%-14s %c%c%-16s %-17s %-6s %12.1f  %s\n", zp_algo_coll_name(al->coll), pick == al ? '*' : ' ',
           ruled == al ? '>' : ' ', al->name, algo_needs(al->needs), usable ? "yes" : "no", al->cost(&ctx, &a) * 1e6,
           al->desc);
  }
  zd_dev_destroy(dev);
  return 0;
}

/* The number after option argv[*i], or exits with a message. */
static double option_value(int argc, char** argv, int* i, int size) {
  int64_t v = 0;
  char* end = NULL;
  double d = 0;
  if (*i + 1 < argc) {
    if (size && zu_parse_size(argv[*i + 1], &v) == 0) d = (double)v, end = "";
    else if (!size) d = strtod(argv[*i + 1], &end);
  }
  if (end == NULL || *end != '\0' || !(d > 0)) {
    fprintf(stderr, "zccl-info: %s wants a positive %s\n", argv[*i], size ? "size (e.g. 4096, 64K, 1M)" : "number");
    exit(2);
  }
  (*i)++;
  return d;
}

/* A codec's capabilities, comma-separated ("-" for none). */
static const char* caps_text(unsigned caps, char* buf, size_t len) {
  static const struct {
    unsigned cap;
    const char* name;
  } names[] = {{ZC_CAP_LOSSY, "lossy"},     {ZC_CAP_LOSSLESS, "lossless"}, {ZC_CAP_STREAM, "stream"},
               {ZC_CAP_HOMOMORPHIC, "homomorphic"}, {ZC_CAP_DOC, "doc"}, {ZC_CAP_FINITE, "finite-only"}};
  size_t at = 0;
  buf[0] = 0;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
    if ((caps & names[k].cap) && at < len)
      at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "", names[k].name);
  return at ? buf : "-";
}

static void print_codecs(void) {
  char caps[128];
  printf("codecs:\n");
  for (int i = 0; i < zcclNumCodecs; i++) {
    const zc_codec_info_t* c = zc_codec_info(i);
    printf("  %-5s %-9s %-27s %s\n", c->name, c->built ? "built" : "not built", caps_text(c->caps, caps, sizeof caps),
           c->desc);
  }
}

int main(int argc, char** argv) {
  int params = 0, markdown = 0, codecs = 0, version = 0, algos = 0;
  algo_opts_t ao = {.nranks = 4, .bytes = 1 << 20, .gbps = 10, .latency_us = 20, .cpu_share = 1};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--params") == 0) params = 1;
    else if (strcmp(argv[i], "--algos") == 0) algos = 1;
    else if (strcmp(argv[i], "--ranks") == 0) ao.nranks = (int)option_value(argc, argv, &i, 0);
    else if (strcmp(argv[i], "--bytes") == 0) ao.bytes = option_value(argc, argv, &i, 1);
    else if (strcmp(argv[i], "--gbps") == 0) ao.gbps = option_value(argc, argv, &i, 0);
    else if (strcmp(argv[i], "--latency-us") == 0) ao.latency_us = option_value(argc, argv, &i, 0);
    else if (strcmp(argv[i], "--cpu-share") == 0) ao.cpu_share = option_value(argc, argv, &i, 0);
    else if (strcmp(argv[i], "--markdown") == 0) markdown = 1;
    else if (strcmp(argv[i], "--codecs") == 0) codecs = 1;
    else if (strcmp(argv[i], "--version") == 0) version = 1;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "zccl-info: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (markdown && !params) {
    fprintf(stderr, "zccl-info: --markdown goes with --params\n");
    return 2;
  }
  int code = 0;
  zcclGetVersion(&code);
  if (version) {
    printf("%d\n", code);
    return 0;
  }
  if (params) {
    zu_param_print(stdout, markdown);
    return 0;
  }
  if (codecs) {
    print_codecs();
    return 0;
  }
  if (algos) return print_algos(&ao);

  printf("zccl %d.%d.%d%s (version code %d)\n", code / 10000, code / 100 % 100, code % 100, ZCCL_SUFFIX,
         code);
  zd_cuda_info_t cuda;
  zd_cuda_query(&cuda);
  if (cuda.built)
    printf("cuda:      built for sm %s, runtime %d, driver %d: %s\n", cuda.archs, cuda.runtime_version,
           cuda.driver_version, cuda.status);
  else
    printf("cuda:      %s\n", cuda.status);
  printf("host:      %d cores available (hwloc)\n", zd_host_ncores());
  zt_ucx_info_t ucx;
  if (zt_ucx_query(&ucx) == zcclSuccess)
    printf("ucx:       %s, memory types: %s, CUDA memory: %s\n", ucx.version, ucx.memory_types,
           ucx.cuda_memory ? "yes" : "no (device buffers are staged through host memory)");
  else
    printf("ucx:       cannot create a UCP context: %s\n", zcclGetLastError(NULL));
  printf("verbs:     %d RDMA device(s)\n", zt_verbs_ndevices());
  const char* ns = NULL;
  int rank = -1;
  printf("pmix:      %s; %s", zb_pmix_version(),
         zb_pmix_launched(&ns, &rank) ? "started by a PMIx launcher" : "not started by a PMIx launcher\n");
  if (ns) printf(" (namespace %s, rank %d)\n", ns, rank);
  printf("zfp:       %s\n", zc_zfp_version());
  print_codecs();
  return 0;
}
