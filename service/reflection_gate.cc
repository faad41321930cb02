#include "service/reflection_gate.h"

#include <string_view>

namespace warden::service {
namespace {

namespace ex = grpc::experimental;

class ReflectionGate final : public ex::Interceptor {
 public:
  ReflectionGate(ex::ServerRpcInfo* info, const TokenTable& tokens) : info_(info), tokens_(tokens) {}

  void Intercept(ex::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(ex::InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      grpc::Status denied;
      const auto* metadata = methods->GetRecvInitialMetadata();
      if (metadata == nullptr || !tokens_.identify(*metadata, denied)) info_->server_context()->TryCancel();
    }
    methods->Proceed();
  }

 private:
  ex::ServerRpcInfo* info_;
  const TokenTable& tokens_;
};

class Factory final : public ex::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(TokenTable tokens) : tokens_(std::move(tokens)) {}

  ex::Interceptor* CreateServerInterceptor(ex::ServerRpcInfo* info) override {
    const std::string_view method = info->method() ? info->method() : "";
    if (!method.starts_with("/grpc.reflection.")) return nullptr;
    return new ReflectionGate(info, tokens_);  // gRPC owns it and deletes it with the call
  }

 private:
  TokenTable tokens_;
};

}  // namespace

std::unique_ptr<ex::ServerInterceptorFactoryInterface> reflection_gate(const TokenTable& tokens) {
  return std::make_unique<Factory>(tokens);
}

}  // namespace warden::service
