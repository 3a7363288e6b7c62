/* zccl-info: what this zccl build and this machine support, and the
 * environment parameters (like ucc_info / ucx_info). */
#include <stdio.h>
#include <string.h>

#include "zb_bootstrap.h"
#include "zc_codec.h"
#include "zd_device.h"
#include "zt_transport.h"
#include "zu_param.h"
#include "zccl.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: zccl-info [--version | --params [--markdown] | --codecs | --help]\n"
          "  (no option)  build, dependencies, hardware and codecs\n"
          "  --version    the library version code\n"
          "  --params     every ZCCL_* environment variable, its default and current value\n"
          "  --markdown   with --params: the table as docs/env.md holds it\n"
          "  --codecs     the codecs and whether this build has them\n");
}

static void print_codecs(void) {
  printf("codecs:\n");
  for (int i = 0; i < zcclNumCodecs; i++) {
    const zc_codec_info_t* c = zc_codec_info(i);
    printf("  %-5s %-9s %s\n", c->name, c->built ? "built" : "not built", c->desc);
  }
}

int main(int argc, char** argv) {
  int params = 0, markdown = 0, codecs = 0, version = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--params") == 0) params = 1;
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
