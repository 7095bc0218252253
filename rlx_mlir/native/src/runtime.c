/* The RLX C runtime (include/rlx/runtime.h): dlopen a library written by rlx-compile, read its
 * JSON manifest, check it against the signature record compiled into the library
 * (rlx_aot_signature), and call the packed C interface rlx_call_<name>(void **descriptors):
 * one MLIR memref descriptor per input, the context's arena (where the function has one), one
 * per output not tied to an input. Nothing here aborts: every failure is an rlx_error_t. */
#define _GNU_SOURCE
#include "rlx/runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define MANIFEST_FORMAT "rlx-aot/2"
#define SIGNATURE_SYMBOL "rlx_aot_signature"
#define PACKED_PREFIX "rlx_call_"
#define MAX_JSON_DEPTH 64
#define MAX_RANK 64
#define MAX_MANIFEST_BYTES (64 << 20)

/* --- errors ------------------------------------------------------------------------------ */

struct rlx_error {
  rlx_status_t code;
  int is_static;
  char message[1024];
};

static rlx_error_t out_of_memory_error = {RLX_ERROR_OUT_OF_MEMORY, 1, "out of memory"};

static rlx_status_t fail(rlx_error_t **err, rlx_status_t code, const char *format, ...) {
  if (err == NULL) return code;
  rlx_error_t *error = malloc(sizeof *error);
  if (error == NULL) {
    *err = &out_of_memory_error;
    return code;
  }
  error->code = code;
  error->is_static = 0;
  va_list args;
  va_start(args, format);
  vsnprintf(error->message, sizeof error->message, format, args);
  va_end(args);
  *err = error;
  return code;
}

rlx_status_t rlx_error_code(const rlx_error_t *error) { return error ? error->code : RLX_OK; }
const char *rlx_error_message(const rlx_error_t *error) { return error ? error->message : ""; }
void rlx_error_free(rlx_error_t *error) {
  if (error != NULL && !error->is_static) free(error);
}

static const char *const DTYPE_NAMES[] = {"float32", "float16", "float64", "bool",     "int8",         "uint8",
                                          "int16",   "int32",   "int64",   "bfloat16", "float8_e4m3fn"};
static const size_t DTYPE_SIZES[] = {4, 2, 8, 1, 1, 1, 2, 4, 8, 2, 1};
#define NUM_DTYPES (sizeof DTYPE_SIZES / sizeof DTYPE_SIZES[0])

const char *rlx_dtype_name(rlx_dtype_t dtype) {
  return (unsigned)dtype < NUM_DTYPES ? DTYPE_NAMES[dtype] : "?";
}
size_t rlx_dtype_size(rlx_dtype_t dtype) { return (unsigned)dtype < NUM_DTYPES ? DTYPE_SIZES[dtype] : 0; }

/* --- a small JSON reader (the manifest and the signature record) -------------------------- */

enum json_kind { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_INTEGER, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

typedef struct json {
  enum json_kind kind;
  int64_t integer;
  double number;
  char *string;       /* a string's value */
  size_t count;       /* items of an array or object */
  struct json *items; /* count values */
  char **keys;        /* an object's count keys */
} json_t;

typedef struct {
  const char *at, *end;
  const char *error;
} json_reader;

static void json_free(json_t *value) {
  if (value == NULL) return;
  free(value->string);
  for (size_t i = 0; i < value->count; ++i) {
    json_free(&value->items[i]);
    if (value->keys) free(value->keys[i]);
  }
  free(value->items);
  free(value->keys);
  memset(value, 0, sizeof *value);
}

static void skip_space(json_reader *r) {
  while (r->at < r->end && (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')) ++r->at;
}

static int json_parse(json_reader *r, json_t *out, int depth);

static char *parse_string(json_reader *r) {
  /* r->at is at the opening quote; the result is NUL-terminated UTF-8 (escapes decoded). */
  ++r->at;
  size_t capacity = 16, length = 0;
  char *text = malloc(capacity);
  if (!text) {
    r->error = "out of memory";
    return NULL;
  }
  while (1) {
    if (r->at >= r->end) {
      r->error = "unterminated string";
      break;
    }
    unsigned char c = (unsigned char)*r->at++;
    char encoded[4];
    size_t n = 1;
    if (c == '"') {
      text[length] = 0;
      return text;
    }
    if (c < 0x20) {
      r->error = "control character in a string";
      break;
    }
    if (c == '\\') {
      if (r->at >= r->end) {
        r->error = "unterminated escape";
        break;
      }
      char e = *r->at++;
      const char *simple = strchr("\"\\/bfnrt", e);
      if (e != 0 && simple) {
        encoded[0] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      } else if (e == 'u' && r->end - r->at >= 4) {
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = *r->at++;
          code = code * 16 + (h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
        }
        if (code > 0xFFFF) {
          r->error = "bad \\u escape";
          break;
        }
        if (code < 0x80) {
          encoded[0] = (char)code;
        } else if (code < 0x800) {
          encoded[0] = (char)(0xC0 | code >> 6), encoded[1] = (char)(0x80 | (code & 63)), n = 2;
        } else {
          encoded[0] = (char)(0xE0 | code >> 12), encoded[1] = (char)(0x80 | ((code >> 6) & 63));
          encoded[2] = (char)(0x80 | (code & 63)), n = 3;
        }
      } else {
        r->error = "bad escape";
        break;
      }
    } else {
      encoded[0] = (char)c;
    }
    if (length + n + 1 > capacity) {
      capacity *= 2;
      char *grown = realloc(text, capacity);
      if (!grown) {
        r->error = "out of memory";
        break;
      }
      text = grown;
    }
    memcpy(text + length, encoded, n);
    length += n;
  }
  free(text);
  return NULL;
}

static int parse_items(json_reader *r, json_t *out, int depth, int object) {
  char close = object ? '}' : ']';
  size_t capacity = 0;
  ++r->at;
  skip_space(r);
  if (r->at < r->end && *r->at == close) {
    ++r->at;
    return 1;
  }
  while (1) {
    if (out->count == capacity) {
      capacity = capacity ? capacity * 2 : 4;
      json_t *items = realloc(out->items, capacity * sizeof *items);
      if (!items) return r->error = "out of memory", 0;
      out->items = items;
      if (object) {
        char **keys = realloc(out->keys, capacity * sizeof *keys);
        if (!keys) return r->error = "out of memory", 0;
        out->keys = keys;
      }
    }
    memset(&out->items[out->count], 0, sizeof(json_t));
    if (object) {
      out->keys[out->count] = NULL;
      skip_space(r);
      if (r->at >= r->end || *r->at != '"') return r->error = "expected a key", 0;
      char *key = parse_string(r);
      if (!key) return 0;
      out->keys[out->count] = key;
      skip_space(r);
      if (r->at >= r->end || *r->at != ':') return ++out->count, r->error = "expected ':'", 0;
      ++r->at;
    }
    ++out->count;
    if (!json_parse(r, &out->items[out->count - 1], depth + 1)) return 0;
    skip_space(r);
    if (r->at < r->end && *r->at == ',') {
      ++r->at;
      continue;
    }
    if (r->at < r->end && *r->at == close) {
      ++r->at;
      return 1;
    }
    return r->error = object ? "expected ',' or '}'" : "expected ',' or ']'", 0;
  }
}

static int json_parse(json_reader *r, json_t *out, int depth) {
  memset(out, 0, sizeof *out);
  if (depth > MAX_JSON_DEPTH) return r->error = "nested too deeply", 0;
  skip_space(r);
  if (r->at >= r->end) return r->error = "unexpected end", 0;
  char c = *r->at;
  if (c == '{' || c == '[') {
    out->kind = c == '{' ? JSON_OBJECT : JSON_ARRAY;
    return parse_items(r, out, depth, c == '{');
  }
  if (c == '"') {
    out->kind = JSON_STRING;
    out->string = parse_string(r);
    return out->string != NULL;
  }
  static const struct { const char *word; enum json_kind kind; } words[] = {
      {"null", JSON_NULL}, {"false", JSON_FALSE}, {"true", JSON_TRUE}};
  for (size_t i = 0; i < 3; ++i) {
    size_t n = strlen(words[i].word);
    if ((size_t)(r->end - r->at) >= n && memcmp(r->at, words[i].word, n) == 0) {
      r->at += n;
      out->kind = words[i].kind;
      return 1;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    char buffer[64];
    size_t n = 0;
    int integral = 1;
    while (r->at + n < r->end && n < sizeof buffer - 1 && strchr("+-0123456789.eE", r->at[n])) {
      if (strchr(".eE", r->at[n])) integral = 0;
      buffer[n] = r->at[n];
      ++n;
    }
    buffer[n] = 0;
    char *stop;
    if (integral) {
      out->kind = JSON_INTEGER;
      out->integer = strtoll(buffer, &stop, 10);
    } else {
      out->kind = JSON_NUMBER;
      out->number = strtod(buffer, &stop);
    }
    if (stop != buffer + n) return r->error = "bad number", 0;
    r->at += n;
    return 1;
  }
  return r->error = "unexpected character", 0;
}

/* Parses text[0..length) as one JSON value; on failure, *where says why. */
static int json_read(const char *text, size_t length, json_t *out, const char **why) {
  json_reader r = {text, text + length, NULL};
  if (json_parse(&r, out, 0)) {
    skip_space(&r);
    if (r.at == r.end) return 1;
    r.error = "text after the value";
  }
  json_free(out);
  *why = r.error;
  return 0;
}

static const json_t *json_get(const json_t *object, const char *key) {
  if (object == NULL || object->kind != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < object->count; ++i)
    if (strcmp(object->keys[i], key) == 0) return &object->items[i];
  return NULL;
}

static int json_equal(const json_t *a, const json_t *b) {
  if (a == NULL || b == NULL) return a == b;
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
    case JSON_INTEGER: return a->integer == b->integer;
    case JSON_NUMBER: return a->number == b->number;
    case JSON_STRING: return strcmp(a->string, b->string) == 0;
    case JSON_ARRAY:
      if (a->count != b->count) return 0;
      for (size_t i = 0; i < a->count; ++i)
        if (!json_equal(&a->items[i], &b->items[i])) return 0;
      return 1;
    case JSON_OBJECT:
      if (a->count != b->count) return 0;
      for (size_t i = 0; i < a->count; ++i)
        if (!json_equal(&a->items[i], json_get(b, a->keys[i]))) return 0;
      return 1;
    default: return 1;
  }
}

/* --- SHA-256 (FIPS 180-4): the manifest's digest of each library, checked before dlopen ------ */

typedef struct {
  uint32_t state[8];
  uint64_t length;
  unsigned char block[64];
  size_t used;
} sha256_t;

static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(sha256_t *sha, const unsigned char *p) {
  uint32_t w[64], v[8];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  memcpy(v, sha->state, sizeof v);
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = ROTR(v[4], 6) ^ ROTR(v[4], 11) ^ ROTR(v[4], 25);
    uint32_t t1 = v[7] + s1 + ((v[4] & v[5]) ^ (~v[4] & v[6])) + SHA_K[i] + w[i];
    uint32_t s0 = ROTR(v[0], 2) ^ ROTR(v[0], 13) ^ ROTR(v[0], 22);
    uint32_t t2 = s0 + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
    memmove(v + 1, v, 7 * sizeof v[0]);
    v[4] += t1;
    v[0] = t1 + t2;
  }
  for (int i = 0; i < 8; ++i) sha->state[i] += v[i];
}

static void sha256_init(sha256_t *sha) {
  static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(sha->state, initial, sizeof initial);
  sha->length = 0;
  sha->used = 0;
}

static void sha256_update(sha256_t *sha, const unsigned char *data, size_t size) {
  sha->length += size;
  while (size > 0) {
    size_t take = 64 - sha->used < size ? 64 - sha->used : size;
    memcpy(sha->block + sha->used, data, take);
    sha->used += take, data += take, size -= take;
    if (sha->used == 64) sha256_block(sha, sha->block), sha->used = 0;
  }
}

static void sha256_hex(sha256_t *sha, char hex[65]) {
  uint64_t bits = sha->length * 8;
  unsigned char pad = 0x80, zero = 0, length[8];
  sha256_update(sha, &pad, 1);
  while (sha->used != 56) sha256_update(sha, &zero, 1);
  for (int i = 0; i < 8; ++i) length[i] = (unsigned char)(bits >> (56 - 8 * i));
  sha256_update(sha, length, 8);
  for (int i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", (sha->state[i / 4] >> (24 - 8 * (i % 4))) & 0xff);
}

/* 1 when the file at `path` has the SHA-256 `expected` (64 lower-case hex digits). */
static rlx_status_t check_digest(const char *path, const char *expected, const char *manifest, rlx_error_t **err) {
  FILE *file = fopen(path, "rb");
  if (!file) return fail(err, RLX_ERROR_IO, "%s: cannot open it (named by %s)", path, manifest);
  sha256_t sha;
  sha256_init(&sha);
  unsigned char buffer[1 << 16];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, file)) > 0) sha256_update(&sha, buffer, got);
  int bad = ferror(file);
  fclose(file);
  if (bad) return fail(err, RLX_ERROR_IO, "%s: read error", path);
  char hex[65];
  sha256_hex(&sha, hex);
  if (strcmp(hex, expected) != 0)
    return fail(err, RLX_ERROR_MANIFEST, "%s: its SHA-256 is not the one %s records (the file is truncated, "
                "altered, or from another export; export the model again)", path, manifest);
  return RLX_OK;
}

/* --- the model ----------------------------------------------------------------------------- */

typedef void (*packed_function)(void **descriptors);

struct rlx_model {
  void *library;        /* NULL for a model linked into the program (rlx_model_open_static) */
  rlx_params_t *params; /* the weights shipped beside the library (the manifest's params), or NULL */
  char *function;
  packed_function call;
  size_t num_inputs, num_outputs, num_runtime_inputs;
  rlx_tensor_info_t *inputs, *outputs;
  size_t arena_bytes, arena_alignment;
  int cuda;     /* a 'cuda' model: its descriptors point at device memory (see "CUDA models" below) */
  void *driver; /* libcuda.so.1, loaded by the runtime itself (a 'cuda' model only) */
  struct gpu_runtime {
    void *(*alloc)(uint64_t bytes, void *stream, _Bool host_shared);
    void (*free)(void *pointer, void *stream);
    void (*copy)(void *destination, void *source, size_t bytes, void *stream);
    void *(*stream_create)(void);
    void (*stream_synchronize)(void *stream);
    void (*stream_destroy)(void *stream);
  } gpu; /* MLIR's CUDA runtime wrappers (libmlir_cuda_runtime.so, which the model library links) */
};

static void free_infos(rlx_tensor_info_t *infos, size_t count) {
  if (!infos) return;
  for (size_t i = 0; i < count; ++i) {
    free((char *)infos[i].name);
    free((int64_t *)infos[i].shape);
  }
  free(infos);
}

void rlx_model_close(rlx_model_t *model) {
  if (model == NULL) return;
  free_infos(model->inputs, model->num_inputs);
  free_infos(model->outputs, model->num_outputs);
  free(model->function);
  rlx_params_close(model->params);
  if (model->library) dlclose(model->library); /* a CUDA model unloads its kernels: before the driver goes */
  if (model->driver) dlclose(model->driver);
  free(model);
}

static char *read_file(const char *path, size_t *length, rlx_error_t **err) {
  FILE *file = fopen(path, "rb");
  if (!file) return fail(err, RLX_ERROR_IO, "%s: cannot open the manifest (rlx-compile writes it next to the library)",
                         path), NULL;
  char *text = NULL;
  size_t size = 0, capacity = 0, got;
  do {
    if (size == capacity) {
      capacity = capacity ? capacity * 2 : 4096;
      char *grown = capacity <= MAX_MANIFEST_BYTES ? realloc(text, capacity + 1) : NULL;
      if (!grown) {
        free(text);
        fclose(file);
        return fail(err, RLX_ERROR_MANIFEST, "%s: too large for a manifest", path), NULL;
      }
      text = grown;
    }
    got = fread(text + size, 1, capacity - size, file);
    size += got;
  } while (got > 0);
  int bad = ferror(file);
  fclose(file);
  if (bad) {
    free(text);
    return fail(err, RLX_ERROR_IO, "%s: read error", path), NULL;
  }
  text[size] = 0;
  *length = size;
  return text;
}

static int dtype_of(const char *name) {
  for (size_t i = 0; i < NUM_DTYPES; ++i)
    if (strcmp(name, DTYPE_NAMES[i]) == 0) return (int)i;
  return -1;
}

/* Reads a manifest's inputs or outputs into infos; the message names the field. */
static rlx_status_t read_specs(const json_t *list, const char *where, int outputs, size_t num_inputs,
                               rlx_tensor_info_t **infos, size_t *count, const char *manifest, rlx_error_t **err) {
  if (!list || list->kind != JSON_ARRAY)
    return fail(err, RLX_ERROR_MANIFEST, "%s: %s: expected a list", manifest, where);
  *infos = calloc(list->count ? list->count : 1, sizeof **infos);
  if (!*infos) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  *count = list->count;
  for (size_t i = 0; i < list->count; ++i) {
    const json_t *spec = &list->items[i];
    const json_t *name = json_get(spec, "name"), *shape = json_get(spec, "shape");
    const json_t *dtype = json_get(spec, "dtype"), *param = json_get(spec, "param");
    const json_t *tied = outputs ? json_get(spec, "tied") : NULL;
    rlx_tensor_info_t *info = &(*infos)[i];
    info->tied = -1;
    if (!name || name->kind != JSON_STRING || !shape || shape->kind != JSON_ARRAY || !dtype ||
        dtype->kind != JSON_STRING || !param || (param->kind != JSON_TRUE && param->kind != JSON_FALSE))
      return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu]: expected name, shape, dtype and param", manifest, where, i);
    int code = dtype_of(dtype->string);
    if (code < 0)
      return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu].dtype: unsupported dtype '%s'", manifest, where, i,
                  dtype->string);
    if (shape->count > MAX_RANK)
      return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu].shape: rank %zu is too large", manifest, where, i,
                  shape->count);
    info->name = strdup(name->string);
    int64_t *sizes = calloc(shape->count ? shape->count : 1, sizeof *sizes);
    info->shape = sizes;
    if (!info->name || !sizes) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
    info->dtype = (rlx_dtype_t)code;
    info->rank = (int32_t)shape->count;
    info->elements = 1;
    for (size_t d = 0; d < shape->count; ++d) {
      const json_t *size = &shape->items[d];
      if (size->kind != JSON_INTEGER || size->integer < 0 || size->integer > ((int64_t)1 << 40))
        return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu].shape: expected non-negative integers", manifest, where, i);
      sizes[d] = size->integer;
      info->elements *= size->integer;
      if (info->elements > ((int64_t)1 << 58))
        return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu].shape: too large", manifest, where, i);
    }
    info->bytes = (size_t)info->elements * DTYPE_SIZES[code];
    info->is_param = param->kind == JSON_TRUE;
    if (outputs && tied && tied->kind == JSON_INTEGER) {
      if (tied->integer < 0 || (size_t)tied->integer >= num_inputs)
        return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu].tied: no input #%lld", manifest, where, i,
                    (long long)tied->integer);
      info->tied = (int)tied->integer;
    } else if (outputs && (!tied || tied->kind != JSON_NULL)) {
      return fail(err, RLX_ERROR_MANIFEST, "%s: %s[%zu].tied: expected an input index or null", manifest, where, i);
    }
  }
  return RLX_OK;
}

static char *manifest_path(const char *path) {
  size_t length = strlen(path);
  const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
  size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : length;
  char *manifest = malloc(stem + 6);
  if (!manifest) return NULL;
  memcpy(manifest, path, stem);
  strcpy(manifest + stem, ".json");
  return manifest;
}

/* --- parameter files (safetensors: an 8-byte little-endian header size, a JSON header naming each
 * tensor's dtype, shape and [begin, end) byte offsets into the data that follows) ---------------- */

#define MAX_PARAMS_HEADER_BYTES (100 << 20)

static void describe(char *text, size_t size, rlx_dtype_t dtype, int32_t rank, const int64_t *shape);

typedef struct {
  char *name;
  rlx_dtype_t dtype;
  int32_t rank;
  int64_t shape[MAX_RANK];
  size_t begin, bytes;
  const void *data; /* in the mapping, or `copy` */
  void *copy;       /* a tensor not aligned to its element size in the file: copied, 64-byte aligned */
} param_entry;

/* The file is mapped read-only and each tensor used where it lies (the page cache's copy: every
 * context bound to these parameters, and every process mapping the same file, shares it). A
 * tensor whose data is not aligned to its element size in the file is copied instead. */
struct rlx_params {
  char *path;
  void *map;  /* the whole file, PROT_READ */
  void *read; /* or, where the file cannot be mapped, read into memory */
  size_t map_bytes;
  size_t data_offset, data_bytes, count;
  param_entry *entries;
};

static const param_entry *find_param(const rlx_params_t *params, const char *name);

static const struct { const char *name; rlx_dtype_t dtype; } SAFETENSORS_DTYPES[] = {
    {"F32", RLX_DTYPE_FLOAT32}, {"F16", RLX_DTYPE_FLOAT16}, {"F64", RLX_DTYPE_FLOAT64},
    {"BOOL", RLX_DTYPE_BOOL},   {"I8", RLX_DTYPE_INT8},     {"U8", RLX_DTYPE_UINT8},
    {"I16", RLX_DTYPE_INT16},   {"I32", RLX_DTYPE_INT32},   {"I64", RLX_DTYPE_INT64},
    {"BF16", RLX_DTYPE_BFLOAT16}, {"F8_E4M3", RLX_DTYPE_FLOAT8_E4M3FN}};

void rlx_params_close(rlx_params_t *params) {
  if (params == NULL) return;
  for (size_t i = 0; i < params->count; ++i) {
    free(params->entries[i].name);
    free(params->entries[i].copy);
  }
  free(params->entries);
  if (params->map) munmap(params->map, params->map_bytes);
  free(params->read);
  free(params->path);
  free(params);
}

size_t rlx_params_count(const rlx_params_t *params) { return params ? params->count : 0; }

static rlx_status_t read_param_entry(param_entry *entry, const char *name, const json_t *spec, size_t data_bytes,
                                     const char *path, rlx_error_t **err) {
  const json_t *dtype = json_get(spec, "dtype"), *shape = json_get(spec, "shape");
  const json_t *offsets = json_get(spec, "data_offsets");
  if (!dtype || dtype->kind != JSON_STRING || !shape || shape->kind != JSON_ARRAY || !offsets ||
      offsets->kind != JSON_ARRAY || offsets->count != 2 || offsets->items[0].kind != JSON_INTEGER ||
      offsets->items[1].kind != JSON_INTEGER)
    return fail(err, RLX_ERROR_PARAMS, "%s: tensor '%s': expected dtype, shape and data_offsets [begin, end]", path,
                name);
  int found = -1;
  for (size_t i = 0; i < sizeof SAFETENSORS_DTYPES / sizeof SAFETENSORS_DTYPES[0]; ++i)
    if (strcmp(dtype->string, SAFETENSORS_DTYPES[i].name) == 0) found = (int)SAFETENSORS_DTYPES[i].dtype;
  if (found < 0)
    return fail(err, RLX_ERROR_PARAMS, "%s: tensor '%s': dtype %s is not one the runtime reads", path, name,
                dtype->string);
  if (shape->count > MAX_RANK) return fail(err, RLX_ERROR_PARAMS, "%s: tensor '%s': rank too large", path, name);
  int64_t elements = 1;
  for (size_t d = 0; d < shape->count; ++d) {
    const json_t *size = &shape->items[d];
    if (size->kind != JSON_INTEGER || size->integer < 0 || size->integer > ((int64_t)1 << 40) ||
        (elements *= size->integer) > ((int64_t)1 << 58))
      return fail(err, RLX_ERROR_PARAMS, "%s: tensor '%s': bad shape", path, name);
    entry->shape[d] = size->integer;
  }
  int64_t begin = offsets->items[0].integer, end = offsets->items[1].integer;
  size_t width = DTYPE_SIZES[found];
  if (begin < 0 || end < begin || (uint64_t)end > data_bytes)
    return fail(err, RLX_ERROR_PARAMS, "%s: tensor '%s': data_offsets [%lld, %lld] outside the %zu bytes of data (a "
                "truncated file?)", path, name, (long long)begin, (long long)end, data_bytes);
  if ((uint64_t)(end - begin) != (uint64_t)elements * width || begin % (int64_t)width != 0)
    return fail(err, RLX_ERROR_PARAMS, "%s: tensor '%s': data_offsets [%lld, %lld] do not hold %lld aligned elements "
                "of %s", path, name, (long long)begin, (long long)end, (long long)elements, dtype->string);
  entry->name = strdup(name);
  if (!entry->name) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  entry->dtype = (rlx_dtype_t)found;
  entry->rank = (int32_t)shape->count;
  entry->begin = (size_t)begin;
  entry->bytes = (size_t)(end - begin);
  return RLX_OK;
}

static rlx_status_t read_params(rlx_params_t *params, int file, const char *path, rlx_error_t **err) {
  struct stat info;
  if (fstat(file, &info) != 0) return fail(err, RLX_ERROR_IO, "%s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(info.st_mode)) return fail(err, RLX_ERROR_PARAMS, "%s: not a regular file", path);
  if (info.st_size < 8)
    return fail(err, RLX_ERROR_PARAMS, "%s: not a safetensors file (shorter than its header size)", path);
  params->map_bytes = (size_t)info.st_size;
  void *map = mmap(NULL, params->map_bytes, PROT_READ, MAP_PRIVATE, file, 0);
  if (map != MAP_FAILED) {
    params->map = map;
  } else { /* a file system that cannot map files: read into memory instead */
    if (posix_memalign(&map, 64, params->map_bytes) != 0)
      return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory (%zu bytes of weights)", params->map_bytes);
    params->read = map;
    for (size_t done = 0; done < params->map_bytes;) {
      ssize_t got = read(file, (char *)map + done, params->map_bytes - done);
      if (got <= 0 && !(got < 0 && errno == EINTR))
        return fail(err, RLX_ERROR_IO, "%s: read error: %s", path, got < 0 ? strerror(errno) : "the file shrank");
      done += got > 0 ? (size_t)got : 0;
    }
  }
  const unsigned char *bytes = map;
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | bytes[i];
  if (header_bytes > MAX_PARAMS_HEADER_BYTES || header_bytes > (uint64_t)info.st_size - 8)
    return fail(err, RLX_ERROR_PARAMS, "%s: not a safetensors file (a header of %llu bytes in a file of %lld)", path,
                (unsigned long long)header_bytes, (long long)info.st_size);
  json_t root;
  const char *why;
  if (!json_read((const char *)bytes + 8, header_bytes, &root, &why))
    return fail(err, RLX_ERROR_PARAMS, "%s: its header is not valid JSON: %s", path, why);
  rlx_status_t status = RLX_OK;
  params->data_offset = 8 + (size_t)header_bytes;
  params->data_bytes = params->map_bytes - params->data_offset;
  if (root.kind != JSON_OBJECT) {
    status = fail(err, RLX_ERROR_PARAMS, "%s: its header is not a JSON object", path);
  } else if (!(params->entries = calloc(root.count + 1, sizeof *params->entries))) {
    status = fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (size_t i = 0; status == RLX_OK && i < root.count; ++i) {
    if (strcmp(root.keys[i], "__metadata__") == 0) continue;
    param_entry *entry = &params->entries[params->count];
    status = read_param_entry(entry, root.keys[i], &root.items[i], params->data_bytes, path, err);
    if (status != RLX_OK) break;
    ++params->count;
    const unsigned char *data = bytes + params->data_offset + entry->begin;
    entry->data = data;
    if ((uintptr_t)data % DTYPE_SIZES[entry->dtype] != 0) { /* misaligned in the file: a copy */
      if (posix_memalign(&entry->copy, 64, entry->bytes ? entry->bytes : 1) != 0) {
        entry->copy = NULL;
        status = fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory (%zu bytes of weight '%s')", entry->bytes,
                      entry->name);
        break;
      }
      memcpy(entry->copy, data, entry->bytes);
      entry->data = entry->copy;
    }
  }
  json_free(&root);
  return status;
}

rlx_params_t *rlx_params_open(const char *path, rlx_error_t **err) {
  if (err) *err = NULL;
  if (path == NULL) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_params_open: path is NULL"), NULL;
  int file = open(path, O_RDONLY | O_CLOEXEC);
  if (file < 0)
    return fail(err, RLX_ERROR_IO, "%s: cannot open the parameter file: %s", path, strerror(errno)), NULL;
  rlx_params_t *params = calloc(1, sizeof *params);
  rlx_status_t status = params && (params->path = strdup(path)) ? read_params(params, file, path, err)
                                                                  : fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  close(file); /* the mapping stays */
  if (status != RLX_OK) {
    rlx_params_close(params);
    return NULL;
  }
  return params;
}

const void *rlx_params_tensor(const rlx_params_t *params, const char *name, size_t *bytes) {
  const param_entry *entry = params && name ? find_param(params, name) : NULL;
  if (bytes) *bytes = entry ? entry->bytes : 0;
  return entry ? entry->data : NULL;
}

static const param_entry *find_param(const rlx_params_t *params, const char *name) {
  for (size_t i = 0; i < params->count; ++i)
    if (strcmp(params->entries[i].name, name) == 0) return &params->entries[i];
  return NULL;
}

/* RLX_OK when `params` holds every weight of the model with its dtype and shape. */
static rlx_status_t check_params(const rlx_model_t *model, const rlx_params_t *params, rlx_error_t **err) {
  for (size_t i = 0; i < model->num_inputs; ++i) {
    const rlx_tensor_info_t *info = &model->inputs[i];
    if (!info->is_param) continue;
    const param_entry *entry = find_param(params, info->name);
    if (!entry)
      return fail(err, RLX_ERROR_MISSING_PARAM, "weight '%s' of @%s is not in %s", info->name, model->function,
                  params->path);
    char expected[256], got[256];
    describe(expected, sizeof expected, info->dtype, info->rank, info->shape);
    describe(got, sizeof got, entry->dtype, entry->rank, entry->shape);
    int same = entry->rank == info->rank;
    for (int32_t d = 0; same && d < info->rank; ++d) same = entry->shape[d] == info->shape[d];
    if (entry->dtype != info->dtype || !same)
      return fail(err, entry->dtype != info->dtype ? RLX_ERROR_DTYPE : RLX_ERROR_SHAPE,
                  "weight '%s' of @%s is %s, %s holds %s", info->name, model->function, expected, params->path, got);
  }
  return RLX_OK;
}

static rlx_status_t read_function(rlx_model_t *model, const json_t *functions, const char *entry, const char *path,
                                  const char *where, rlx_error_t **err);

/* The manifest's params ({"file": bare name, "bytes": its size}): read from the model's directory. */
static rlx_status_t open_shipped_params(rlx_model_t *model, const json_t *params, const char *path, size_t directory,
                                        const char *where, rlx_error_t **err) {
  const json_t *name = json_get(params, "file"), *bytes = json_get(params, "bytes");
  if (!name || name->kind != JSON_STRING || !name->string[0] || strchr(name->string, '/') ||
      strcmp(name->string, "..") == 0 || !bytes || bytes->kind != JSON_INTEGER)
    return fail(err, RLX_ERROR_MANIFEST, "%s: params: expected a bare file name and its size in bytes", where);
  char *file = malloc(directory + strlen(name->string) + 1);
  if (!file) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  memcpy(file, path, directory);
  strcpy(file + directory, name->string);
  FILE *probe = fopen(file, "rb");
  long size = -1;
  if (probe && fseek(probe, 0, SEEK_END) == 0) size = ftell(probe);
  if (probe) fclose(probe);
  rlx_status_t status = RLX_OK;
  if (size < 0)
    status = fail(err, RLX_ERROR_IO, "%s: cannot open the model's parameter file (named by %s)", file, where);
  else if (size != bytes->integer)
    status = fail(err, RLX_ERROR_MANIFEST, "%s: %ld bytes, %s records %lld (truncated, or from another compile)",
                  file, size, where, (long long)bytes->integer);
  else
    model->params = rlx_params_open(file, err);
  free(file);
  if (status != RLX_OK) return status;
  return model->params ? RLX_OK : rlx_error_code(err ? *err : NULL) ? rlx_error_code(*err) : RLX_ERROR_PARAMS;
}

/* --- CUDA models (target 'cuda': written against the CUDA driver API and MLIR's CUDA runtime
 * wrappers; checked against pytests/fake_cuda everywhere, and on an H100 by the GPU bundle's check.py) --
 * The driver (libcuda.so.1, or the library $RLX_CUDA_DRIVER names) is loaded with dlopen, never
 * linked: a program built with this runtime starts on machines without CUDA, and opening a CUDA
 * model there is an RLX_ERROR_DEVICE with the reason. Each context holds a stream and one device
 * buffer per input and output, allocated once; rlx_invoke copies the runtime inputs in, uploads a
 * weight when its bound host pointer changed (not when its data changed in place), runs, copies the
 * outputs (and the inputs updated in place) back, and synchronises. */

#define CUDA_DRIVER_ENV "RLX_CUDA_DRIVER"

static rlx_status_t open_cuda_driver(rlx_model_t *model, const char *path, rlx_error_t **err) {
  const char *name = getenv(CUDA_DRIVER_ENV);
  if (!name || !*name) name = "libcuda.so.1";
  model->driver = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (!model->driver) {
    const char *detail = dlerror();
    return fail(err, RLX_ERROR_DEVICE, "%s: a 'cuda' model, and no CUDA driver here (%s cannot be loaded: %s)", path,
                name, detail ? detail : "unknown error");
  }
  int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(model->driver, "cuInit");
  int (*device_count)(int *) = (int (*)(int *))dlsym(model->driver, "cuDeviceGetCount");
  if (!cu_init || !device_count)
    return fail(err, RLX_ERROR_DEVICE, "%s: %s is not a CUDA driver (it lacks cuInit or cuDeviceGetCount)", path,
                name);
  int result = cu_init(0), count = 0;
  if (result != 0)
    return fail(err, RLX_ERROR_DEVICE, "%s: a 'cuda' model, and the CUDA driver does not initialise (cuInit: "
                "CUresult %d; is a GPU present?)", path, result);
  if ((result = device_count(&count)) != 0 || count < 1)
    return fail(err, RLX_ERROR_DEVICE, "%s: a 'cuda' model, and no CUDA device is present", path);
  return RLX_OK;
}

static rlx_status_t find_gpu_runtime(rlx_model_t *model, const char *path, rlx_error_t **err) {
  static const char *const names[] = {"mgpuMemAlloc", "mgpuMemFree", "mgpuMemcpy", "mgpuStreamCreate",
                                      "mgpuStreamSynchronize", "mgpuStreamDestroy"};
  void *found[6];
  for (int i = 0; i < 6; ++i)
    if (!(found[i] = dlsym(model->library, names[i])))
      return fail(err, RLX_ERROR_LOAD, "%s: a 'cuda' model without %s (libmlir_cuda_runtime.so)", path, names[i]);
  memcpy(&model->gpu.alloc, &found[0], sizeof found[0]);
  memcpy(&model->gpu.free, &found[1], sizeof found[1]);
  memcpy(&model->gpu.copy, &found[2], sizeof found[2]);
  memcpy(&model->gpu.stream_create, &found[3], sizeof found[3]);
  memcpy(&model->gpu.stream_synchronize, &found[4], sizeof found[4]);
  memcpy(&model->gpu.stream_destroy, &found[5], sizeof found[5]);
  return RLX_OK;
}

static rlx_status_t open_model(rlx_model_t *model, const char *path, const char *entry, const char *where,
                               json_t *manifest, json_t *record, rlx_error_t **err) {
  size_t length;
  const char *why;
  char *text = read_file(where, &length, err);
  if (!text) return rlx_error_code(err ? *err : NULL) ? rlx_error_code(*err) : RLX_ERROR_IO;
  int parsed = json_read(text, length, manifest, &why);
  free(text);
  if (!parsed) return fail(err, RLX_ERROR_MANIFEST, "%s: not valid JSON: %s", where, why);
  const json_t *format = json_get(manifest, "format"), *target = json_get(manifest, "target");
  const json_t *library = json_get(manifest, "library"), *functions = json_get(manifest, "functions");
  if (!format || format->kind != JSON_STRING || strcmp(format->string, MANIFEST_FORMAT) != 0)
    return fail(err, RLX_ERROR_MANIFEST, "%s: format: not an RLX AOT manifest of format '%s' (export the model "
                "again with this version)", where, MANIFEST_FORMAT);
  if (!target || target->kind != JSON_STRING || !library || library->kind != JSON_STRING || !functions ||
      functions->kind != JSON_ARRAY || functions->count == 0)
    return fail(err, RLX_ERROR_MANIFEST, "%s: expected target, library and a non-empty functions list", where);
  model->cuda = strcmp(target->string, "cuda") == 0;
  if (!model->cuda && strcmp(target->string, "cpu") != 0)
    return fail(err, RLX_ERROR_UNSUPPORTED, "%s: a '%s' model; the C runtime runs 'cpu' and 'cuda' models", where,
                target->string);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strcmp(library->string, base) != 0)
    return fail(err, RLX_ERROR_MANIFEST, "%s: library: describes '%s', not '%s'", where, library->string, base);

  /* Before anything is loaded: a truncated library would be mapped past its end (SIGBUS). */
  const json_t *digests = json_get(manifest, "sha256"), *runtime = json_get(manifest, "runtime_libraries");
  if (!digests || digests->kind != JSON_OBJECT || !runtime || runtime->kind != JSON_ARRAY)
    return fail(err, RLX_ERROR_MANIFEST, "%s: expected sha256 (an object) and runtime_libraries (a list)", where);
  size_t directory = (size_t)(base - path);
  for (size_t i = 0; i <= runtime->count; ++i) {
    const json_t *name = i == 0 ? library : &runtime->items[i - 1];
    if (name->kind != JSON_STRING || !name->string[0] || strchr(name->string, '/') || strcmp(name->string, ".") == 0 ||
        strcmp(name->string, "..") == 0)
      return fail(err, RLX_ERROR_MANIFEST, "%s: runtime_libraries: expected bare file names", where);
    const json_t *digest = json_get(digests, name->string);
    if (!digest || digest->kind != JSON_STRING || strlen(digest->string) != 64)
      return fail(err, RLX_ERROR_MANIFEST, "%s: sha256.%s: missing or not 64 hex digits", where, name->string);
    char *file = malloc(directory + strlen(name->string) + 1);
    if (!file) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
    memcpy(file, path, directory);
    strcpy(file + directory, name->string);
    rlx_status_t status = check_digest(file, digest->string, where, err);
    free(file);
    if (status != RLX_OK) return status;
  }

  /* A CUDA model: the driver and a device, asked before the library (whose CUDA runtime needs them) loads. */
  if (model->cuda) {
    rlx_status_t status = open_cuda_driver(model, path, err);
    if (status != RLX_OK) return status;
  }
  model->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!model->library) {
    const char *detail = dlerror();
    return fail(err, RLX_ERROR_LOAD, "%s: cannot load the library: %s%s", path, detail ? detail : "unknown error",
                model->cuda ? " (a CUDA model loads libmlir_cuda_runtime.so from its directory, which needs "
                              "libLLVM.so beside it or on the library path)" : "");
  }
  const char *signature = dlsym(model->library, SIGNATURE_SYMBOL);
  if (!signature)
    return fail(err, RLX_ERROR_LOAD, "%s: has no signature record (%s); not a library written by rlx-compile",
                path, SIGNATURE_SYMBOL);
  if (!json_read(signature, strnlen(signature, MAX_MANIFEST_BYTES), record, &why))
    return fail(err, RLX_ERROR_MANIFEST, "%s: its signature record is not valid JSON: %s", path, why);
  if (!json_equal(json_get(record, "target"), target) || !json_equal(json_get(record, "functions"), functions))
    return fail(err, RLX_ERROR_MANIFEST, "%s: does not describe %s (its functions differ from the signature "
                "compiled into the library; export the model again)", where, base);

  if (model->cuda) {
    rlx_status_t status = find_gpu_runtime(model, path, err);
    if (status != RLX_OK) return status;
  }
  const json_t *params = json_get(manifest, "params");
  if (params) {
    rlx_status_t status = open_shipped_params(model, params, path, (size_t)(base - path), where, err);
    if (status != RLX_OK) return status;
  }
  rlx_status_t status = read_function(model, functions, entry, path, where, err);
  if (status != RLX_OK) return status;
  char symbol[256];
  snprintf(symbol, sizeof symbol, PACKED_PREFIX "%s", model->function);
  model->call = (packed_function)dlsym(model->library, symbol);
  if (!model->call)
    return fail(err, RLX_ERROR_LOAD, "%s: has no %s; compile the model again with rlx-compile", path, symbol);
  return model->params ? check_params(model, model->params, err) : RLX_OK;
}

/* Reads the function `entry` (NULL: the only one) of the `functions` list into the model. */
static rlx_status_t read_function(rlx_model_t *model, const json_t *functions, const char *entry, const char *path,
                                  const char *where, rlx_error_t **err) {
  const json_t *function = NULL;
  if (entry == NULL) {
    if (functions->count != 1)
      return fail(err, RLX_ERROR_INVALID_ARGUMENT, "%s: the model has %zu functions; open one with "
                  "rlx_model_open_entry", path, functions->count);
    function = &functions->items[0];
  } else {
    for (size_t i = 0; i < functions->count; ++i) {
      const json_t *name = json_get(&functions->items[i], "name");
      if (name && name->kind == JSON_STRING && strcmp(name->string, entry) == 0) function = &functions->items[i];
    }
    if (!function) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "%s: the model has no function '%s'", path, entry);
  }
  const json_t *name = json_get(function, "name"), *arena = json_get(function, "arena");
  if (!name || name->kind != JSON_STRING || strlen(name->string) > 200)
    return fail(err, RLX_ERROR_MANIFEST, "%s: a function without a valid name", where);
  model->function = strdup(name->string);
  if (!model->function) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  rlx_status_t status = read_specs(json_get(function, "inputs"), "inputs", 0, 0, &model->inputs, &model->num_inputs,
                                   where, err);
  if (status == RLX_OK)
    status = read_specs(json_get(function, "outputs"), "outputs", 1, model->num_inputs, &model->outputs,
                        &model->num_outputs, where, err);
  if (status != RLX_OK) return status;
  for (size_t i = 0; i < model->num_outputs; ++i) {
    const rlx_tensor_info_t *output = &model->outputs[i];
    if (output->tied >= 0) {
      const rlx_tensor_info_t *input = &model->inputs[output->tied];
      if (input->bytes != output->bytes || input->dtype != output->dtype)
        return fail(err, RLX_ERROR_MANIFEST, "%s: output '%s' is tied to input '%s' of another type", where,
                    output->name, input->name);
    }
  }
  for (size_t i = 0; i < model->num_inputs; ++i) model->num_runtime_inputs += !model->inputs[i].is_param;
  if (arena) {
    const json_t *bytes = json_get(arena, "bytes"), *alignment = json_get(arena, "alignment");
    if (!bytes || bytes->kind != JSON_INTEGER || bytes->integer <= 0 || bytes->integer > ((int64_t)1 << 46) ||
        !alignment || alignment->kind != JSON_INTEGER || alignment->integer < 1 || alignment->integer > 4096 ||
        (alignment->integer & (alignment->integer - 1)))
      return fail(err, RLX_ERROR_MANIFEST, "%s: arena: expected a positive size and a power-of-two alignment", where);
    model->arena_bytes = (size_t)bytes->integer;
    model->arena_alignment = (size_t)alignment->integer;
    if (model->cuda)
      return fail(err, RLX_ERROR_UNSUPPORTED, "%s: @%s of a 'cuda' model has an arena; the C runtime gives CUDA "
                  "functions none", where, model->function);
  }
  return RLX_OK;
}

rlx_model_t *rlx_model_open_entry(const char *path, const char *entry, rlx_error_t **err) {
  if (err) *err = NULL;
  if (path == NULL) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_model_open: path is NULL"), NULL;
  rlx_model_t *model = calloc(1, sizeof *model);
  char *where = manifest_path(path);
  if (!model || !where) {
    free(model);
    free(where);
    return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory"), NULL;
  }
  json_t manifest, record;
  memset(&manifest, 0, sizeof manifest);
  memset(&record, 0, sizeof record);
  rlx_status_t status = open_model(model, path, entry, where, &manifest, &record, err);
  json_free(&manifest);
  json_free(&record);
  free(where);
  if (status != RLX_OK) {
    rlx_model_close(model);
    return NULL;
  }
  return model;
}

rlx_model_t *rlx_model_open(const char *path, rlx_error_t **err) { return rlx_model_open_entry(path, NULL, err); }

rlx_model_t *rlx_model_open_static(const char *signature, const rlx_static_function_t *functions, size_t count,
                                   const char *entry, rlx_error_t **err) {
  if (err) *err = NULL;
  if (!signature || (count && !functions))
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_model_open_static: %s is NULL",
                !signature ? "the signature" : "the function table"), NULL;
  rlx_model_t *model = calloc(1, sizeof *model);
  if (!model) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory"), NULL;
  json_t record;
  const char *why;
  rlx_status_t status = RLX_OK;
  if (!json_read(signature, strnlen(signature, MAX_MANIFEST_BYTES), &record, &why)) {
    status = fail(err, RLX_ERROR_MANIFEST, "a static model's signature record is not valid JSON: %s", why);
  } else {
    const json_t *target = json_get(&record, "target"), *list = json_get(&record, "functions");
    if (!target || target->kind != JSON_STRING || strcmp(target->string, "cpu") != 0 || !list ||
        list->kind != JSON_ARRAY)
      status = fail(err, RLX_ERROR_MANIFEST, "a static model's signature record names no cpu functions");
    else
      status = read_function(model, list, entry, "the static model", "its signature record", err);
    json_free(&record);
  }
  for (size_t i = 0; status == RLX_OK && i < count && !model->call; ++i)
    if (functions[i].name && strcmp(functions[i].name, model->function) == 0) model->call = functions[i].call;
  if (status == RLX_OK && !model->call)
    status = fail(err, RLX_ERROR_LOAD, "the static model's function table has no @%s", model->function);
  if (status != RLX_OK) {
    rlx_model_close(model);
    return NULL;
  }
  return model;
}

const char *rlx_model_function(const rlx_model_t *model) { return model ? model->function : NULL; }
size_t rlx_model_num_inputs(const rlx_model_t *model) { return model ? model->num_inputs : 0; }
size_t rlx_model_num_outputs(const rlx_model_t *model) { return model ? model->num_outputs : 0; }
size_t rlx_model_num_runtime_inputs(const rlx_model_t *model) { return model ? model->num_runtime_inputs : 0; }
size_t rlx_model_arena_bytes(const rlx_model_t *model) { return model ? model->arena_bytes : 0; }

const rlx_tensor_info_t *rlx_model_input(const rlx_model_t *model, size_t index) {
  return model && index < model->num_inputs ? &model->inputs[index] : NULL;
}
const rlx_tensor_info_t *rlx_model_output(const rlx_model_t *model, size_t index) {
  return model && index < model->num_outputs ? &model->outputs[index] : NULL;
}

static int64_t find(const rlx_tensor_info_t *infos, size_t count, const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < count; ++i)
    if (strcmp(infos[i].name, name) == 0) return (int64_t)i;
  return -1;
}
int64_t rlx_model_find_input(const rlx_model_t *model, const char *name) {
  return model ? find(model->inputs, model->num_inputs, name) : -1;
}
int64_t rlx_model_find_output(const rlx_model_t *model, const char *name) {
  return model ? find(model->outputs, model->num_outputs, name) : -1;
}

/* --- contexts and calls ---------------------------------------------------------------------- */

struct rlx_context {
  const rlx_model_t *model;
  void *arena;
  const void **params;  /* per input: the bound weight, or NULL */
  size_t num_descriptors;
  int64_t **descriptors; /* MLIR ranked memref descriptors: ptr, ptr, offset, sizes[rank], strides[rank] */
  void **pointers;       /* what rlx_call_<name> takes */
  int64_t *input_slot, *output_slot; /* the descriptor of each input / output (-1: a tied output) */
  rlx_params_t *owned_params;        /* opened by rlx_context_bind_params_file */
  const void **host;                 /* per input, then per output: the caller's data in this call */
  void *stream;                      /* a CUDA model's: its stream, */
  void **device;                     /* per descriptor, its device buffer, */
  const void **uploaded;             /* and per input, the host data its weight was uploaded from */
};

static int64_t *new_descriptor(const int64_t *shape, int32_t rank) {
  int64_t *descriptor = calloc(3 + 2 * (size_t)rank, sizeof *descriptor);
  if (!descriptor) return NULL;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    descriptor[3 + d] = shape[d];
    descriptor[3 + rank + d] = stride;
    stride *= shape[d];
  }
  return descriptor;
}

static void point(int64_t *descriptor, const void *data) {
  memcpy(&descriptor[0], &data, sizeof data); /* allocated */
  memcpy(&descriptor[1], &data, sizeof data); /* aligned; descriptor[2], the offset, stays 0 */
}

void rlx_context_destroy(rlx_context_t *context) {
  if (context == NULL) return;
  for (size_t i = 0; context->descriptors && i < context->num_descriptors; ++i) free(context->descriptors[i]);
  free(context->descriptors);
  free(context->pointers);
  free(context->params);
  free(context->input_slot);
  free(context->output_slot);
  free(context->arena);
  if (context->device) {
    const struct gpu_runtime *gpu = &context->model->gpu;
    for (size_t i = 0; i < context->num_descriptors; ++i)
      if (context->device[i]) gpu->free(context->device[i], context->stream);
    gpu->stream_synchronize(context->stream);
  }
  if (context->stream) context->model->gpu.stream_destroy(context->stream);
  free(context->device);
  free(context->uploaded);
  free(context->host);
  rlx_params_close(context->owned_params);
  free(context);
}

/* A CUDA model's context: its stream and a device buffer per input and untied output. */
static rlx_status_t create_device_buffers(rlx_context_t *context, rlx_error_t **err) {
  const rlx_model_t *model = context->model;
  const struct gpu_runtime *gpu = &model->gpu;
  context->device = calloc(context->num_descriptors + 1, sizeof *context->device);
  context->uploaded = calloc(model->num_inputs + 1, sizeof *context->uploaded);
  if (!context->device || !context->uploaded) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory");
  if (!(context->stream = gpu->stream_create()))
    return fail(err, RLX_ERROR_DEVICE, "rlx_context_create: no CUDA stream for @%s", model->function);
  for (size_t i = 0; i < model->num_inputs + model->num_outputs; ++i) {
    int output = i >= model->num_inputs;
    const rlx_tensor_info_t *info = output ? &model->outputs[i - model->num_inputs] : &model->inputs[i];
    int64_t slot = output ? context->output_slot[i - model->num_inputs] : context->input_slot[i];
    if (slot < 0) continue; /* a tied output: its input's buffer */
    void *buffer = gpu->alloc(info->bytes ? info->bytes : 1, context->stream, 0);
    if (!buffer)
      return fail(err, RLX_ERROR_OUT_OF_MEMORY, "rlx_context_create: out of device memory (%zu bytes for '%s')",
                  info->bytes, info->name);
    context->device[slot] = buffer;
    point(context->descriptors[slot], buffer);
  }
  return RLX_OK;
}

/* One call of a CUDA model, its arguments checked: host data in context->host. */
static void cuda_call(rlx_context_t *context) {
  const rlx_model_t *model = context->model;
  const struct gpu_runtime *gpu = &model->gpu;
  for (size_t i = 0; i < model->num_inputs; ++i) {
    const rlx_tensor_info_t *info = &model->inputs[i];
    if (info->is_param && context->uploaded[i] == context->host[i]) continue; /* on the device already */
    gpu->copy(context->device[context->input_slot[i]], (void *)context->host[i], info->bytes, context->stream);
    if (info->is_param) context->uploaded[i] = context->host[i];
  }
  gpu->stream_synchronize(context->stream); /* the inputs are there before the function's own stream runs */
  model->call(context->pointers);
  for (size_t o = 0; o < model->num_outputs; ++o) {
    const rlx_tensor_info_t *info = &model->outputs[o];
    int64_t slot = info->tied >= 0 ? context->input_slot[info->tied] : context->output_slot[o];
    void *host = (void *)(info->tied >= 0 ? context->host[info->tied] : context->host[model->num_inputs + o]);
    gpu->copy(host, context->device[slot], info->bytes, context->stream);
    if (info->tied >= 0) context->uploaded[info->tied] = NULL; /* a weight updated in place: uploaded again */
  }
  gpu->stream_synchronize(context->stream);
}

rlx_context_t *rlx_context_create(const rlx_model_t *model, rlx_error_t **err) {
  if (err) *err = NULL;
  if (model == NULL) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_context_create: model is NULL"), NULL;
  rlx_context_t *context = calloc(1, sizeof *context);
  if (!context) return fail(err, RLX_ERROR_OUT_OF_MEMORY, "out of memory"), NULL;
  context->model = model;
  size_t tied = 0;
  for (size_t i = 0; i < model->num_outputs; ++i) tied += model->outputs[i].tied >= 0;
  context->num_descriptors = model->num_inputs + (model->arena_bytes > 0) + model->num_outputs - tied;
  context->descriptors = calloc(context->num_descriptors + 1, sizeof *context->descriptors);
  context->pointers = calloc(context->num_descriptors + 1, sizeof *context->pointers);
  context->params = calloc(model->num_inputs + 1, sizeof *context->params);
  context->input_slot = calloc(model->num_inputs + 1, sizeof *context->input_slot);
  context->output_slot = calloc(model->num_outputs + 1, sizeof *context->output_slot);
  context->host = calloc(model->num_inputs + model->num_outputs + 1, sizeof *context->host);
  if (!context->descriptors || !context->pointers || !context->params || !context->input_slot ||
      !context->output_slot || !context->host)
    goto out_of_memory;
  size_t slot = 0;
  for (size_t i = 0; i < model->num_inputs; ++i, ++slot) {
    context->input_slot[i] = (int64_t)slot;
    if (!(context->descriptors[slot] = new_descriptor(model->inputs[i].shape, model->inputs[i].rank)))
      goto out_of_memory;
  }
  if (model->arena_bytes > 0) {
    size_t alignment = model->arena_alignment < sizeof(void *) ? sizeof(void *) : model->arena_alignment;
    size_t bytes = (model->arena_bytes + alignment - 1) / alignment * alignment;
    if (posix_memalign(&context->arena, alignment, bytes) != 0) {
      context->arena = NULL;
      goto out_of_memory;
    }
    int64_t size = (int64_t)model->arena_bytes;
    if (!(context->descriptors[slot] = new_descriptor(&size, 1))) goto out_of_memory;
    point(context->descriptors[slot++], context->arena);
  }
  for (size_t i = 0; i < model->num_outputs; ++i) {
    context->output_slot[i] = -1;
    if (model->outputs[i].tied >= 0) continue;
    context->output_slot[i] = (int64_t)slot;
    if (!(context->descriptors[slot++] = new_descriptor(model->outputs[i].shape, model->outputs[i].rank)))
      goto out_of_memory;
  }
  for (size_t i = 0; i < context->num_descriptors; ++i) context->pointers[i] = context->descriptors[i];
  if (model->cuda && create_device_buffers(context, err) != RLX_OK) {
    rlx_context_destroy(context);
    return NULL;
  }
  if (model->params && rlx_context_bind_params(context, model->params, err) != RLX_OK) {
    rlx_context_destroy(context);
    return NULL;
  }
  return context;
out_of_memory:
  rlx_context_destroy(context);
  return fail(err, RLX_ERROR_OUT_OF_MEMORY, "rlx_context_create: out of memory (arena of %zu bytes)",
              model->arena_bytes), NULL;
}

rlx_status_t rlx_context_bind_param(rlx_context_t *context, const char *name, const void *data, size_t bytes,
                                    rlx_error_t **err) {
  if (err) *err = NULL;
  if (!context || !name || !data)
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_context_bind_param: %s is NULL",
                !context ? "the context" : !name ? "the name" : "the data");
  const rlx_model_t *model = context->model;
  int64_t index = rlx_model_find_input(model, name);
  if (index < 0) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "@%s has no input named '%s'", model->function, name);
  const rlx_tensor_info_t *info = &model->inputs[index];
  if (!info->is_param)
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "input '%s' of @%s is not a weight (rlx.param): pass it to "
                "rlx_invoke", name, model->function);
  if (bytes != info->bytes)
    return fail(err, RLX_ERROR_SHAPE, "weight '%s' of @%s is %s with %lld elements (%zu bytes), got %zu bytes", name,
                model->function, rlx_dtype_name(info->dtype), (long long)info->elements, info->bytes, bytes);
  context->params[index] = data;
  return RLX_OK;
}

rlx_status_t rlx_context_bind_params(rlx_context_t *context, const rlx_params_t *params, rlx_error_t **err) {
  if (err) *err = NULL;
  if (!context || !params)
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_context_bind_params: %s is NULL",
                !context ? "the context" : "the parameters");
  rlx_status_t status = check_params(context->model, params, err); /* all or nothing */
  if (status != RLX_OK) return status;
  const rlx_model_t *model = context->model;
  for (size_t i = 0; i < model->num_inputs; ++i)
    if (model->inputs[i].is_param)
      context->params[i] = find_param(params, model->inputs[i].name)->data;
  return RLX_OK;
}

const void *rlx_context_param(const rlx_context_t *context, const char *name) {
  int64_t index = context ? rlx_model_find_input(context->model, name) : -1;
  return index >= 0 && context->model->inputs[index].is_param ? context->params[index] : NULL;
}

rlx_status_t rlx_context_bind_params_file(rlx_context_t *context, const char *path, rlx_error_t **err) {
  if (err) *err = NULL;
  if (!context) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_context_bind_params_file: the context is NULL");
  rlx_params_t *params = rlx_params_open(path, err);
  if (!params) return rlx_error_code(err ? *err : NULL) ? rlx_error_code(*err) : RLX_ERROR_PARAMS;
  rlx_status_t status = rlx_context_bind_params(context, params, err);
  if (status != RLX_OK) {
    rlx_params_close(params);
    return status;
  }
  rlx_params_close(context->owned_params);
  context->owned_params = params;
  return RLX_OK;
}

static void describe(char *text, size_t size, rlx_dtype_t dtype, int32_t rank, const int64_t *shape) {
  int n = snprintf(text, size, "%s[", rlx_dtype_name(dtype));
  for (int32_t d = 0; d < rank && n > 0 && (size_t)n < size; ++d)
    n += snprintf(text + n, size - n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (n > 0 && (size_t)n < size) snprintf(text + n, size - n, "]");
}

static rlx_status_t check_tensor(const rlx_tensor_t *tensor, const rlx_tensor_info_t *info, const char *kind,
                                 const char *function, rlx_error_t **err) {
  char expected[256], got[256];
  describe(expected, sizeof expected, info->dtype, info->rank, info->shape);
  if (tensor->data == NULL)
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "%s '%s' of @%s: data is NULL", kind, info->name, function);
  if (tensor->rank < 0 || tensor->rank > MAX_RANK || (tensor->rank > 0 && tensor->shape == NULL))
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "%s '%s' of @%s: rank %d with %s shape", kind, info->name, function,
                (int)tensor->rank, tensor->shape ? "a" : "a NULL");
  describe(got, sizeof got, tensor->dtype, tensor->rank, tensor->shape);
  if (tensor->dtype != info->dtype)
    return fail(err, RLX_ERROR_DTYPE, "%s '%s' of @%s: expected %s, got %s", kind, info->name, function, expected, got);
  int same = tensor->rank == info->rank;
  for (int32_t d = 0; same && d < info->rank; ++d) same = tensor->shape[d] == info->shape[d];
  if (!same)
    return fail(err, RLX_ERROR_SHAPE, "%s '%s' of @%s: expected %s, got %s", kind, info->name, function, expected, got);
  if (tensor->bytes != info->bytes)
    return fail(err, RLX_ERROR_SHAPE, "%s '%s' of @%s: %s is %zu bytes, got a buffer of %zu", kind, info->name,
                function, expected, info->bytes, tensor->bytes);
  return RLX_OK;
}

static int overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const char *x = a, *y = b;
  return a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
}

rlx_status_t rlx_invoke(rlx_context_t *context, const rlx_tensor_t *inputs, size_t num_inputs,
                        const rlx_tensor_t *outputs, size_t num_outputs, rlx_error_t **err) {
  if (err) *err = NULL;
  if (!context) return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_invoke: the context is NULL");
  const rlx_model_t *model = context->model;
  if (num_inputs != model->num_runtime_inputs)
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "@%s takes %zu runtime inputs (its %zu weights are bound to the "
                "context), got %zu", model->function, model->num_runtime_inputs,
                model->num_inputs - model->num_runtime_inputs, num_inputs);
  if (num_outputs != model->num_outputs)
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "@%s has %zu outputs, got %zu", model->function, model->num_outputs,
                num_outputs);
  if ((num_inputs && !inputs) || (num_outputs && !outputs))
    return fail(err, RLX_ERROR_INVALID_ARGUMENT, "rlx_invoke: the %s array is NULL", inputs ? "outputs" : "inputs");
  size_t given = 0;
  for (size_t i = 0; i < model->num_inputs; ++i) {
    const rlx_tensor_info_t *info = &model->inputs[i];
    if (info->is_param) {
      if (!context->params[i])
        return fail(err, RLX_ERROR_MISSING_PARAM, "weight '%s' of @%s is not bound (rlx_context_bind_param)",
                    info->name, model->function);
      context->host[i] = context->params[i];
    } else {
      rlx_status_t status = check_tensor(&inputs[given], info, "input", model->function, err);
      if (status != RLX_OK) return status;
      context->host[i] = inputs[given++].data;
    }
    if (!model->cuda) point(context->descriptors[context->input_slot[i]], context->host[i]);
  }
  for (size_t o = 0; o < model->num_outputs; ++o) {
    const rlx_tensor_info_t *info = &model->outputs[o];
    if (info->tied >= 0) {
      const void *in_place = context->host[info->tied];
      if (outputs[o].data != NULL && outputs[o].data != in_place)
        return fail(err, RLX_ERROR_INVALID_ARGUMENT, "output '%s' of @%s is input '%s' updated in place: pass NULL "
                    "or that input's data", info->name, model->function, model->inputs[info->tied].name);
      continue;
    }
    rlx_status_t status = check_tensor(&outputs[o], info, "output", model->function, err);
    if (status != RLX_OK) return status;
    for (size_t i = 0, runtime = 0; i < model->num_inputs; ++i) {
      const void *input = model->inputs[i].is_param ? context->params[i] : inputs[runtime++].data;
      if (overlap(outputs[o].data, info->bytes, input, model->inputs[i].bytes))
        return fail(err, RLX_ERROR_INVALID_ARGUMENT, "output '%s' of @%s overlaps input '%s': give it a buffer of "
                    "its own", info->name, model->function, model->inputs[i].name);
    }
    for (size_t other = 0; other < o; ++other)
      if (model->outputs[other].tied < 0 && overlap(outputs[o].data, info->bytes, outputs[other].data,
                                                     model->outputs[other].bytes))
        return fail(err, RLX_ERROR_INVALID_ARGUMENT, "outputs '%s' and '%s' of @%s share memory: each needs a "
                    "buffer of its own", model->outputs[other].name, info->name, model->function);
    context->host[model->num_inputs + o] = outputs[o].data;
    if (!model->cuda) point(context->descriptors[context->output_slot[o]], outputs[o].data);
  }
  if (model->cuda)
    cuda_call(context);
  else
    model->call(context->pointers);
  return RLX_OK;
}
