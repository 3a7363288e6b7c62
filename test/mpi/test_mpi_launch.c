/* Under mpirun: the unique id, broadcast with MPI_Bcast as NCCL users do,
 * lets every rank make its own 1-rank communicator, and the N-rank init answers the same on every
 * rank, promptly (success once the transport exists, a clear zcclInvalidUsage
 * before), never a hang or a crash. */
#include <mpi.h>

#include "test_util.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size >= 2);

  zcclUniqueId id;
  if (rank == 0) CHECK_RES(zcclGetUniqueId(&id), zcclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);

  zcclComm_t self;
  CHECK_RES(zcclCommInitRank(&self, 1, id, 0), zcclSuccess);
  int n = 0;
  CHECK_RES(zcclCommCount(self, &n), zcclSuccess);
  CHECK(n == 1);
  CHECK_RES(zcclCommDestroy(self), zcclSuccess);

  zcclComm_t world = NULL;
  zcclResult_t r = zcclCommInitRank(&world, size, id, rank);
  CHECK(r == zcclSuccess || r == zcclInvalidUsage);
  int lo = (int)r, hi = (int)r;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi); /* every rank answered the same */
  if (r == zcclSuccess) {
    CHECK_RES(zcclCommCount(world, &n), zcclSuccess);
    CHECK(n == size);
    CHECK_RES(zcclCommDestroy(world), zcclSuccess);
  } else {
    CHECK_LAST_ERROR_HAS("not built yet");
  }

  int failed = test_failures;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("%d ranks, %d failed checks in all\n", size, failed);
  MPI_Finalize();
  return failed ? 1 : 0;
}
