// The persistent tuning cache (runtime/gpu/autotune.h): what it keeps, and what it refuses.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/gpu/tuning_cache.h"

namespace braze::gpu {
namespace {

namespace fs = std::filesystem;

fs::path cache_file(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("braze_tuning_cache_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  fs::path p = d / name;
  fs::remove(p);
  return p;
}

const std::vector<codegen::Tunables> kSpace = {{{"threads", 128}, {"vec", 4}},
                                               {{"threads", 256}, {"vec", 4}}};

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
  for (const char* text :
       {"{\"format\":", "\xff\xfe", "[1, 2]", R"({"kernels": {"a": {"tunables": 7}}})"}) {
    fs::path p = cache_file("damaged.json");
    std::ofstream(p) << text;
    TuningCache c(p);
    EXPECT_FALSE(c.find("a", kSpace)) << text;
    c.put("a", kSpace[0], 1.0, 2);
    c.save();
    EXPECT_TRUE(TuningCache(p).find("a", kSpace)) << text;
  }
}

// One writer's rounds: each puts a key of its own and saves, as a tuning run does per model.
void tune_rounds(const fs::path& p, const std::string& who, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    TuningCache c(p);
    c.put(who + "_" + std::to_string(r), kSpace[r % 2], r, 2);
    c.save();
  }
}

void expect_every_round_kept(const fs::path& p, const std::vector<std::string>& writers,
                             int rounds) {
  TuningCache all(p);
  for (const std::string& who : writers)
    for (int r = 0; r < rounds; ++r) {
      std::optional<codegen::Tunables> hit = all.find(who + "_" + std::to_string(r), kSpace);
      ASSERT_TRUE(hit) << who << " round " << r << " was lost";
      EXPECT_EQ(*hit, kSpace[r % 2]);
    }
  for (const auto& e : fs::directory_iterator(p.parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

// Processes tuning into one cache at once: every entry each of them saved is there afterwards
// (a save lays its own entries over what is on disk, under a lock), and the file always parses.
TEST(TuningCache, ProcessesSavingAtOnceLoseNoEntries) {
  fs::path p = cache_file("shared_by_processes.json");
  constexpr int kProcs = 4, kRounds = 25;
  std::vector<pid_t> kids;
  std::vector<std::string> writers;
  for (int i = 0; i < kProcs; ++i) {
    writers.push_back("proc" + std::to_string(i));
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        tune_rounds(p, writers.back(), kRounds);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  expect_every_round_kept(p, writers, kRounds);
}

TEST(TuningCache, ThreadsSavingAtOnceLoseNoEntries) {
  fs::path p = cache_file("shared_by_threads.json");
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<std::thread> threads;
  std::vector<std::string> writers;
  for (int i = 0; i < kThreads; ++i) writers.push_back("thread" + std::to_string(i));
  for (const std::string& who : writers)
    threads.emplace_back([&p, who] { tune_rounds(p, who, kRounds); });
  for (std::thread& t : threads) t.join();
  expect_every_round_kept(p, writers, kRounds);
}

}  // namespace
}  // namespace braze::gpu
