/* equarx C example over MPI: run with `mpirun -np 4 ./equarx_c_example_mpi`.
 * Every rank contributes rank + 1 (integers), the unquantized ring must give the exact sum,
 * and the int8 full_bidir AllReduce of a smooth signal must agree on every rank.
 * A failed AllReduce ends the whole job (MPI_Abort): a peer may be dead or stopped, and the
 * MPI calls that follow (the broadcast and reduction of the check) would wait for it forever. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "equarx/equarx_mpi.h"

#define COUNT 65536

/* Reports a failed AllReduce and ends the job; the communicator cannot be used again. */
static void EndJobIfFailed(equarxResult_t r, int rank, equarxComm_t comm) {
  if (r == equarxSuccess) return;
  fprintf(stderr, "rank %d: %s: %s; ending the job\n", rank, equarxGetErrorString(r),
          equarxCommGetLastError(comm));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, failed = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  equarxComm_t comm;
  equarxResult_t r = equarxCommCreateMpi(MPI_COMM_WORLD, &comm);
  if (r != equarxSuccess) {
    fprintf(stderr, "rank %d: create: %s\n", rank, equarxGetErrorString(r));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float* x = malloc(COUNT * sizeof(float));
  float* y = malloc(COUNT * sizeof(float));
  for (int i = 0; i < COUNT; ++i) x[i] = (float)(rank + 1);
  equarxConfig_t ring;
  equarxConfigInit(&ring);
  ring.algorithm = equarxAlgoRing;
  r = equarxAllReduce(x, y, COUNT, equarxFloat32, &ring, comm);
  EndJobIfFailed(r, rank, comm);
  const float expect = (float)(size * (size + 1) / 2);
  for (int i = 0; i < COUNT && !failed; ++i) failed = y[i] != expect;

  for (int i = 0; i < COUNT; ++i) x[i] = cosf(0.01f * (float)(i + rank));
  r = equarxAllReduce(x, y, COUNT, equarxFloat32, NULL, comm); /* defaults: int8 full_bidir */
  EndJobIfFailed(r, rank, comm);
  float* root = malloc(COUNT * sizeof(float));
  memcpy(root, y, COUNT * sizeof(float));
  MPI_Bcast(root, COUNT, MPI_FLOAT, 0, MPI_COMM_WORLD);
  if (memcmp(root, y, COUNT * sizeof(float)) != 0) failed = 1;

  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("%d ranks: exact ring %s, int8 results identical on every rank: %s\n", size,
                        any ? "?" : "ok", any ? "FAILED" : "ok");
  equarxCommDestroy(comm);
  free(x);
  free(y);
  free(root);
  MPI_Finalize();
  return any;
}
