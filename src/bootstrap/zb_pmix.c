#include <pmix.h>
#include <stdlib.h>

#include "zb_bootstrap.h"

const char* zb_pmix_version(void) { return PMIx_Get_version(); }

int zb_pmix_launched(const char** nspace, int* rank) {
  /* PMIx servers export these to the processes they start. */
  const char* ns = getenv("PMIX_NAMESPACE");
  const char* rk = getenv("PMIX_RANK");
  if (ns == NULL || rk == NULL) return 0;
  if (nspace) *nspace = ns;
  if (rank) *rank = atoi(rk);
  return 1;
}
