// The C API (include/braze/braze_c.h) over the C++ one: every call behind guard(), which
// turns braze's exceptions into status codes and this thread's last error message.
#include <braze/braze.h>
#include <braze/braze_c.h>

#include <cstring>
#include <new>
#include <string>

#include <fmt/format.h>

#include "frontend/onnx_import.h"

struct braze_engine {
  braze::Engine engine;
  std::vector<std::string> inputs, outputs;
};
struct braze_session {
  braze::Session session;
  size_t num_inputs, num_outputs;
};
struct braze_tensor {
  braze::Tensor tensor;
};

namespace {

thread_local std::string last_error;

template <class F>
braze_status guard(F&& f) {
  try {
    f();
    return BRAZE_OK;
  } catch (const braze::UserError& e) {
    last_error = e.what();
    return BRAZE_USER_ERROR;
  } catch (const braze::DeviceError& e) {
    last_error = e.what();
    return BRAZE_DEVICE_ERROR;
  } catch (const std::bad_alloc&) {
    last_error = "out of host memory";
    return BRAZE_DEVICE_ERROR;
  } catch (const std::exception& e) {
    last_error = e.what();
    return BRAZE_INTERNAL_ERROR;
  }
}

void need(const void* p, const char* what) {
  if (!p) throw braze::UserError(fmt::format("{} is NULL", what));
}

braze_engine* wrap(braze::Engine e) {
  auto* w = new braze_engine{std::move(e), {}, {}};
  w->inputs = w->engine.input_names();
  w->outputs = w->engine.output_names();
  return w;
}

}  // namespace

namespace {

// A C caller's enum as the int it passed, read as bytes: any int may come through a C
// interface, and loading one outside the enumerators as the enum type is undefined in C++.
template <class E>
int enum_code(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int code;
  std::memcpy(&code, &e, sizeof code);
  return code;
}

std::vector<braze::DeviceTensor> device_tensors(const braze_device_tensor* t, size_t n,
                                                const char* what) {
  if (n > 0) need(t, what);
  std::vector<braze::DeviceTensor> out;
  for (size_t i = 0; i < n; ++i) {
    if (t[i].rank > 0) need(t[i].shape, fmt::format("{}[{}].shape", what, i).c_str());
    const int dtype = enum_code(t[i].dtype);
    if (dtype < 0 || dtype >= braze::kNumDTypes)
      throw braze::UserError(fmt::format("{}[{}]: dtype {} is not a braze_dtype", what, i, dtype));
    out.push_back({t[i].data, static_cast<braze::DType>(dtype),
                   braze::Shape(t[i].shape, t[i].shape + t[i].rank)});
  }
  return out;
}

}  // namespace

extern "C" {

void braze_compile_options_init(braze_compile_options* o) {
  if (o) *o = braze_compile_options{nullptr, "fp32", nullptr, 1, 0, 1};
}

const char* braze_last_error(void) { return last_error.c_str(); }
const char* braze_version(void) { return BRAZE_VERSION; }
int braze_gpu_available(void) { return braze::gpu_available() ? 1 : 0; }

braze_status braze_engine_compile(const char* onnx_path, const braze_compile_options* options,
                                  braze_engine** out) {
  return guard([&] {
    need(onnx_path, "onnx_path");
    need(out, "out");
    *out = nullptr;
    braze::CompileOptions o;
    if (options) {
      if (options->shapes)
        for (auto& [name, shape] : braze::frontend::parse_shape_spec(options->shapes))
          o.shapes[name] = shape;
      if (options->precision) o.precision = options->precision;
      if (options->arch) o.arch = options->arch;
      o.fuse = options->fuse != 0;
      o.tune = options->tune != 0;
      o.use_cache = options->use_cache != 0;
    }
    *out = wrap(braze::Engine::compile(onnx_path, o));
  });
}

braze_status braze_engine_load(const char* engine_path, braze_engine** out) {
  return guard([&] {
    need(engine_path, "engine_path");
    need(out, "out");
    *out = nullptr;
    *out = wrap(braze::Engine::load(engine_path));
  });
}

braze_status braze_engine_save(const braze_engine* engine, const char* engine_path) {
  return guard([&] {
    need(engine, "engine");
    need(engine_path, "engine_path");
    engine->engine.save(engine_path);
  });
}

void braze_engine_free(braze_engine* engine) { delete engine; }
size_t braze_engine_num_inputs(const braze_engine* e) { return e ? e->inputs.size() : 0; }
size_t braze_engine_num_outputs(const braze_engine* e) { return e ? e->outputs.size() : 0; }
const char* braze_engine_input_name(const braze_engine* e, size_t i) {
  return e && i < e->inputs.size() ? e->inputs[i].c_str() : nullptr;
}
const char* braze_engine_output_name(const braze_engine* e, size_t i) {
  return e && i < e->outputs.size() ? e->outputs[i].c_str() : nullptr;
}

braze_status braze_tensor_create(braze_dtype dtype, const int64_t* shape, size_t rank,
                                 const void* data, braze_tensor** out) {
  return guard([&] {
    need(out, "out");
    *out = nullptr;
    if (rank > 0) need(shape, "shape");
    const int code = enum_code(dtype);
    if (code < 0 || code >= braze::kNumDTypes)
      throw braze::UserError(fmt::format("dtype {} is not a braze_dtype", code));
    braze::Tensor t(static_cast<braze::DType>(code), braze::Shape(shape, shape + rank));
    if (data && t.nbytes()) std::memcpy(t.raw(), data, t.nbytes());
    *out = new braze_tensor{std::move(t)};
  });
}

braze_status braze_tensor_read(const char* path, braze_tensor** out) {
  return guard([&] {
    need(path, "path");
    need(out, "out");
    *out = nullptr;
    *out = new braze_tensor{braze::read_tensor(path)};
  });
}

braze_status braze_tensor_write_npy(const braze_tensor* tensor, const char* path) {
  return guard([&] {
    need(tensor, "tensor");
    need(path, "path");
    braze::write_npy(path, tensor->tensor);
  });
}

void braze_tensor_free(braze_tensor* t) { delete t; }
braze_dtype braze_tensor_dtype(const braze_tensor* t) {
  return t ? static_cast<braze_dtype>(t->tensor.dtype()) : BRAZE_FLOAT32;
}
size_t braze_tensor_rank(const braze_tensor* t) { return t ? t->tensor.shape().size() : 0; }
const int64_t* braze_tensor_shape(const braze_tensor* t) {
  return t ? t->tensor.shape().data() : nullptr;
}
size_t braze_tensor_nbytes(const braze_tensor* t) { return t ? t->tensor.nbytes() : 0; }
const void* braze_tensor_data(const braze_tensor* t) { return t ? t->tensor.raw() : nullptr; }

braze_status braze_session_create(const braze_engine* engine, braze_backend backend,
                                  braze_session** out) {
  return guard([&] {
    need(engine, "engine");
    need(out, "out");
    *out = nullptr;
    const int code = enum_code(backend);
    if (code != BRAZE_BACKEND_AUTO && code != BRAZE_BACKEND_GPU &&
        code != BRAZE_BACKEND_REFERENCE && code != BRAZE_BACKEND_EMULATOR)
      throw braze::UserError(fmt::format("backend {} is not a braze_backend", code));
    const braze::Backend b = backend == BRAZE_BACKEND_GPU         ? braze::Backend::Gpu
                             : backend == BRAZE_BACKEND_REFERENCE ? braze::Backend::Reference
                             : backend == BRAZE_BACKEND_EMULATOR  ? braze::Backend::Emulator
                                                                  : braze::Backend::Auto;
    *out = new braze_session{braze::Session(engine->engine, b), engine->inputs.size(),
                             engine->outputs.size()};
  });
}

void braze_session_free(braze_session* session) { delete session; }

braze_status braze_session_run(braze_session* session, const braze_tensor* const* inputs,
                               size_t num_inputs, braze_tensor** outputs, size_t num_outputs) {
  return guard([&] {
    need(session, "session");
    need(outputs, "outputs");
    if (num_inputs > 0) need(inputs, "inputs");
    if (num_outputs != session->num_outputs)
      throw braze::UserError(fmt::format("num_outputs is {}, the engine has {} output{}",
                                         num_outputs, session->num_outputs,
                                         session->num_outputs == 1 ? "" : "s"));
    std::vector<braze::Tensor> in;
    for (size_t i = 0; i < num_inputs; ++i) {
      need(inputs[i], fmt::format("inputs[{}]", i).c_str());
      in.push_back(inputs[i]->tensor);
    }
    std::vector<braze::Tensor> out = session->session.run(in);
    for (size_t i = 0; i < num_outputs; ++i) outputs[i] = new braze_tensor{std::move(out[i])};
  });
}

braze_status braze_session_run_device(braze_session* session, const braze_device_tensor* inputs,
                                      size_t num_inputs, const braze_device_tensor* outputs,
                                      size_t num_outputs, void* stream) {
  return guard([&] {
    need(session, "session");
    session->session.run_device(device_tensors(inputs, num_inputs, "inputs"),
                                device_tensors(outputs, num_outputs, "outputs"), stream);
  });
}

braze_status braze_session_synchronize(braze_session* session, void* stream) {
  return guard([&] {
    need(session, "session");
    session->session.synchronize(stream);
  });
}

}  // extern "C"
