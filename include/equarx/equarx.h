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
  equarxIoError = 7,
  /* Not a result: makes the enum as wide as int, so that any int a caller passes (e.g. to
   * equarxGetErrorString) is a valid value of the type (C++ would otherwise treat an
   * out-of-range value as undefined; UBSan reports it). */
  equarxResult_ForceInt = 0x7FFFFFFF
} equarxResult_t;

typedef enum {
  equarxFloat32 = 0,
  equarxBFloat16 = 1,
  equarxFloat16 = 2,
  equarxDataType_ForceInt = 0x7FFFFFFF /* not a type: any int is a valid value (see above) */
} equarxDataType_t;

typedef enum {
  equarxAlgoRing = 0,
  equarxAlgoFull = 1,
  equarxAlgoFullBidir = 2,
  equarxAlgoSemi = 3,
  equarxAlgoNaiveFp8 = 4,
  equarxAlgoTwoShot = 5,
  equarxAlgoAuto = 6,
  equarxAlgoHierarchical = 7, /* options inner and ranks_per_host: equarxConfigSetOption */
  equarxAlgoOneShot = 8,
  equarxAlgoOneShotRaw = 9,
  equarxAlgoRecursiveDoubling = 10
} equarxAlgorithm_t;

typedef enum { equarxPhasesRS = 1, equarxPhasesAG = 2, equarxPhasesRSAG = 3 } equarxPhases_t;

typedef enum {
  equarxCodecInt8 = 0,
  equarxCodecInt4 = 1,
  equarxCodecFp8E4M3 = 2,
  equarxCodecFp8E5M2 = 3,
  equarxCodecInt6 = 4,
  equarxCodecInt5 = 5
} equarxCodec_t;

/* Stochastic rounding needs an integer codec (int8, int6, int5, int4). */
typedef enum { equarxRoundNearest = 0, equarxRoundStochastic = 1 } equarxRounding_t;

/* How each block's scale is stored (equarx::ScaleFormat). */
typedef enum {
  equarxScaleF32 = 0,
  equarxScaleBF16 = 1,
  equarxScaleTwoLevel = 2, /* bf16 per block + a 4-bit multiplier per 8 elements (integer codecs) */
  equarxScaleDefault = 3   /* the codec's measured default: two_level for integer codecs, else f32 */
} equarxScaleFormat_t;

/* Rotation before quantizing (equarx::Rotation): default = EQUARX_ROTATION, else the codec's
 * measured default; hadamard = seeded random signs and a Walsh-Hadamard transform per block. */
typedef enum {
  equarxRotationDefault = 0,
  equarxRotationNone = 1,
  equarxRotationHadamard = 2
} equarxRotation_t;

/* Options of one AllReduce. Always initialise with EQUARX_CONFIG_INITIALIZER or
 * equarxConfigInit: `size` records which version of the struct the caller was compiled with,
 * so fields can be appended without breaking callers. */
typedef struct {
  size_t size;                /* sizeof(equarxConfig_t) of the caller */
  int algorithm;              /* equarxAlgorithm_t, default equarxAlgoAuto */
  int phases;                 /* equarxPhases_t, default equarxPhasesRSAG */
  int codec;                  /* equarxCodec_t, default equarxCodecInt8 */
  size_t block;               /* elements per scale block, 16..4096; 0 (default) = 128 with
                                 two-level scales, else 64 */
  size_t microshards;         /* 0 = EQUARX_MICROSHARDS, else its default */
  size_t quantize_min_bytes;  /* below this the unquantized ring is used; 0 = never */
  int f32_partials;           /* unquantized RS hops carry f32 */
  uint32_t timeout_ms;        /* 0 = EQUARX_TIMEOUT_MS, else its default */
  int validate;               /* exchange a descriptor first (default 1) */
  /* since 0.2: */
  int rounding;               /* equarxRounding_t, default equarxRoundNearest */
  uint64_t seed;              /* seed of stochastic rounding and of the rotation's signs */
  /* since 0.3: */
  int rotation;               /* equarxRotation_t, default equarxRotationDefault */
  int scale;                  /* equarxScaleFormat_t, default equarxScaleDefault */
  /* Any option of the library's option table by name, as "key=value,key=value" text (set it
   * with equarxConfigSetOption; applied after the fields above). Options added to the library
   * later reach C through this without a new field. */
  char options[256];
} equarxConfig_t;

#define EQUARX_CONFIG_INITIALIZER                                                              \
  { sizeof(equarxConfig_t), equarxAlgoAuto, equarxPhasesRSAG, equarxCodecInt8, 0, 0, 0, 0, \
    0, 1, equarxRoundNearest, 0, equarxRotationDefault, equarxScaleDefault, "" }

/* Opt-in telemetry of one call on one rank (what this rank's encodes did; estimates from the
 * block scales, see equarx::AllReduceStats). Set `size` (EQUARX_STATS_INITIALIZER) so that
 * fields can be appended without breaking callers. */
typedef struct {
  size_t size;              /* sizeof(equarxStats_t) of the caller */
  uint64_t encoded_values;  /* values this rank quantized */
  uint64_t clipped;         /* of those, values beyond the code range before clamping */
  double sum_sq_err_est;    /* estimated sum of squared quantization errors */
  double rms_err_est;       /* sqrt(sum_sq_err_est / encoded_values) */
  double max_abs_err_est;   /* estimated largest abs error of one value */
  double encoded_rms;       /* RMS of the values quantized */
  double rel_rms_err_est;   /* rms_err_est / encoded_rms */
} equarxStats_t;

#define EQUARX_STATS_INITIALIZER { sizeof(equarxStats_t), 0, 0, 0, 0, 0, 0, 0 }

/* Fills `config` with the defaults. */
void equarxConfigInit(equarxConfig_t* config);

/* Sets option `key` (a name of the library's option table, e.g. "rotation", "block", "scale")
 * to `value` (its text form, e.g. "hadamard", "32", "bf16") in `config`: checked now
 * (equarxInvalidArgument for an unknown key or a bad value, with the message in
 * equarxGetLastOptionError) and applied by the AllReduce after the struct's fields. */
equarxResult_t equarxConfigSetOption(equarxConfig_t* config, const char* key, const char* value);
/* The message of the last failed equarxConfigSetOption on this thread ("" if none). */
const char* equarxGetLastOptionError(void);

/* Short name of a result code, e.g. "invalid_argument". Never NULL. */
const char* equarxGetErrorString(equarxResult_t result);

/* Creates `nranks` communicators whose ranks are threads of this process (comms[r] is rank
 * r's); give each to its own thread. */
equarxResult_t equarxCommCreateInProcess(int nranks, equarxComm_t* comms);

/* The set-up's exchange for equarxCommCreate: pass `bytes` bytes from `mine`, receive every
 * rank's `bytes` bytes in rank order into `all` (nranks * bytes), blocking until every rank
 * has contributed; `user` is equarxCommCreate's. Return equarxSuccess, or an error (e.g.
 * equarxTimeout) rather than wait past the set-up's deadline. Called several times, always
 * from the thread that called equarxCommCreate. */
typedef equarxResult_t (*equarxAllGatherFn)(const void* mine, size_t bytes, void* all, void* user);

/* Collective over `nranks` processes, without MPI: creates rank `rank`'s communicator over
 * equarx's own data path, set up through the caller's exchange (e.g. a key-value store;
 * it must be trusted: docs/security.md). `data_path`: "sockets", "host", "shm" or NULL for
 * EQUARX_DATA_PATH (docs/configuration.md); `setup_timeout_ms` <= 0: 60000. A wrong world size or
 * differing data paths fail on every rank (include/equarx/bootstrap.h). */
equarxResult_t equarxCommCreate(int rank, int nranks, equarxAllGatherFn allgather, void* user,
                                const char* data_path, int setup_timeout_ms, equarxComm_t* out);
/* The message of the last failed equarxCommCreate on this thread ("" if none). */
const char* equarxGetLastCreateError(void);

/* Sums `count` elements over all ranks of `comm` into `recvbuff` on every rank; sendbuff ==
 * recvbuff is allowed. `config` may be NULL for the defaults. */
equarxResult_t equarxAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                               equarxDataType_t datatype, const equarxConfig_t* config,
                               equarxComm_t comm);

/* equarxAllReduce with error feedback and telemetry, both optional (NULL = off).
 * `residual`: `count` floats owned by the caller, zeros at first: added to this rank's
 * contribution before quantization and replaced by what this call's quantizations lost (see
 * equarx::AllReduceExtras). `stats`: filled with this call's telemetry. */
equarxResult_t equarxAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                                 equarxDataType_t datatype, const equarxConfig_t* config,
                                 float* residual, equarxStats_t* stats, equarxComm_t comm);

equarxResult_t equarxCommRank(equarxComm_t comm, int* rank);
equarxResult_t equarxCommCount(equarxComm_t comm, int* count);
/* Bytes this rank has sent so far. */
equarxResult_t equarxCommBytesSent(equarxComm_t comm, uint64_t* bytes);
/* Scratch memory the communicator holds for its calls (equarx::CommStats::scratch_bytes). */
equarxResult_t equarxCommScratchBytes(equarxComm_t comm, uint64_t* bytes);
/* Message of the communicator's last failed call ("" if none). Valid until the next call. */
const char* equarxCommGetLastError(equarxComm_t comm);

equarxResult_t equarxCommDestroy(equarxComm_t comm);

#ifdef __cplusplus
}
#endif

#endif /* EQUARX_EQUARX_H_ */
