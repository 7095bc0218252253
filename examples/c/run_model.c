/* Runs any model rlx-compile wrote, from files: the C side of the Llama example and of
 * benchmarks/deploy.py.
 *
 *   run_model LIBRARY DIR [REPEAT]
 *
 * Reads input <name> from DIR/<name>.bin (raw, the input's dtype and byte size), binds the weights
 * (rlx.param) to a context once and passes the other inputs; writes output <name> to
 * DIR/<name>.out.bin, and where DIR/<name>.expected.bin exists (float32) compares with it: exit 1
 * when an element differs by more than 1e-4 of the expected values' largest magnitude. With
 * REPEAT, times REPEAT more calls and prints the best and median microseconds per call. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/runtime.h"

static void *read_file(const char *dir, const char *name, const char *suffix, size_t bytes, int required) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
  FILE *file = fopen(path, "rb");
  if (!file && !required) return NULL;
  void *data = malloc(bytes ? bytes : 1);
  if (!file || !data || fread(data, 1, bytes, file) != bytes) {
    fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path);
    exit(2);
  }
  fclose(file);
  return data;
}

static int compare(const double *a, const double *b) { return (*a > *b) - (*a < *b); }

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) return fprintf(stderr, "usage: %s LIBRARY DIR [REPEAT]\n", argv[0]), 2;
  rlx_error_t *err = NULL;
  rlx_model_t *model = rlx_model_open(argv[1], &err);
  if (!model) return fprintf(stderr, "error: %s\n", rlx_error_message(err)), 1;
  rlx_context_t *context = rlx_context_create(model, &err);
  if (!context) return fprintf(stderr, "error: %s\n", rlx_error_message(err)), 1;
  size_t inputs = rlx_model_num_inputs(model), outputs = rlx_model_num_outputs(model), given = 0;
  rlx_tensor_t *in = calloc(inputs + 1, sizeof *in), *out = calloc(outputs + 1, sizeof *out);
  for (size_t i = 0; i < inputs; ++i) {
    const rlx_tensor_info_t *info = rlx_model_input(model, i);
    void *data = read_file(argv[2], info->name, ".bin", info->bytes, 1);
    if (info->is_param) {
      if (rlx_context_bind_param(context, info->name, data, info->bytes, &err) != RLX_OK)
        return fprintf(stderr, "error: %s\n", rlx_error_message(err)), 1;
    } else {
      in[given++] = (rlx_tensor_t){data, info->bytes, info->dtype, info->rank, info->shape};
    }
  }
  for (size_t o = 0; o < outputs; ++o) {
    const rlx_tensor_info_t *info = rlx_model_output(model, o);
    out[o] = (rlx_tensor_t){info->tied >= 0 ? NULL : malloc(info->bytes ? info->bytes : 1), info->bytes,
                            info->dtype, info->rank, info->shape};
  }
  if (rlx_invoke(context, in, given, out, outputs, &err) != RLX_OK)
    return fprintf(stderr, "error: %s\n", rlx_error_message(err)), 1;
  int status = 0;
  for (size_t o = 0; o < outputs; ++o) {
    const rlx_tensor_info_t *info = rlx_model_output(model, o);
    if (info->tied >= 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.out.bin", argv[2], info->name);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(out[o].data, 1, info->bytes, file) != info->bytes) return fprintf(stderr, "cannot write %s\n", path), 2;
    fclose(file);
    const float *expected = read_file(argv[2], info->name, ".expected.bin", info->bytes, 0);
    if (expected && info->dtype == RLX_DTYPE_FLOAT32) {
      const float *got = out[o].data;
      double scale = 0, worst = 0;
      for (int64_t i = 0; i < info->elements; ++i) scale = fmax(scale, fabs(expected[i]));
      for (int64_t i = 0; i < info->elements; ++i) worst = fmax(worst, fabs((double)got[i] - expected[i]));
      printf("%s: max error %g (largest expected magnitude %g)\n", info->name, worst, scale);
      if (!(worst <= 1e-4 * (scale > 1 ? scale : 1))) status = 1;
    }
  }
  int repeat = argc == 4 ? atoi(argv[3]) : 0;
  if (repeat > 0) {
    double *times = malloc((size_t)repeat * sizeof *times);
    for (int r = 0; r < repeat; ++r) {
      struct timespec start, end;
      clock_gettime(CLOCK_MONOTONIC, &start);
      rlx_invoke(context, in, given, out, outputs, NULL);
      clock_gettime(CLOCK_MONOTONIC, &end);
      times[r] = (end.tv_sec - start.tv_sec) * 1e6 + (end.tv_nsec - start.tv_nsec) / 1e3;
    }
    qsort(times, (size_t)repeat, sizeof *times, (int (*)(const void *, const void *))compare);
    printf("per-call us: best %.1f median %.1f over %d calls\n", times[0], times[repeat / 2], repeat);
  }
  rlx_context_destroy(context);
  rlx_model_close(model);
  return status;
}
