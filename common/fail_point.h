// Named points in a long-lived process's work where a fault test kills it, so a crash at an
// exact moment (a runner between storing a tree and its entries, a server after queueing a
// task) can be reproduced rather than hoped for. With WARDEN_FAIL_POINT=<name> in the
// process's environment, reaching the point of that name raises SIGKILL: the process ends as
// kill -9 would end it, without unwinding, flushing or closing anything. Without the variable a
// point costs one getenv.
//
// Thread-safe. Only the operator who starts the process sets its environment, so a point is
// no lever for anyone else.
#pragma once

#include <string_view>

namespace warden {

void fail_point(std::string_view name);

}  // namespace warden
