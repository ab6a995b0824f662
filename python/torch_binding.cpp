#include "torch_binding.h"

#include <optional>

namespace braze_python {

namespace {

// A borrowed-or-new reference that is released on scope exit; null after a failed call.
struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() { Py_XDECREF(p); }
};

PyObject* interned(const char* s) {
  PyObject* o = PyUnicode_InternFromString(s);
  if (!o) throw nb::python_error();
  return o;  // kept for the process's life
}

PyObject* name_data_ptr() {
  static PyObject* s = interned("data_ptr");
  return s;
}
PyObject* name_dtype() {
  static PyObject* s = interned("dtype");
  return s;
}
PyObject* name_shape() {
  static PyObject* s = interned("shape");
  return s;
}
PyObject* name_is_contiguous() {
  static PyObject* s = interned("is_contiguous");
  return s;
}

std::optional<uintptr_t> address_of(PyObject* t) {
  Ref p(PyObject_CallMethodNoArgs(t, name_data_ptr()));
  if (!p.p) return std::nullopt;
  uintptr_t a = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(p.p));
  if (PyErr_Occurred()) return std::nullopt;
  return a;
}

std::optional<std::vector<int64_t>> shape_of(PyObject* t) {
  Ref s(PyObject_GetAttr(t, name_shape()));
  if (!s.p || !PyTuple_Check(s.p)) return std::nullopt;  // torch.Size is a tuple
  std::vector<int64_t> dims(static_cast<size_t>(PyTuple_GET_SIZE(s.p)));
  for (size_t i = 0; i < dims.size(); ++i) {
    dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(s.p, static_cast<Py_ssize_t>(i)));
    if (PyErr_Occurred()) return std::nullopt;
  }
  return dims;
}

bool dense(PyObject* t) {
  Ref c(PyObject_CallMethodNoArgs(t, name_is_contiguous()));
  return c.p == Py_True;
}

braze::DType dtype_named(const std::string& torch_name) {
  std::string name = torch_name.rfind("torch.", 0) == 0 ? torch_name.substr(6) : torch_name;
  std::optional<braze::DType> d = braze::dtype_from_name(name);
  if (!d)
    throw braze::UserError("a PyTorch tensor of dtype " + name + ", which braze does not take");
  return *d;
}

}  // namespace

TorchBinding::TorchBinding(const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs) {
  for (const std::string& n : inputs) inputs_.emplace_back(n.c_str());
  for (const std::string& n : outputs) outputs_.emplace_back(n.c_str());
}

void TorchBinding::keep(nb::handle tensors, nb::handle current_stream) {
  kept_.clear();
  device_inputs_.clear();
  device_outputs_.clear();
  tensor_type_ = nullptr;
  nb::list list = nb::borrow<nb::list>(tensors);
  if (list.size() != inputs_.size() + outputs_.size())
    throw braze::InternalError("TorchBinding::keep: tensor count");
  std::vector<Kept> kept;
  std::vector<braze::DeviceTensor> device;
  for (nb::handle t : list) {
    std::optional<uintptr_t> address = address_of(t.ptr());
    std::optional<std::vector<int64_t>> shape = shape_of(t.ptr());
    if (!address || !shape) throw nb::python_error();
    nb::object dtype = t.attr("dtype");
    kept.push_back({*address, dtype, *shape});
    device.push_back({reinterpret_cast<void*>(*address), dtype_named(nb::str(dtype).c_str()),
                      braze::Shape(shape->begin(), shape->end())});
  }
  device_inputs_.assign(device.begin(), device.begin() + static_cast<ptrdiff_t>(inputs_.size()));
  device_outputs_.assign(device.begin() + static_cast<ptrdiff_t>(inputs_.size()), device.end());
  kept_ = std::move(kept);
  tensor_type_ = Py_TYPE(list[0].ptr());
  current_stream_ = nb::borrow(current_stream);
}

bool TorchBinding::matches(PyObject* t, const Kept& k) const {
  if (Py_TYPE(t) != tensor_type_) return false;
  std::optional<uintptr_t> address = address_of(t);
  if (!address || *address != k.address) return false;
  Ref dtype(PyObject_GetAttr(t, name_dtype()));
  if (dtype.p != k.dtype.ptr()) return false;
  std::optional<std::vector<int64_t>> shape = shape_of(t);
  return shape && *shape == k.shape && dense(t);
}

bool TorchBinding::gather(nb::handle dict, const std::vector<nb::str>& names,
                          std::vector<PyObject*>& out) const {
  if (!PyDict_Check(dict.ptr())) return false;
  for (const nb::str& n : names) {
    PyObject* v = PyDict_GetItemWithError(dict.ptr(), n.ptr());  // borrowed
    if (!v) return false;
    out.push_back(v);
  }
  return true;
}

nb::object TorchBinding::run(braze::Session& session, nb::handle feeds, nb::handle outputs,
                             nb::handle stream) {
  if (kept_.empty() || outputs.is_none() || (stream.is_none() && current_stream_.is_none()))
    return nb::none();
  if (!PyDict_Check(feeds.ptr()) || static_cast<size_t>(PyDict_Size(feeds.ptr())) != inputs_.size())
    return nb::none();
  std::vector<PyObject*> tensors;
  bool held = gather(feeds, inputs_, tensors) && gather(outputs, outputs_, tensors);
  for (size_t i = 0; held && i < tensors.size(); ++i) held = matches(tensors[i], kept_[i]);
  if (!held) {
    PyErr_Clear();  // a failed lookup or attribute: the full path says what is wrong
    return nb::none();
  }
  nb::object used = stream.is_none() ? current_stream_(0) : nb::borrow(stream);
  uintptr_t s = nb::cast<uintptr_t>(used);
  {
    nb::gil_scoped_release release;
    session.run_device(device_inputs_, device_outputs_, reinterpret_cast<void*>(s));
  }
  return nb::int_(s);
}

}  // namespace braze_python
