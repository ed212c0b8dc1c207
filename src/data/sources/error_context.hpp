#pragma once
// Private: rethrows the exception being handled with a prefix naming where it happened, keeping
// std::invalid_argument (bad input, exit 2) apart from other failures (exit 1).

#include <exception>
#include <stdexcept>
#include <string>

namespace fitscope::detail {

[[noreturn]] inline void rethrow_with_context(const std::string& where) {
  try {
    throw;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(where + e.what());
  } catch (...) {
    throw std::runtime_error(where + "unknown error");
  }
}

}  // namespace fitscope::detail
