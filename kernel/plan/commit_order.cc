#include "kernel/plan/commit_order.h"

#include <map>
#include <set>
#include <string>

namespace warden::kernel {

std::vector<size_t> commit_order(const BuildPlan& plan) {
  const size_t n = plan.steps.size();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(plan.steps[i].id, i);
  std::vector<size_t> waiting(n, 0);           // unmet dependencies per step
  std::vector<std::vector<size_t>> unblocks(n);  // dependency -> the steps waiting for it
  for (size_t i = 0; i < n; ++i) {
    std::set<size_t> deps;
    for (const std::string& d : plan.steps[i].dependencies) {
      if (auto it = index.find(d); it != index.end() && it->second != i) deps.insert(it->second);
    }
    waiting[i] = deps.size();
    for (size_t d : deps) unblocks[d].push_back(i);
  }
  std::set<size_t> ready;  // ordered: the first in the plan comes out first
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.insert(i);
  }
  std::vector<size_t> order;
  std::vector<bool> placed(n, false);
  while (!ready.empty()) {
    const size_t next = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(next);
    placed[next] = true;
    for (size_t s : unblocks[next]) {
      if (--waiting[s] == 0) ready.insert(s);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!placed[i]) order.push_back(i);
  }
  return order;
}

}  // namespace warden::kernel
