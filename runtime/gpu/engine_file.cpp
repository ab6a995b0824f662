#include "runtime/gpu/engine_file.h"

#include <braze/error.h>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "frontend/tensor_io.h"
#include "graph/parallel.h"
#include "graph/registry.h"

namespace braze::gpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Layout: magic, format version (u32), header length (u64), XXH3-64 of everything after it
// (u64), the JSON header, the blobs. Version 2 added the checksum: a flipped bit in a weight
// would otherwise load without complaint and compute something else. Version 4 keeps each
// kernel's source as a blob (escaping sources into the JSON was most of the header's cost).
// Version 5: every kernel takes the progress parameters (codegen::Kernel) and notes its step.
constexpr char kMagic[8] = {'B', 'R', 'A', 'Z', 'E', 'E', 'N', 'G'};
constexpr uint32_t kVersion = 5;
constexpr size_t kPreamble = 28;

struct Piece {
  const char* p;
  size_t n;
  uint64_t at;
};

// `parts` in pieces of up to 8 MiB at their offsets in the file.
std::vector<Piece> pieces_of(const std::vector<std::pair<const char*, size_t>>& parts) {
  constexpr size_t kPiece = size_t{8} << 20;
  std::vector<Piece> pieces;
  uint64_t at = 0;
  for (const auto& [p, n] : parts)
    for (size_t o = 0; o < n; o += kPiece) {
      const size_t len = std::min(kPiece, n - o);
      pieces.push_back({p + o, len, at});
      at += len;
    }
  return pieces;
}

// Copies the pieces into the file through a shared mapping of it, on several threads (the
// kernel takes page faults on a file from threads in parallel; buffered writes to one file
// hold its inode's lock, and threads writing in parallel only spun on it). The file's blocks
// are allocated first. Returns 0, an errno value, or -1 where the file cannot be mapped (the
// caller writes it instead).
int write_mapped(int fd, const std::vector<Piece>& pieces, uint64_t size) {
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return -1;
  char* base = static_cast<char*>(m);
  graph::parallel_for(
      pieces.size(), [&](size_t i) { std::memcpy(base + pieces[i].at, pieces[i].p, pieces[i].n); });
  return ::munmap(m, size) == 0 ? 0 : errno;
}

bool on_tmpfs(int fd) {
  struct statfs fs;
  return ::fstatfs(fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

// The pieces by pwrite, one after another.
int write_pieces(int fd, const std::vector<Piece>& pieces) {
  for (const Piece& pc : pieces)
    for (size_t done = 0; done < pc.n;) {
      const ssize_t w = ::pwrite(fd, pc.p + done, pc.n - done, static_cast<off_t>(pc.at + done));
      if (w > 0)
        done += static_cast<size_t>(w);
      else if (w == 0)
        return EIO;
      else if (errno != EINTR)
        return errno;
    }
  return 0;
}

// Writes `parts` one after another into a new file at `path`; errors name `shown`.
void write_file(const fs::path& path, const std::vector<std::pair<const char*, size_t>>& parts,
                const fs::path& shown) {
  const std::vector<Piece> pieces = pieces_of(parts);
  const uint64_t size = pieces.empty() ? 0 : pieces.back().at + pieces.back().n;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UserError(
        fmt::format("{}: cannot open for writing ({})", shown.string(), std::strerror(errno)));
  // The file's blocks first, so that a full disk fails here rather than as a fault on a
  // page of the mapping. Then, on a disk's file system, pwrite from one thread: there a
  // shared mapping had the kernel zero each page of the fresh file before the copy wrote it
  // (GPU machine, ext4, BERT-base b32 warm: engine file 0.10-0.12 s against 0.15-0.18, system
  // time 0.45 s against 1.9); in memory (tmpfs) the mapping filled on several threads is the
  // faster (0.08 s against 0.11). bench/MODELS.md, 2026-12-04 at da97db2.
  int error = size ? ::posix_fallocate(fd, 0, static_cast<off_t>(size)) : 0;
  if (error == EOPNOTSUPP || error == EINVAL) error = 0;
  if (!error) {
    error = size && on_tmpfs(fd) ? write_mapped(fd, pieces, size) : -1;
    if (error < 0) error = write_pieces(fd, pieces);
  }
  const bool closed = ::close(fd) == 0;
  if (error || !closed)
    throw UserError(
        fmt::format("{}: write failed ({})", shown.string(), std::strerror(error ? error : errno)));
}

// The blobs (weights, attribute tensors, cubins) by reference, in file order: written and
// hashed from where they live (the engine outlives save_engine), not gathered into one
// buffer first (BERT-base's 220 MB of weights were copied twice on the way out).
class Blobs {
 public:
  json add(const void* p, size_t n) {
    json j = {{"offset", size_}, {"size", n}};
    if (n) parts_.push_back({static_cast<const char*>(p), n});
    size_ += n;
    return j;
  }
  void hash(XXH3_state_t* st) const {
    for (const auto& [p, n] : parts_) XXH3_64bits_update(st, p, n);
  }
  const std::vector<std::pair<const char*, size_t>>& parts() const { return parts_; }

 private:
  std::vector<std::pair<const char*, size_t>> parts_;
  size_t size_ = 0;
};

json tensor_json(const Tensor& t, Blobs& b) {
  return {
      {"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"data", b.add(t.raw(), t.nbytes())}};
}

json attr_json(const graph::AttrValue& v, Blobs& b) {
  switch (graph::attr_type(v)) {
    case graph::AttrType::Int:
      return {{"i", std::get<int64_t>(v)}};
    case graph::AttrType::Float:
      return {{"f", std::get<double>(v)}};
    case graph::AttrType::String:
      return {{"s", std::get<std::string>(v)}};
    case graph::AttrType::Ints:
      return {{"ints", std::get<std::vector<int64_t>>(v)}};
    case graph::AttrType::Floats:
      return {{"floats", std::get<std::vector<double>>(v)}};
    case graph::AttrType::Strings:
      return {{"strings", std::get<std::vector<std::string>>(v)}};
    case graph::AttrType::Tensor:
      return {{"t", tensor_json(std::get<Tensor>(v), b)}};
  }
  return {};
}

struct Reader {
  const std::string& blob;
  std::string what;
  [[noreturn]] void bad(const std::string& why) const {
    throw UserError(fmt::format("{}: damaged braze engine file ({})", what, why));
  }
  std::string_view bytes(const json& ref) const {
    uint64_t off = ref.at("offset"), size = ref.at("size");
    if (off > blob.size() || size > blob.size() - off) bad("a blob reference points past the end");
    return std::string_view(blob).substr(off, size);
  }
  Tensor tensor(const json& j) const {
    auto dt = dtype_from_name(j.at("dtype").get<std::string>());
    if (!dt) bad("unknown dtype");
    Tensor t = Tensor::uninitialized(*dt, j.at("shape").get<Shape>());
    std::string_view b = bytes(j.at("data"));
    if (b.size() != t.nbytes()) bad("tensor size disagrees with its shape");
    if (!b.empty()) std::memcpy(t.raw(), b.data(), b.size());
    return t;
  }
  graph::AttrValue attr(const json& j) const {
    if (j.contains("i")) return j.at("i").get<int64_t>();
    if (j.contains("f")) return j.at("f").get<double>();
    if (j.contains("s")) return j.at("s").get<std::string>();
    if (j.contains("ints")) return j.at("ints").get<std::vector<int64_t>>();
    if (j.contains("floats")) return j.at("floats").get<std::vector<double>>();
    if (j.contains("strings")) return j.at("strings").get<std::vector<std::string>>();
    if (j.contains("t")) return tensor(j.at("t"));
    bad("unknown attribute kind");
  }
};

// The graph as the header's "graph" object; constants and tensor attributes go to `blobs`.
json graph_json(const graph::Graph& g, Blobs& blobs) {
  json values = json::array();
  for (size_t i = 0; i < g.num_values(); ++i) {
    const graph::Value& v = g.value(static_cast<graph::ValueId>(i));
    json vj = {{"name", v.name},
               {"dtype", dtype_name(v.dtype)},
               {"shape", v.shape},
               {"has_shape", v.has_shape}};
    if (v.constant) vj["constant"] = tensor_json(*v.constant, blobs);
    values.push_back(vj);
  }
  json nodes = json::array();
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const graph::Node& n = g.node(static_cast<graph::NodeId>(i));
    json attrs = json::object();
    for (const auto& [k, v] : n.attrs) attrs[k] = attr_json(v, blobs);
    nodes.push_back({{"name", n.name},
                     {"op", n.op_type()},
                     {"domain", n.op->domain},
                     {"opset", n.opset},
                     {"dead", n.dead},
                     {"inputs", n.inputs},
                     {"outputs", n.outputs},
                     {"attrs", attrs}});
  }
  json outputs = json::array();
  for (const auto& o : g.outputs()) outputs.push_back({{"name", o.name}, {"value", o.value}});
  return {{"name", g.name},
          {"values", values},
          {"nodes", nodes},
          {"inputs", g.inputs()},
          {"outputs", outputs}};
}

// A value id read from the file: kNoValue or one of g's values.
graph::ValueId value_id_in(const graph::Graph& g, int64_t v, const Reader& rd) {
  if (v != graph::kNoValue && (v < 0 || v >= static_cast<int64_t>(g.num_values())))
    rd.bad("value id out of range");
  return static_cast<graph::ValueId>(v);
}

// The header's "graph" object back as a graph (verified).
graph::Graph graph_from_json(const json& gj, const Reader& rd) {
  graph::Graph g;
  g.name = gj.at("name");
  for (const json& vj : gj.at("values")) {
    auto dt = dtype_from_name(vj.at("dtype").get<std::string>());
    if (!dt) rd.bad("unknown dtype");
    graph::ValueId id = g.add_value(vj.at("name"), *dt, vj.at("shape").get<Shape>());
    g.value(id).has_shape = vj.at("has_shape");
    if (vj.contains("constant"))
      g.value(id).constant = std::make_shared<const Tensor>(rd.tensor(vj.at("constant")));
  }
  for (const json& nj : gj.at("nodes")) {
    const graph::OpDef* op =
        graph::find_op(nj.at("domain").get<std::string>(), nj.at("op").get<std::string>());
    if (!op) rd.bad("unknown op " + nj.at("op").get<std::string>());
    graph::Attributes attrs;
    for (const auto& [k, v] : nj.at("attrs").items()) attrs.emplace(k, rd.attr(v));
    std::vector<graph::ValueId> ins, outs;
    for (int64_t v : nj.at("inputs")) ins.push_back(value_id_in(g, v, rd));
    for (int64_t v : nj.at("outputs")) outs.push_back(value_id_in(g, v, rd));
    graph::NodeId id = g.add_node(op, nj.at("name"), ins, outs, std::move(attrs), nj.at("opset"));
    if (nj.at("dead").get<bool>()) g.kill_node(id);
  }
  for (int64_t v : gj.at("inputs")) g.add_input(value_id_in(g, v, rd));
  for (const json& oj : gj.at("outputs"))
    g.add_output(value_id_in(g, oj.at("value"), rd), oj.at("name"));
  graph::verify(g);
  return g;
}

// A kernel's TMA descriptor recipe; its parameter must be one of the kernel's.
codegen::TensorMap tensor_map_from_json(const json& mj, size_t params, const Reader& rd) {
  codegen::TensorMap m;
  m.param = mj.at("param");
  if (m.param >= params) rd.bad("tensor map parameter out of range");
  auto mdt = dtype_from_name(mj.at("dtype").get<std::string>());
  if (!mdt) rd.bad("unknown tensor map dtype");
  m.dtype = *mdt;
  m.offset_bytes = mj.at("offset");
  m.dims = mj.at("dims").get<std::vector<uint64_t>>();
  m.strides = mj.at("strides").get<std::vector<uint64_t>>();
  m.box = mj.at("box").get<std::vector<uint32_t>>();
  m.swizzle = mj.value("swizzle", true);
  if (mj.contains("im2col")) {
    const json& ij = mj.at("im2col");
    m.lower = ij.at("lower").get<std::vector<int32_t>>();
    m.upper = ij.at("upper").get<std::vector<int32_t>>();
    m.element_strides = ij.at("element_strides").get<std::vector<uint32_t>>();
    m.channels = ij.at("channels");
    m.pixels = ij.at("pixels");
    if (m.pixels == 0) rd.bad("im2col tensor map of no pixels");
  }
  const size_t rank = m.dims.size();
  if (rank < 3 || rank > 5 || m.strides.size() + 1 != rank ||
      (m.im2col() ? !m.box.empty() || m.lower.size() + 2 != rank || m.upper.size() + 2 != rank ||
                        m.element_strides.size() != rank
                  : m.box.size() != rank))
    rd.bad("tensor map of the wrong rank");
  return m;
}

codegen::Kernel kernel_from_json(const json& kj, const fusion::Group& group, const graph::Graph& g,
                                 const Reader& rd) {
  codegen::Kernel k;
  k.kind = group.kind;
  k.nodes = group.nodes;
  k.name = kj.at("name");
  k.source = std::string(rd.bytes(kj.at("source")));
  for (const json& pj : kj.at("params"))
    k.params.push_back({value_id_in(g, pj.at("value"), rd), pj.at("output")});
  k.has_error_flag = kj.at("error_flag");
  k.error_messages = kj.at("errors").get<std::vector<std::string>>();
  k.grid = kj.at("grid");
  k.block = kj.at("block");
  k.shared_bytes = kj.at("shared");
  k.empty_launch = kj.at("empty");
  k.tunables = kj.at("tunables").get<codegen::Tunables>();
  k.schedule = kj.value("schedule", "");
  if (kj.contains("tensor_maps"))
    for (const json& mj : kj.at("tensor_maps"))
      k.tensor_maps.push_back(tensor_map_from_json(mj, k.params.size(), rd));
  return k;
}

Step step_from_json(const json& sj, const graph::Graph& g, const Reader& rd) {
  Step s;
  std::string kind = sj.at("kind");
  for (auto k : {fusion::GroupKind::Pointwise, fusion::GroupKind::Reduction,
                 fusion::GroupKind::Gemm, fusion::GroupKind::Opaque, fusion::GroupKind::Attention})
    if (fusion::group_kind_name(k) == kind) s.group.kind = k;
  s.group.nodes = sj.at("nodes").get<std::vector<graph::NodeId>>();
  for (graph::NodeId id : s.group.nodes)
    if (id < 0 || static_cast<size_t>(id) >= g.num_nodes()) rd.bad("node id out of range");
  for (int64_t v : sj.at("inputs")) s.group.inputs.push_back(value_id_in(g, v, rd));
  for (int64_t v : sj.at("outputs")) s.group.outputs.push_back(value_id_in(g, v, rd));
  s.fallback_reason = sj.at("fallback");
  if (sj.contains("kernel")) {
    s.kernel = kernel_from_json(sj.at("kernel"), s.group, g, rd);
    s.cubin = std::string(rd.bytes(sj.at("kernel").at("cubin")));
  }
  return s;
}

// Each distinct cubin's blob reference, by its bytes (identical kernels share one cubin).
using CubinRefs = std::map<std::string_view, json>;

// The blob reference of cubin `c`, added to `blobs` the first time these bytes are seen.
json cubin_ref(const std::string& c, CubinRefs& cubins, Blobs& blobs) {
  auto [it, fresh] = cubins.try_emplace(std::string_view(c));
  if (fresh) it->second = blobs.add(c.data(), c.size());
  return it->second;
}

// A step's kernel as its "kernel" object; its source, then its cubin (if new), go to `blobs`.
json kernel_json(const codegen::Kernel& k, const std::string& cubin, CubinRefs& cubins,
                 Blobs& blobs) {
  json params = json::array();
  for (const codegen::Param& p : k.params)
    params.push_back({{"value", p.value}, {"output", p.is_output}});
  json maps = json::array();
  for (const codegen::TensorMap& m : k.tensor_maps)
    maps.push_back({{"param", m.param},
                    {"offset", m.offset_bytes},
                    {"dtype", dtype_name(m.dtype)},
                    {"dims", m.dims},
                    {"strides", m.strides},
                    {"box", m.box},
                    {"swizzle", m.swizzle}});
  for (size_t i = 0; i < k.tensor_maps.size(); ++i)
    if (const codegen::TensorMap& m = k.tensor_maps[i]; m.im2col())
      maps[i]["im2col"] = {{"lower", m.lower},
                           {"upper", m.upper},
                           {"element_strides", m.element_strides},
                           {"channels", m.channels},
                           {"pixels", m.pixels}};
  return {{"name", k.name},
          {"source", blobs.add(k.source.data(), k.source.size())},
          {"params", params},
          {"error_flag", k.has_error_flag},
          {"errors", k.error_messages},
          {"grid", k.grid},
          {"block", k.block},
          {"shared", k.shared_bytes},
          {"empty", k.empty_launch},
          {"tensor_maps", maps},
          {"tunables", k.tunables},
          {"schedule", k.schedule},
          {"cubin", cubin_ref(cubin, cubins, blobs)}};
}

// The steps as the header's "steps" array; kernel sources and cubins go to `blobs`.
json steps_json(const std::vector<Step>& steps, Blobs& blobs) {
  json out = json::array();
  CubinRefs cubins;
  for (const Step& s : steps) {
    json sj = {{"kind", fusion::group_kind_name(s.group.kind)},
               {"nodes", s.group.nodes},
               {"inputs", s.group.inputs},
               {"outputs", s.group.outputs},
               {"fallback", s.fallback_reason}};
    if (s.kernel) sj["kernel"] = kernel_json(*s.kernel, s.cubin, cubins, blobs);
    out.push_back(sj);
  }
  return out;
}

// The engine file's JSON header; the blobs it refers to go to `blobs`.
json engine_header(const Engine& engine, const EngineFileInfo& info, Blobs& blobs) {
  json h;
  h["braze_version"] = info.braze_version;
  h["model_hash"] = info.model_hash;
  h["model_name"] = info.model_name;
  h["nvrtc_version"] = info.nvrtc_version;
  h["arch"] = engine.arch().name();
  h["precision"] = info.precision;
  h["graph"] = graph_json(engine.graph(), blobs);
  h["steps"] = steps_json(engine.steps(), blobs);
  return h;
}

// The preamble: magic, format version, header length, XXH3-64 of the header and the blobs.
void fill_preamble(char (&preamble)[kPreamble], const std::string& header, const Blobs& blobs) {
  const uint32_t version = kVersion;
  const uint64_t len = header.size();
  XXH3_state_t* st = XXH3_createState();
  if (!st) throw std::bad_alloc();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, header.data(), header.size());
  blobs.hash(st);
  const uint64_t sum = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  std::memcpy(preamble, kMagic, 8);
  std::memcpy(preamble + 8, &version, 4);
  std::memcpy(preamble + 12, &len, 8);
  std::memcpy(preamble + 20, &sum, 8);
}

// Writes `parts` to `path`: in place on a device or a pipe, else to `path`.tmp renamed over it.
void write_engine_parts(const fs::path& path,
                        const std::vector<std::pair<const char*, size_t>>& parts) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::error_code ec;
    if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
      // A device or a pipe: written in order, in place (a rename would replace the node).
      std::vector<std::string_view> views;
      for (const auto& [p, n] : parts) views.emplace_back(p, n);
      frontend::write_file(path, views);
      return;
    }
    try {
      write_file(tmp, parts, path);
    } catch (const UserError&) {
      fs::remove(tmp, ec);
      throw;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw UserError(fmt::format("{}: cannot write ({})", path.string(), ec.message()));
}

}  // namespace

void save_engine(const fs::path& path, const Engine& engine, const EngineFileInfo& info) {
  Blobs blobs;
  json h = engine_header(engine, info, blobs);
  std::string header =
      h.dump(-1, ' ', false, json::error_handler_t::replace);  // a model name from a non-UTF-8 path
  char preamble[kPreamble];
  fill_preamble(preamble, header, blobs);
  std::vector<std::pair<const char*, size_t>> parts = {{preamble, kPreamble},
                                                       {header.data(), header.size()}};
  parts.insert(parts.end(), blobs.parts().begin(), blobs.parts().end());
  write_engine_parts(path, parts);
}

bool is_engine_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char m[8] = {};
  return in.read(m, 8) && std::memcmp(m, kMagic, 8) == 0;
}

LoadedEngine load_engine(const fs::path& path) {
  return read_engine(frontend::read_file(path), path.string());
}

LoadedEngine read_engine(const std::string& bytes, const std::string& what, bool verify_checksum) {
  if (bytes.size() < 12 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw UserError(what + ": not a braze engine file");
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  if (version != kVersion)
    throw UserError(
        fmt::format("{}: engine format version {} (this braze reads {}); compile it again", what,
                    version, kVersion));
  if (bytes.size() < kPreamble) throw UserError(what + ": damaged braze engine file (truncated)");
  uint64_t len, sum;
  std::memcpy(&len, bytes.data() + 12, 8);
  std::memcpy(&sum, bytes.data() + 20, 8);
  if (len > bytes.size() - kPreamble)
    throw UserError(what + ": damaged braze engine file (truncated header)");
  if (verify_checksum && XXH3_64bits(bytes.data() + kPreamble, bytes.size() - kPreamble) != sum)
    throw UserError(what + ": damaged braze engine file (checksum mismatch); compile it again");
  std::string blob = bytes.substr(kPreamble + len);
  Reader rd{blob, what};
  LoadedEngine out;
  try {
    json h = json::parse(bytes.substr(kPreamble, len));
    out.info.braze_version = h.at("braze_version");
    out.info.model_hash = h.at("model_hash");
    out.info.model_name = h.at("model_name");
    out.info.nvrtc_version = h.at("nvrtc_version");
    out.info.arch = h.at("arch");
    out.info.precision = h.value("precision", "fp32");
    graph::Graph g = graph_from_json(h.at("graph"), rd);
    std::vector<Step> steps;
    for (const json& sj : h.at("steps")) steps.push_back(step_from_json(sj, g, rd));
    out.engine = Engine::assemble(std::move(g), std::move(steps), Arch::parse(out.info.arch));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: damaged braze engine file ({})", what, e.what()));
  } catch (const InternalError& e) {
    throw UserError(fmt::format("{}: damaged braze engine file ({})", what, e.what()));
  }
  return out;
}

}  // namespace braze::gpu
