// The persistent tuning cache (runtime/gpu/autotune.h): what it keeps, and what it refuses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/gpu/autotune.h"

namespace braze::gpu {
namespace {

namespace fs = std::filesystem;

fs::path cache_file(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("braze_tuning_cache_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  fs::path p = d / name;
  fs::remove(p);
  return p;
}

const std::vector<codegen::Tunables> kSpace = {{{"threads", 128}, {"vec", 4}}, {{"threads", 256}, {"vec", 4}}};

TEST(TuningCache, KeepsWhatItSavedAcrossInstances) {
  fs::path p = cache_file("round_trip.json");
  {
    TuningCache c(p);
    EXPECT_FALSE(c.find("k|dev|nvrtc", kSpace));
    c.put("k|dev|nvrtc", kSpace[1], 12.5, 2);
    c.save();
  }
  TuningCache again(p);
  std::optional<codegen::Tunables> hit = again.find("k|dev|nvrtc", kSpace);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, kSpace[1]);
  EXPECT_FALSE(again.find("other|dev|nvrtc", kSpace));
}

// An entry that is not one of the kernel's candidates now (another braze version's search
// space, or a hand edit: unknown keys, missing keys, values out of range) is a miss, so the
// kernel is timed again instead of being generated from tunables it cannot take.
TEST(TuningCache, EntriesOutsideTheSearchSpaceAreMisses) {
  fs::path p = cache_file("stale.json");
  std::ofstream(p) << R"({"format": 1, "kernels": {
    "a": {"tunables": {"threads": 5000, "vec": 4}},
    "b": {"tunables": {"threads": 128}},
    "c": {"tunables": {"threads": 128, "vec": 4, "unroll": 2}},
    "d": {"tunables": {"threads": 128, "vec": 4}, "note": "1.00 us"}}})";
  TuningCache c(p);
  EXPECT_FALSE(c.find("a", kSpace));
  EXPECT_FALSE(c.find("b", kSpace));
  EXPECT_FALSE(c.find("c", kSpace));
  ASSERT_TRUE(c.find("d", kSpace));
  EXPECT_EQ(*c.find("d", kSpace), kSpace[0]);
}

TEST(TuningCache, DamagedFilesAreStartedAfresh) {
  for (const char* text : {"{\"format\":", "\xff\xfe", "[1, 2]", R"({"kernels": {"a": {"tunables": 7}}})"}) {
    fs::path p = cache_file("damaged.json");
    std::ofstream(p) << text;
    TuningCache c(p);
    EXPECT_FALSE(c.find("a", kSpace)) << text;
    c.put("a", kSpace[0], 1.0, 2);
    c.save();
    EXPECT_TRUE(TuningCache(p).find("a", kSpace)) << text;
  }
}

}  // namespace
}  // namespace braze::gpu
