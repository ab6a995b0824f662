// The Python extension braze._braze (nanobind) over the public C++ API: Engine, Session on
// numpy arrays (copied in and out) or on CUDA arrays by DLPack (in place), the error classes.
// python/braze/__init__.py builds the Pythonic layer (compile / load, Session.run on dicts, ONNX
// Runtime's InferenceSession).
#include <braze/braze.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <optional>
#include <string>

#include "torch_binding.h"

namespace nb = nanobind;

namespace {

using Array =
    nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;  // numpy, or any DLPack array on the host

// numpy's dtype of each braze::DType, as nanobind spells it (bfloat16 has none in numpy).
nb::dlpack::dtype dl_of(braze::DType d) {
  using braze::DType;
  switch (d) {
    case DType::Float32:
      return nb::dtype<float>();
    case DType::Float64:
      return nb::dtype<double>();
    case DType::Float16:
      return {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::Int64:
      return nb::dtype<int64_t>();
    case DType::Int32:
      return nb::dtype<int32_t>();
    case DType::Int16:
      return nb::dtype<int16_t>();
    case DType::Int8:
      return nb::dtype<int8_t>();
    case DType::UInt64:
      return nb::dtype<uint64_t>();
    case DType::UInt32:
      return nb::dtype<uint32_t>();
    case DType::UInt16:
      return nb::dtype<uint16_t>();
    case DType::UInt8:
      return nb::dtype<uint8_t>();
    case DType::Bool:
      return nb::dtype<bool>();
    case DType::BFloat16:
      break;
  }
  throw braze::UserError("bfloat16 tensors have no numpy dtype");
}

braze::DType dtype_of(const nb::dlpack::dtype& dt, size_t index) {
  for (int d = 0; d < braze::kNumDTypes; ++d) {
    const auto bd = static_cast<braze::DType>(d);
    if (bd == braze::DType::BFloat16) continue;
    if (dl_of(bd) == dt) return bd;
  }
  throw braze::UserError("input " + std::to_string(index) + ": an array dtype braze does not take");
}

using DeviceArray = nb::ndarray<nb::device::cuda>;  // PyTorch, CuPy … CUDA tensors, by DLPack

// A CUDA array read in place: dense row-major, on the GPU braze runs on (device 0).
braze::DeviceTensor to_device_tensor(const DeviceArray& a, const char* what, size_t index) {
  int64_t expect = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expect)
      throw braze::UserError(std::string(what) + " " + std::to_string(index) +
                             " is not contiguous (call .contiguous() first)");
    expect *= static_cast<int64_t>(a.shape(d));
  }
  if (a.device_id() != 0)
    throw braze::UserError(std::string(what) + " " + std::to_string(index) + " is on cuda:" +
                           std::to_string(a.device_id()) + "; braze runs on cuda:0");
  const nb::dlpack::dtype dt = a.dtype();
  const bool bf16 =
      dt.code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat) && dt.bits == 16;
  braze::DeviceTensor t;
  t.data = a.data();
  t.dtype = bf16 ? braze::DType::BFloat16 : dtype_of(dt, index);
  t.shape.assign(a.shape_ptr(), a.shape_ptr() + a.ndim());
  return t;
}

std::vector<braze::DeviceTensor> to_device_tensors(const std::vector<DeviceArray>& v,
                                                   const char* what) {
  std::vector<braze::DeviceTensor> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(to_device_tensor(v[i], what, i));
  return out;
}

braze::Tensor to_tensor(const Array& a, size_t index) {
  braze::Shape shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
  braze::Tensor t(dtype_of(a.dtype(), index), shape);
  if (t.nbytes()) std::memcpy(t.raw(), a.data(), t.nbytes());
  return t;
}

nb::object to_numpy(const braze::Tensor& t) {
  auto* keep = new braze::Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<braze::Tensor*>(p); });
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  return nb::cast(nb::ndarray<nb::numpy>(keep->raw(), shape.size(), shape.data(), owner, nullptr,
                                         dl_of(t.dtype())));
}

braze::CompileOptions compile_options(const std::map<std::string, std::vector<int64_t>>& shapes,
                                      const std::string& precision, bool fuse, bool tune,
                                      const std::string& arch, bool use_cache) {
  braze::CompileOptions o;
  o.shapes = shapes;
  o.precision = precision;
  o.fuse = fuse;
  o.tune = tune;
  o.arch = arch;
  o.use_cache = use_cache;
  return o;
}

braze::Backend backend_of(const std::string& name) {
  if (name == "auto") return braze::Backend::Auto;
  if (name == "gpu") return braze::Backend::Gpu;
  if (name == "reference") return braze::Backend::Reference;
  if (name == "emulator") return braze::Backend::Emulator;
  throw braze::UserError("backend '" + name + "': expected auto, gpu, reference or emulator");
}

std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> infos(
    const std::vector<braze::TensorInfo>& v) {
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> out;
  for (const braze::TensorInfo& t : v)
    out.emplace_back(t.name, std::string(braze::dtype_name(t.dtype)), t.shape);
  return out;
}

// braze.Error and its kinds, as the C++ exceptions they translate.
void bind_errors(nb::module_& m) {
  static nb::exception<braze::Error> error(m, "Error");
  static nb::exception<braze::UserError> user_error(m, "UserError", error);
  static nb::exception<braze::DeviceError> device_error(m, "DeviceError", error);
  static nb::exception<braze::InternalError> internal_error(m, "InternalError", error);
}

void bind_engine(nb::module_& m) {
  nb::class_<braze::Engine>(m, "Engine", "A compiled model: immutable, shareable by threads.")
      .def_static(
          "compile",
          [](const std::string& path, const std::map<std::string, std::vector<int64_t>>& shapes,
             const std::string& precision, bool fuse, bool tune, const std::string& arch,
             bool use_cache) {
            const braze::CompileOptions o =
                compile_options(shapes, precision, fuse, tune, arch, use_cache);
            nb::gil_scoped_release release;
            return braze::Engine::compile(path, o);
          },
          nb::arg("path"), nb::arg("shapes") = std::map<std::string, std::vector<int64_t>>{},
          nb::arg("precision") = "fp32", nb::arg("fuse") = true, nb::arg("tune") = false,
          nb::arg("arch") = "", nb::arg("use_cache") = true,
          "Compile the ONNX model at `path` (no GPU needed). shapes: {input: dims} for symbolic "
          "dims\n"
          "(others default to 1); precision: fp32, tf32, fp16 or bf16; fuse: False for one kernel "
          "a\n"
          "node; tune: time each kernel's candidates on the GPU; arch: sm_90a …, empty for this "
          "GPU's.")
      .def_static(
          "compile_bytes",
          [](nb::bytes model, const std::map<std::string, std::vector<int64_t>>& shapes,
             const std::string& precision, bool fuse, bool tune, const std::string& arch,
             bool use_cache, const std::string& model_dir) {
            const braze::CompileOptions o =
                compile_options(shapes, precision, fuse, tune, arch, use_cache);
            std::string bytes(model.c_str(), model.size());
            nb::gil_scoped_release release;
            return braze::Engine::compile_bytes(bytes, o, model_dir);
          },
          nb::arg("model"), nb::arg("shapes") = std::map<std::string, std::vector<int64_t>>{},
          nb::arg("precision") = "fp32", nb::arg("fuse") = true, nb::arg("tune") = false,
          nb::arg("arch") = "", nb::arg("use_cache") = true, nb::arg("model_dir") = "",
          "Compile a serialized ModelProto (external data, if any, read relative to model_dir).")
      .def_static(
          "load", [](const std::string& path) { return braze::Engine::load(path); },
          nb::arg("path"), "Load an engine file written by save() or `braze compile`.")
      .def("save", &braze::Engine::save, nb::arg("path"),
           "Write the engine file (kernels, weights, graph).")
      .def_prop_ro("input_names", &braze::Engine::input_names,
                   "Input names, in the order run() takes them.")
      .def_prop_ro("output_names", &braze::Engine::output_names,
                   "Output names, in the order run() returns them.")
      .def_prop_ro(
          "inputs", [](const braze::Engine& e) { return infos(e.inputs()); },
          "(name, dtype, shape) of each input.")
      .def_prop_ro(
          "outputs", [](const braze::Engine& e) { return infos(e.outputs()); },
          "(name, dtype, shape) of each output.")
      .def_prop_ro("arch", &braze::Engine::arch, "What the kernels were compiled for (sm_90a …).")
      .def_prop_ro("precision", &braze::Engine::precision, "The precision it was compiled at.")
      .def_prop_ro("kernels", &braze::Engine::kernels,
                   "GPU kernels (groups on the CPU reference not counted).")
      .def_prop_ro("notes", &braze::Engine::notes,
                   "What the compile noted: dims defaulted, groups on the CPU reference, --tune "
                   "without a GPU.");
}

void bind_torch_binding(nb::module_& m) {
  nb::class_<braze_python::TorchBinding>(m, "TorchBinding",
                                         "Session.run's last binding of PyTorch CUDA tensors.")
      .def(nb::init<const std::vector<std::string>&, const std::vector<std::string>&>(),
           nb::arg("inputs"), nb::arg("outputs"), "The engine's input and output names.")
      .def("keep", &braze_python::TorchBinding::keep, nb::arg("tensors"),
           nb::arg("current_stream").none(),
           "Keeps dense PyTorch CUDA tensors on cuda:0 (inputs then outputs) as the binding;\n"
           "current_stream: torch._C._cuda_getCurrentRawStream, or None.")
      .def("run", &braze_python::TorchBinding::run, nb::arg("session"), nb::arg("feeds"),
           nb::arg("outputs").none(), nb::arg("stream").none(),
           "Runs the session on the kept binding when the dicts hold it still (same addresses, "
           "dtypes,\n"
           "shapes, dense); returns the stream used, or None when they do not.");
}

void bind_session(nb::module_& m) {
  nb::class_<braze::Session>(m, "Session", "Runs an engine: on the GPU or the CPU reference.")
      .def(
          "__init__",
          [](braze::Session* s, const braze::Engine& e, const std::string& backend) {
            new (s) braze::Session(e, backend_of(backend));
          },
          nb::arg("engine"), nb::arg("backend") = "auto",
          "backend: auto (the GPU when there is one, else the CPU reference), gpu, reference, or\n"
          "emulator (the GPU path's kernels generated for the CPU: slow, no GPU needed).")
      .def_prop_ro(
          "backend",
          [](const braze::Session& s) {
            switch (s.backend()) {
              case braze::Backend::Gpu:
                return "gpu";
              case braze::Backend::Emulator:
                return "emulator";
              default:
                return "reference";
            }
          },
          "Where it runs: gpu, reference or emulator.")
      .def_prop_ro("notes", &braze::Session::notes,
                   "Kernels recompiled for this GPU, groups run on the CPU reference (emulator: "
                   "after a run).")
      .def(
          "run",
          [](braze::Session& s, const std::vector<Array>& arrays) {
            std::vector<braze::Tensor> in;
            for (size_t i = 0; i < arrays.size(); ++i) in.push_back(to_tensor(arrays[i], i));
            std::vector<braze::Tensor> out;
            {
              nb::gil_scoped_release release;
              out = s.run(in);
            }
            nb::list result;
            for (const braze::Tensor& t : out) result.append(to_numpy(t));
            return result;
          },
          nb::arg("inputs"),
          "Input arrays in Engine.input_names order; returns the outputs' arrays.")
      .def(
          "run_device",
          [](braze::Session& s, const std::vector<DeviceArray>& inputs,
             const std::vector<DeviceArray>& outputs, uintptr_t stream) {
            std::vector<braze::DeviceTensor> in = to_device_tensors(inputs, "input");
            std::vector<braze::DeviceTensor> out = to_device_tensors(outputs, "output");
            nb::gil_scoped_release release;
            s.run_device(in, out, reinterpret_cast<void*>(stream));
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("stream") = 0,
          "CUDA arrays (DLPack), read and written in place, in Engine.input_names / output_names\n"
          "order; enqueued on `stream` (a cudaStream_t as an int; 0: the legacy default stream)\n"
          "without waiting. synchronize() waits and reports failed run-time checks.")
      .def(
          "synchronize",
          [](braze::Session& s, uintptr_t stream) {
            nb::gil_scoped_release release;
            s.synchronize(reinterpret_cast<void*>(stream));
          },
          nb::arg("stream") = 0,
          "Wait for `stream`; raises UserError for a failed run-time check of a device run since "
          "the last call.");
}

}  // namespace

NB_MODULE(_braze, m) {
  m.doc() =
      "braze: ONNX models compiled into fused CUDA kernels (the C++ API; use the braze package)";
  bind_errors(m);
  bind_engine(m);
  bind_torch_binding(m);
  bind_session(m);
  m.def("gpu_available", &braze::gpu_available, "Whether a CUDA GPU and driver are present.");
  m.def("version", &braze::version, "braze's version.");
}
