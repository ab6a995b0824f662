#include "codegen/cuda_hooks.h"

#include "graph/ir.h"

#include <cmath>

#include <fmt/format.h>

namespace braze::codegen {

const std::string& cuda_name(ComputeType t) {
  static const std::string names[] = {"bool", "long long", "unsigned long long", "float", "double"};
  return names[static_cast<int>(t)];
}

std::string cuda_compute_type(DType dt) { return cuda_name(compute_type(dt)); }

std::string cuda_storage_type(DType dt) {
  switch (dt) {
    case DType::Float32:
      return "float";
    case DType::Float16:
      return "__half";
    case DType::BFloat16:
      return "__nv_bfloat16";
    case DType::Float64:
      return "double";
    case DType::Int64:
      return "long long";
    case DType::Int32:
      return "int";
    case DType::Int16:
      return "short";
    case DType::Int8:
      return "signed char";
    case DType::UInt64:
      return "unsigned long long";
    case DType::UInt32:
      return "unsigned int";
    case DType::UInt16:
      return "unsigned short";
    case DType::UInt8:
      return "unsigned char";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

std::string cuda_math(ComputeType t, const std::string& fn) {
  return t == ComputeType::Float ? fn + "f" : fn;
}

std::string cuda_literal(ComputeType t, double v) {
  if (t == ComputeType::Bool) return v != 0 ? "true" : "false";
  if (t == ComputeType::Int) {  // saturating; the extremes spelled so the literal is valid C
    if (v >= 9223372036854775807.0) return "0x7fffffffffffffffLL";
    if (v <= -9223372036854775808.0) return "(-0x7fffffffffffffffLL - 1)";
    return fmt::format("{}LL", static_cast<long long>(v));
  }
  if (t == ComputeType::UInt) {
    if (v >= 18446744073709551615.0) return "0xffffffffffffffffULL";
    return fmt::format("{}ULL", v <= 0 ? 0ULL : static_cast<unsigned long long>(v));
  }
  bool f = t == ComputeType::Float;
  if (std::isnan(v))
    return f ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v)) {
    std::string inf =
        f ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return v > 0 ? inf : "(-" + inf + ")";
  }
  std::string s = f ? fmt::format("{:.9g}", static_cast<float>(v)) : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f ? s + "f" : s;
}

namespace {

// Whether f is one expression: "(a) + (b % 6LL)" is not.
bool balanced(const std::string& f) {
  int depth = 0;
  for (char ch : f)
    if ((depth += ch == '(' ? 1 : ch == ')' ? -1 : 0) < 0) return false;
  return depth == 0;
}

// If `s` is F op n in either spelling the index renderer gives it, "(F op nLL)" or, dividing in
// 32 bits, "((long long)((int)(F) op n))", F; else empty.
std::string dividend_of(const std::string& s, char op, int64_t n) {
  for (const auto& [head, tail] :
       {std::pair{std::string("("), fmt::format(" {} {}LL)", op, n)},
        std::pair{std::string("((long long)((int)("), fmt::format(") {} {}))", op, n)}}) {
    if (s.size() <= head.size() + tail.size() || s.compare(0, head.size(), head) != 0 ||
        s.compare(s.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    std::string f = s.substr(head.size(), s.size() - tail.size() - head.size());
    return balanced(f) ? f : "";
  }
  return "";
}

}  // namespace

std::string cuda_linearize(const std::vector<std::string>& coords, const Shape& shape) {
  // The dims that are not 1, outermost first: coordinate, size, stride.
  struct Dim {
    std::string c;
    int64_t size, stride;
  };
  std::vector<Dim> dims;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) dims.insert(dims.begin(), Dim{coords[d], shape[d], stride});
    stride *= shape[d];
  }
  // Coordinates that cuda_unravel split from one index F, recombined: (F / n) n s + (F % n) s
  // is F s, and ((F / n) % m) n s + (F % n) s is (F % (m n)) s, for any integer F under C's
  // truncating division (an epilogue through a Reshape of [4096, 768] to [32, 128, 768] reads
  // i * 768 + j, not (i / 128) * 98304 + (i % 128) * 768 + j).
  for (size_t d = dims.size(); d-- > 1;) {
    Dim &outer = dims[d - 1], &inner = dims[d];
    const std::string f = dividend_of(inner.c, '%', inner.size);
    if (f.empty()) continue;
    std::string merged;
    if (dividend_of(outer.c, '/', inner.size) == f)
      merged = f;
    else if (dividend_of(dividend_of(outer.c, '%', outer.size), '/', inner.size) == f)
      merged = fmt::format("({} % {}LL)", f, outer.size * inner.size);
    else
      continue;
    outer = Dim{merged, outer.size * inner.size, inner.stride};
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(d));  // next: outer's own outer
  }
  std::string out;
  for (const Dim& dm : dims) {
    std::string term = dm.stride == 1 ? dm.c : fmt::format("{} * {}LL", dm.c, dm.stride);
    out = out.empty() ? term : out + " + " + term;
  }
  return out.empty() ? "0LL" : "(" + out + ")";
}

std::vector<std::string> cuda_unravel(const std::string& flat, const Shape& shape) {
  std::vector<std::string> c(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      c[d] = "0LL";
    } else {
      std::string q = stride == 1 ? flat : fmt::format("({} / {}LL)", flat, stride);
      c[d] = d == 0 ? q : fmt::format("({} % {}LL)", q, shape[d]);
    }
    stride *= shape[d];
  }
  return c;
}

std::vector<std::string> out_coords(const CudaIndexCtx& ctx) {
  std::vector<std::string> c;
  for (size_t d = 0; d < ctx.out_shape().size(); ++d) c.push_back(ctx.coord(d));
  return c;
}

CudaRowInputs cuda_row_inputs(const Graph& g, const Node& n) {
  CudaRowInputs in;
  for (graph::ValueId v : n.inputs) {
    in.shapes.push_back(v == graph::kNoValue ? Shape{} : g.value(v).shape);
    in.dtypes.push_back(v == graph::kNoValue ? DType::Float32 : g.value(v).dtype);
    in.values.push_back(v == graph::kNoValue ? nullptr : g.value(v).constant.get());
  }
  return in;
}

}  // namespace braze::codegen
