#include "fitscope/timing/process_memory.hpp"

#include <fstream>
#include <string>

namespace fitscope {

ProcessMemory process_memory() {
  ProcessMemory m;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {  // "VmHWM:   412 kB"
    for (const auto& [key, into] : {std::make_pair("VmRSS:", &m.resident), std::make_pair("VmHWM:", &m.resident_peak)}) {
      if (line.rfind(key, 0) == 0) *into = std::stoll(line.substr(6)) * 1024;
    }
  }
  return m;
}

bool reset_resident_peak() {
  std::ofstream refs("/proc/self/clear_refs");
  refs << "5";
  refs.flush();
  return static_cast<bool>(refs);
}

}  // namespace fitscope
