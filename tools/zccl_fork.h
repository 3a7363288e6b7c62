/* Ranks as forked processes of one program (the GPU test and benchmark:
 * no launcher on a GPU machine, and CUDA must not be touched before the
 * fork). */
#ifndef ZCCL_FORK_H_
#define ZCCL_FORK_H_

#include "zccl.h"

/* Makes a unique id, forks n (1..8) children that each run
 * _exit(fn(rank, id, arg)) and waits for them, at most timeout_s seconds;
 * a child still running then is killed, said on stderr, and counts as 124.
 * Returns 0 when every child exited 0, 77 when every one exited 77
 * (skipped), 1 otherwise (a failure, or some skipped and some not), 2 when
 * n is out of range or no id could be made. */
int zccl_fork_ranks(int n, int (*fn)(int rank, const zcclUniqueId* id, void* arg), void* arg, int timeout_s);

#endif /* ZCCL_FORK_H_ */
