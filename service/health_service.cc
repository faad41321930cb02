#include "service/health_service.h"

#include <chrono>
#include <optional>

namespace warden::service {

using grpc::health::v1::HealthCheckResponse;

void HealthService::set(const std::string& service, bool serving) {
  std::lock_guard lock(mu_);
  if (shut_down_) return;
  serving_[service] = serving;
  changed_.notify_all();
}

void HealthService::shutdown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  for (auto& [name, serving] : serving_) serving = false;
  changed_.notify_all();
}

HealthService::ServingStatus HealthService::status_locked(const std::string& service) const {
  auto it = serving_.find(service);
  if (it == serving_.end()) return HealthCheckResponse::SERVICE_UNKNOWN;
  return it->second ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  InFlight::Call call(in_flight_);
  std::lock_guard lock(mu_);
  ServingStatus status = status_locked(request->service());
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service \"" + request->service() + "\"");
  }
  response->set_status(status);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  InFlight::Call call(in_flight_);
  std::unique_lock lock(mu_);
  std::optional<ServingStatus> sent;
  while (true) {
    ServingStatus now = status_locked(request->service());
    if (now != sent) {
      HealthCheckResponse response;
      response.set_status(now);
      lock.unlock();
      bool written = writer->Write(response);
      lock.lock();
      if (!written) return grpc::Status::OK;  // the client went away
      sent = now;
    }
    if (shut_down_) return grpc::Status::OK;
    // Woken by a change; the timeout notices a client that cancelled.
    changed_.wait_for(lock, std::chrono::milliseconds(500));
    if (context->IsCancelled()) return grpc::Status::CANCELLED;
  }
}

}  // namespace warden::service
