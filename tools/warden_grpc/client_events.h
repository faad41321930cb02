// A server's RunEvent (proto/warden.proto) back as the kernel's, so that a client renders it
// with the very code the local commands use (tools/warden/run_view.h, kernel/record/event_stream.h).
#pragma once

#include <warden.pb.h>

#include "common/error.h"
#include "kernel/record/run_lifecycle.h"

namespace warden::grpc_client {

// invalid_argument when the server sent an event type the kernel does not know or data that
// is not a JSON object: a client never prints what it cannot read as the kernel's.
Result<kernel::RunEvent> event_from_proto(const v1::RunEvent& event);

}  // namespace warden::grpc_client
