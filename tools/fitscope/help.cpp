#include "help.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace fitscope::cli {
namespace {

constexpr std::size_t kFlagColumn = 34;   // where descriptions start
constexpr std::size_t kLineWidth = 110;  // where they wrap

/// The value's kind from CLI11's "TYPE:check description": the check's description where it has one
/// (the validators here describe their values: N, X, auto|N, {adam,adamw,sgd} as adam|adamw|sgd), else
/// N for integers and X for numbers.
std::string metavar(const CLI::Option* option) {
  const std::string full = option->get_type_name();
  const std::size_t colon = full.find(':');
  std::string kind = colon == std::string::npos ? full : full.substr(colon + 1);
  if (colon == std::string::npos) kind = kind == "INT" || kind == "UINT" ? "N" : kind == "FLOAT" ? "X" : kind;
  if (kind.size() > 2 && kind.front() == '{' && kind.back() == '}') {
    kind = kind.substr(1, kind.size() - 2);
    std::replace(kind.begin(), kind.end(), ',', '|');
  }
  if (option->get_delimiter() != '\0') kind += std::string(1, option->get_delimiter()) + "...";
  return kind;
}

/// `text` with a line break before any word that would pass `width` columns.
std::string wrapped(const std::string& text, std::size_t width) {
  std::istringstream words(text);
  std::string out, word;
  std::size_t column = 0;
  while (words >> word) {
    if (column > 0 && column + 1 + word.size() > width) {
      out += '\n';
      column = 0;
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The message for `word`, which `command` (nullptr: the program) did not expect.
std::string unexpected(const CLI::App& app, const CLI::App* command, const std::string& word) {
  if (!command) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    const std::string near = nearest_name(word, names);
    return "fitscope: unknown command '" + word + "'" + (near.empty() ? " (see fitscope --help)" : " (did you mean " + near + "?)");
  }
  const std::string where = "fitscope " + command->get_name();
  if (word.rfind("--", 0) != 0) {
    return where + ": unexpected word '" + word + "' (flags take the form --name VALUE; see " + where + " --help)";
  }
  const std::string flag = word.substr(0, word.find('='));
  for (const CLI::App* other : app.get_subcommands([&](const CLI::App* s) { return s != command; })) {
    if (other->get_option_no_throw(flag)) {
      return where + ": " + flag + " is a flag of fitscope " + other->get_name() + ", which " + command->get_name() +
             " does not use (see " + where + " --help)";
    }
  }
  const std::string near = nearest_name(flag, flag_names(*command));
  return where + ": unknown flag " + flag + (near.empty() ? " (see " + where + " --help)" : " (did you mean " + near + "?)");
}

}  // namespace

HelpFormatter::HelpFormatter() { column_width(kFlagColumn); }

std::vector<std::string> flag_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  return option->get_expected_max() == 0 ? "" : " " + metavar(option);
}

std::string HelpFormatter::make_option_desc(const CLI::Option* option) const {
  std::string text = option->get_description();
  std::string fallback = option->get_default_str();
  if (option->get_delimiter() != '\0') std::replace(fallback.begin(), fallback.end(), ' ', option->get_delimiter());
  if (option->get_expected_max() != 0 && !fallback.empty()) {
    text += " (default " + fallback + ")";
  }
  return wrapped(text, kLineWidth - kFlagColumn);
}

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 4) + 1;
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
    }
  }
  return best;
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error) {
  const std::vector<const CLI::App*> used = app.get_subcommands([](const CLI::App* s) { return s->parsed(); });
  const CLI::App* command = used.empty() ? nullptr : used.front();
  const std::vector<std::string> left = (command ? command : &app)->remaining();
  if (!left.empty() && (dynamic_cast<const CLI::ExtrasError*>(&error) || dynamic_cast<const CLI::RequiredError*>(&error))) {
    const auto flag = std::find_if(left.begin(), left.end(), [](const std::string& w) { return w.rfind("--", 0) == 0; });
    return unexpected(app, command, flag != left.end() ? *flag : left.front());
  }
  return (command ? "fitscope " + command->get_name() + ": " : std::string("fitscope: ")) + error.what();
}

std::string bash_completion(const CLI::App& app) {
  std::string commands, cases;
  for (const CLI::App* command : app.get_subcommands({})) {
    commands += (commands.empty() ? "" : " ") + command->get_name();
    std::string flags;
    for (const std::string& flag : flag_names(*command)) flags += (flags.empty() ? "" : " ") + flag;
    cases += "    " + command->get_name() + ") flags=\"" + flags + "\" ;;\n";
  }
  return "# bash completion for fitscope, made by `fitscope completion bash` from its flag table\n"
         "_fitscope() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" flags=\"\"\n"
         "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
         "    COMPREPLY=($(compgen -W \"" + commands + " --help --version\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  case \"${COMP_WORDS[1]}\" in\n" + cases +
         "  esac\n"
         "  if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\")); fi\n"
         "}\n"
         "complete -o default -F _fitscope fitscope\n";
}

std::string in_flags(std::string message) {
  // a name before any name it begins (RunOptions::backup_every_batches before RunOptions::backup)
  static const std::pair<const char*, const char*> kFlags[] = {
      {"RunOptions::run_dir", "--run-dir"}, {"RunOptions::overwrite", "--overwrite"}, {"RunOptions::resume", "--resume"},
      {"RunOptions::backup_every_batches", "--checkpoint-every"}, {"RunOptions::backup", "--checkpoint-every"},
      {"Callback::set_async(true)", "--callback-mode async"}, {"Callback::async", "--callback-mode"},
      {"LoaderOptions::workers", "--workers"}, {"LoaderOptions::prefetch", "--prefetch"},
      {"LoaderOptions::cache", "--cache"}, {"LoaderOptions::delay_ms", "--load-delay-ms"},
      {"LoaderOptions::batch_size", "--batch-size"}, {"LoaderOptions::transforms", "--augment"},
      {"ImageFolderOptions::height and width", "--image-size"}, {"ThreadOptions::intra_op", "--threads"},
      {"ThreadOptions::blas", "--blas-threads"}, {"FitOptions::validation_split", "--validation-split"},
      {"TrainerOptions::momentum", "--momentum"}, {"TrainerOptions::nesterov", "--nesterov"},
      {"TrainerOptions::cuda_graph", "--cuda-graph"}, {"TrainerOptions::layer_probe_every", "--layer-probe-every"},
      {"SweepOptions::memory_budget_bytes", "--memory-budget"}, {"TrainerOptions::precision", "--precision"},
      {"CheckpointWriterOptions::keep", "--keep"}, {"SweepOptions::window_seconds", "--window-seconds"},
      {"LaunchOptions::master_port", "--master-port"}, {"LaunchOptions::master_addr", "--master-addr"},
      {"LaunchOptions::nproc_per_node", "--nproc-per-node"}, {"LaunchOptions::nnodes", "--nnodes"},
      {"LaunchOptions::node_rank", "--node-rank"}, {"LaunchOptions::grace_s", "--grace"},
      {"LaunchOptions::max_restarts", "--max-restarts"}, {"LaunchOptions::min_nodes", "--nnodes MIN"},
      {"LaunchOptions::join_wait_s", "--join-wait"},
      {"LaunchOptions::job_id", "--job-id"}, {"ImageFolderOptions::max_pixels", "--max-image-pixels"},
      {"ImageFolderOptions::skip_bad_files", "--skip-bad-files"}, {"RunSpec::model", "--model"},
      {"RunSpec::data", "--data"}, {"RunSpec::validation_data", "--validation-data"},
      {"RunSpec::num_classes", "--num-classes"}, {"RecordDecoderOptions::classes", "--num-classes"},
      {"FitOptions::validation_data", "--validation-data"}, {"StreamDatasetOptions::shuffle_buffer", "--shuffle-buffer"},
      {"TfRecordReaderOptions::max_record_bytes", "--max-record-bytes"}, {"TarReaderOptions::max_member_bytes", "--max-record-bytes"},
      {"TarSampleOptions::max_sample_bytes", "--max-record-bytes"}, {"LossOptions::class_weights", "--class-weight"},
      {"Backend::gloo or Backend::automatic", "gloo or auto"}, {"Backend::nccl", "--dist-backend nccl"},
      {"SyntheticImagesOptions::count", "--count"}, {"CompareOptions::force", "--force"}, {"ComparisonOptions::noise_floor", "--noise-floor"}, {"SyntheticImagesOptions::height and width", "--size"}};
  for (const auto& [option, flag] : kFlags) {
    for (std::size_t at = message.find(option); at != std::string::npos; at = message.find(option, at)) {
      message.replace(at, std::strlen(option), flag);
    }
  }
  return message;
}

}  // namespace fitscope::cli
