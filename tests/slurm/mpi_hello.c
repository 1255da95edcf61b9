/* The smallest MPI program that proves a launcher wired a job: every rank prints its rank and the
 * world size it sees, then all ranks agree on the sum of their ranks. Used by slurm_test.sh. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d size %d sum %d\n", rank, size, sum);
  fflush(stdout);
  MPI_Finalize();
  return sum == size * (size - 1) / 2 ? 0 : 1;
}
