/* The external function of samples/mlp_dps.tir: out[i, j] = max(h[i, j] + b[j], 0).
 * tirc's DLTensor ABI: args = {h (n, m), b (m,), out (n, m)}, float32, row-major; returns 0. */
#include <stdint.h>

typedef struct {
  void *data;
  struct { int32_t device_type, device_id; } device;
  int32_t ndim;
  struct { uint8_t code, bits; uint16_t lanes; } dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

int32_t mlp_bias_relu(DLTensor **args, int32_t num_args) {
  if (num_args != 3) return -1;
  const float *h = (const float *)((char *)args[0]->data + args[0]->byte_offset);
  const float *b = (const float *)((char *)args[1]->data + args[1]->byte_offset);
  float *out = (float *)((char *)args[2]->data + args[2]->byte_offset);
  int64_t n = args[0]->shape[0], m = args[0]->shape[1];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float v = h[i * m + j] + b[j];
      out[i * m + j] = v > 0.0f ? v : 0.0f;
    }
  return 0;
}
