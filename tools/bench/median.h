// The median wall time of `runs` calls: benchmarks report medians so one disturbed run
// (another process, a page-cache miss) does not move the figure.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace warden::bench {

template <typename F>
double median_ms(int runs, F&& f) {
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace warden::bench
