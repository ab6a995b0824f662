#include "runtime/gpu/device_summary.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"

namespace braze::gpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return in ? ss.str() : std::string();
}

// The value of `key` ("Model", "GPU UUID") in a /proc/driver/nvidia/gpus/*/information file.
std::string field(const std::string& info, const std::string& key) {
  std::istringstream in(info);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::string v = line.substr(key.size() + 1);
    const size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
  }
  return "";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

// From the driver: cuInit and device 0's attributes, no context.
std::optional<DeviceSummary> ask_driver() {
  if (!gpu_available()) return std::nullopt;
  const DriverApi& d = driver();
  CUdevice dev = 0;
  int major = 0, minor = 0, sms = 0;
  char name[256] = {};
  if (d.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
          CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
          CUDA_SUCCESS ||
      d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != CUDA_SUCCESS ||
      d.cuDeviceGetName(name, sizeof name - 1, dev) != CUDA_SUCCESS)
    return std::nullopt;
  return DeviceSummary{device_arch(major, minor), sms, name};
}

// devices.json: {identity: {"cc": [major, minor], "sms": n, "name": s}}; {} where missing
// or damaged.
json read_cache(const fs::path& file) {
  const std::string text = read_text(file);
  if (text.empty()) return json::object();
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

std::optional<DeviceSummary> from_cache(const json& j, const std::string& identity) {
  auto it = j.find(identity);
  if (it == j.end() || !it->is_object()) return std::nullopt;
  const json& e = *it;
  if (!e.contains("cc") || !e["cc"].is_array() || e["cc"].size() != 2 ||
      !e["cc"][0].is_number_integer() || !e["cc"][1].is_number_integer() || !e.contains("sms") ||
      !e["sms"].is_number_integer() || !e.contains("name") || !e["name"].is_string())
    return std::nullopt;
  const int major = e["cc"][0], minor = e["cc"][1], sms = e["sms"];
  if (major < 1 || major > 99 || minor < 0 || minor > 9 || sms < 1 || sms > 100000)
    return std::nullopt;
  return DeviceSummary{device_arch(major, minor), sms, e["name"].get<std::string>()};
}

// Best effort: a temporary file renamed over the old, so that a reader never sees half.
void remember(const fs::path& dir, json j, const std::string& identity, const DeviceSummary& s) {
  j[identity] = {{"cc", {s.arch.major, s.arch.minor}}, {"sms", s.sms}, {"name", s.name}};
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path tmp = dir / ("devices.json.tmp" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, dir / "devices.json", ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

std::string device_identity(const fs::path& proc_root) {
  std::error_code ec;
  std::vector<fs::path> gpus;
  for (fs::directory_iterator it(proc_root / "gpus", ec), end; !ec && it != end; it.increment(ec))
    gpus.push_back(it->path());
  if (gpus.empty()) return "";
  std::sort(gpus.begin(), gpus.end());
  std::string version = read_text(proc_root / "version");
  version = version.substr(0, version.find('\n'));
  if (version.empty()) return "";
  std::string id = version;
  for (const fs::path& g : gpus) {
    const std::string info = read_text(g / "information");
    const std::string model = field(info, "Model"), uuid = field(info, "GPU UUID");
    if (uuid.empty()) return "";  // a GPU we cannot tell apart: ask the driver
    id += "; " + g.filename().string() + " " + model + " " + uuid;
  }
  return id + "; CUDA_VISIBLE_DEVICES=" + env("CUDA_VISIBLE_DEVICES") +
         "; CUDA_DEVICE_ORDER=" + env("CUDA_DEVICE_ORDER");
}

std::optional<DeviceSummary> device_summary(const fs::path& cache_dir, const fs::path& proc_root) {
  const std::string identity = device_identity(proc_root);
  if (identity.empty() || cache_dir.empty()) return ask_driver();
  const fs::path file = cache_dir / "devices.json";
  json cache = read_cache(file);
  if (std::optional<DeviceSummary> s = from_cache(cache, identity)) return s;
  std::optional<DeviceSummary> s = ask_driver();
  if (s) remember(cache_dir, std::move(cache), identity, *s);
  return s;
}

}  // namespace braze::gpu
