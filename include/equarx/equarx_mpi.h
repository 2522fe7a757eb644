/* equarx — C API over MPI (available when equarx was built with MPI). */
#ifndef EQUARX_EQUARX_MPI_H_
#define EQUARX_EQUARX_MPI_H_

#include <mpi.h>

#include "equarx/equarx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over `comm`: creates this process's communicator (comm is duplicated). */
equarxResult_t equarxCommCreateMpi(MPI_Comm comm, equarxComm_t* out);

#ifdef __cplusplus
}
#endif

#endif /* EQUARX_EQUARX_MPI_H_ */
