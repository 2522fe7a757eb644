/* equarx — C99 API, shaped like NCCL's: opaque communicators, result codes, an error string.
 *
 * No C++ exception ever crosses this API. Every function returns an equarxResult_t; the
 * message of a communicator's last failure is kept for equarxCommGetLastError. */
#ifndef EQUARX_EQUARX_H_
#define EQUARX_EQUARX_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct equarxComm* equarxComm_t;

/* Values equal equarx::StatusCode. */
typedef enum {
  equarxSuccess = 0,
  equarxInvalidArgument = 1,
  equarxMismatch = 2,
  equarxTimeout = 3,
  equarxRemoteError = 4,
  equarxInternalError = 5,
  equarxUnsupported = 6,
  equarxIoError = 7
} equarxResult_t;

typedef enum { equarxFloat32 = 0, equarxBFloat16 = 1, equarxFloat16 = 2 } equarxDataType_t;

typedef enum {
  equarxAlgoRing = 0,
  equarxAlgoFull = 1,
  equarxAlgoFullBidir = 2,
  equarxAlgoSemi = 3,
  equarxAlgoNaiveFp8 = 4,
  equarxAlgoTwoShot = 5,
  equarxAlgoAuto = 6
} equarxAlgorithm_t;

typedef enum { equarxPhasesRS = 1, equarxPhasesAG = 2, equarxPhasesRSAG = 3 } equarxPhases_t;

typedef enum { equarxCodecInt8 = 0 } equarxCodec_t;

/* Options of one AllReduce. Always initialise with EQUARX_CONFIG_INITIALIZER or
 * equarxConfigInit: `size` records which version of the struct the caller was compiled with,
 * so fields can be appended without breaking callers. */
typedef struct {
  size_t size;                /* sizeof(equarxConfig_t) of the caller */
  int algorithm;              /* equarxAlgorithm_t, default equarxAlgoFullBidir */
  int phases;                 /* equarxPhases_t, default equarxPhasesRSAG */
  int codec;                  /* equarxCodec_t, default equarxCodecInt8 */
  size_t block;               /* elements per scale block, 32..4096, default 64 */
  size_t microshards;         /* 0 = EQUARX_MICROSHARDS or 4 */
  size_t quantize_min_bytes;  /* below this the unquantized ring is used; 0 = never */
  int f32_partials;           /* unquantized RS hops carry f32 */
  uint32_t timeout_ms;        /* 0 = EQUARX_TIMEOUT_MS or 300000 */
  int validate;               /* exchange a descriptor first (default 1) */
} equarxConfig_t;

#define EQUARX_CONFIG_INITIALIZER \
  { sizeof(equarxConfig_t), equarxAlgoFullBidir, equarxPhasesRSAG, equarxCodecInt8, 64, 0, 0, 0, 0, 1 }

/* Fills `config` with the defaults. */
void equarxConfigInit(equarxConfig_t* config);

/* Short name of a result code, e.g. "invalid_argument". Never NULL. */
const char* equarxGetErrorString(equarxResult_t result);

/* Creates `nranks` communicators whose ranks are threads of this process (comms[r] is rank
 * r's); give each to its own thread. */
equarxResult_t equarxCommCreateInProcess(int nranks, equarxComm_t* comms);

/* Sums `count` elements over all ranks of `comm` into `recvbuff` on every rank; sendbuff ==
 * recvbuff is allowed. `config` may be NULL for the defaults. */
equarxResult_t equarxAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               equarxDataType_t datatype, const equarxConfig_t* config,
                               equarxComm_t comm);

equarxResult_t equarxCommRank(equarxComm_t comm, int* rank);
equarxResult_t equarxCommCount(equarxComm_t comm, int* count);
/* Bytes this rank has sent so far. */
equarxResult_t equarxCommBytesSent(equarxComm_t comm, uint64_t* bytes);
/* Message of the communicator's last failed call ("" if none). Valid until the next call. */
const char* equarxCommGetLastError(equarxComm_t comm);

equarxResult_t equarxCommDestroy(equarxComm_t comm);

#ifdef __cplusplus
}
#endif

#endif /* EQUARX_EQUARX_H_ */
