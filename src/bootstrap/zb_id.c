#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "zb_bootstrap.h"
#include "zu_error.h"

#define ZB_ID_MAGIC 0x4449435au /* "ZCID" little-endian */
/* 2: the TCP root speaks the HMAC challenge-response (zb_tcp.c); ranks of
 * zccl builds that speak the clear-text hello are told so up front. */
#define ZB_ID_VERSION 2u

/* Byte layout, little-endian host order (ids don't leave the job's
 * machines, which share an architecture). */
typedef struct {
  uint32_t magic;
  uint32_t version;
  uint32_t kind;
  uint8_t secret[16];
  uint32_t ip;   /* kind TCP: the root's IPv4 address, network order */
  uint16_t port; /* network order */
  uint16_t flags; /* ZB_ID_FLAG_* */
} zb_id_header_t;

_Static_assert(sizeof(zb_id_header_t) <= ZCCL_UNIQUE_ID_BYTES, "unique id too small");

zcclResult_t zb_id_create(zcclUniqueId* id) {
  zb_id_header_t h = {.magic = ZB_ID_MAGIC, .version = ZB_ID_VERSION, .kind = ZB_ID_KIND_NONE};
  size_t got = 0;
  while (got < sizeof h.secret) {
    ssize_t n = getrandom(h.secret + got, sizeof h.secret - got, 0);
    ZU_RETURN_ERR_IF(n < 0, zcclSystemError, "getrandom failed for the unique id's secret");
    got += (size_t)n;
  }
  memset(id, 0, sizeof *id);
  memcpy(id->internal, &h, sizeof h);
  return zcclSuccess;
}

zcclResult_t zb_id_check(const zcclUniqueId* id, zb_id_kind_t* kind) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  ZU_RETURN_ERR_IF(h.magic != ZB_ID_MAGIC, zcclInvalidArgument,
                   "the unique id was not made by zcclGetUniqueId (bad magic 0x%08x)", h.magic);
  ZU_RETURN_ERR_IF(h.version != ZB_ID_VERSION, zcclInvalidArgument,
                   "the unique id has format version %u; this zccl reads version %u", h.version,
                   ZB_ID_VERSION);
  ZU_RETURN_ERR_IF(h.kind > ZB_ID_KIND_PMIX, zcclInvalidArgument, "the unique id has unknown kind %u",
                   h.kind);
  *kind = (zb_id_kind_t)h.kind;
  return zcclSuccess;
}

void zb_id_set_tcp(zcclUniqueId* id, uint32_t ip, uint16_t port) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  h.kind = ZB_ID_KIND_TCP;
  h.ip = ip;
  h.port = port;
  memcpy(id->internal, &h, sizeof h);
}

int zb_id_get_tcp(const zcclUniqueId* id, uint32_t* ip, uint16_t* port) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  if (h.magic != ZB_ID_MAGIC || h.kind != ZB_ID_KIND_TCP || h.port == 0) return -1;
  *ip = h.ip;
  *port = h.port;
  return 0;
}

void zb_id_secret(const zcclUniqueId* id, uint8_t secret[16]) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  memcpy(secret, h.secret, 16);
}

void zb_id_set_flags(zcclUniqueId* id, unsigned flags) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  h.flags = (uint16_t)flags;
  memcpy(id->internal, &h, sizeof h);
}

unsigned zb_id_flags(const zcclUniqueId* id) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  return h.flags;
}

void zb_id_set_kind(zcclUniqueId* id, zb_id_kind_t kind) {
  zb_id_header_t h;
  memcpy(&h, id->internal, sizeof h);
  h.kind = (uint32_t)kind;
  memcpy(id->internal, &h, sizeof h);
}
