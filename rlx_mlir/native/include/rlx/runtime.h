/* The RLX C runtime: load a model compiled by rlx-compile and run it. No Python, no MLIR.
 *
 *   rlx_error_t *err = NULL;
 *   rlx_model_t *model = rlx_model_open("libmlp.so", &err);          // + libmlp.json, the manifest
 *   rlx_context_t *ctx = rlx_context_create(model, &err);            // owns the arena
 *   rlx_context_bind_param(ctx, "w", w, sizeof w, &err);              // weights (rlx.param), once
 *   // or all of them from a file: rlx_context_bind_params_file(ctx, "weights.safetensors", &err)
 *   rlx_tensor_t in[] = {{x, sizeof x, RLX_DTYPE_FLOAT32, 2, x_shape}};
 *   rlx_tensor_t out[] = {{y, sizeof y, RLX_DTYPE_FLOAT32, 2, y_shape}};
 *   if (rlx_invoke(ctx, in, 1, out, 1, &err) != RLX_OK) puts(rlx_error_message(err));
 *
 * Every function returns an error code (or NULL) with a message in *err (when err is not NULL;
 * free it with rlx_error_free); none aborts. A model is read-only once open: any number of
 * threads may use it. A context is one caller's state (its arena, its bound parameters): one
 * call at a time per context, so N threads with N contexts run one model at once.
 */
#ifndef RLX_RUNTIME_H
#define RLX_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_status {
  RLX_OK = 0,
  RLX_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, an index or name the model does not have */
  RLX_ERROR_IO = 2,               /* a file could not be read */
  RLX_ERROR_LOAD = 3,             /* the library could not be loaded, or lacks a symbol */
  RLX_ERROR_MANIFEST = 4,         /* the manifest is malformed or does not describe the library */
  RLX_ERROR_SHAPE = 5,            /* a tensor's rank, shape or byte size is not the model's */
  RLX_ERROR_DTYPE = 6,            /* a tensor's dtype is not the model's */
  RLX_ERROR_MISSING_PARAM = 7,    /* a weight (rlx.param) was not bound to the context */
  RLX_ERROR_OUT_OF_MEMORY = 8,
  RLX_ERROR_UNSUPPORTED = 9,      /* a model the runtime cannot run (an unknown target, a CUDA function with an arena) */
  RLX_ERROR_PARAMS = 10,          /* a parameter file is not a readable safetensors file */
  RLX_ERROR_DEVICE = 11           /* a CUDA model where no CUDA driver (libcuda.so.1, loaded at run time) or no device is */
} rlx_status_t;

/* The dtypes of rlx_mlir.ir.dtypes.NUMPY_NAMES (bool is one byte per element; bfloat16 and
 * float8_e4m3fn, OCP FP8 E4M3, are stored as their raw 2 and 1 bytes). */
typedef enum rlx_dtype {
  RLX_DTYPE_FLOAT32 = 0,
  RLX_DTYPE_FLOAT16 = 1,
  RLX_DTYPE_FLOAT64 = 2,
  RLX_DTYPE_BOOL = 3,
  RLX_DTYPE_INT8 = 4,
  RLX_DTYPE_UINT8 = 5,
  RLX_DTYPE_INT16 = 6,
  RLX_DTYPE_INT32 = 7,
  RLX_DTYPE_INT64 = 8,
  RLX_DTYPE_BFLOAT16 = 9,
  RLX_DTYPE_FLOAT8_E4M3FN = 10
} rlx_dtype_t;

typedef struct rlx_error rlx_error_t;
typedef struct rlx_model rlx_model_t;
typedef struct rlx_context rlx_context_t;
typedef struct rlx_params rlx_params_t;

/* One input or output of the model's function. */
typedef struct rlx_tensor_info {
  const char *name;
  rlx_dtype_t dtype;
  int32_t rank;
  const int64_t *shape; /* rank sizes */
  int64_t elements;
  size_t bytes;
  int is_param; /* a weight: bound with rlx_context_bind_param, not passed to rlx_invoke */
  int tied;     /* an output: the input it is (updated in place), or -1 */
} rlx_tensor_info_t;

/* A buffer the caller passes: C-contiguous data of `bytes` bytes, `rank` sizes in `shape`. */
typedef struct rlx_tensor {
  void *data;
  size_t bytes;
  rlx_dtype_t dtype;
  int32_t rank;
  const int64_t *shape;
} rlx_tensor_t;

rlx_status_t rlx_error_code(const rlx_error_t *error);
const char *rlx_error_message(const rlx_error_t *error);
void rlx_error_free(rlx_error_t *error);

const char *rlx_dtype_name(rlx_dtype_t dtype); /* "float32", ...; "?" for an unknown value */
size_t rlx_dtype_size(rlx_dtype_t dtype);      /* bytes per element; 0 for an unknown value */

/* Loads `path` (a library written by rlx-compile / rlx_mlir.aot.export) after reading its
 * manifest (<stem>.json beside it) and checking it against the signature compiled into the
 * library. rlx_model_open takes the library's only function; rlx_model_open_entry names one. */
rlx_model_t *rlx_model_open(const char *path, rlx_error_t **err);
rlx_model_t *rlx_model_open_entry(const char *path, const char *entry, rlx_error_t **err);
void rlx_model_close(rlx_model_t *model); /* after every context of it is destroyed */

/* A model linked into the program (rlx-compile --emit static, rlx_add_model(... STATIC)): its
 * signature record and its functions' packed entry points, as the generated header's
 * rlx_model_open_<stem>() passes them. */
typedef struct rlx_static_function {
  const char *name;
  void (*call)(void **descriptors);
} rlx_static_function_t;
rlx_model_t *rlx_model_open_static(const char *signature, const rlx_static_function_t *functions, size_t count,
                                   const char *entry, rlx_error_t **err);

const char *rlx_model_function(const rlx_model_t *model);
size_t rlx_model_num_inputs(const rlx_model_t *model);
size_t rlx_model_num_outputs(const rlx_model_t *model);
/* NULL for an index out of range. */
const rlx_tensor_info_t *rlx_model_input(const rlx_model_t *model, size_t index);
const rlx_tensor_info_t *rlx_model_output(const rlx_model_t *model, size_t index);
/* The index of the input / output named `name`, or -1. */
int64_t rlx_model_find_input(const rlx_model_t *model, const char *name);
int64_t rlx_model_find_output(const rlx_model_t *model, const char *name);
/* The inputs rlx_invoke takes: those that are not weights, in order. */
size_t rlx_model_num_runtime_inputs(const rlx_model_t *model);
size_t rlx_model_arena_bytes(const rlx_model_t *model);

/* A caller's state: the arena the compiled code computes its intermediates in, and the
 * weights bound to it. */
rlx_context_t *rlx_context_create(const rlx_model_t *model, rlx_error_t **err);
void rlx_context_destroy(rlx_context_t *context);
/* Binds the weight `name` to `data` (`bytes` bytes, the input's exact size), which must stay
 * valid while the context runs. */
rlx_status_t rlx_context_bind_param(rlx_context_t *context, const char *name, const void *data, size_t bytes,
                                    rlx_error_t **err);

/* The data weight `name` is bound to in `context`, or NULL (not bound, or not a weight). */
const void *rlx_context_param(const rlx_context_t *context, const char *name);

/* Weights from a safetensors file (an 8-byte header size, a JSON header, the data), mapped into
 * memory read-only (mmap), not read: each weight is used where it lies in the file, so any number
 * of contexts bound to one rlx_params_t share one copy of the weights (and processes mapping the
 * same file share the kernel's page cache). A weight not aligned to its element size in the file
 * is copied. Close after every context bound to them is destroyed; the file must not be truncated
 * while it is open. A model compiled with `rlx-compile --params` opens the file shipped beside it
 * and binds it to each of its contexts itself. */
rlx_params_t *rlx_params_open(const char *path, rlx_error_t **err);
void rlx_params_close(rlx_params_t *params);
size_t rlx_params_count(const rlx_params_t *params); /* the tensors in the file */
/* The data of tensor `name` (in the mapping, or its aligned copy) and its size in *bytes; NULL when
 * the file has no such tensor. */
const void *rlx_params_tensor(const rlx_params_t *params, const char *name, size_t *bytes);
/* Binds every weight of the model from `params` (by name): RLX_ERROR_MISSING_PARAM when the file
 * lacks one, RLX_ERROR_DTYPE / RLX_ERROR_SHAPE when its tensor differs; nothing is bound then. */
rlx_status_t rlx_context_bind_params(rlx_context_t *context, const rlx_params_t *params, rlx_error_t **err);
/* rlx_params_open + rlx_context_bind_params; the context owns the weights mapped. */
rlx_status_t rlx_context_bind_params_file(rlx_context_t *context, const char *path, rlx_error_t **err);

/* Runs the function: `inputs` holds one tensor per runtime input (rlx_model_num_runtime_inputs,
 * in order), `outputs` one per output. An output tied to an input (a KV cache) is updated in
 * that input's buffer: its entry's data is NULL or that input's data pointer. Untied outputs
 * must not overlap any input. */
rlx_status_t rlx_invoke(rlx_context_t *context, const rlx_tensor_t *inputs, size_t num_inputs,
                        const rlx_tensor_t *outputs, size_t num_outputs, rlx_error_t **err);

#ifdef __cplusplus
}
#endif

#endif /* RLX_RUNTIME_H */
