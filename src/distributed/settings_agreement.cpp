#include "fitscope/distributed/settings_agreement.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fitscope::distributed {

void require_same_settings(Context& context, const Settings& mine) {
  if (context.world_size() == 1) return;
  const std::string text = nlohmann::json(mine).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const at::Tensor lengths = context.all_gather(at::full({1}, static_cast<int64_t>(text.size()), at::kLong));
  const int64_t longest = lengths.max().item<int64_t>();
  at::Tensor bytes = at::zeros({longest}, at::kLong);  // a byte an element: a few kB, once a run
  std::copy(text.begin(), text.end(), bytes.data_ptr<int64_t>());
  const at::Tensor all = context.all_gather(bytes).contiguous();  // [world, longest]
  const auto settings_of = [&](int64_t rank) {
    const int64_t* b = all[rank].data_ptr<int64_t>();
    const std::string t(b, b + lengths[rank][0].item<int64_t>());
    return nlohmann::json::parse(t).get<Settings>();
  };
  const Settings chief = settings_of(0);
  const std::map<std::string, std::string> expected(chief.begin(), chief.end());
  for (int64_t rank = 1; rank < context.world_size(); ++rank) {
    const Settings theirs = settings_of(rank);
    const std::map<std::string, std::string> got(theirs.begin(), theirs.end());
    std::vector<std::string> names;
    for (const auto& [name, value] : chief) names.push_back(name);
    for (const auto& [name, value] : theirs) {
      if (!expected.count(name)) names.push_back(name);
    }
    for (const std::string& name : names) {
      const auto a = expected.find(name), b = got.find(name);
      const std::string on_chief = a == expected.end() ? "(not set)" : a->second;
      const std::string on_rank = b == got.end() ? "(not set)" : b->second;
      if (on_chief == on_rank) continue;
      throw std::invalid_argument("rank " + std::to_string(rank) + " was started with other settings than the chief (rank 0): " +
                                  name + " = " + on_rank + " on rank " + std::to_string(rank) + ", " + on_chief +
                                  " on rank 0 (expected every rank to run with the same settings)");
    }
  }
}

Settings settings_of_lines(const std::string& text, const std::vector<std::string>& rank_local) {
  Settings settings;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::size_t eq = line.find(" = ");
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    const std::string name = line.substr(0, eq);
    if (std::find(rank_local.begin(), rank_local.end(), name) != rank_local.end()) continue;
    settings.emplace_back(name, line.substr(eq + 3));
  }
  return settings;
}

}  // namespace fitscope::distributed
