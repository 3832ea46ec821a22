/* tirc_ccl_mpi.c: the collective interface (tirc_ccl.h) on MPI, for CPU processes.
 *
 * Compiled by the runtime with the `mpicc` of the MPI that is installed (MPICH or Open MPI:
 * only the MPI standard's C API is used), into a shared library loaded before a program.
 * One process is one device; the mesh's devices are MPI_COMM_WORLD's ranks in order. The
 * group of each (mesh shape, axis) is an MPI_Comm_split of the world, made once. A split
 * dimension travels as counts of the balanced split (MPI_Allgatherv, MPI_Reduce_scatter,
 * MPI_Alltoallv); when it is not the outermost one, the blocks are packed and unpacked
 * around the call. MPI errors come back as return codes with MPI's message.
 */
#include <mpi.h>
#include <stdlib.h>

#include "tirc_ccl_common.h"

static int ccl_started_mpi = 0;
static MPI_Op ccl_half_ops[2][4];  /* float16, bfloat16 x sum, prod, max, min */
static int ccl_half_made[2][4];

#define CCL_MAX_GROUPS 64
static struct {
  int used;
  int ndim;
  int64_t mesh[TIRC_CCL_MAX_DIMS];
  int axis;
  MPI_Comm comm;
} ccl_groups[CCL_MAX_GROUPS];

static int32_t ccl_mpi_error(const char *name, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return ccl_fail("%s: MPI error: %.*s", name, len, text);
}

int32_t tirc_ccl_init(void) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) return ccl_fail("tirc_ccl_init: MPI has already been finalized");
  if (!inited) {
    int provided = 0;
    int code = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (code != MPI_SUCCESS) return ccl_mpi_error("tirc_ccl_init", code);
    ccl_started_mpi = 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return 0;
}

int32_t tirc_ccl_finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  for (int t = 0; t < 2; ++t)
    for (int k = 0; k < 4; ++k)
      if (!finalized && ccl_half_made[t][k]) MPI_Op_free(&ccl_half_ops[t][k]);
  memset(ccl_half_made, 0, sizeof ccl_half_made);
  for (int k = 0; k < CCL_MAX_GROUPS; ++k)
    if (ccl_groups[k].used && !finalized) MPI_Comm_free(&ccl_groups[k].comm);
  memset(ccl_groups, 0, sizeof ccl_groups);
  if (ccl_started_mpi && !finalized) {
    ccl_started_mpi = 0;
    MPI_Finalize();
  }
  return 0;
}

int32_t tirc_ccl_rank(void) {
  if (tirc_ccl_init() != 0) return -1;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int32_t tirc_ccl_size(void) {
  if (tirc_ccl_init() != 0) return -1;
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

const char *tirc_ccl_backend(void) {
  static char text[MPI_MAX_LIBRARY_VERSION_STRING + 8];
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  char *nl = memchr(version, '\n', (size_t)len);
  if (nl != NULL) len = (int)(nl - version);
  snprintf(text, sizeof text, "mpi: %.*s", len, version);
  return text;
}

/* Parse a call and find (or make) its group's communicator. */
static int32_t ccl_begin(const char *name, DLTensor **args, int32_t num_args, ccl_call *c,
                         MPI_Comm *comm) {
  if (tirc_ccl_init() != 0) return -1;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (ccl_parse(name, args, num_args, rank, size, c) != 0) return -1;
  if (c->send->device.device_type != 1 || c->recv->device.device_type != 1)
    return ccl_fail("%s: the MPI shim takes CPU tensors", name);
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
  int code = MPI_Comm_split(MPI_COMM_WORLD, (int)c->color, (int)c->coord, comm);
  if (code != MPI_SUCCESS) return ccl_mpi_error(name, code);
  MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
  ccl_groups[free_slot].used = 1;
  ccl_groups[free_slot].ndim = c->ndim_mesh;
  ccl_groups[free_slot].axis = c->axis;
  memcpy(ccl_groups[free_slot].mesh, c->mesh, sizeof(int64_t) * (size_t)c->ndim_mesh);
  ccl_groups[free_slot].comm = *comm;
  return 0;
}

/* The MPI datatype of a DLPack dtype (reductions need a real type, not bytes). */
static MPI_Datatype ccl_type(const DLTensor *t) {
  int code = t->dtype.code, bits = t->dtype.bits;
  if (t->dtype.lanes > 1) return MPI_DATATYPE_NULL;
  if (code == 2 && bits == 32) return MPI_FLOAT;
  if (code == 2 && bits == 64) return MPI_DOUBLE;
  if (code == 0 && bits == 8) return MPI_INT8_T;
  if (code == 0 && bits == 16) return MPI_INT16_T;
  if (code == 0 && bits == 32) return MPI_INT32_T;
  if (code == 0 && bits == 64) return MPI_INT64_T;
  if (code == 1 && bits == 8) return MPI_UINT8_T;
  if (code == 1 && bits == 16) return MPI_UINT16_T;
  if (code == 1 && bits == 32) return MPI_UINT32_T;
  if (code == 1 && bits == 64) return MPI_UINT64_T;
  if (code == 6 && bits == 8) return MPI_UINT8_T;  /* bool: 0/1 bytes */
  return MPI_DATATYPE_NULL;
}

/* float16 and bfloat16 have no MPI type: they travel as 16-bit integers and reduce with
 * user-defined operations that compute in float (each element rounded back, to nearest even). */
static float ccl_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    int e = -1;
    do { ++e; man <<= 1; } while (!(man & 0x400));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t ccl_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e), half = man >> shift, rest = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t out = sign | ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (out & 1))) ++out;
  return (uint16_t)out;
}

static float ccl_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t ccl_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

#define CCL_HALF_OP(NAME, TO, FROM, EXPR)                                          \
  static void NAME(void *in, void *inout, int *len, MPI_Datatype *type) {          \
    (void)type;                                                                    \
    const uint16_t *a = (const uint16_t *)in;                                      \
    uint16_t *b = (uint16_t *)inout;                                               \
    for (int i = 0; i < *len; ++i) {                                               \
      float x = TO(a[i]), y = TO(b[i]);                                            \
      b[i] = FROM(EXPR);                                                           \
    }                                                                              \
  }
CCL_HALF_OP(ccl_f16_sum, ccl_half_to_float, ccl_float_to_half, x + y)
CCL_HALF_OP(ccl_f16_prod, ccl_half_to_float, ccl_float_to_half, x * y)
CCL_HALF_OP(ccl_f16_max, ccl_half_to_float, ccl_float_to_half, x > y || x != x ? x : y)
CCL_HALF_OP(ccl_f16_min, ccl_half_to_float, ccl_float_to_half, x < y || x != x ? x : y)
CCL_HALF_OP(ccl_bf16_sum, ccl_bf16_to_float, ccl_float_to_bf16, x + y)
CCL_HALF_OP(ccl_bf16_prod, ccl_bf16_to_float, ccl_float_to_bf16, x * y)
CCL_HALF_OP(ccl_bf16_max, ccl_bf16_to_float, ccl_float_to_bf16, x > y || x != x ? x : y)
CCL_HALF_OP(ccl_bf16_min, ccl_bf16_to_float, ccl_float_to_bf16, x < y || x != x ? x : y)

static MPI_Op ccl_half_op(int bf16, int64_t op) {
  static MPI_User_function *fns[2][4] = {
      {ccl_f16_sum, ccl_f16_prod, ccl_f16_max, ccl_f16_min},
      {ccl_bf16_sum, ccl_bf16_prod, ccl_bf16_max, ccl_bf16_min}};
  if (op < 0 || op > 3) return MPI_OP_NULL;
  if (!ccl_half_made[bf16][op]) {
    if (MPI_Op_create(fns[bf16][op], 1, &ccl_half_ops[bf16][op]) != MPI_SUCCESS)
      return MPI_OP_NULL;
    ccl_half_made[bf16][op] = 1;
  }
  return ccl_half_ops[bf16][op];
}

static MPI_Op ccl_op(int64_t op) {
  switch (op) {
    case TIRC_CCL_SUM: return MPI_SUM;
    case TIRC_CCL_PROD: return MPI_PROD;
    case TIRC_CCL_MAX: return MPI_MAX;
    case TIRC_CCL_MIN: return MPI_MIN;
    default: return MPI_OP_NULL;
  }
}

static int32_t ccl_reduction(const ccl_call *c, int64_t op, MPI_Datatype *type, MPI_Op *mop) {
  int code = c->send->dtype.code, bits = c->send->dtype.bits;
  if (bits == 16 && (code == 2 || code == 4) && c->send->dtype.lanes <= 1) {
    *type = MPI_UINT16_T;
    *mop = ccl_half_op(code == 4, op);
    if (*mop == MPI_OP_NULL)
      return ccl_fail("%s: unknown reduction %lld", c->name, (long long)op);
    return 0;
  }
  *type = ccl_type(c->send);
  *mop = ccl_op(op);
  if (*type == MPI_DATATYPE_NULL)
    return ccl_fail("%s: MPI cannot reduce dtype code %d bits %d", c->name,
                    c->send->dtype.code, c->send->dtype.bits);
  if (*mop == MPI_OP_NULL) return ccl_fail("%s: unknown reduction %lld", c->name, (long long)op);
  return 0;
}

static void ccl_memcpy(void *dst, const void *src, size_t bytes, void *ctx) {
  (void)ctx;
  memcpy(dst, src, bytes);
}

/* Sizes of an `n`-row dimension split over the group, in elements of the whole tensor. */
static void ccl_counts(const ccl_call *c, const DLTensor *whole, int64_t dim, int *counts,
                       int *displs) {
  int64_t rest = ccl_numel(whole) / (whole->shape[dim] ? whole->shape[dim] : 1);
  int64_t at = 0;
  for (int64_t j = 0; j < c->p; ++j) {
    int64_t n = ccl_part(whole->shape[dim], c->p, j) * rest * c->esize;
    counts[j] = (int)n;
    displs[j] = (int)at;
    at += n;
  }
}

/* Between a whole tensor and its members' blocks stored one after another: to_blocks packs
 * `whole` into `blocks`, else unpacks. */
static void ccl_blocks(const ccl_call *c, char *whole_data, const DLTensor *whole, int64_t dim,
                       char *blocks, int to_blocks) {
  int64_t box[TIRC_CCL_MAX_DIMS], bshape[TIRC_CCL_MAX_DIMS], zero[TIRC_CCL_MAX_DIMS] = {0};
  int64_t woff[TIRC_CCL_MAX_DIMS] = {0};
  char *at = blocks;
  for (int64_t j = 0; j < c->p; ++j) {
    int64_t rows = ccl_part(whole->shape[dim], c->p, j);
    for (int k = 0; k < whole->ndim; ++k) box[k] = bshape[k] = whole->shape[k];
    box[dim] = bshape[dim] = rows;
    woff[dim] = ccl_offset(whole->shape[dim], c->p, j);
    if (to_blocks)
      ccl_box(at, bshape, zero, whole_data, whole->shape, woff, box, whole->ndim, c->esize,
              ccl_memcpy, NULL);
    else
      ccl_box(whole_data, whole->shape, woff, at, bshape, zero, box, whole->ndim, c->esize,
              ccl_memcpy, NULL);
    int64_t n = c->esize;
    for (int k = 0; k < whole->ndim; ++k) n *= bshape[k];
    at += n;
  }
}

static int ccl_outermost(const DLTensor *t, int64_t dim) {
  for (int64_t k = 0; k < dim; ++k)
    if (t->shape[k] != 1) return 0;
  return 1;
}

int32_t tirc_ccl_all_reduce(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_all_reduce", args, num_args, &c, &comm) != 0) return -1;
  MPI_Datatype type;
  MPI_Op op;
  if (ccl_reduction(&c, c.a, &type, &op) != 0) return -1;
  int64_t n = ccl_numel(c.send);
  if (n != ccl_numel(c.recv)) return ccl_fail("%s: send and recv sizes differ", c.name);
  tirc_ccl_sent += n * c.esize;
  const void *src = ccl_data(c.send) == ccl_data(c.recv) ? MPI_IN_PLACE : ccl_data(c.send);
  int code = MPI_Allreduce(src, ccl_data(c.recv), (int)n, type, op, comm);
  return code == MPI_SUCCESS ? 0 : ccl_mpi_error(c.name, code);
}

int32_t tirc_ccl_all_gather(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_all_gather", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  int64_t dim = c.a;
  if (c.send->shape[dim] != ccl_part(c.recv->shape[dim], c.p, c.coord))
    return ccl_fail("%s: this device holds %lld rows of dimension %lld, but its part of %lld "
                    "over %lld devices is %lld", c.name, (long long)c.send->shape[dim],
                    (long long)dim, (long long)c.recv->shape[dim], (long long)c.p,
                    (long long)ccl_part(c.recv->shape[dim], c.p, c.coord));
  int *counts = malloc(sizeof(int) * 2 * (size_t)c.p), *displs = counts + c.p;
  ccl_counts(&c, c.recv, dim, counts, displs);
  int direct = ccl_outermost(c.recv, dim);
  int64_t total = ccl_numel(c.recv) * c.esize;
  char *tmp = direct ? ccl_data(c.recv) : malloc((size_t)(total ? total : 1));
  tirc_ccl_sent += ccl_numel(c.send) * c.esize;
  int code = MPI_Allgatherv(ccl_data(c.send), counts[c.coord], MPI_BYTE, tmp, counts, displs,
                            MPI_BYTE, comm);
  if (code == MPI_SUCCESS && !direct) ccl_blocks(&c, ccl_data(c.recv), c.recv, dim, tmp, 0);
  if (!direct) free(tmp);
  free(counts);
  return code == MPI_SUCCESS ? 0 : ccl_mpi_error(c.name, code);
}

int32_t tirc_ccl_reduce_scatter(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_reduce_scatter", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  MPI_Datatype type;
  MPI_Op op;
  if (ccl_reduction(&c, c.b, &type, &op) != 0) return -1;
  int64_t dim = c.a;
  if (c.recv->shape[dim] != ccl_part(c.send->shape[dim], c.p, c.coord))
    return ccl_fail("%s: recv has %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.recv->shape[dim], (long long)dim,
                    (long long)ccl_part(c.send->shape[dim], c.p, c.coord));
  int *counts = malloc(sizeof(int) * 2 * (size_t)c.p), *displs = counts + c.p;
  ccl_counts(&c, c.send, dim, counts, displs);
  for (int64_t j = 0; j < c.p; ++j) counts[j] /= (int)c.esize;
  int direct = ccl_outermost(c.send, dim);
  int64_t total = ccl_numel(c.send) * c.esize;
  char *tmp = direct ? ccl_data(c.send) : malloc((size_t)(total ? total : 1));
  if (!direct) ccl_blocks(&c, ccl_data(c.send), c.send, dim, tmp, 1);
  tirc_ccl_sent += total;
  int code = MPI_Reduce_scatter(tmp, ccl_data(c.recv), counts, type, op, comm);
  if (!direct) free(tmp);
  free(counts);
  return code == MPI_SUCCESS ? 0 : ccl_mpi_error(c.name, code);
}

int32_t tirc_ccl_all_to_all(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_all_to_all", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0 || ccl_check_dim(&c, c.b) != 0) return -1;
  int64_t split = c.a, cat = c.b;
  if (split == cat) return ccl_fail("%s: split and concat dimensions are the same", c.name);
  /* send: dim `split` whole, dim `cat` my part; recv: dim `split` my part, dim `cat` whole. */
  int *sc = malloc(sizeof(int) * 4 * (size_t)c.p), *sd = sc + c.p, *rc = sd + c.p,
      *rd = rc + c.p;
  int64_t sbytes = ccl_numel(c.send) * c.esize, rbytes = ccl_numel(c.recv) * c.esize;
  char *sbuf = malloc((size_t)(sbytes ? sbytes : 1)), *rbuf = malloc((size_t)(rbytes ? rbytes : 1));
  ccl_counts(&c, c.send, split, sc, sd);
  ccl_blocks(&c, ccl_data(c.send), c.send, split, sbuf, 1);
  /* from member j: its `cat` part times my `split` part */
  int64_t mine = ccl_part(c.send->shape[split], c.p, c.coord);
  int64_t per = ccl_numel(c.recv) / (c.recv->shape[cat] ? c.recv->shape[cat] : 1);
  int64_t at = 0;
  (void)mine;
  for (int64_t j = 0; j < c.p; ++j) {
    int64_t n = ccl_part(c.recv->shape[cat], c.p, j) * per * c.esize;
    rc[j] = (int)n;
    rd[j] = (int)at;
    at += n;
  }
  tirc_ccl_sent += sbytes - sc[c.coord];
  int code = MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, comm);
  if (code == MPI_SUCCESS) ccl_blocks(&c, ccl_data(c.recv), c.recv, cat, rbuf, 0);
  free(sbuf);
  free(rbuf);
  free(sc);
  return code == MPI_SUCCESS ? 0 : ccl_mpi_error(c.name, code);
}

int32_t tirc_ccl_broadcast(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_broadcast", args, num_args, &c, &comm) != 0) return -1;
  if (c.a < 0 || c.a >= c.p) return ccl_fail("%s: root %lld is not in the group", c.name,
                                              (long long)c.a);
  int64_t bytes = ccl_numel(c.recv) * c.esize;
  if (bytes != ccl_numel(c.send) * c.esize) return ccl_fail("%s: sizes differ", c.name);
  if (c.coord == c.a) {
    if (ccl_data(c.send) != ccl_data(c.recv)) memcpy(ccl_data(c.recv), ccl_data(c.send), (size_t)bytes);
    tirc_ccl_sent += bytes;
  }
  int code = MPI_Bcast(ccl_data(c.recv), (int)bytes, MPI_BYTE, (int)c.a, comm);
  return code == MPI_SUCCESS ? 0 : ccl_mpi_error(c.name, code);
}

int32_t tirc_ccl_shard(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_shard", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  int64_t dim = c.a, off[TIRC_CCL_MAX_DIMS] = {0}, zero[TIRC_CCL_MAX_DIMS] = {0};
  if (c.recv->shape[dim] != ccl_part(c.send->shape[dim], c.p, c.coord))
    return ccl_fail("%s: recv has %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.recv->shape[dim], (long long)dim,
                    (long long)ccl_part(c.send->shape[dim], c.p, c.coord));
  off[dim] = ccl_offset(c.send->shape[dim], c.p, c.coord);
  ccl_box(ccl_data(c.recv), c.recv->shape, zero, ccl_data(c.send), c.send->shape, off,
          c.recv->shape, c.send->ndim, c.esize, ccl_memcpy, NULL);
  return 0;
}

int32_t tirc_ccl_scatter(DLTensor **args, int32_t num_args) {
  ccl_call c;
  MPI_Comm comm;
  if (ccl_begin("tirc_ccl_scatter", args, num_args, &c, &comm) != 0) return -1;
  if (ccl_check_dim(&c, c.a) != 0) return -1;
  if (c.b < 0 || c.b >= c.p) return ccl_fail("%s: root %lld is not in the group", c.name,
                                              (long long)c.b);
  int64_t dim = c.a;
  if (c.recv->shape[dim] != ccl_part(c.send->shape[dim], c.p, c.coord))
    return ccl_fail("%s: recv has %lld rows of dimension %lld, expected %lld", c.name,
                    (long long)c.recv->shape[dim], (long long)dim,
                    (long long)ccl_part(c.send->shape[dim], c.p, c.coord));
  int *counts = malloc(sizeof(int) * 2 * (size_t)c.p), *displs = counts + c.p;
  ccl_counts(&c, c.send, dim, counts, displs);
  int root = c.coord == c.b, direct = ccl_outermost(c.send, dim);
  int64_t total = ccl_numel(c.send) * c.esize;
  char *tmp = ccl_data(c.send);
  if (root && !direct) {
    tmp = malloc((size_t)(total ? total : 1));
    ccl_blocks(&c, ccl_data(c.send), c.send, dim, tmp, 1);
  }
  if (root) tirc_ccl_sent += total - counts[c.coord];
  int code = MPI_Scatterv(tmp, counts, displs, MPI_BYTE, ccl_data(c.recv), counts[c.coord],
                          MPI_BYTE, (int)c.b, comm);
  if (root && !direct) free(tmp);
  free(counts);
  return code == MPI_SUCCESS ? 0 : ccl_mpi_error(c.name, code);
}
