#include "runtime/inputs.h"

#include <braze/error.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "frontend/tensor_io.h"

namespace braze::runtime {

namespace fs = std::filesystem;

Tensor random_tensor(DType dt, const Shape& shape, uint64_t seed, const RandomSpec& spec) {
  Tensor t(dt, shape);
  std::mt19937_64 rng(seed);
  if (is_float(dt)) {
    std::uniform_real_distribution<double> u(spec.float_lo, spec.float_hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, u(rng));
  } else if (dt == DType::Bool) {
    for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, static_cast<int64_t>(rng() & 1));
  } else {
    if (spec.int_max < spec.int_min)
      throw UserError(fmt::format("integer range {},{} is empty", spec.int_min, spec.int_max));
    // int64 bounds (uint64: the values up to INT64_MAX, what RandomSpec can name).
    const int64_t lo = int_dtype_min(dt);
    const int64_t hi = static_cast<int64_t>(std::min<uint64_t>(int_dtype_max(dt), INT64_MAX));
    if (spec.int_min < lo || spec.int_max > hi)
      throw UserError(fmt::format("integer range {},{} does not fit {} (from {} to {})",
                                  spec.int_min, spec.int_max, dtype_name(dt), lo, hi));
    std::uniform_int_distribution<int64_t> u(spec.int_min, spec.int_max);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, u(rng));
  }
  return t;
}

namespace {

// Files in a folder: input_0.pb, input_1.pb … in index order, else every .npy by name.
std::vector<fs::path> files_in(const fs::path& dir, const std::string& prefix, bool allow_none) {
  std::vector<std::pair<int, fs::path>> pbs;
  std::vector<fs::path> npys;
  for (const auto& e : fs::directory_iterator(dir)) {
    const fs::path& p = e.path();
    std::string stem = p.stem().string();
    if (p.extension() == ".pb" && stem.rfind(prefix, 0) == 0) {
      std::string num = stem.substr(prefix.size());
      if (!num.empty() && num.size() < 7 &&
          num.find_first_not_of("0123456789") == std::string::npos)
        pbs.emplace_back(std::stoi(num), p);
    } else if (p.extension() == ".npy") {
      npys.push_back(p);
    }
  }
  std::sort(pbs.begin(), pbs.end());
  std::sort(npys.begin(), npys.end());
  std::vector<fs::path> out;
  for (auto& [i, p] : pbs) out.push_back(p);
  if (out.empty()) out = npys;
  if (out.empty() && !allow_none)
    throw UserError(fmt::format("{}: holds no {}N.pb or .npy files", dir.string(), prefix));
  return out;
}

}  // namespace

std::vector<InputFile> read_input_files(const std::vector<fs::path>& paths,
                                        const std::string& prefix, bool allow_none) {
  std::vector<fs::path> files;
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      auto in = files_in(p, prefix, allow_none);
      files.insert(files.end(), in.begin(), in.end());
    } else {
      files.push_back(p);
    }
  }
  std::vector<InputFile> out;
  for (const fs::path& f : files) {
    frontend::NamedTensor nt = frontend::read_tensor_file(f);
    out.push_back({nt.name.empty() && f.extension() == ".npy" ? f.stem().string() : nt.name,
                   std::move(nt.tensor), f.string()});
  }
  return out;
}

std::vector<Tensor> match_inputs(const std::vector<std::string>& names,
                                 std::vector<InputFile> files) {
  if (files.size() != names.size())
    throw UserError(fmt::format("the model takes {} input{} ({}), {} given", names.size(),
                                names.size() == 1 ? "" : "s", fmt::join(names, ", "),
                                files.size()));
  auto known = [&](const InputFile& f) {
    return std::find(names.begin(), names.end(), f.name) != names.end();
  };
  const size_t named = static_cast<size_t>(std::count_if(files.begin(), files.end(), known));
  if (named && named < files.size()) {
    const InputFile& stray = *std::find_if_not(files.begin(), files.end(), known);
    throw UserError(fmt::format(
        "{}: {} no input of the model (inputs: {}), where other files name inputs", stray.path,
        stray.name.empty() ? std::string("names") : "'" + stray.name + "' is",
        fmt::join(names, ", ")));
  }
  const bool by_name = named == files.size();
  std::vector<Tensor> out(names.size());
  for (size_t i = 0; i < files.size(); ++i) {
    size_t slot = by_name
                      ? static_cast<size_t>(std::find(names.begin(), names.end(), files[i].name) -
                                            names.begin())
                      : i;
    if (out[slot].defined()) throw UserError(fmt::format("input '{}' is given twice", names[slot]));
    out[slot] = std::move(files[i].tensor);
  }
  return out;
}

}  // namespace braze::runtime
