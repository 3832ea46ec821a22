/* tirc_ccl.h: the collective interface tirc's generated code calls.
 *
 * A program compiled for a device mesh calls one C function per collective, with tirc's
 * DLTensor ABI (docs/abi.md): args = {send, params, recv}. `send` and `recv` are the
 * calling device's local, row-major tensors; `params` is a 1-D int64 tensor
 *
 *     {mesh ndim, mesh shape..., mesh axis, a, b}
 *
 * naming the group (the devices that differ from the caller only along `mesh axis`; device
 * `r` of the mesh has row-major coordinates over the mesh shape; a mesh of shape {0} is every
 * process) and the collective's own two integers. A dimension split over a group is balanced: member c of p holds
 * (n + p - 1 - c) / p rows starting at c * (n / p) + min(c, n % p). Each function returns 0,
 * or nonzero with a message in tirc_ccl_last_error(). Two implementations exist:
 * tirc_ccl_mpi.c (CPU processes, any MPI) and tirc_ccl_nccl.c (CUDA devices, NCCL).
 */
#ifndef TIRC_CCL_H
#define TIRC_CCL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TIRC_DLTENSOR_DEFINED
#define TIRC_DLTENSOR_DEFINED
typedef struct {
  void *data;
  struct { int32_t device_type, device_id; } device;
  int32_t ndim;
  struct { uint8_t code, bits; uint16_t lanes; } dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;
#endif

/* Reductions (params `a` of all_reduce, `b` of reduce_scatter). */
enum { TIRC_CCL_SUM = 0, TIRC_CCL_PROD = 1, TIRC_CCL_MAX = 2, TIRC_CCL_MIN = 3 };

int32_t tirc_ccl_all_reduce(DLTensor **args, int32_t num_args);     /* a: reduction */
int32_t tirc_ccl_all_gather(DLTensor **args, int32_t num_args);     /* a: dimension */
int32_t tirc_ccl_reduce_scatter(DLTensor **args, int32_t num_args); /* a: dimension, b: reduction */
int32_t tirc_ccl_all_to_all(DLTensor **args, int32_t num_args);     /* a: split dim, b: concat dim */
int32_t tirc_ccl_broadcast(DLTensor **args, int32_t num_args);      /* a: root coordinate */
int32_t tirc_ccl_scatter(DLTensor **args, int32_t num_args);        /* a: dimension, b: root */
int32_t tirc_ccl_shard(DLTensor **args, int32_t num_args);          /* a: dimension (no traffic) */

int32_t tirc_ccl_init(void);          /* start the engine if nobody has (idempotent) */
int32_t tirc_ccl_finalize(void);      /* stop it if tirc_ccl_init started it */
int32_t tirc_ccl_rank(void);          /* this process's rank in the world */
int32_t tirc_ccl_size(void);          /* the number of processes */
const char *tirc_ccl_last_error(void);
const char *tirc_ccl_backend(void);   /* "mpi: <library version>" or "nccl <version>" */
/* Bytes this process handed to the engine to send, and collectives called, since reset. */
int64_t tirc_ccl_bytes_sent(void);
int64_t tirc_ccl_calls(void);
void tirc_ccl_reset_counters(void);

#ifdef __cplusplus
}
#endif
#endif
