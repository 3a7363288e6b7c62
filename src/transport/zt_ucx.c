#include <stdio.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "zt_transport.h"
#include "zu_error.h"

zcclResult_t zt_ucx_query(zt_ucx_info_t* info) {
  memset(info, 0, sizeof *info);
  snprintf(info->version, sizeof info->version, "%s", ucp_get_version_string());

  ucp_config_t* config = NULL;
  ucs_status_t st = ucp_config_read(NULL, NULL, &config);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "ucp_config_read: %s", ucs_status_string(st));
  ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
  ucp_context_h ctx = NULL;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "ucp_init: %s", ucs_status_string(st));

  ucp_context_attr_t attr = {.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES};
  st = ucp_context_query(ctx, &attr);
  if (st == UCS_OK) {
    size_t o = 0;
    for (int t = 0; t < UCS_MEMORY_TYPE_LAST; t++) {
      if (!(attr.memory_types & UCS_BIT(t))) continue;
      int n = snprintf(info->memory_types + o, sizeof info->memory_types - o, "%s%s", o ? "," : "",
                       ucs_memory_type_names[t]);
      if (n > 0 && (size_t)n < sizeof info->memory_types - o) o += (size_t)n;
    }
    info->cuda_memory = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  }
  ucp_cleanup(ctx);
  ZU_RETURN_ERR_IF(st != UCS_OK, zcclSystemError, "ucp_context_query: %s", ucs_status_string(st));
  return zcclSuccess;
}
