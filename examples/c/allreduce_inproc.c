/* equarx C example: a 4-rank in-process AllReduce, one POSIX thread per rank.
 * Each rank contributes (rank + 1) * x[i]; the sum is checked against 10 * x[i]. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "equarx/equarx.h"

#define RANKS 4
#define COUNT 100000

typedef struct {
  equarxComm_t comm;
  int rank;
  float* data;
  equarxResult_t result;
} Job;

static void* Run(void* arg) {
  Job* job = (Job*)arg;
  equarxConfig_t config = EQUARX_CONFIG_INITIALIZER;
  config.algorithm = equarxAlgoSemi;
  /* This smooth signal is flat within each block, the one case where the default rotation
   * (hadamard for int8) does not help: it makes a flat block Gaussian-like, whose absmax is
   * about 2.4x its RMS. The check below is for the plain codec's error. */
  config.rotation = equarxRotationNone;
  job->result = equarxAllReduce(job->data, job->data, COUNT, equarxFloat32, &config, job->comm);
  return NULL;
}

int main(void) {
  equarxComm_t comms[RANKS];
  equarxResult_t r = equarxCommCreateInProcess(RANKS, comms);
  if (r != equarxSuccess) {
    fprintf(stderr, "create: %s\n", equarxGetErrorString(r));
    return 1;
  }
  pthread_t threads[RANKS];
  Job jobs[RANKS];
  for (int k = 0; k < RANKS; ++k) {
    jobs[k].comm = comms[k];
    jobs[k].rank = k;
    jobs[k].data = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; ++i) jobs[k].data[i] = (float)(k + 1) * sinf(0.001f * (float)i);
    pthread_create(&threads[k], NULL, Run, &jobs[k]);
  }
  int failed = 0;
  for (int k = 0; k < RANKS; ++k) pthread_join(threads[k], NULL);
  double max_err = 0;
  for (int k = 0; k < RANKS; ++k) {
    if (jobs[k].result != equarxSuccess) {
      fprintf(stderr, "rank %d: %s\n", k, equarxCommGetLastError(comms[k]));
      failed = 1;
      continue;
    }
    for (int i = 0; i < COUNT; ++i) {
      double e = fabs(jobs[k].data[i] - 10.0 * sin(0.001 * i));
      if (e > max_err) max_err = e;
      if (jobs[k].data[i] != jobs[0].data[i]) failed = 1;
    }
  }
  /* int8 semi-loop on 4 ranks: |error| <= a few blockmax/254, blockmax <= 10 here. */
  uint64_t sent = 0;
  equarxCommBytesSent(comms[0], &sent);
  printf("4 ranks, %d floats, semi int8: max abs error %.4f, rank 0 sent %llu bytes\n", COUNT,
         max_err, (unsigned long long)sent);
  if (max_err > 0.2) failed = 1;
  /* A bad argument is a status, not a crash. */
  if (equarxAllReduce(NULL, NULL, 1, equarxFloat32, NULL, NULL) != equarxInvalidArgument) failed = 1;
  for (int k = 0; k < RANKS; ++k) {
    equarxCommDestroy(comms[k]);
    free(jobs[k].data);
  }
  printf("%s\n", failed ? "FAILED" : "ok");
  return failed;
}
