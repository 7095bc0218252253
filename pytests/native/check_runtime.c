/* Drives the RLX C runtime for pytests/test_c_runtime.py on the MLP of examples/c (x [8, 32],
 * weights w1 b1 w2 b2, result0 [8, 16]); data files as examples/c/make_data.py writes them.
 *
 *   check_runtime open LIBRARY                       status and message of rlx_model_open
 *   check_runtime info LIBRARY                       the inputs and outputs, one line each
 *   check_runtime run LIBRARY DATA                   the result, as float32 bytes, to DATA/result.bin
 *   check_runtime threads LIBRARY DATA T C N         T threads, C contexts each, N calls per thread, each
 *                                                    thread on its own input (x scaled by t + 1); prints
 *                                                    how many results differ from the single-threaded one
 *   check_runtime misuse LIBRARY DATA                one line per misuse: its status and message
 *   check_runtime params LIBRARY DATA [FILE]         a context with the weights the model ships bound (or
 *                                                    those of FILE, rlx_context_bind_params_file), run:
 *                                                    DATA/result.bin; prints the status of each step
 *   check_runtime mapped LIBRARY DATA FILE           FILE opened with rlx_params_open: per weight whether its data
 *                                                    lies in a mapping of FILE (/proc/self/maps) or was copied;
 *                                                    two contexts bound to it and one bound with
 *                                                    rlx_context_bind_params_file: whether the first two share
 *                                                    each weight's pointer and all three give identical results
 *                                                    (written to DATA/result.bin)
 *   check_runtime cuda-counts LIBRARY DATA           a CUDA model against pytests/fake_cuda (its counters read
 *                                                    with dlsym): per phase (two contexts created, calls,
 *                                                    destroyed) what was asked of the driver
 *   check_runtime raw LIBRARY DIR                    any model: input i from DIR/<name>.bin (weights bound,
 *                                                    the rest passed; a weight without a file: the one the
 *                                                    model ships), outputs tied to an input given as
 *                                                    NULL; writes DIR/<output>.out.bin for the others and
 *                                                    DIR/<input>.after.bin for the inputs updated in place
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/runtime.h"

#define X_ELEMENTS 256
#define Y_ELEMENTS 128
static const int64_t X_SHAPE[] = {8, 32}, Y_SHAPE[] = {8, 16};
static const char *WEIGHTS[] = {"w1", "b1", "w2", "b2"};
static float *weights[4];
static size_t weight_bytes[4];
static float x[X_ELEMENTS];

static void die(const char *what, rlx_error_t *err) {
  fprintf(stderr, "%s: %s\n", what, rlx_error_message(err));
  exit(3);
}

static float *load(const char *dir, const char *name, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE *file = fopen(path, "rb");
  float *data = malloc(bytes);
  if (!file || !data || fread(data, 1, bytes, file) != bytes) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(3);
  }
  fclose(file);
  return data;
}

static void load_all(const rlx_model_t *model, const char *dir) {
  for (int i = 0; i < 4; ++i) {
    weight_bytes[i] = rlx_model_input(model, (size_t)rlx_model_find_input(model, WEIGHTS[i]))->bytes;
    weights[i] = load(dir, WEIGHTS[i], weight_bytes[i]);
  }
  float *data = load(dir, "x", sizeof x);
  memcpy(x, data, sizeof x);
  free(data);
}

static rlx_context_t *bound_context(const rlx_model_t *model) {
  rlx_error_t *err = NULL;
  rlx_context_t *context = rlx_context_create(model, &err);
  if (!context) die("rlx_context_create", err);
  for (int i = 0; i < 4; ++i)
    if (rlx_context_bind_param(context, WEIGHTS[i], weights[i], weight_bytes[i], &err) != RLX_OK)
      die("rlx_context_bind_param", err);
  return context;
}

static rlx_status_t run(rlx_context_t *context, const float *input, float *output, rlx_error_t **err) {
  rlx_tensor_t in = {(void *)input, sizeof x, RLX_DTYPE_FLOAT32, 2, X_SHAPE};
  rlx_tensor_t out = {output, Y_ELEMENTS * sizeof(float), RLX_DTYPE_FLOAT32, 2, Y_SHAPE};
  return rlx_invoke(context, &in, 1, &out, 1, err);
}

typedef struct {
  const rlx_model_t *model;
  int contexts, calls;
  float input[X_ELEMENTS], expected[Y_ELEMENTS];
  int differ;
  int failed;
} worker_t;

static void *work(void *argument) {
  worker_t *worker = argument;
  rlx_context_t *contexts[64];
  for (int c = 0; c < worker->contexts; ++c) contexts[c] = bound_context(worker->model);
  float y[Y_ELEMENTS];
  for (int call = 0; call < worker->calls; ++call) {
    rlx_error_t *err = NULL;
    if (run(contexts[call % worker->contexts], worker->input, y, &err) != RLX_OK) {
      fprintf(stderr, "rlx_invoke: %s\n", rlx_error_message(err));
      rlx_error_free(err);
      worker->failed = 1;
      break;
    }
    worker->differ += memcmp(y, worker->expected, sizeof y) != 0;
  }
  for (int c = 0; c < worker->contexts; ++c) rlx_context_destroy(contexts[c]);
  return NULL;
}

static void report(const char *what, rlx_status_t status, rlx_error_t *err) {
  printf("%s: %d %s\n", what, (int)status, status == RLX_OK ? "ok" : rlx_error_message(err));
  rlx_error_free(err);
}

/* The call first, then its message: C leaves the order of a call's arguments unspecified. */
#define REPORT(what, call)             \
  do {                                 \
    rlx_status_t status_ = (call);     \
    report((what), status_, err);      \
    err = NULL;                        \
  } while (0)

static void misuse(const rlx_model_t *model) {
  rlx_error_t *err = NULL;
  float y[Y_ELEMENTS];
  rlx_context_t *unbound = rlx_context_create(model, &err);
  REPORT("missing-param", run(unbound, x, y, &err));
  rlx_context_destroy(unbound);

  rlx_context_t *context = bound_context(model);
  static const int64_t wrong_shape[] = {8, 31}, wrong_rank[] = {256};
  rlx_tensor_t out = {y, sizeof y, RLX_DTYPE_FLOAT32, 2, Y_SHAPE};
  rlx_tensor_t bad[] = {
      {x, sizeof x, RLX_DTYPE_FLOAT32, 2, wrong_shape}, {x, sizeof x, RLX_DTYPE_FLOAT32, 1, wrong_rank},
      {x, sizeof x, RLX_DTYPE_INT32, 2, X_SHAPE},        {x, sizeof x - 4, RLX_DTYPE_FLOAT32, 2, X_SHAPE},
      {NULL, sizeof x, RLX_DTYPE_FLOAT32, 2, X_SHAPE},    {x, sizeof x, RLX_DTYPE_FLOAT32, 2, NULL}};
  const char *names[] = {"wrong-shape", "wrong-rank", "wrong-dtype", "wrong-bytes", "null-data", "null-shape"};
  for (int i = 0; i < 6; ++i) REPORT(names[i], rlx_invoke(context, &bad[i], 1, &out, 1, &err));
  rlx_tensor_t good = {x, sizeof x, RLX_DTYPE_FLOAT32, 2, X_SHAPE};
  REPORT("too-many-inputs", rlx_invoke(context, &good, 2, &out, 1, &err));
  REPORT("null-inputs", rlx_invoke(context, NULL, 1, &out, 1, &err));
  REPORT("null-context", rlx_invoke(NULL, &good, 1, &out, 1, &err));
  rlx_tensor_t overlapping = {weights[0], sizeof y, RLX_DTYPE_FLOAT32, 2, Y_SHAPE};
  REPORT("output-overlaps-weight", rlx_invoke(context, &good, 1, &overlapping, 1, &err));
  REPORT("bind-unknown", rlx_context_bind_param(context, "w9", weights[0], weight_bytes[0], &err));
  REPORT("bind-input", rlx_context_bind_param(context, "x", x, sizeof x, &err));
  REPORT("bind-bytes", rlx_context_bind_param(context, "w1", weights[0], weight_bytes[0] - 4, &err));
  REPORT("bind-null", rlx_context_bind_param(context, "w1", NULL, weight_bytes[0], &err));
  REPORT("null-model", rlx_context_create(NULL, &err) ? RLX_OK : rlx_error_code(err));
  REPORT("still-runs", rlx_invoke(context, &good, 1, &out, 1, &err));
  rlx_context_destroy(context);
  printf("queries: %lld %lld %d %d\n", (long long)rlx_model_find_input(model, "nope"),
         (long long)rlx_model_find_output(model, "result0"), rlx_model_input(model, 5) == NULL,
         rlx_model_output(model, 1) == NULL);
}

static int run_raw(const rlx_model_t *model, const char *dir) {
  rlx_error_t *err = NULL;
  size_t inputs = rlx_model_num_inputs(model), outputs = rlx_model_num_outputs(model), given = 0;
  rlx_context_t *context = rlx_context_create(model, &err);
  if (!context) die("rlx_context_create", err);
  void **data = calloc(inputs + outputs, sizeof *data);
  rlx_tensor_t *in = calloc(inputs + 1, sizeof *in), *out = calloc(outputs + 1, sizeof *out);
  for (size_t i = 0; i < inputs; ++i) {
    const rlx_tensor_info_t *info = rlx_model_input(model, i);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, info->name);
    FILE *exists = fopen(path, "rb");
    if (exists) fclose(exists);
    if (info->is_param && !exists) continue; /* the weights the model ships, bound at creation */
    data[i] = load(dir, info->name, info->bytes);
    if (info->is_param) {
      if (rlx_context_bind_param(context, info->name, data[i], info->bytes, &err) != RLX_OK) die("bind", err);
    } else {
      in[given++] = (rlx_tensor_t){data[i], info->bytes, info->dtype, info->rank, info->shape};
    }
  }
  for (size_t o = 0; o < outputs; ++o) {
    const rlx_tensor_info_t *info = rlx_model_output(model, o);
    data[inputs + o] = info->tied >= 0 ? NULL : malloc(info->bytes ? info->bytes : 1);
    out[o] = (rlx_tensor_t){data[inputs + o], info->bytes, info->dtype, info->rank, info->shape};
  }
  if (rlx_invoke(context, in, given, out, outputs, &err) != RLX_OK) die("rlx_invoke", err);
  for (size_t o = 0; o < outputs; ++o) {
    const rlx_tensor_info_t *info = rlx_model_output(model, o);
    char path[4096];
    const rlx_tensor_info_t *written = info->tied >= 0 ? rlx_model_input(model, (size_t)info->tied) : info;
    snprintf(path, sizeof path, "%s/%s.%s.bin", dir, written->name, info->tied >= 0 ? "after" : "out");
    FILE *file = fopen(path, "wb");
    void *bytes = info->tied >= 0 ? data[info->tied] : data[inputs + o];
    if (!file || fwrite(bytes, 1, info->bytes, file) != info->bytes) return 3;
    fclose(file);
  }
  rlx_context_destroy(context);
  return 0;
}

/* Whether `address` lies in a mapping of the file `path` (per /proc/self/maps). */
static int in_mapping_of(const void *address, const char *path) {
  char wanted[PATH_MAX], line[PATH_MAX + 256];
  if (!realpath(path, wanted)) return 0;
  FILE *maps = fopen("/proc/self/maps", "r");
  int found = 0;
  while (maps && !found && fgets(line, sizeof line, maps)) {
    unsigned long long begin, end;
    int name = 0;
    if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &begin, &end, &name) != 2 || !name) continue;
    line[strcspn(line, "\n")] = 0;
    found = (uintptr_t)address >= begin && (uintptr_t)address < end && strcmp(line + name, wanted) == 0;
  }
  if (maps) fclose(maps);
  return found;
}

static int mapped(const rlx_model_t *model, const char *dir, const char *file) {
  rlx_error_t *err = NULL;
  rlx_params_t *params = rlx_params_open(file, &err);
  if (!params) die("rlx_params_open", err);
  for (int i = 0; i < 4; ++i) {
    size_t bytes;
    const void *data = rlx_params_tensor(params, WEIGHTS[i], &bytes);
    printf("%s %s %zu\n", WEIGHTS[i], !data ? "absent" : in_mapping_of(data, file) ? "mapped" : "copied", bytes);
  }
  printf("unknown %s\n", rlx_params_tensor(params, "nope", NULL) ? "found" : "absent");
  rlx_context_t *contexts[3];
  for (int c = 0; c < 3; ++c) {
    contexts[c] = rlx_context_create(model, &err);
    if (!contexts[c]) die("rlx_context_create", err);
    rlx_status_t status = c < 2 ? rlx_context_bind_params(contexts[c], params, &err)
                                : rlx_context_bind_params_file(contexts[c], file, &err);
    if (status != RLX_OK) die("bind", err);
  }
  int shared = 1;
  for (int i = 0; i < 4; ++i)
    shared &= rlx_context_param(contexts[0], WEIGHTS[i]) == rlx_context_param(contexts[1], WEIGHTS[i]) &&
              rlx_context_param(contexts[0], WEIGHTS[i]) == rlx_params_tensor(params, WEIGHTS[i], NULL);
  float *input = load(dir, "x", sizeof x), y[3][Y_ELEMENTS];
  for (int c = 0; c < 3; ++c)
    if (run(contexts[c], input, y[c], &err) != RLX_OK) die("rlx_invoke", err);
  printf("shared %d identical %d\n", shared,
         memcmp(y[0], y[1], sizeof y[0]) == 0 && memcmp(y[0], y[2], sizeof y[0]) == 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/result.bin", dir);
  FILE *out = fopen(path, "wb");
  if (!out || fwrite(y[0], sizeof y[0], 1, out) != 1) return 3;
  fclose(out);
  for (int c = 0; c < 3; ++c) rlx_context_destroy(contexts[c]);
  rlx_params_close(params);
  free(input);
  return 0;
}

static void cuda_counts(const rlx_model_t *model) {
  void (*counts)(long long *) = (void (*)(long long *))dlsym(RTLD_DEFAULT, "fake_cuda_counts");
  if (!counts) fprintf(stderr, "not the fake CUDA driver\n"), exit(3);
  long long before[6], after[6];
  const char *phases[] = {"create", "first", "again", "other", "destroy"};
  rlx_context_t *a = NULL, *b = NULL;
  float y[Y_ELEMENTS];
  rlx_error_t *err = NULL;
  for (int phase = 0; phase < 5; ++phase) {
    counts(before);
    if (phase == 0) a = bound_context(model), b = bound_context(model);
    if (phase >= 1 && phase <= 3 && run(phase == 3 ? b : a, x, y, &err) != RLX_OK) die("rlx_invoke", err);
    if (phase == 4) rlx_context_destroy(a), rlx_context_destroy(b);
    counts(after);
    printf("%s allocs %lld frees %lld copies %lld bytes %lld launches %lld\n", phases[phase], after[0] - before[0],
           after[1] - before[1], after[2] - before[2], after[3] - before[3], after[4] - before[4]);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: see the comment at the top\n"), 2;
  rlx_error_t *err = NULL;
  if (strcmp(argv[1], "open-null") == 0) {
    rlx_model_t *none = rlx_model_open(NULL, &err);
    report("open-null", none ? RLX_OK : rlx_error_code(err), err);
    return 0;
  }
  rlx_model_t *model = rlx_model_open(argv[2], &err);
  if (strcmp(argv[1], "open") == 0) {
    report("open", model ? RLX_OK : rlx_error_code(err), err);
    rlx_model_close(model);
    return 0;
  }
  if (!model) die("rlx_model_open", err);
  if (strcmp(argv[1], "info") == 0) {
    printf("function %s arena %zu runtime-inputs %zu\n", rlx_model_function(model), rlx_model_arena_bytes(model),
           rlx_model_num_runtime_inputs(model));
    for (size_t i = 0; i < rlx_model_num_inputs(model) + rlx_model_num_outputs(model); ++i) {
      int output = i >= rlx_model_num_inputs(model);
      const rlx_tensor_info_t *info = output ? rlx_model_output(model, i - rlx_model_num_inputs(model))
                                             : rlx_model_input(model, i);
      printf("%s %s %s [", output ? "output" : "input", info->name, rlx_dtype_name(info->dtype));
      for (int d = 0; d < info->rank; ++d) printf(d ? ", %lld" : "%lld", (long long)info->shape[d]);
      printf("] bytes %zu param %d tied %d\n", info->bytes, info->is_param, info->tied);
    }
    rlx_model_close(model);
    return 0;
  }
  if (argc < 4) return 2;
  if (strcmp(argv[1], "params") == 0) {
    rlx_context_t *context = rlx_context_create(model, &err);
    if (!context) return report("create", rlx_error_code(err), err), 0;
    if (argc > 4) {
      rlx_status_t status = rlx_context_bind_params_file(context, argv[4], &err);
      report("bind", status, err);
      if (status != RLX_OK) return 0;
    }
    float *input = load(argv[3], "x", sizeof x), y[Y_ELEMENTS];
    rlx_status_t status = run(context, input, y, &err);
    report("invoke", status, err);
    char path[4096];
    snprintf(path, sizeof path, "%s/result.bin", argv[3]);
    FILE *file = fopen(path, "wb");
    if (status != RLX_OK || !file || fwrite(y, sizeof y, 1, file) != 1) return 0;
    fclose(file);
    free(input);
    rlx_context_destroy(context);
    rlx_model_close(model);
    return 0;
  }
  if (strcmp(argv[1], "mapped") == 0 && argc == 5) {
    int status = mapped(model, argv[3], argv[4]);
    rlx_model_close(model);
    return status;
  }
  if (strcmp(argv[1], "raw") == 0) {
    int status = run_raw(model, argv[3]);
    rlx_model_close(model);
    return status;
  }
  load_all(model, argv[3]);
  if (strcmp(argv[1], "run") == 0) {
    rlx_context_t *context = bound_context(model);
    float y[Y_ELEMENTS];
    if (run(context, x, y, &err) != RLX_OK) die("rlx_invoke", err);
    char path[4096];
    snprintf(path, sizeof path, "%s/result.bin", argv[3]);
    FILE *file = fopen(path, "wb");
    if (!file || fwrite(y, sizeof y, 1, file) != 1) return 3;
    fclose(file);
  } else if (strcmp(argv[1], "threads") == 0 && argc == 7) {
    int threads = atoi(argv[4]), contexts = atoi(argv[5]), calls = atoi(argv[6]);
    if (threads < 1 || threads > 64 || contexts < 1 || contexts > 64) return 2;
    worker_t *workers = calloc((size_t)threads, sizeof *workers);
    rlx_context_t *single = bound_context(model);
    for (int t = 0; t < threads; ++t) {
      workers[t].model = model, workers[t].contexts = contexts, workers[t].calls = calls;
      for (int i = 0; i < X_ELEMENTS; ++i) workers[t].input[i] = x[i] * (float)(t + 1);
      if (run(single, workers[t].input, workers[t].expected, &err) != RLX_OK) die("rlx_invoke", err);
    }
    rlx_context_destroy(single);
    pthread_t ids[64];
    for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, work, &workers[t]);
    int differ = 0, failed = 0;
    for (int t = 0; t < threads; ++t) {
      pthread_join(ids[t], NULL);
      differ += workers[t].differ, failed |= workers[t].failed;
    }
    printf("calls %d differ %d failed %d\n", threads * calls, differ, failed);
    free(workers);
  } else if (strcmp(argv[1], "cuda-counts") == 0) {
    cuda_counts(model);
  } else if (strcmp(argv[1], "misuse") == 0) {
    misuse(model);
  } else {
    return 2;
  }
  rlx_model_close(model);
  return 0;
}
