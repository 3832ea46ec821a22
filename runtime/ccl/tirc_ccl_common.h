/* tirc_ccl_common.h: what both shims share: reading params, the group of a call, balanced
 * split sizes and box copies of row-major tensors. Included by one .c file each. */
#ifndef TIRC_CCL_COMMON_H
#define TIRC_CCL_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tirc_ccl.h"

#define TIRC_CCL_MAX_DIMS 16

static __thread char tirc_ccl_error[512];
static int64_t tirc_ccl_sent = 0, tirc_ccl_ncalls = 0;

static int32_t ccl_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tirc_ccl_error, sizeof tirc_ccl_error, fmt, ap);
  va_end(ap);
  return -1;
}

const char *tirc_ccl_last_error(void) { return tirc_ccl_error; }
int64_t tirc_ccl_bytes_sent(void) { return tirc_ccl_sent; }
int64_t tirc_ccl_calls(void) { return tirc_ccl_ncalls; }
void tirc_ccl_reset_counters(void) { tirc_ccl_sent = 0; tirc_ccl_ncalls = 0; }

/* One call, taken apart. */
typedef struct {
  const char *name;
  DLTensor *send, *recv;
  int ndim_mesh;
  int64_t mesh[TIRC_CCL_MAX_DIMS];
  int axis;          /* mesh axis of the group */
  int64_t a, b;      /* the collective's integers */
  int64_t p;         /* group size */
  int64_t color;     /* which group (linear index of the other coordinates) */
  int64_t coord;     /* the caller's position in the group */
  int64_t esize;     /* bytes per element */
} ccl_call;

static int64_t ccl_numel(const DLTensor *t) {
  int64_t n = 1;
  for (int k = 0; k < t->ndim; ++k) n *= t->shape[k];
  return n;
}

static char *ccl_data(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

static int64_t ccl_part(int64_t n, int64_t p, int64_t c) { return (n + p - 1 - c) / p; }
static int64_t ccl_offset(int64_t n, int64_t p, int64_t c) {
  return c * (n / p) + (c < n % p ? c : n % p);
}

/* Parse args and params; `world_rank` places the caller on the mesh. */
static int32_t ccl_parse(const char *name, DLTensor **args, int32_t num_args, int world_rank,
                         int world_size, ccl_call *c) {
  memset(c, 0, sizeof *c);
  c->name = name;
  if (num_args != 3) return ccl_fail("%s: expected 3 tensors (send, params, recv), got %d",
                                     name, num_args);
  DLTensor *params = args[1];
  c->send = args[0];
  c->recv = args[2];
  if (params->ndim != 1 || params->dtype.code != 0 || params->dtype.bits != 64)
    return ccl_fail("%s: params must be a 1-d int64 tensor", name);
  const int64_t *pv = (const int64_t *)ccl_data(params);
  int64_t n = params->shape[0];
  if (n < 1 || pv[0] < 1 || pv[0] > TIRC_CCL_MAX_DIMS || n != pv[0] + 4)
    return ccl_fail("%s: malformed params (%lld entries)", name, (long long)n);
  c->ndim_mesh = (int)pv[0];
  int64_t size = 1;
  for (int k = 0; k < c->ndim_mesh; ++k) {
    c->mesh[k] = pv[1 + k];
    if (c->ndim_mesh == 1 && c->mesh[k] == 0) c->mesh[k] = world_size;  /* every process */
    size *= c->mesh[k];
  }
  c->axis = (int)pv[1 + c->ndim_mesh];
  c->a = pv[2 + c->ndim_mesh];
  c->b = pv[3 + c->ndim_mesh];
  if (c->axis < 0 || c->axis >= c->ndim_mesh) return ccl_fail("%s: bad mesh axis", name);
  if (size != world_size)
    return ccl_fail("%s: the program was compiled for a mesh of %lld devices but runs on %d "
                    "processes", name, (long long)size, world_size);
  if (c->send->dtype.code != c->recv->dtype.code || c->send->dtype.bits != c->recv->dtype.bits
      || c->send->ndim != c->recv->ndim || c->send->ndim > TIRC_CCL_MAX_DIMS)
    return ccl_fail("%s: send and recv differ in dtype or rank", name);
  c->esize = (c->send->dtype.bits + 7) / 8 * (c->send->dtype.lanes ? c->send->dtype.lanes : 1);
  int64_t r = world_rank, coords[TIRC_CCL_MAX_DIMS];
  for (int k = c->ndim_mesh - 1; k >= 0; --k) {
    coords[k] = r % c->mesh[k];
    r /= c->mesh[k];
  }
  c->p = c->mesh[c->axis];
  c->coord = coords[c->axis];
  for (int k = 0; k < c->ndim_mesh; ++k)
    if (k != c->axis) c->color = c->color * c->mesh[k] + coords[k];
  return 0;
}

static int32_t ccl_check_dim(const ccl_call *c, int64_t dim) {
  if (dim < 0 || dim >= c->send->ndim) return ccl_fail("%s: bad dimension %lld", c->name,
                                                       (long long)dim);
  return 0;
}

/* Copy the box `box` (per dim extents) from src at `src_off` to dst at `dst_off`. */
typedef void (*ccl_copy_fn)(void *dst, const void *src, size_t bytes, void *ctx);

static void ccl_box(char *dst, const int64_t *dshape, const int64_t *doff, const char *src,
                    const int64_t *sshape, const int64_t *soff, const int64_t *box, int ndim,
                    int64_t esize, ccl_copy_fn copy, void *ctx) {
  /* Fold the trailing dims that are copied whole into one contiguous run. */
  int inner = ndim;
  int64_t run = esize;
  while (inner > 0 && box[inner - 1] == dshape[inner - 1] && box[inner - 1] == sshape[inner - 1]
         && doff[inner - 1] == 0 && soff[inner - 1] == 0) {
    run *= box[inner - 1];
    --inner;
  }
  if (inner == 0) {
    copy(dst, src, (size_t)run, ctx);
    return;
  }
  run *= box[inner - 1];
  int64_t dstr[TIRC_CCL_MAX_DIMS], sstr[TIRC_CCL_MAX_DIMS], idx[TIRC_CCL_MAX_DIMS];
  int64_t ds = esize, ss = esize;
  for (int k = ndim - 1; k >= 0; --k) {
    dstr[k] = ds;
    sstr[k] = ss;
    ds *= dshape[k];
    ss *= sshape[k];
  }
  int64_t count = 1;
  for (int k = 0; k < inner - 1; ++k) count *= box[k];
  for (int k = 0; k < ndim; ++k) idx[k] = 0;
  for (int64_t it = 0; it < count; ++it) {
    int64_t d = 0, s = 0;
    for (int k = 0; k < inner; ++k) {
      d += (idx[k] + doff[k]) * dstr[k];
      s += (idx[k] + soff[k]) * sstr[k];
    }
    copy(dst + d, src + s, (size_t)run, ctx);
    for (int k = inner - 2; k >= 0; --k) {
      if (++idx[k] < box[k]) break;
      idx[k] = 0;
    }
  }
}

#endif
