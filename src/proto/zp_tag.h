/* Message tags of collectives (proto-internal): the one place that lays
 * them out and names every purpose that may share one operation.
 *
 * A collective's tag, under zt_tag_head (kind COLL, sender's rank):
 *
 *   kind (4) | sender (20) | sequence (16) | sub (24)
 *   sub = part (4) | step (10) | chunk (10)
 *
 * sequence: the communicator's collective sequence number (ctx->seq)
 * modulo 2^16. A communicator's operations run one after another on its
 * progress thread, every rank in sequence order, so only a few
 * consecutive numbers are live at once; operations fewer than 2^16 apart
 * never share a tag. Two operations 2^16 apart could meet only if a
 * sender got 65536 operations ahead of a receiver (one-way collectives
 * whose sends complete eagerly), and even then each message finds its own
 * receive: the receiver posts the earlier operation's receives first, and
 * UCX matches a sender's messages of one tag in the order they were sent.
 *
 * part: what the message is for (zp_tag_part_t). Each purpose that can
 * run inside one operation has its own part, so their steps and chunks
 * never meet whatever their values.
 *
 * step, chunk: the algorithm's step (ring step, round, tree level) and
 * chunk (slice, piece, pipeline chunk), both modulo 2^10. Wrapping is safe
 * for the same reason as the sequence's: an algorithm numbers the messages
 * of one pair of ranks in the order the sender sends them and the receiver
 * posts them, so a reused number always belongs to a later message of the
 * same sender, which UCX matches after the earlier one; and no algorithm
 * keeps anywhere near 2^10 steps or chunks of one pair in flight (rings:
 * 2 or 3 steps; chains: 2 or 3 pieces; slices: one at a time).
 *
 * Point-to-point and internal messages keep zt_tag's own layout (kind
 * P2P, INTERNAL); proto's internal ones (call signatures, failure
 * notices) are made at the end of this file. */
#ifndef ZP_TAG_H_
#define ZP_TAG_H_

#include <stdint.h>

#include "zt_transport.h"

/* The purposes that may share one operation; a message's part. */
typedef enum {
  ZP_TAG_ALGO = 0,      /* the algorithm's own messages (its first or only phase); calibration's exchanges */
  ZP_TAG_ALGO_PHASE2,   /* an algorithm's own second phase: direct, cprp2p and sparse allreduce's distribution */
  ZP_TAG_NESTED_RING,   /* zp_ring_allgather_blocks as a phase of another algorithm (ring allreduce,
                           scatter-allgather broadcast) */
  ZP_TAG_NESTED_RD,     /* calibration's max-allreduce of the link figures, after its exchanges */
  ZP_TAG_EB_AGREE,      /* REL bounds: the max over ranks of the value range (zp_eb_abs) */
  ZP_TAG_ROOT_AGREE,    /* the root's bound or every rank's error flags (zp_eb_agreed) */
  ZP_TAG_CPR_WHO,       /* cprp2p with ZFP, at the end: which rank failed to compress */
  ZP_TAG_AUTO_ZEROS,    /* codec=auto: the smallest zero fraction of any rank's input */
  ZP_TAG_STREAM_SIZES,  /* compressed allgather: the ring allgather of the streams' sizes */
  ZP_TAG_BCAST_SIZE,    /* compressed broadcast: the root's stream size, before the stream */
  ZP_TAG_NPARTS
} zp_tag_part_t;

#define ZP_TAG_SEQ_BITS 16
#define ZP_TAG_SUB_BITS 24
#define ZP_TAG_PART_BITS 4
#define ZP_TAG_STEP_BITS 10
#define ZP_TAG_CHUNK_BITS 10
#define ZP_TAG_STEPS (1u << ZP_TAG_STEP_BITS)
#define ZP_TAG_CHUNKS (1u << ZP_TAG_CHUNK_BITS)
/* The last step: recursive doubling's fold-out, after every round. */
#define ZP_TAG_STEP_LAST (ZP_TAG_STEPS - 1)

_Static_assert(ZP_TAG_SEQ_BITS + ZP_TAG_SUB_BITS == ZT_TAG_SRC_SHIFT, "sequence and sub fill the 40 low bits");
_Static_assert(ZP_TAG_PART_BITS + ZP_TAG_STEP_BITS + ZP_TAG_CHUNK_BITS == ZP_TAG_SUB_BITS, "sub's fields");
_Static_assert(ZP_TAG_NPARTS <= (1 << ZP_TAG_PART_BITS), "every purpose has a part");

/* A collective message's sub: step and chunk wrap modulo their width (see
 * above); part is one of zp_tag_part_t. */
static inline uint32_t zp_sub(zp_tag_part_t part, uint32_t step, uint32_t chunk) {
  return ((uint32_t)part << (ZP_TAG_STEP_BITS + ZP_TAG_CHUNK_BITS)) |
         ((step & (ZP_TAG_STEPS - 1)) << ZP_TAG_CHUNK_BITS) | (chunk & (ZP_TAG_CHUNKS - 1));
}
/* sub with its step replaced: a routine handed a base sub (part, chunk)
 * numbers its own steps. */
static inline uint32_t zp_sub_step(uint32_t sub, uint32_t step) {
  uint32_t mask = (ZP_TAG_STEPS - 1) << ZP_TAG_CHUNK_BITS;
  return (sub & ~mask) | ((step << ZP_TAG_CHUNK_BITS) & mask);
}
/* The sub of an algorithm that sends at most one message each way between
 * two ranks (trees, one-round direct and linear exchanges). */
#define ZP_SUB_ALGO zp_sub(ZP_TAG_ALGO, 0, 0)
/* The whole tag of a collective message from rank src in operation seq. */
static inline uint64_t zp_tag(int src, uint32_t seq, uint32_t sub) {
  return zt_tag_head(ZT_TAG_COLL, src) | ((uint64_t)(seq & ((1u << ZP_TAG_SEQ_BITS) - 1)) << ZP_TAG_SUB_BITS) |
         (uint64_t)(sub & ((1u << ZP_TAG_SUB_BITS) - 1));
}

/* Matches every message of rank src in operation seq, whatever its sub. */
static inline uint64_t zp_tag_op_mask(void) { return ZT_TAG_MASK_ALL & ~(uint64_t)((1u << ZP_TAG_SUB_BITS) - 1); }

/* ---- proto's internal messages (kind INTERNAL, zt_tag's layout) ---------------
 * sub 0 and 2 are zcclCommSplit's and zcclCommShrink's exchanges
 * (zccl_connect.c), ZP_SIG_SUB the call signatures (sequence: the
 * collective's, 24 bits), ZP_NOTICE_SUB the failure notices: a sub of
 * their own, so the notices' receive, which takes any sender, takes
 * nothing else; ZP_STALL_SIG_SUB likewise for a stalled call's signature. */
#define ZP_SIG_SUB 1u
#define ZP_NOTICE_SEQ 0xffffffu
#define ZP_NOTICE_SUB 0xffffu
#define ZP_STALL_SIG_SUB 0xfffeu
static inline uint64_t zp_sig_tag(int src, uint32_t seq) { return zt_tag(ZT_TAG_INTERNAL, src, seq, ZP_SIG_SUB); }
static inline uint64_t zp_notice_tag(int src) { return zt_tag(ZT_TAG_INTERNAL, src, ZP_NOTICE_SEQ, ZP_NOTICE_SUB); }
/* A stalled call's signature (zp_stall_sig_t, which carries its sequence). */
static inline uint64_t zp_stall_sig_tag(int src) { return zt_tag(ZT_TAG_INTERNAL, src, ZP_NOTICE_SEQ, ZP_STALL_SIG_SUB); }
/* A notice (or a stalled call's signature) is taken from any sender: the source bits are left out of the match. */
static inline uint64_t zp_notice_mask(void) { return ZT_TAG_MASK_ALL & ~ZT_TAG_SRC_MASK; }

#endif /* ZP_TAG_H_ */
