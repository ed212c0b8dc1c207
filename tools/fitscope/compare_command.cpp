#include "compare_command.hpp"

#include <ostream>
#include <stdexcept>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/io/terminal.hpp"
#include "fitscope/report/comparison_page.hpp"
#include "fitscope/summary/detail/percent.hpp"
#include "fitscope/summary/summary_printout.hpp"
#include "help.hpp"

namespace fitscope::cli {

int run_compare(const CompareCommandOptions& o, std::ostream& out, std::ostream& err) {
  const int runs = static_cast<int>(o.runs.size()), of_a = o.runs_of_a.value_or(runs - 1);
  if (runs < 2 || of_a < 1 || of_a >= runs) {
    throw std::invalid_argument("fitscope compare: " + std::to_string(runs) + (runs == 1 ? " run directory" : " run directories") +
                                (o.runs_of_a ? " with --runs-of-a " + std::to_string(*o.runs_of_a) : std::string()) +
                                " (expected RUN_A [RUN_A ...] RUN_B [RUN_B ...]: at least one run of each, --runs-of-a "
                                "saying how many of them are A's)");
  }
  const Comparison c = compare_runs(std::vector<std::string>(o.runs.begin(), o.runs.begin() + of_a),
                                    std::vector<std::string>(o.runs.begin() + of_a, o.runs.end()), o.compare);
  const std::string printout = in_flags(format_comparison(c));
  const int columns = output_columns();
  out << (columns > 0 ? wrap_to_width(printout, static_cast<std::size_t>(columns)) : printout);
  if (!o.json.empty()) {
    write_output_file(o.json, c.to_json());
    out << "JSON: " << o.json << "\n";
  }
  if (!o.html.empty()) {
    write_output_file(o.html, in_flags(comparison_html(c)));  // its settings named by their flags, as the printout's
    out << "Page: " << o.html << "\n";
  }
  if (o.fail_above && c.direction() == "slower") {
    const double low = c.change_fraction_interval().first;
    if (low > *o.fail_above / 100) {
      err << "fitscope compare: B is slower than A by more than " << *o.fail_above << "% (--fail-above): "
          << detail::format_percent(c.change_fraction(), 1) << ", at least " << detail::format_percent(low, 1) << " at "
          << detail::format_percent(c.confidence, 0) << " confidence\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace fitscope::cli
