/* tirc_ccl_nccl.c: the collective interface (tirc_ccl.h) on NCCL, for CUDA devices.
 *
 * Written against NCCL's documented C API (2.18 or newer, for ncclCommSplit) and the CUDA
 * runtime. One process drives one GPU (the current CUDA device); the mesh's devices are the
 * world communicator's ranks in order. The world is made by tirc_ccl_nccl_init_rank (every
 * process passes the same ncclUniqueId, which rank 0 made with tirc_ccl_nccl_unique_id and
 * sent to the others, e.g. over MPI), or, for one process, by tirc_ccl_init alone. Each
 * group (mesh shape, axis) is an ncclCommSplit of the world, made once. `send` and `recv`
 * are device tensors; `params` is read on the host. Uneven splits use grouped broadcasts
 * (all-gather), grouped reduces (reduce-scatter) and send/recv pairs (all-to-all). Every call
 * runs on the default stream and waits for it, so the caller sees finished data.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>

#include "tirc_ccl_common.h"

static ncclComm_t ccl_world = NULL;
static int ccl_world_rank = 0, ccl_world_size = 1;

#define CCL_MAX_GROUPS 64
static struct {
  int used;
  int ndim;
  int64_t mesh[TIRC_CCL_MAX_DIMS];
  int axis;
  ncclComm_t comm;
} ccl_groups[CCL_MAX_GROUPS];

static int32_t ccl_nccl(const char *name, ncclResult_t r) {
  if (r == ncclSuccess) return 0;
  return ccl_fail("%s: NCCL error: %s", name, ncclGetErrorString(r));
}

static int32_t ccl_cuda(const char *name, cudaError_t e) {
  if (e == cudaSuccess) return 0;
  return ccl_fail("%s: CUDA error: %s", name, cudaGetErrorString(e));
}

/* The 128-byte id rank 0 makes and every rank passes to tirc_ccl_nccl_init_rank. */
int32_t tirc_ccl_nccl_unique_id(char *out, int32_t size) {
  ncclUniqueId id;
  if (size < (int32_t)sizeof id) return ccl_fail("tirc_ccl_nccl_unique_id: buffer too small");
  if (ccl_nccl("tirc_ccl_nccl_unique_id", ncclGetUniqueId(&id)) != 0) return -1;
  memcpy(out, &id, sizeof id);
  return (int32_t)sizeof id;
}

int32_t tirc_ccl_nccl_init_rank(const char *id_bytes, int32_t nranks, int32_t rank) {
  if (ccl_world != NULL) return 0;
  ncclUniqueId id;
  memcpy(&id, id_bytes, sizeof id);
  if (ccl_nccl("tirc_ccl_nccl_init_rank", ncclCommInitRank(&ccl_world, nranks, id, rank)) != 0)
    return -1;
  ccl_world_rank = rank;
  ccl_world_size = nranks;
  return 0;
}

int32_t tirc_ccl_init(void) {
  if (ccl_world != NULL) return 0;
  int device = 0;
  if (ccl_cuda("tirc_ccl_init", cudaGetDevice(&device)) != 0) return -1;
  if (ccl_nccl("tirc_ccl_init", ncclCommInitAll(&ccl_world, 1, &device)) != 0) return -1;
  ccl_world_rank = 0;
  ccl_world_size = 1;
  return 0;
}

int32_t tirc_ccl_finalize(void) {
  for (int k = 0; k < CCL_MAX_GROUPS; ++k)
    if (ccl_groups[k].used) ncclCommDestroy(ccl_groups[k].comm);
  memset(ccl_groups, 0, sizeof ccl_groups);
  if (ccl_world != NULL) ncclCommDestroy(ccl_world);
  ccl_world = NULL;
  return 0;
}

int32_t tirc_ccl_rank(void) { return tirc_ccl_init() == 0 ? ccl_world_rank : -1; }
int32_t tirc_ccl_size(void) { return tirc_ccl_init() == 0 ? ccl_world_size : -1; }

const char *tirc_ccl_backend(void) {
  static char text[64];
  int version = 0;
  ncclGetVersion(&version);
  snprintf(text, sizeof text, "nccl %d", version);
  return text;
}

static int32_t ccl_begin(const char *name, DLTensor **args, int32_t num_args, ccl_call *c,
                         ncclComm_t *comm) {
  if (tirc_ccl_init() != 0) return -1;
  if (ccl_parse(name, args, num_args, ccl_world_rank, ccl_world_size, c) != 0) return -1;
  if (c->send->device.device_type != 2 || c->recv->device.device_type != 2)
    return ccl_fail("%s: the NCCL shim takes CUDA tensors", name);
  tirc_ccl_ncalls++;
  int free_slot = -1;
  for (int k = 0; k < CCL_MAX_GROUPS; ++k) {
    if (!ccl_groups[k].used) {
      if (free_slot < 0) free_slot = k;
      continue;
    }
    if (ccl_groups[k].ndim != c->ndim_mesh || ccl_groups[k].axis != c->axis) continue;
    if (memcmp(ccl_groups[k].mesh, c->mesh, sizeof(int64_t) * (size_t)c->ndim_mesh)) continue;
    *comm = ccl_groups[k].comm;
    return 0;
  }
  if (free_slot < 0) return ccl_fail("%s: too many distinct meshes", name);
  if (ccl_nccl(name, ncclCommSplit(ccl_world, (int)c->color, (int)c->coord, comm, NULL)) != 0)
    return -1;
  ccl_groups[free_slot].used = 1;
  ccl_groups[free_slot].ndim = c->ndim_mesh;
  ccl_groups[free_slot].axis = c->axis;
  memcpy(ccl_groups[free_slot].mesh, c->mesh, sizeof(int64_t) * (size_t)c->ndim_mesh);
  ccl_groups[free_slot].comm = *comm;
  return 0;
}

static int ccl_type(const DLTensor *t, ncclDataType_t *out) {
  int code = t->dtype.code, bits = t->dtype.bits;
  if (t->dtype.lanes > 1) return -1;
  if (code == 2 && bits == 16) *out = ncclFloat16;
  else if (code == 2 && bits == 32) *out = ncclFloat32;
  else if (code == 2 && bits == 64) *out = ncclFloat64;
  else if (code == 4 && bits == 16) *out = ncclBfloat16;
  else if (code == 0 && bits == 8) *out = ncclInt8;
  else if (code == 0 && bits == 32) *out = ncclInt32;
  else if (code == 0 && bits == 64) *out = ncclInt64;
  else if ((code == 1 || code == 6) && bits == 8) *out = ncclUint8;
  else if (code == 1 && bits == 32) *out = ncclUint32;
  else if (code == 1 && bits == 64) *out = ncclUint64;
  else return -1;
  return 0;
}

static int32_t ccl_reduction(const ccl_call *c, int64_t op, ncclDataType_t *type,
                             ncclRedOp_t *rop) {
  if (ccl_type(c->send, type) != 0)
    return ccl_fail("%s: NCCL cannot reduce dtype code %d bits %d", c->name,
                    c->send->dtype.code, c->send->dtype.bits);
  switch (op) {
    case TIRC_CCL_SUM: *rop = ncclSum; return 0;
    case TIRC_CCL_PROD: *rop = ncclProd; return 0;
    case TIRC_CCL_MAX: *rop = ncclMax; return 0;
    case TIRC_CCL_MIN: *rop = ncclMin; return 0;
    default: return ccl_fail("%s: unknown reduction %lld", c->name, (long long)op);
  }
}

static void ccl_device_copy(void *dst, const void *src, size_t bytes, void *ctx) {
  (void)ctx;
  cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
}

static int64_t ccl_rest(const DLTensor *t, int64_t dim) {
  return ccl_numel(t) / (t->shape[dim] ? t->shape[dim] : 1);
}

/* Between a whole device tensor and its members' blocks one after another. */
static void ccl_blocks(const ccl_call *c, char *whole_data, const DLTensor *whole, int64_t dim,
                       char *blocks, int to_blocks) {
  int64_t box[TIRC_CCL_MAX_DIMS], bshape[TIRC_CCL_MAX_DIMS], zero[TIRC_CCL_MAX_DIMS] = {0};
  int64_t woff[TIRC_CCL_MAX_DIMS] = {0};
  char *at = blocks;
  for (int64_t j = 0; j < c->p; ++j) {
    for (int k = 0; k < whole->ndim; ++k) box[k] = bshape[k] = whole->shape[k];
    box[dim] = bshape[dim] = ccl_part(whole->shape[dim], c->p, j);
    woff[dim] = ccl_offset(whole->shape[dim], c->p, j);
    if (to_blocks)
      ccl_box(at, bshape, zero, whole_data, whole->shape, woff, box, whole->ndim, c->esize,
              ccl_device_copy, NULL);
    else
      ccl_box(whole_data, whole->shape, woff, at, bshape, zero, box, whole->ndim, c->esize,
              ccl_device_copy, NULL);
    at += box[dim] * ccl_rest(whole, dim) * c->esize;
  }
}

static int ccl_outermost(const DLTensor *t, int64_t dim) {
  for (int64_t k = 0; k < dim; ++k)
    if (t->shape[k] != 1) return 0;
  return 1;
}

static int32_t ccl_finish(const char *name, ncclResult_t r) {
  if (ccl_nccl(name, r) != 0) return -1;
  return ccl_cuda(name, cudaStreamSynchronize(0));
}

int32_t tirc_ccl_all_reduce(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_all_reduce", args, num_args, &c, &comm) != 0) return -1;
  ncclDataType_t type;
  ncclRedOp_t op;
  if (ccl_reduction(&c, c.a, &type, &op) != 0) return -1;
  tirc_ccl_sent += ccl_numel(c.send) * c.esize;
  return ccl_finish(c.name, ncclAllReduce(ccl_data(c.send), ccl_data(c.recv),
                                          (size_t)ccl_numel(c.send), type, op, comm, 0));
}

int32_t tirc_ccl_all_gather(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_all_gather", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  int64_t dim = c.a, n = c.recv->shape[dim], rest = ccl_rest(c.recv, dim) * c.esize;
  if (c.send->shape[dim] != ccl_part(n, c.p, c.coord))
    return ccl_fail("%s: this device holds %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.send->shape[dim], (long long)dim,
                    (long long)ccl_part(n, c.p, c.coord));
  int direct = ccl_outermost(c.recv, dim);
  char *tmp = ccl_data(c.recv);
  if (!direct && ccl_cuda(c.name, cudaMalloc((void **)&tmp, (size_t)(n * rest + 1))) != 0)
    return -1;
  tirc_ccl_sent += ccl_numel(c.send) * c.esize;
  ncclResult_t r = ncclSuccess;
  if (n % c.p == 0) {
    r = ncclAllGather(ccl_data(c.send), tmp, (size_t)(n / c.p * rest), ncclUint8, comm, 0);
  } else {
    ncclGroupStart();
    for (int64_t j = 0; j < c.p && r == ncclSuccess; ++j)
      r = ncclBroadcast(ccl_data(c.send), tmp + ccl_offset(n, c.p, j) * rest,
                        (size_t)(ccl_part(n, c.p, j) * rest), ncclUint8, (int)j, comm, 0);
    ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess) r = end;
  }
  if (r == ncclSuccess && !direct) ccl_blocks(&c, ccl_data(c.recv), c.recv, dim, tmp, 0);
  int32_t code = ccl_finish(c.name, r);
  if (!direct) cudaFree(tmp);
  return code;
}

int32_t tirc_ccl_reduce_scatter(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_reduce_scatter", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  ncclDataType_t type;
  ncclRedOp_t op;
  if (ccl_reduction(&c, c.b, &type, &op) != 0) return -1;
  int64_t dim = c.a, n = c.send->shape[dim], rest = ccl_rest(c.send, dim);
  if (c.recv->shape[dim] != ccl_part(n, c.p, c.coord))
    return ccl_fail("%s: recv has %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.recv->shape[dim], (long long)dim,
                    (long long)ccl_part(n, c.p, c.coord));
  int direct = ccl_outermost(c.send, dim);
  char *tmp = ccl_data(c.send);
  if (!direct) {
    if (ccl_cuda(c.name, cudaMalloc((void **)&tmp, (size_t)(n * rest * c.esize + 1))) != 0)
      return -1;
    ccl_blocks(&c, ccl_data(c.send), c.send, dim, tmp, 1);
  }
  tirc_ccl_sent += ccl_numel(c.send) * c.esize;
  ncclResult_t r = ncclSuccess;
  if (n % c.p == 0) {
    r = ncclReduceScatter(tmp, ccl_data(c.recv), (size_t)(n / c.p * rest), type, op, comm, 0);
  } else {
    ncclGroupStart();
    for (int64_t j = 0; j < c.p && r == ncclSuccess; ++j)
      r = ncclReduce(tmp + ccl_offset(n, c.p, j) * rest * c.esize, ccl_data(c.recv),
                     (size_t)(ccl_part(n, c.p, j) * rest), type, op, (int)j, comm, 0);
    ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess) r = end;
  }
  int32_t code = ccl_finish(c.name, r);
  if (!direct) cudaFree(tmp);
  return code;
}

int32_t tirc_ccl_all_to_all(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_all_to_all", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0 || ccl_check_dim(&c, c.b) != 0) return -1;
  int64_t split = c.a, cat = c.b;
  if (split == cat) return ccl_fail("%s: split and concat dimensions are the same", c.name);
  int64_t sbytes = ccl_numel(c.send) * c.esize, rbytes = ccl_numel(c.recv) * c.esize;
  char *sbuf = NULL, *rbuf = NULL;
  if (ccl_cuda(c.name, cudaMalloc((void **)&sbuf, (size_t)sbytes + 1)) != 0) return -1;
  if (ccl_cuda(c.name, cudaMalloc((void **)&rbuf, (size_t)rbytes + 1)) != 0) {
    cudaFree(sbuf);
    return -1;
  }
  ccl_blocks(&c, ccl_data(c.send), c.send, split, sbuf, 1);
  int64_t srest = ccl_rest(c.send, split) * c.esize, rrest = ccl_rest(c.recv, cat) * c.esize;
  ncclResult_t r = ncclSuccess;
  ncclGroupStart();
  int64_t sat = 0, rat = 0;
  for (int64_t j = 0; j < c.p && r == ncclSuccess; ++j) {
    int64_t sn = ccl_part(c.send->shape[split], c.p, j) * srest;
    int64_t rn = ccl_part(c.recv->shape[cat], c.p, j) * rrest;
    r = ncclSend(sbuf + sat, (size_t)sn, ncclUint8, (int)j, comm, 0);
    if (r == ncclSuccess) r = ncclRecv(rbuf + rat, (size_t)rn, ncclUint8, (int)j, comm, 0);
    if (j != c.coord) tirc_ccl_sent += sn;
    sat += sn;
    rat += rn;
  }
  ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r == ncclSuccess) ccl_blocks(&c, ccl_data(c.recv), c.recv, cat, rbuf, 0);
  int32_t code = ccl_finish(c.name, r);
  cudaFree(sbuf);
  cudaFree(rbuf);
  return code;
}

int32_t tirc_ccl_broadcast(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_broadcast", args, num_args, &c, &comm) != 0) return -1;
  if (c.a < 0 || c.a >= c.p) return ccl_fail("%s: root %lld is not in the group", c.name,
                                              (long long)c.a);
  int64_t bytes = ccl_numel(c.recv) * c.esize;
  if (c.coord == c.a) tirc_ccl_sent += bytes;
  return ccl_finish(c.name, ncclBroadcast(ccl_data(c.send), ccl_data(c.recv), (size_t)bytes,
                                          ncclUint8, (int)c.a, comm, 0));
}

int32_t tirc_ccl_shard(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_shard", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  int64_t dim = c.a, off[TIRC_CCL_MAX_DIMS] = {0}, zero[TIRC_CCL_MAX_DIMS] = {0};
  if (c.recv->shape[dim] != ccl_part(c.send->shape[dim], c.p, c.coord))
    return ccl_fail("%s: recv has %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.recv->shape[dim], (long long)dim,
                    (long long)ccl_part(c.send->shape[dim], c.p, c.coord));
  off[dim] = ccl_offset(c.send->shape[dim], c.p, c.coord);
  ccl_box(ccl_data(c.recv), c.recv->shape, zero, ccl_data(c.send), c.send->shape, off,
          c.recv->shape, c.send->ndim, c.esize, ccl_device_copy, NULL);
  return ccl_cuda(c.name, cudaStreamSynchronize(0));
}

int32_t tirc_ccl_scatter(DLTensor **args, int32_t num_args) {
  ccl_call c;
  ncclComm_t comm;
  if (ccl_begin("tirc_ccl_scatter", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  if (c.b < 0 || c.b >= c.p) return ccl_fail("%s: root %lld is not in the group", c.name,
                                              (long long)c.b);
  int64_t dim = c.a, n = c.send->shape[dim], rest = ccl_rest(c.send, dim) * c.esize;
  if (c.recv->shape[dim] != ccl_part(n, c.p, c.coord))
    return ccl_fail("%s: recv has %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.recv->shape[dim], (long long)dim,
                    (long long)ccl_part(n, c.p, c.coord));
  int root = c.coord == c.b, direct = ccl_outermost(c.send, dim);
  char *tmp = ccl_data(c.send);
  if (root && !direct) {
    if (ccl_cuda(c.name, cudaMalloc((void **)&tmp, (size_t)(n * rest + 1))) != 0) return -1;
    ccl_blocks(&c, ccl_data(c.send), c.send, dim, tmp, 1);
  }
  ncclResult_t r = ncclSuccess;
  ncclGroupStart();
  if (root)
    for (int64_t j = 0; j < c.p && r == ncclSuccess; ++j) {
      int64_t bytes = ccl_part(n, c.p, j) * rest;
      r = ncclSend(tmp + ccl_offset(n, c.p, j) * rest, (size_t)bytes, ncclUint8, (int)j, comm, 0);
      if (j != c.coord) tirc_ccl_sent += bytes;
    }
  if (r == ncclSuccess)
    r = ncclRecv(ccl_data(c.recv), (size_t)(ccl_part(n, c.p, c.coord) * rest), ncclUint8,
                 (int)c.b, comm, 0);
  ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  int32_t code = ccl_finish(c.name, r);
  if (root && !direct) cudaFree(tmp);
  return code;
}
