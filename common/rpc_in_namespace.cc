#include "nabla/common/rpc_in_namespace.hh"

#include <sched.h>

#include <cerrno>
#include <exception>
#include <system_error>
#include <thread>

#include "nabla/common/rpc.hh"

namespace nabla::common {

nlohmann::json call_in_namespace(const NetNamespace& ns, const std::string& host, uint16_t port,
                                 std::string_view daemon, const RpcClient::KeySource& key_source,
                                 const std::string& method, const nlohmann::json& params,
                                 std::chrono::milliseconds timeout) {
  nlohmann::json result;
  std::exception_ptr error;
  const FileDescriptor ns_fd = ns.open();
  std::thread helper([&] {
    try {
      if (::setns(ns_fd.get(), CLONE_NEWNET) != 0) {
        throw std::system_error(errno, std::generic_category(), "setns " + ns.path());
      }
      auto client = RpcClient::connect(host, port, key_source, timeout, daemon);
      result = client.call(method, params, timeout);
    } catch (...) {
      error = std::current_exception();
    }
  });
  helper.join();
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace nabla::common
