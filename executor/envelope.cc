#include "executor/envelope.h"

#include <algorithm>

#include "executor/names.h"

namespace warden::executor {
namespace {

constexpr NameTable<TerminalReason, 9> kReasons{{
    {TerminalReason::completed, "completed"},
    {TerminalReason::max_iterations_exceeded, "max_iterations_exceeded"},
    {TerminalReason::max_llm_calls_exceeded, "max_llm_calls_exceeded"},
    {TerminalReason::max_agent_hops_exceeded, "max_agent_hops_exceeded"},
    {TerminalReason::edge_limit_exceeded, "edge_limit_exceeded"},
    {TerminalReason::max_stages_exceeded, "max_stages_exceeded"},
    {TerminalReason::stage_failed, "stage_failed"},
    {TerminalReason::deadlock, "deadlock"},
    {TerminalReason::cancelled, "cancelled"},
}};

constexpr std::string_view kGoalPending = "pending";
constexpr std::string_view kGoalComplete = "complete";

}  // namespace

std::string_view terminal_reason_name(TerminalReason reason) { return name_of(kReasons, reason); }

std::optional<TerminalReason> parse_terminal_reason(std::string_view name) { return value_of(kReasons, name); }

std::optional<TerminalReason> Envelope::bounds_exceeded(int64_t hops_needed) const {
  if (iteration > max_iterations) return TerminalReason::max_iterations_exceeded;
  if (llm_call_count >= max_llm_calls) return TerminalReason::max_llm_calls_exceeded;
  if (agent_hop_count + hops_needed > max_agent_hops) return TerminalReason::max_agent_hops_exceeded;
  return std::nullopt;
}

void Envelope::initialize_goals(const std::vector<std::string>& goals) {
  all_goals = goals;
  remaining_goals = goals;
  goal_completion_status.clear();
  for (const auto& g : goals) goal_completion_status[g] = std::string(kGoalPending);
}

bool Envelope::mark_goal_complete(std::string_view goal) {
  auto status = goal_completion_status.find(std::string(goal));
  if (status == goal_completion_status.end()) return false;
  status->second = std::string(kGoalComplete);
  std::erase(remaining_goals, goal);
  return true;
}

int64_t Envelope::completed_goal_count() const {
  return std::count_if(goal_completion_status.begin(), goal_completion_status.end(),
                       [](const auto& kv) { return kv.second == kGoalComplete; });
}

void Envelope::advance_stage() {
  completed_stages.push_back(Json{{"stage_number", current_stage_number},
                                  {"goals_completed", completed_goal_count()},
                                  {"remaining_goals", remaining_goals}});
  ++current_stage_number;
}

Json Envelope::stage_context() const {
  return Json{{"current_stage_number", current_stage_number},
              {"max_stages", max_stages},
              {"all_goals", all_goals},
              {"remaining_goals", remaining_goals},
              {"goal_completion_status", goal_completion_status},
              {"completed_stages", completed_stages},
              {"loop_feedback", loop_feedback}};
}

bool Envelope::is_stuck(int64_t min_progress_stages) const {
  if (min_progress_stages < 1 || static_cast<int64_t>(completed_stages.size()) < min_progress_stages) return false;
  // Goals completed before the window began: 0, or the count the stage before it recorded.
  size_t window_start = completed_stages.size() - static_cast<size_t>(min_progress_stages);
  auto count_at = [&](size_t i) -> int64_t {
    auto it = completed_stages[i].find("goals_completed");
    return it != completed_stages[i].end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  };
  int64_t before = window_start == 0 ? 0 : count_at(window_start - 1);
  return count_at(completed_stages.size() - 1) <= before;
}

}  // namespace warden::executor
