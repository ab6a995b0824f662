#include "graph/passes/precision.h"

#include <braze/error.h>

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "graph/half.h"
#include "graph/infer.h"
#include "graph/onnx_dtype.h"
#include "graph/op_context.h"
#include "graph/parallel.h"
#include "graph/passes/weights_k_major.h"
#include "graph/registry.h"

namespace braze::graph::passes {

DType precision_dtype(const std::string& name) {
  if (name == "fp32" || name == "tf32") return DType::Float32;
  if (name == "fp16") return DType::Float16;
  if (name == "bf16") return DType::BFloat16;
  throw UserError(fmt::format("--precision {}: expected fp32, tf32, fp16 or bf16", name));
}

namespace {

#if defined(__x86_64__)
// Eight floats at a time by the F16C conversion (round to nearest even, as float_to_half), a
// block holding a NaN by float_to_half (one NaN pattern, where the instruction keeps payloads).
// Returns how many elements it converted: a multiple of 8.
__attribute__((target("avx,f16c"))) int64_t round_floats_f16c(const float* src, uint16_t* dst,
                                                              int64_t n) {
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    const __m256 x = _mm256_loadu_ps(src + e);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0) {
      for (int k = 0; k < 8; ++k) dst[e + k] = float_to_half(src[e + k]);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + e),
                     _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
  }
  return e;
}
#endif

}  // namespace

// The generic per-element accessors took 1.5 s of BERT-base's compile here.
Tensor round_floats(const Tensor& f32, DType to) {
  BRAZE_CHECK(f32.dtype() == DType::Float32 && is_half(to), "round_floats: float32 to a half type");
  Tensor t = Tensor::uninitialized(to, f32.shape());
  round_floats(static_cast<const float*>(f32.raw()), static_cast<uint16_t*>(t.raw()), t.numel(),
               to);
  return t;
}

void round_floats(const float* src, uint16_t* dst, int64_t n, DType to) {
  if (to == DType::Float16) {
    int64_t e = 0;
#if defined(__x86_64__)
    static const bool f16c = [] {  // CPUID leaf 1, ECX bit 29 (clang's builtin knows no "f16c")
      unsigned a = 0, b = 0, c = 0, d = 0;
      return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    }();
    if (f16c) e = round_floats_f16c(src, dst, n);
#endif
    for (; e < n; ++e) {
      uint32_t u;
      std::memcpy(&u, &src[e], 4);
      const uint32_t abs = u & 0x7fffffffu;
      // A normal half (2^-14 <= |x| < 65520, which rounds below 65536): rebias the
      // exponent, round the mantissa to nearest even at bit 13 (a carry goes into the
      // exponent, up to infinity); the rest (zero, subnormals, overflow, NaN) exactly.
      if (abs - 0x38800000u < 0x47800000u - 0x38800000u) {
        const uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);
        dst[e] = static_cast<uint16_t>(((u >> 16) & 0x8000u) | ((r - 0x38000000u) >> 13));
      } else {
        dst[e] = float_to_half(src[e]);
      }
    }
  } else {
    for (int64_t e = 0; e < n; ++e) dst[e] = float_to_bf16(src[e]);
  }
}

namespace {

// Float32 constants that something reads, except those some node reads as a shape or size,
// rounded to `to`.
void round_float_weights(Graph& g, DType to) {
  std::vector<bool> shape_read(g.num_values(), false), read(g.num_values(), false);
  for (const auto& o : g.outputs()) read[o.value] = true;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (n.dead) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] == kNoValue) continue;
      read[n.inputs[k]] = true;
      if (n.op->is_shape_input(static_cast<int>(k))) shape_read[n.inputs[k]] = true;
    }
  }
  std::vector<ValueId> weights;
  for (size_t i = 0; i < g.num_values(); ++i) {
    const Value& v = g.value(static_cast<ValueId>(i));
    if (v.constant && v.dtype == DType::Float32 && read[i] && !shape_read[i])
      weights.push_back(static_cast<ValueId>(i));
  }
  parallel_for(weights.size(), [&](size_t w) {  // each job its own value
    Value& v = g.value(weights[w]);
    v.constant = std::make_shared<const Tensor>(round_floats(*v.constant, to));
    v.dtype = to;
  });
}

// Attributes that make an output float32 (AttrRole: Cast's `to`, EyeLike's `dtype`,
// ConstantOfShape's value) made to give `to` instead.
void retarget_float_attributes(Graph& g, DType to) {
  const int64_t onnx_to = dtype_to_onnx(to), onnx_f32 = dtype_to_onnx(DType::Float32);
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    Node& n = g.node(static_cast<NodeId>(i));
    if (n.dead) continue;
    for (const AttrSpec& spec : n.op->attrs) {
      auto it = n.attrs.find(spec.name);
      if (spec.role == AttrRole::None || it == n.attrs.end()) continue;
      AttrValue& a = it->second;
      if (spec.role == AttrRole::OutputDType && std::holds_alternative<int64_t>(a) &&
          std::get<int64_t>(a) == onnx_f32)
        a = onnx_to;
      if (spec.role == AttrRole::OutputValue && std::holds_alternative<Tensor>(a) &&
          std::get<Tensor>(a).dtype() == DType::Float32)
        a = round_floats(std::get<Tensor>(a), to);
    }
  }
}

// Float32 inputs enter through a Cast to `to`.
void cast_float_inputs(Graph& g, const OpDef* cast, DType to, const std::string& suffix) {
  for (ValueId in : std::vector<ValueId>(g.inputs())) {
    if (g.value(in).dtype != DType::Float32) continue;
    const Value v = g.value(in);
    ValueId h = g.add_value(g.unique_name(v.name + suffix), to, v.shape);
    g.value(h).has_shape = v.has_shape;
    g.replace_all_uses(in, h);
    g.add_node(cast, g.unique_name("Cast_" + v.name + suffix), {in}, {h},
               {{"to", dtype_to_onnx(to)}});
  }
}

// Outputs that were float32 (`was`, one per output) leave through a Cast back.
void cast_outputs_back(Graph& g, const OpDef* cast, const std::vector<DType>& was) {
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValueId o = g.outputs()[i].value;
    if (was[i] != DType::Float32 || g.value(o).dtype == DType::Float32) continue;
    const Value v = g.value(o);
    ValueId f = g.add_value(g.unique_name(v.name + "_fp32"), DType::Float32, v.shape);
    g.value(f).has_shape = v.has_shape;
    NodeId c = g.add_node(cast, g.unique_name("Cast_" + v.name + "_fp32"), {o}, {f},
                          {{"to", dtype_to_onnx(DType::Float32)}});
    infer_node(g, c);
    g.set_output_value(i, f);
  }
}

}  // namespace

int convert_precision(Graph& g, DType to) {
  if (to == DType::Float32) return 0;
  BRAZE_CHECK(is_half(to), "convert_precision: target must be a half type");
  const OpDef* cast = find_op("", "Cast");
  BRAZE_CHECK(cast != nullptr, "Cast is not registered");
  // Weights read as a product's B are rounded as they are stored k-major.
  store_weights_k_major_as(g, to);
  round_float_weights(g, to);
  retarget_float_attributes(g, to);
  std::vector<DType> out_dtypes;
  for (const auto& o : g.outputs()) out_dtypes.push_back(g.value(o.value).dtype);
  cast_float_inputs(g, cast, to, to == DType::Float16 ? "_fp16" : "_bf16");
  infer_graph(g);
  cast_outputs_back(g, cast, out_dtypes);
  int converted = 0;
  for (size_t i = 0; i < g.num_values(); ++i)
    if (g.value(static_cast<ValueId>(i)).dtype == to) ++converted;
  return converted;
}

}  // namespace braze::graph::passes
