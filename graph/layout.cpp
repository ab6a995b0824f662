#include "graph/layout.h"

#include <fmt/format.h>

namespace braze::graph {

Shape non_ones(const Shape& s) {
  Shape r;
  for (int64_t d : s)
    if (d != 1) r.push_back(d);
  return r;
}

Layout Layout::contiguous(const Shape& shape) {
  Layout l;
  int64_t stride = 1;
  l.dims.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    l.dims[d] = {{shape[d], stride}};
    stride *= shape[d];
  }
  return l;
}

Shape Layout::shape() const {
  Shape s;
  for (const auto& fs : dims) {
    int64_t n = 1;
    for (const StridedDim& f : fs) n *= f.size;
    s.push_back(n);
  }
  return s;
}

std::vector<StridedDim> simplify(std::vector<StridedDim> f) {
  std::vector<StridedDim> out;
  for (const StridedDim& x : f) {
    if (x.size == 1) continue;
    if (!out.empty() && out.back().stride == x.size * x.stride) {
      out.back() = {out.back().size * x.size, x.stride};
      continue;
    }
    out.push_back(x);
  }
  return out;
}

std::vector<StridedDim> Layout::factors(size_t d) const { return simplify(dims.at(d)); }

std::vector<StridedDim> Layout::flat() const {
  std::vector<StridedDim> all;
  for (const auto& fs : dims) all.insert(all.end(), fs.begin(), fs.end());
  return simplify(all);
}

std::optional<StridedDim> Layout::single(size_t d) const {
  std::vector<StridedDim> f = factors(d);
  if (f.empty()) return StridedDim{1, 0};
  if (f.size() == 1) return f[0];
  return std::nullopt;
}

int64_t Layout::at(const std::vector<int64_t>& coords) const {
  int64_t off = offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t c = coords.at(d);
    for (size_t k = dims[d].size(); k-- > 0;) {
      off += (c % dims[d][k].size) * dims[d][k].stride;
      c /= dims[d][k].size;
    }
  }
  return off;
}

std::string layout_str(const Layout& l) {
  std::string s = fmt::format("offset {}:", l.offset);
  for (const auto& fs : l.dims) {
    s += " [";
    for (size_t k = 0; k < fs.size(); ++k)
      s += fmt::format("{}({}, {})", k ? " " : "", fs[k].size, fs[k].stride);
    s += "]";
  }
  return s;
}

std::optional<Layout> reshape_layout(const Layout& in, const Shape& shape) {
  for (int64_t n : shape)
    if (n == 0) return std::nullopt;  // empty values are never read
  std::vector<StridedDim> f = in.flat();
  Layout out;
  out.offset = in.offset;
  out.dims.resize(shape.size());
  // New dims from the innermost, each taking whole factors from the back or splitting one.
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t need = shape[d];
    while (need > 1) {
      if (f.empty()) return std::nullopt;
      StridedDim& last = f.back();
      if (last.size <= need) {
        if (need % last.size != 0) return std::nullopt;
        need /= last.size;
        out.dims[d].insert(out.dims[d].begin(), last);
        f.pop_back();
      } else {
        if (last.size % need != 0) return std::nullopt;
        out.dims[d].insert(out.dims[d].begin(), StridedDim{need, last.stride});
        last = {last.size / need, last.stride * need};
        need = 1;
      }
    }
  }
  if (!f.empty()) return std::nullopt;
  return out;
}

Layout transpose_layout(const Layout& in, const std::vector<int64_t>& perm) {
  Layout out;
  out.offset = in.offset;
  for (int64_t p : perm) out.dims.push_back(in.dims.at(static_cast<size_t>(p)));
  return out;
}

std::optional<Layout> expand_layout(const Layout& in, const Shape& shape) {
  if (shape.size() < in.dims.size()) return std::nullopt;
  const Shape from = in.shape();
  const size_t lead = shape.size() - in.dims.size();
  Layout out;
  out.offset = in.offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t n = shape[d];
    if (d < lead) {
      out.dims.push_back(n == 1 ? std::vector<StridedDim>{} : std::vector<StridedDim>{{n, 0}});
      continue;
    }
    const size_t k = d - lead;
    if (from[k] == n) {
      out.dims.push_back(in.dims[k]);
    } else if (from[k] == 1) {
      out.dims.push_back({{n, 0}});
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<Layout> slice_layout(const Layout& in, size_t axis, int64_t start, int64_t size,
                                   int64_t step) {
  if (axis >= in.dims.size() || size <= 0) return std::nullopt;
  Layout out = in;
  std::vector<StridedDim> f = in.factors(axis);
  if (f.empty()) {  // a dim of size 1: start 0, one element
    return start == 0 && size == 1 ? std::optional<Layout>(out) : std::nullopt;
  }
  if (f.size() == 1) {
    out.offset += start * f[0].stride;
    out.dims[axis] = {{size, size == 1 ? 0 : f[0].stride * step}};
    return out;
  }
  // Whole rows of the inner factors: a slice of the outermost factor.
  int64_t inner = 1;
  for (size_t k = 1; k < f.size(); ++k) inner *= f[k].size;
  if (step != 1 || start % inner != 0 || size % inner != 0) return std::nullopt;
  out.offset += (start / inner) * f[0].stride;
  f[0].size = size / inner;
  out.dims[axis] = f;
  return out;
}

}  // namespace braze::graph
