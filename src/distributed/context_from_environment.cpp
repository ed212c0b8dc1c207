#include "fitscope/distributed/context_from_environment.hpp"

#include <stdexcept>

#include "fitscope/distributed/environment.hpp"
#include "fitscope/distributed/gloo_context.hpp"
#include "fitscope/distributed/nccl_context.hpp"

namespace fitscope::distributed {

std::shared_ptr<Context> context_from_environment(std::chrono::milliseconds timeout, Backend backend,
                                                  std::optional<int64_t> cuda_device) {
  const auto env = read_environment();
  if (!env || (env->world_size == 1 && backend != Backend::nccl)) return single_process_context();
  if (backend == Backend::automatic) backend = cuda_device && nccl_available() ? Backend::nccl : Backend::gloo;
  if (backend == Backend::gloo) return make_gloo_context(*env, timeout);
  if (!cuda_device) throw std::invalid_argument("the NCCL backend needs a GPU per rank, but this rank trains on the CPU");
  if (!nccl_available()) {
    throw std::invalid_argument("Backend::nccl: this build of fitscope has no NCCL (expected Backend::gloo or Backend::automatic)");
  }
  return make_nccl_context(*env, *cuda_device, timeout);
}

}  // namespace fitscope::distributed
