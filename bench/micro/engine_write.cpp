// How fast can a 228 MB engine file (BERT-base's at float16) be written? Three ways, three
// times each, into a new file at PATH: posix_fallocate + a shared mapping filled by THREADS
// threads (what runtime/gpu/engine_file.cpp does), pwrite in 8 MiB pieces from one thread,
// and posix_fallocate + the same pwrites. On the 2-core CPU machine (ext4, 2026-12-04):
// 0.062 / 0.052 / 0.038 s; to tmpfs 0.12 / 0.09 / 0.09 s. On the H200 machine (16 threads,
// 2026-12-04 at da97db2): /tmp (ext4) 0.086-0.091 / 0.069-0.071 / 0.063-0.064 s, /dev/shm
// 0.049-0.075 / 0.102-0.106 / 0.104-0.113 s — hence engine files by fallocate + pwrite on
// disks and through the mapping on tmpfs (runtime/gpu/engine_file.cpp).
//
//   g++ -O2 -pthread -o /tmp/engine_write bench/micro/engine_write.cpp
//   /tmp/engine_write /tmp/x.bin 16; /tmp/engine_write /dev/shm/x.bin 16
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>
int main(int argc, char** argv) {
  const size_t n = 228u << 20;
  std::vector<char> buf(n, 1);
  const char* path = argv[1];
  const int threads = argc > 2 ? atoi(argv[2]) : 2;
  for (int mode = 0; mode < 3; ++mode)
    for (int rep = 0; rep < 3; ++rep) {
      unlink(path);
      auto t0 = std::chrono::steady_clock::now();
      int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
      if (mode == 0) {
        posix_fallocate(fd, 0, n);
        char* m = (char*)mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
          ts.emplace_back([&, t] {
            size_t a = n / threads * t, b = t + 1 == threads ? n : n / threads * (t + 1);
            memcpy(m + a, buf.data() + a, b - a);
          });
        for (auto& t : ts) t.join();
        munmap(m, n);
      } else {
        if (mode == 2) posix_fallocate(fd, 0, n);
        for (size_t at = 0; at < n; at += 8u << 20)
          if (pwrite(fd, buf.data() + at, std::min<size_t>(8u << 20, n - at), at) < 0)
            perror("pwrite");
      }
      close(fd);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      printf("%s: %.3f s\n",
             mode == 0   ? "fallocate+mmap+memcpy"
             : mode == 1 ? "pwrite"
                         : "fallocate+pwrite",
             s);
    }
}
