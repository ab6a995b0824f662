/* braze's C API: the operations of braze.h over opaque handles, for FFI from any language.
 *
 *   braze_engine* e = NULL;
 *   braze_compile_options o;
 *   braze_compile_options_init(&o);
 *   o.shapes = "input_0:2x16,input_1:2x16";
 *   if (braze_engine_compile("model.onnx", &o, &e) != BRAZE_OK)
 *     fprintf(stderr, "%s\n", braze_last_error());
 *
 * Every call that can fail returns a braze_status; on failure braze_last_error() holds the
 * message (as the CLI prints it) until this thread's next failing call. Objects a call
 * creates are the caller's, freed by the matching *_free (which accept NULL). An engine may
 * be shared by threads, each with its own session. */
#ifndef BRAZE_BRAZE_C_H
#define BRAZE_BRAZE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum braze_status {
  BRAZE_OK = 0,
  BRAZE_USER_ERROR = 1,    /* the model, an input, an option or an argument */
  BRAZE_DEVICE_ERROR = 2,  /* the CUDA driver or NVRTC; no GPU for BRAZE_BACKEND_GPU */
  BRAZE_INTERNAL_ERROR = 3 /* a bug in braze */
} braze_status;

typedef enum braze_backend {
  BRAZE_BACKEND_AUTO = 0, /* the GPU when there is one, else the CPU reference */
  BRAZE_BACKEND_GPU = 1,
  BRAZE_BACKEND_REFERENCE = 2, /* the engine's graph on the CPU reference executor */
  BRAZE_BACKEND_EMULATOR = 3   /* its graph in kernels generated for the CPU emulator */
} braze_backend;

/* The values of braze::DType. */
typedef enum braze_dtype {
  BRAZE_FLOAT32 = 0,
  BRAZE_FLOAT16 = 1,
  BRAZE_BFLOAT16 = 2,
  BRAZE_FLOAT64 = 3,
  BRAZE_INT64 = 4,
  BRAZE_INT32 = 5,
  BRAZE_INT16 = 6,
  BRAZE_INT8 = 7,
  BRAZE_UINT64 = 8,
  BRAZE_UINT32 = 9,
  BRAZE_UINT16 = 10,
  BRAZE_UINT8 = 11,
  BRAZE_BOOL = 12
} braze_dtype;

typedef struct braze_engine braze_engine;
typedef struct braze_session braze_session;
typedef struct braze_tensor braze_tensor; /* a host tensor */

typedef struct braze_compile_options {
  const char* shapes;    /* "name:2x16,other:2x16" for symbolic dims (default 1); NULL: none */
  const char* precision; /* "fp32" (default), "tf32", "fp16", "bf16" */
  const char* arch;      /* "sm_90a" …; NULL or "": this machine's GPU, else sm_90 */
  int fuse;              /* default 1 */
  int tune;              /* default 0 */
  int use_cache;         /* default 1 */
} braze_compile_options;

void braze_compile_options_init(braze_compile_options* options);

const char* braze_last_error(void);
const char* braze_version(void);
int braze_gpu_available(void);

/* options NULL: the defaults. */
braze_status braze_engine_compile(const char* onnx_path, const braze_compile_options* options,
                                  braze_engine** out);
braze_status braze_engine_load(const char* engine_path, braze_engine** out);
braze_status braze_engine_save(const braze_engine* engine, const char* engine_path);
void braze_engine_free(braze_engine* engine);
size_t braze_engine_num_inputs(const braze_engine* engine);
size_t braze_engine_num_outputs(const braze_engine* engine);
/* NULL past the last; the string lives as long as the engine. */
const char* braze_engine_input_name(const braze_engine* engine, size_t index);
const char* braze_engine_output_name(const braze_engine* engine, size_t index);

/* `data` (dtype and shape's bytes) is copied; NULL: zeros. */
braze_status braze_tensor_create(braze_dtype dtype, const int64_t* shape, size_t rank,
                                 const void* data, braze_tensor** out);
/* A .pb (TensorProto) or .npy file. */
braze_status braze_tensor_read(const char* path, braze_tensor** out);
braze_status braze_tensor_write_npy(const braze_tensor* tensor, const char* path);
void braze_tensor_free(braze_tensor* tensor);
braze_dtype braze_tensor_dtype(const braze_tensor* tensor);
size_t braze_tensor_rank(const braze_tensor* tensor);
const int64_t* braze_tensor_shape(const braze_tensor* tensor);
size_t braze_tensor_nbytes(const braze_tensor* tensor);
const void* braze_tensor_data(const braze_tensor* tensor);

braze_status braze_session_create(const braze_engine* engine, braze_backend backend,
                                  braze_session** out);
void braze_session_free(braze_session* session);
/* Inputs in braze_engine_input_name order; `outputs` has num_outputs slots (the engine's
 * output count), each set to a new tensor the caller frees. */
braze_status braze_session_run(braze_session* session, const braze_tensor* const* inputs,
                               size_t num_inputs, braze_tensor** outputs, size_t num_outputs);

/* A tensor in caller-owned CUDA device memory (dense, row-major). */
typedef struct braze_device_tensor {
  void* data; /* a CUdeviceptr */
  braze_dtype dtype;
  const int64_t* shape;
  size_t rank;
} braze_device_tensor;

/* The device path (a GPU session only; braze::Session::run_device): reads `inputs` and writes
 * `outputs` in device memory, enqueued on `stream` (a CUstream; NULL: the legacy default
 * stream), returning before the work is done. braze_session_synchronize waits for `stream`
 * and reports a failed run-time check of any device run since the last call. */
braze_status braze_session_run_device(braze_session* session, const braze_device_tensor* inputs,
                                      size_t num_inputs, const braze_device_tensor* outputs,
                                      size_t num_outputs, void* stream);
braze_status braze_session_synchronize(braze_session* session, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* BRAZE_BRAZE_C_H */
