/* Every collective, uncompressed, under mpirun: every datatype, every op,
 * in place and out of place, counts 0, 1, prime, not divisible by the ranks,
 * and one large; compared element by element with a reference computed
 * here. Inputs are small integers (exact in every float type, including
 * fp8), so sums are exact whatever the reduction order and the comparison is
 * exact; out of place, every input is left as it was. Also: allreduce of
 * real-valued floats is bit-identical on every rank and matches
 * MPI_Allreduce within the reduction-order tolerance; a group mixing
 * collectives and point-to-point; mismatched counts across ranks give an
 * error, not corruption or a hang.
 *   mpirun -np N test_coll [quick]      (ZCCL_DEVICE=host|sim picks the device) */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static int rank, nranks;
static long wrong_total;

/* ---- element encode/decode for exact small values ---------------------------- */
static size_t tsize(zcclDataType_t t) {
  switch (t) {
    case zcclInt8: case zcclUint8: case zcclFloat8e4m3: case zcclFloat8e5m2: return 1;
    case zcclFloat16: case zcclBfloat16: return 2;
    case zcclInt32: case zcclUint32: case zcclFloat32: return 4;
    default: return 8;
  }
}
static int is_float(zcclDataType_t t) {
  return t == zcclFloat16 || t == zcclBfloat16 || t == zcclFloat32 || t == zcclFloat64 || t == zcclFloat8e4m3 ||
         t == zcclFloat8e5m2;
}

/* A float32 (exactly representable in the target) into a small float type:
 * sign, rebiased exponent, top mantissa bits. Zero stays zero. */
static uint32_t small_float_bits(float v, int ebits, int mbits) {
  uint32_t f;
  memcpy(&f, &v, 4);
  uint32_t sign = f >> 31, e = (f >> 23) & 0xff, m = f & 0x7fffff;
  if (e == 0) return sign << (ebits + mbits);
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t ne = (uint32_t)((int)e - 127 + bias);
  return (sign << (ebits + mbits)) | (ne << mbits) | (m >> (23 - mbits));
}
static float small_float_value(uint32_t b, int ebits, int mbits) {
  uint32_t sign = (b >> (ebits + mbits)) & 1, e = (b >> mbits) & ((1u << ebits) - 1), m = b & ((1u << mbits) - 1);
  if (e == 0 && m == 0) return sign ? -0.0f : 0.0f;
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t f = (sign << 31) | ((uint32_t)((int)e - bias + 127) << 23) | (m << (23 - mbits));
  float v;
  memcpy(&v, &f, 4);
  return v;
}

static void put(void* buf, size_t i, zcclDataType_t t, double v) {
  uint8_t* p = (uint8_t*)buf + i * tsize(t);
  switch (t) {
    case zcclInt8: { int8_t x = (int8_t)(int64_t)v; memcpy(p, &x, 1); break; }
    case zcclUint8: { uint8_t x = (uint8_t)(int64_t)v; memcpy(p, &x, 1); break; }
    case zcclInt32: { int32_t x = (int32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    case zcclUint32: { uint32_t x = (uint32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    case zcclInt64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case zcclUint64: { uint64_t x = (uint64_t)(int64_t)v; memcpy(p, &x, 8); break; }
    case zcclFloat32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case zcclFloat64: memcpy(p, &v, 8); break;
    case zcclFloat16: { uint16_t x = (uint16_t)small_float_bits((float)v, 5, 10); memcpy(p, &x, 2); break; }
    case zcclBfloat16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); uint16_t x = (uint16_t)(u >> 16); memcpy(p, &x, 2); break; }
    case zcclFloat8e4m3: *p = (uint8_t)small_float_bits((float)v, 4, 3); break;
    case zcclFloat8e5m2: *p = (uint8_t)small_float_bits((float)v, 5, 2); break;
    default: break;
  }
}

/* Raw bits, for exact comparison. */
static uint64_t bits(const void* buf, size_t i, zcclDataType_t t) {
  uint64_t x = 0;
  memcpy(&x, (const uint8_t*)buf + i * tsize(t), tsize(t));
  return x;
}
static double get(const void* buf, size_t i, zcclDataType_t t) {
  const uint8_t* p = (const uint8_t*)buf + i * tsize(t);
  switch (t) {
    case zcclInt8: return (double)*(const int8_t*)p;
    case zcclUint8: return (double)*p;
    case zcclInt32: { int32_t x; memcpy(&x, p, 4); return x; }
    case zcclUint32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case zcclInt64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case zcclUint64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case zcclFloat32: { float x; memcpy(&x, p, 4); return x; }
    case zcclFloat64: { double x; memcpy(&x, p, 8); return x; }
    case zcclFloat16: { uint16_t x; memcpy(&x, p, 2); return small_float_value(x, 5, 10); }
    case zcclBfloat16: { uint16_t x; memcpy(&x, p, 2); uint32_t u = (uint32_t)x << 16; float f; memcpy(&f, &u, 4); return f; }
    case zcclFloat8e4m3: return small_float_value(*p, 4, 3);
    case zcclFloat8e5m2: return small_float_value(*p, 5, 2);
    default: return 0;
  }
}

/* Input of rank r, element i: small integers chosen per op so the exact
 * result is representable in every type (fp8 e5m2 holds integers to 8
 * exactly, e4m3 to 16; products of +-1/+-2 stay powers of two <= 256). */
static double input(int r, size_t i, zcclDataType_t t, zcclRedOp_t op) {
  uint32_t h = (uint32_t)(r * 2654435761u) ^ (uint32_t)(i * 40503u + 17u);
  h ^= h >> 13;
  if (op == zcclProd) {
    static const double pv[4] = {1, -1, 2, -2};
    double v = (r < 8 && h % 3 != 0) ? pv[h % 4] : 1; /* at most 8 factors of 2 */
    if (t == zcclUint8 || t == zcclUint32 || t == zcclUint64) v = fabs(v);
    return v;
  }
  /* Low-precision floats accumulate in their own type: the same 0 or 1 on
   * every rank keeps every partial sum exact. */
  if (op == zcclAvg && is_float(t) && t != zcclFloat32 && t != zcclFloat64) return (double)(i % 2);
  int span = (t == zcclFloat8e5m2) ? 2 : (t == zcclFloat8e4m3 || t == zcclBfloat16) ? 3 : 12;
  int lo = (t == zcclUint8 || t == zcclUint32 || t == zcclUint64) ? 0 : -span / 2;
  return (double)(lo + (int)(h % (uint32_t)(span + 1)) / (nranks > 4 && span <= 3 ? 2 : 1));
}

/* The exact reduction of every rank's input at element i. */
static double reduce_ref(size_t i, zcclDataType_t t, zcclRedOp_t op) {
  double acc = input(0, i, t, op);
  for (int r = 1; r < nranks; r++) {
    double v = input(r, i, t, op);
    switch (op) {
      case zcclSum: case zcclAvg: acc += v; break;
      case zcclProd: acc *= v; break;
      case zcclMax: acc = v > acc ? v : acc; break;
      case zcclMin: acc = v < acc ? v : acc; break;
      default: break;
    }
  }
  if (op == zcclAvg) {
    if (is_float(t)) return acc / nranks;
    return (double)((int64_t)acc / nranks); /* integer division truncates */
  }
  return acc;
}

/* Expected bits of value v in type t (through the same encoder). */
static uint64_t want_bits(double v, zcclDataType_t t) {
  uint8_t tmp[8] = {0};
  if (t == zcclFloat32) {
    float f = (float)v;
    memcpy(tmp, &f, 4);
  } else {
    put(tmp, 0, t, v);
  }
  return bits(tmp, 0, t);
}

static long compare(const char* what, const void* got, size_t n, zcclDataType_t t, double (*ref)(size_t, void*),
                    void* arg) {
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    double w = ref(i, arg);
    if (bits(got, i, t) != want_bits(w, t)) {
      if (bad < 3)
        fprintf(stderr, "rank %d: %s: element %zu is %g, want %g\n", rank, what, i, get(got, i, t), w);
      bad++;
    }
  }
  wrong_total += bad;
  CHECK(bad == 0); /* (what and where: printed above) */
  return bad;
}

typedef struct {
  zcclDataType_t t;
  zcclRedOp_t op;
  int root;
  size_t count;
} refarg_t;

static double ref_reduce(size_t i, void* p) {
  refarg_t* a = p;
  return reduce_ref(i, a->t, a->op);
}
static double ref_reduce_block(size_t i, void* p) { /* reduce-scatter: this rank's block */
  refarg_t* a = p;
  return reduce_ref((size_t)rank * a->count + i, a->t, a->op);
}
static double ref_bcast(size_t i, void* p) {
  refarg_t* a = p;
  return input(a->root, i, a->t, zcclSum);
}
static double ref_gather(size_t i, void* p) { /* block r holds rank r's input */
  refarg_t* a = p;
  return input((int)(i / a->count), i % a->count, a->t, zcclSum);
}
static double ref_scatter(size_t i, void* p) { /* this rank's block of the root's input */
  refarg_t* a = p;
  return input(a->root, (size_t)rank * a->count + i, a->t, zcclSum);
}
static double ref_alltoall(size_t i, void* p) { /* from rank i/count, its block for me */
  refarg_t* a = p;
  int src = (int)(i / a->count);
  return input(src, (size_t)rank * a->count + i % a->count, a->t, zcclSum);
}

static double ref_own(size_t i, void* p) { /* this rank's input, as filled */
  refarg_t* a = p;
  return input(rank, i, a->t, a->op);
}
static void fill(void* buf, size_t n, int r, zcclDataType_t t, zcclRedOp_t op) {
  for (size_t i = 0; i < n; i++) put(buf, i, t, input(r, i, t, op));
}

/* The bytes the last fill_send wrote, which input_kept compares first:
 * recomputing every input element after every call took about a fifth
 * of an 8-rank run. */
static void* sent_copy;
static size_t sent_cap, sent_bytes;

static void fill_send(void* buf, size_t n, int r, zcclDataType_t t, zcclRedOp_t op) {
  fill(buf, n, r, t, op);
  sent_bytes = n * tsize(t);
  memcpy(test_kept(&sent_copy, &sent_cap, sent_bytes), buf, sent_bytes);
}

/* Out of place, the call leaves its input as it was (algorithms that read
 * sendbuff where they used to copy it first must not write it): the bytes
 * fill_send wrote, or else every element against its input (which says
 * where it differs). */
static void input_kept(const char* what, const void* sb, size_t n, zcclDataType_t t, const refarg_t* a) {
  size_t bytes = n * tsize(t);
  if (bytes <= sent_bytes && memcmp(sb, sent_copy, bytes) == 0) {
    CHECK(1);
    return;
  }
  char w[160];
  snprintf(w, sizeof w, "%s: its input", what);
  compare(w, sb, n, t, ref_own, (void*)a);
}

static const zcclDataType_t types[] = {zcclInt8,   zcclUint8,   zcclInt32,    zcclUint32,     zcclInt64,     zcclUint64,
                                       zcclFloat16, zcclFloat32, zcclFloat64, zcclBfloat16, zcclFloat8e4m3, zcclFloat8e5m2};
static const char* opn[] = {"sum", "prod", "max", "min", "avg"};

static void run_all(zcclComm_t comm, size_t count, zcclDataType_t t, int inplace) {
  size_t es = tsize(t), N = (size_t)nranks;
  uint8_t* sb = malloc(count * N * es + 16);
  uint8_t* rb = malloc(count * N * es + 16);
  char what[128];
  for (int op = 0; op < zcclNumOps; op++) {
    refarg_t a = {t, (zcclRedOp_t)op, 0, count};
    /* AllReduce */
    fill_send(sb, count, rank, t, a.op);
    memset(rb, 0xcd, count * es);
    snprintf(what, sizeof what, "allreduce %s %d n=%zu%s", opn[op], (int)t, count, inplace ? " inplace" : "");
    if (inplace) {
      CHECK_RES(zcclAllReduce(sb, sb, count, t, a.op, comm, NULL), zcclSuccess);
      compare(what, sb, count, t, ref_reduce, &a);
    } else {
      CHECK_RES(zcclAllReduce(sb, rb, count, t, a.op, comm, NULL), zcclSuccess);
      compare(what, rb, count, t, ref_reduce, &a);
      input_kept(what, sb, count, t, &a);
    }
    /* ReduceScatter: input count*N, this rank's block out. */
    fill_send(sb, count * N, rank, t, a.op);
    snprintf(what, sizeof what, "reducescatter %s %d n=%zu%s", opn[op], (int)t, count, inplace ? " inplace" : "");
    if (inplace) {
      CHECK_RES(zcclReduceScatter(sb, sb + (size_t)rank * count * es, count, t, a.op, comm, NULL), zcclSuccess);
      compare(what, sb + (size_t)rank * count * es, count, t, ref_reduce_block, &a);
    } else {
      CHECK_RES(zcclReduceScatter(sb, rb, count, t, a.op, comm, NULL), zcclSuccess);
      compare(what, rb, count, t, ref_reduce_block, &a);
      input_kept(what, sb, count * N, t, &a);
    }
    /* Reduce to a root that is not always 0. */
    a.root = (op + 1) % nranks;
    fill_send(sb, count, rank, t, a.op);
    memset(rb, 0xcd, count * es);
    snprintf(what, sizeof what, "reduce %s %d n=%zu root %d%s", opn[op], (int)t, count, a.root, inplace ? " inplace" : "");
    CHECK_RES(zcclReduce(sb, inplace ? sb : rb, count, t, a.op, a.root, comm, NULL), zcclSuccess);
    if (rank == a.root) compare(what, inplace ? sb : rb, count, t, ref_reduce, &a);
    if (!inplace) input_kept(what, sb, count, t, &a);
  }
  refarg_t a = {t, zcclSum, nranks - 1, count};
  /* Broadcast from the last rank. */
  fill_send(sb, count, rank, t, zcclSum);
  memset(rb, 0xcd, count * es);
  snprintf(what, sizeof what, "broadcast %d n=%zu%s", (int)t, count, inplace ? " inplace" : "");
  CHECK_RES(zcclBroadcast(sb, inplace ? sb : rb, count, t, a.root, comm, NULL), zcclSuccess);
  compare(what, inplace ? sb : rb, count, t, ref_bcast, &a);
  if (!inplace) input_kept(what, sb, count, t, &a);
  /* AllGather: in place means sendbuff = recvbuff + rank*count. */
  memset(rb, 0xcd, count * N * es);
  snprintf(what, sizeof what, "allgather %d n=%zu%s", (int)t, count, inplace ? " inplace" : "");
  if (inplace) {
    fill(rb + (size_t)rank * count * es, count, rank, t, zcclSum);
    CHECK_RES(zcclAllGather(rb + (size_t)rank * count * es, rb, count, t, comm, NULL), zcclSuccess);
  } else {
    fill_send(sb, count, rank, t, zcclSum);
    CHECK_RES(zcclAllGather(sb, rb, count, t, comm, NULL), zcclSuccess);
    input_kept(what, sb, count, t, &a);
  }
  compare(what, rb, count * N, t, ref_gather, &a);
  /* Gather to rank 0, or in place (sendbuff = recvbuff + root*count) to
   * the last rank; Scatter from rank 1 % N, in place (recvbuff = sendbuff +
   * root*count) at the root. Roots other than 0 make the trees rotate. */
  a.root = inplace ? nranks - 1 : 0;
  memset(rb, 0xcd, count * N * es);
  uint8_t* gsrc = inplace && rank == a.root ? rb + (size_t)rank * count * es : sb;
  fill_send(gsrc, count, rank, t, zcclSum);
  snprintf(what, sizeof what, "gather %d n=%zu root %d%s", (int)t, count, a.root, inplace ? " inplace" : "");
  CHECK_RES(zcclGather(gsrc, rb, count, t, a.root, comm, NULL), zcclSuccess);
  if (rank == a.root) compare(what, rb, count * N, t, ref_gather, &a);
  if (gsrc == sb) input_kept(what, sb, count, t, &a);
  a.root = 1 % nranks;
  fill_send(sb, count * N, rank, t, zcclSum);
  memset(rb, 0xcd, count * es);
  uint8_t* sdst = inplace && rank == a.root ? sb + (size_t)rank * count * es : rb;
  snprintf(what, sizeof what, "scatter %d n=%zu root %d%s", (int)t, count, a.root, inplace ? " inplace" : "");
  CHECK_RES(zcclScatter(sb, sdst, count, t, a.root, comm, NULL), zcclSuccess);
  compare(what, sdst, count, t, ref_scatter, &a);
  if (sdst == rb) input_kept(what, sb, count * N, t, &a);
  /* AlltoAll (out of place only). */
  fill_send(sb, count * N, rank, t, zcclSum);
  memset(rb, 0xcd, count * N * es);
  snprintf(what, sizeof what, "alltoall %d n=%zu", (int)t, count);
  CHECK_RES(zcclAlltoAll(sb, rb, count, t, comm, NULL), zcclSuccess);
  compare(what, rb, count * N, t, ref_alltoall, &a);
  input_kept(what, sb, count * N, t, &a);
  free(sb);
  free(rb);
}

/* Real-valued floats: every rank's allreduce result is bit-identical, and
 * within the reduction-order tolerance of MPI_Allreduce. */
static void test_bit_identical(zcclComm_t comm) {
  size_t n = (1u << 18) + 11;
  float* x = malloc(n * sizeof(float));
  float* z = malloc(n * sizeof(float));
  float* m = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = sinf((float)(i * 0.001 + rank)) * 1000.0f / (1.0f + (float)(i % 7));
  for (int small = 0; small < 2; small++) {
    size_t cnt = small ? 100 : n; /* recursive doubling and ring */
    CHECK_RES(zcclAllReduce(x, z, cnt, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
    MPI_Allreduce(x, m, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    /* Bit-identical: rank 0's result against everyone's. */
    float* z0 = malloc(cnt * sizeof(float));
    memcpy(z0, z, cnt * sizeof(float));
    MPI_Bcast(z0, (int)cnt, MPI_FLOAT, 0, MPI_COMM_WORLD);
    CHECK(memcmp(z0, z, cnt * sizeof(float)) == 0);
    long far = 0;
    for (size_t i = 0; i < cnt; i++) {
      double tol = 4.0 * nranks * 6e-8 * (nranks * 1000.0); /* N rounding errors of sums up to N*1000 */
      far += !(fabs((double)z[i] - (double)m[i]) <= tol); /* (a NaN is far) */
    }
    CHECK(far == 0);
    free(z0);
  }
  /* Integers: exactly MPI's. */
  int32_t* xi = malloc(n * 4);
  int32_t* zi = malloc(n * 4);
  int32_t* mi = malloc(n * 4);
  for (size_t i = 0; i < n; i++) xi[i] = (int32_t)(i * 7919u + (unsigned)rank * 104729u);
  CHECK_RES(zcclAllReduce(xi, zi, n, zcclInt32, zcclMax, comm, NULL), zcclSuccess);
  MPI_Allreduce(xi, mi, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(memcmp(zi, mi, n * 4) == 0);
  free(x), free(z), free(m), free(xi), free(zi), free(mi);
}

/* Every collective beside OpenMPI's on the same real-valued float32 inputs:
 * data movement bit for bit, reductions within the rounding of the order.
 * Roots other than 0 where the collective has one. */
static int close_to(const float* a, const float* b, size_t n, double tol) {
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)a[i] - (double)b[i]) <= tol)) return 0; /* (a NaN is not close) */
  return 1;
}

static void test_against_mpi(zcclComm_t comm) {
  size_t n = 40000 + 17, N = (size_t)nranks;
  int root = nranks - 1, ni = (int)n;
  float* x = malloc(n * N * sizeof(float));
  float* z = malloc(n * N * sizeof(float));
  float* m = malloc(n * N * sizeof(float));
  for (size_t i = 0; i < n * N; i++) x[i] = cosf((float)(i * 0.01 + rank * 1.7)) * 100.0f;
  double tol = 4.0 * nranks * 6e-8 * (nranks * 100.0);
  /* Broadcast, AllGather, Gather, Scatter, AlltoAll: exact. */
  memcpy(z, x, n * sizeof(float)), memcpy(m, x, n * sizeof(float));
  CHECK_RES(zcclBroadcast(z, z, n, zcclFloat32, root, comm, NULL), zcclSuccess);
  MPI_Bcast(m, ni, MPI_FLOAT, root, MPI_COMM_WORLD);
  CHECK(memcmp(z, m, n * sizeof(float)) == 0);
  CHECK_RES(zcclAllGather(x, z, n, zcclFloat32, comm, NULL), zcclSuccess);
  MPI_Allgather(x, ni, MPI_FLOAT, m, ni, MPI_FLOAT, MPI_COMM_WORLD);
  CHECK(memcmp(z, m, n * N * sizeof(float)) == 0);
  CHECK_RES(zcclGather(x, z, n, zcclFloat32, root, comm, NULL), zcclSuccess);
  MPI_Gather(x, ni, MPI_FLOAT, m, ni, MPI_FLOAT, root, MPI_COMM_WORLD);
  if (rank == root) CHECK(memcmp(z, m, n * N * sizeof(float)) == 0);
  CHECK_RES(zcclScatter(x, z, n, zcclFloat32, root, comm, NULL), zcclSuccess);
  MPI_Scatter(x, ni, MPI_FLOAT, m, ni, MPI_FLOAT, root, MPI_COMM_WORLD);
  CHECK(memcmp(z, m, n * sizeof(float)) == 0);
  CHECK_RES(zcclAlltoAll(x, z, n, zcclFloat32, comm, NULL), zcclSuccess);
  MPI_Alltoall(x, ni, MPI_FLOAT, m, ni, MPI_FLOAT, MPI_COMM_WORLD);
  CHECK(memcmp(z, m, n * N * sizeof(float)) == 0);
  /* Reduce, ReduceScatter: within rounding; max exactly. */
  CHECK_RES(zcclReduce(x, z, n, zcclFloat32, zcclSum, root, comm, NULL), zcclSuccess);
  MPI_Reduce(x, m, ni, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
  if (rank == root) CHECK(close_to(z, m, n, tol));
  CHECK_RES(zcclReduce(x, z, n, zcclFloat32, zcclMax, root, comm, NULL), zcclSuccess);
  MPI_Reduce(x, m, ni, MPI_FLOAT, MPI_MAX, root, MPI_COMM_WORLD);
  if (rank == root) CHECK(memcmp(z, m, n * sizeof(float)) == 0);
  CHECK_RES(zcclReduceScatter(x, z, n, zcclFloat32, zcclSum, comm, NULL), zcclSuccess);
  MPI_Reduce_scatter_block(x, m, ni, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(close_to(z, m, n, tol));
  free(x), free(z), free(m);
}

/* A group with an allreduce, a broadcast and a ring of sends. */
static void test_group(zcclComm_t comm) {
  int v = rank + 1, s = 0, b = rank == 0 ? 42 : 0, right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  int out = rank * 10, in = -1;
  CHECK_RES(zcclGroupStart(), zcclSuccess);
  CHECK_RES(zcclAllReduce(&v, &s, 1, zcclInt32, zcclSum, comm, NULL), zcclSuccess);
  CHECK_RES(zcclBroadcast(&b, &b, 1, zcclInt32, 0, comm, NULL), zcclSuccess);
  CHECK_RES(zcclSend(&out, 1, zcclInt32, right, comm, NULL), zcclSuccess);
  CHECK_RES(zcclRecv(&in, 1, zcclInt32, left, comm, NULL), zcclSuccess);
  CHECK_RES(zcclGroupEnd(), zcclSuccess);
  CHECK(s == nranks * (nranks + 1) / 2);
  CHECK(b == 42);
  CHECK(in == left * 10);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
  zcclUniqueId id;
  if (rank == 0) zcclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  zcclComm_t comm = NULL;
  CHECK_RES(zcclCommInitRank(&comm, nranks, id, rank), zcclSuccess);
  if (comm == NULL) {
    MPI_Finalize();
    TEST_DONE();
  }
  const size_t counts[] = {0, 1, 7, 1000};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
      for (int inplace = 0; inplace < 2; inplace++) {
        if (quick && counts[c] != 7) continue;
        /* TEST_COLL_TYPES=basic: integers, float32 and float64 only. */
        const char* only = getenv("TEST_COLL_TYPES");
        if (only && strcmp(only, "basic") == 0 && tsize(types[t]) < 4 && is_float(types[t])) continue;
        run_all(comm, counts[c], types[t], inplace);
      }
  /* Large: ring and chain sizes, two types. */
  if (!quick) {
    run_all(comm, (1u << 20) + 3, zcclFloat32, 0);
    run_all(comm, (1u << 19) + 5, zcclInt32, 1);
  }
  test_bit_identical(comm);
  test_against_mpi(comm);
  test_group(comm);
  CHECK_RES(zcclCommDestroy(comm), zcclSuccess);

  /* Calls that differ across ranks (counts the algorithms see alike or
   * not, a root): every rank fails at once, not at ZCCL_TIMEOUT (30 s
   * here): some rank sees its neighbour's call signature differ and tells
   * all; nothing is written past a buffer; the communicator is broken
   * (the next call fails at once). A rank whose own messages all matched
   * (a broadcast from the root it named; unframed, a one-shot allreduce
   * whose peers' messages all had its length) may return before the word
   * reaches it; its next call fails. Cases 3-5 are small allreduces whose
   * recursive doubling carries the signature in its own messages (zp_rd.c):
   * counts that differ (both small), an op that differs (same length), and
   * one rank's call too large to be framed while the others' are. In case
   * 6 the calls agree but rank 0's ZCCL_ALGO (ring, which carries its
   * signature) sends its call another way: the stalled ranks' signatures
   * name their algorithms. Calls of more than 4 KiB up to 1 MiB a rank
   * (cases 0 and 5, 7 and 8) carry their signature in front of every
   * message instead (zp_xfers_post): case 7 is an allgather whose counts
   * differ, case 8 an allgather on rank 0 beside an alltoall elsewhere,
   * whose messages may never match (the stalled ranks' signatures meet).
   * Only host memory frames or carries: on the sim device every
   * rank sends its signature apart, and ranks whose ZCCL_ALGO differs
   * while their calls agree wait for ZCCL_TIMEOUT there (not tested). Nor
   * where the test's own ZCCL_ALGO already chooses for every rank. */
  if (nranks > 1) {
    setenv("ZCCL_TIMEOUT", "30", 1);
    const char* dev = getenv("ZCCL_DEVICE");
    int framed = (dev == NULL || strcmp(dev, "sim") != 0) && getenv("ZCCL_ALGO") == NULL;
    for (int kase = 0; kase < 9; kase++) {
      if (kase == 6 && !framed) continue;
      zcclComm_t c2 = NULL;
      if (rank == 0) zcclGetUniqueId(&id);
      MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
      if (kase == 6 && rank == 0) setenv("ZCCL_ALGO", "allreduce:ring", 1);
      CHECK_RES(zcclCommInitRank(&c2, nranks, id, rank), zcclSuccess);
      if (kase == 6) unsetenv("ZCCL_ALGO");
      size_t n = kase == 0   ? (rank == 0 ? 5000 : 4000)
                 : kase == 1 ? (rank == 0 ? (1u << 20) : 16)
                 : kase == 3 ? (rank == 0 ? 5 : 7)
                 : kase == 4 ? 7
                 : kase == 5 ? (rank == 0 ? 3000 : 16)
                 : kase == 6 ? 16
                 : kase >= 7 ? 600 * (size_t)nranks
                             : 3000;
      float* x = calloc(n + 64, sizeof(float));
      float* y = calloc(n + 64, sizeof(float));
      y[n] = 123.0f;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      zcclRedOp_t op = kase == 4 && rank == 0 ? zcclMax : zcclSum;
      size_t per = n / (size_t)nranks; /* cases 7 and 8: a rank's share */
      zcclResult_t res = kase == 2   ? zcclBroadcast(x, y, n, zcclFloat32, rank == 0 ? 0 : 1, c2, NULL)
                         : kase == 7 ? zcclAllGather(x, y, rank == 0 ? per - 100 : per, zcclFloat32, c2, NULL)
                         : kase == 8 ? (rank == 0 ? zcclAllGather(x, y, per, zcclFloat32, c2, NULL)
                                                  : zcclAlltoAll(x, y, per / (size_t)nranks, zcclFloat32, c2, NULL))
                                     : zcclAllReduce(x, y, n, zcclFloat32, op, c2, NULL);
      double took = MPI_Wtime() - t0;
      printf("mismatch case %d: rank %d returned %s after %.2f s: %s\n", kase, rank, zcclGetErrorString(res), took,
               zcclGetLastError(c2));
      CHECK(res == zcclInvalidUsage || res == zcclRemoteError || ((kase == 2 || !framed) && res == zcclSuccess));
      CHECK(took < 5.0);
      CHECK(y[n] == 123.0f); /* nothing written past the buffer */
      if (kase == 4 && res == zcclInvalidUsage) CHECK(strstr(zcclGetLastError(c2), "reduction op") != NULL);
      int bad = res == zcclInvalidUsage, anybad = 0;
      MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      CHECK(anybad > 0); /* someone saw the difference itself */
      t0 = MPI_Wtime();
      zcclResult_t next = zcclAllReduce(x, y, 1, zcclFloat32, zcclSum, c2, NULL);
      CHECK(next == (res == zcclSuccess ? zcclRemoteError : res));
      if (res != zcclSuccess) CHECK_LAST_ERROR_HAS("pending error");
      CHECK(MPI_Wtime() - t0 < 1.0);
      zcclCommAbort(c2);
      free(x), free(y);
    }
  }
  if (wrong_total) fprintf(stderr, "rank %d: %ld wrong elements in all\n", rank, wrong_total);
  MPI_Finalize();
  TEST_DONE();
}
