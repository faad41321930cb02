#include "common/interrupts.h"

#include <cstdlib>

#include "common/exit_codes.h"

namespace warden {

void InterruptToCancel::interrupted() {
  std::function<void()> action;
  {
    std::lock_guard lock(mutex_);
    if (interrupted_) std::_Exit(kCancelled);
    interrupted_ = true;
    action = action_;
  }
  if (action) action();
}

void InterruptToCancel::on_interrupt(std::function<void()> action) {
  bool now = false;
  {
    std::lock_guard lock(mutex_);
    action_ = action;
    now = interrupted_;
  }
  if (now) action();
}

}  // namespace warden
