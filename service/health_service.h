// grpc.health.v1.Health, Warden's own: the statuses of the whole server ("") and of each
// service, changed by the server as it becomes ready and as it shuts down.
//
// Its Watch streams end as soon as shutdown() is called, so a graceful stop need not wait
// for watchers.
// Thread-safe: statuses are guarded by mu_, and Watch calls wait on changed_.
#pragma once

#include <health/v1/health.grpc.pb.h>  // generated from proto/health/v1/health.proto

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "service/in_flight.h"

namespace warden::service {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  // Its calls are counted in `in_flight`, which must outlive it.
  explicit HealthService(InFlight& in_flight) : in_flight_(in_flight) {}

  void set(const std::string& service, bool serving);
  // Every service NOT_SERVING from now on, and every Watch ends after saying so.
  void shutdown();

  grpc::Status Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest*,
                     grpc::health::v1::HealthCheckResponse*) override;
  grpc::Status Watch(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest*,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>*) override;

 private:
  // SERVICE_UNKNOWN for a name never set.
  ServingStatus status_locked(const std::string& service) const;

  InFlight& in_flight_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, bool> serving_;  // guarded by mu_
  bool shut_down_ = false;               // guarded by mu_
};

}  // namespace warden::service
