#include "graph/attribute.h"

#include <fmt/format.h>

namespace braze::graph {

AttrType attr_type(const AttrValue& v) { return static_cast<AttrType>(v.index()); }

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Int:
      return "int";
    case AttrType::Float:
      return "float";
    case AttrType::String:
      return "string";
    case AttrType::Ints:
      return "ints";
    case AttrType::Floats:
      return "floats";
    case AttrType::Strings:
      return "strings";
    case AttrType::Tensor:
      return "tensor";
  }
  return "?";
}

namespace {
// fmt formats with the "C" locale unless asked otherwise; {:g} keeps it short and exact
// enough to tell values apart.
std::string num(double d) { return fmt::format("{:.9g}", d); }
}  // namespace

std::string attr_value_str(const AttrValue& v) {
  switch (attr_type(v)) {
    case AttrType::Int:
      return std::to_string(std::get<int64_t>(v));
    case AttrType::Float:
      return num(std::get<double>(v));
    case AttrType::String:
      return "\"" + std::get<std::string>(v) + "\"";
    case AttrType::Ints: {
      const auto& xs = std::get<std::vector<int64_t>>(v);
      return "[" + fmt::format("{}", fmt::join(xs, ",")) + "]";
    }
    case AttrType::Floats: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<double>>(v);
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + num(xs[i]);
      return s + "]";
    }
    case AttrType::Strings: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<std::string>>(v);
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ",\"" : "\"") + xs[i] + "\"";
      return s + "]";
    }
    case AttrType::Tensor: {
      const Tensor& t = std::get<Tensor>(v);
      std::string s = fmt::format("tensor<{}{}>", dtype_name(t.dtype()), shape_str(t.shape()));
      if (t.numel() <= 8) {
        s += "{";
        for (int64_t i = 0; i < t.numel(); ++i) s += (i ? "," : "") + num(t.get_f64(i));
        s += "}";
      }
      return s;
    }
  }
  return "?";
}

}  // namespace braze::graph
