// summary.json: RunSummary::to_json and RunSummary::from_json (the summary itself: run_summary.cpp).
#include "fitscope/summary/run_summary.hpp"

#include "fitscope/io/detail/bounded_json.hpp"
#include "layer_times_json.hpp"
#include "summary_reader.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace fitscope {
using detail::Reader;
using nlohmann::json;

std::string RunSummary::to_json() const {
  json logs_json = json::object();
  // JSON has no NaN or infinity: a diverged run's non-finite log is null (read back as NaN)
  for (const auto& [key, value] : logs) logs_json[key] = std::isfinite(value) ? json(value) : json(nullptr);
  json phases_json = json::object();
  for (const auto& [name, p] : phases) {
    phases_json[name] = {{"mean_ms", p.mean_ms}, {"p50_ms", p.p50_ms}, {"p90_ms", p.p90_ms},
                         {"p99_ms", p.p99_ms},   {"max_ms", p.max_ms}, {"share", p.share}};
  }
  json settings_json = json::object();
  for (const auto& [key, value] : settings) settings_json[key] = value;
  json callbacks_json = json::array();
  for (const CallbackSummary& c : callbacks) {
    callbacks_json.push_back({{"name", c.name}, {"hook", c.hook}, {"mode", c.mode}, {"calls", c.calls},
                              {"mean_ms", c.mean_ms}, {"p50_ms", c.p50_ms}, {"p99_ms", c.p99_ms},
                              {"total_ms", c.total_ms}, {"stall_ms", c.stall_ms}});
  }
  json ranks_json = json::array();
  for (const RankSummary& r : ranks) {
    ranks_json.push_back({{"rank", r.rank}, {"step_ms_p50", r.step_ms_p50}, {"step_ms_p99", r.step_ms_p99},
                          {"busy_ms_p50", r.busy_ms_p50}, {"straggles", r.straggles}, {"straggle_phase", r.straggle_phase}});
  }
  json across = json::object();
  for (const auto& [name, v] : phases_across_ranks) across[name] = {{"mean_ms", v.first}, {"max_ms", v.second}};
  json communication_json = nullptr;
  if (communication) {
    communication_json = {{"total_ms_mean", communication->total_ms_mean},
                          {"exposed_ms_mean", communication->exposed_ms_mean},
                          {"exposed_fraction", communication->exposed_fraction},
                          {"bucket_bytes", communication->bucket_bytes}};
  }
  const auto optional_number = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json device_json = nullptr;
  if (device_timing) {
    json timed = json::object();
    for (const auto& [name, p] : device_timing->phases) {
      timed[name] = {{"mean_ms", p.mean_ms}, {"p50_ms", p.p50_ms}, {"p99_ms", p.p99_ms}};
    }
    device_json = {{"source", "cuda_events"},
                   {"phases_measured", device_timing->phases_measured},
                   {"step_ms", {{"mean", device_timing->step_ms_mean}, {"p50", device_timing->step_ms_p50},
                                {"p99", device_timing->step_ms_p99}}},
                   {"phases", timed},
                   {"steps_resolved_in_loop", device_timing->steps_resolved_in_loop},
                   {"steps_resolved_at_end", device_timing->steps_resolved_at_end},
                   {"busy_ms", optional_number(device_timing->busy_ms)},
                   {"idle_fraction", optional_number(device_timing->idle_fraction)},
                   {"probes_made", device_timing->probes_made},
                   {"probes_valid", device_timing->probes_valid},
                   {"sampled_every", device_timing->sampled_every}};
  }
  json cuda_graph_json = nullptr;
  if (cuda_graph) {
    const CudaGraphOutcome& g = *cuda_graph;
    cuda_graph_json = {{"mode", g.mode},
                       {"tried", g.tried},
                       {"kept", g.kept},
                       {"reason", g.reason},
                       {"eager_ms", g.eager_ms},
                       {"graph_ms", g.graph_ms},
                       {"eager_windows_ms", g.eager_windows_ms},
                       {"graph_windows_ms", g.graph_windows_ms},
                       {"device_busy_ms", g.device_busy_ms},
                       {"checked_steps", g.checked_steps},
                       {"max_loss_difference", g.max_loss_difference},
                       {"max_weight_difference", g.max_weight_difference},
                       {"replayed_steps", g.replayed_steps},
                       {"eager_steps", g.eager_steps},
                       {"trial_steps", g.trial_steps}};
  }
  json streams_json = nullptr;
  if (streams) {
    json ranks_json = json::array();
    for (const StreamsSummary::Rank& r : streams->ranks) ranks_json.push_back({{"rank", r.rank}, {"shards", r.shards}, {"records", r.records}});
    streams_json = {{"source", streams->source}, {"shards", streams->shards}, {"shuffle_buffer", streams->shuffle_buffer},
                    {"records_per_epoch", streams->records_per_epoch}, {"skipped_records", streams->skipped_records},
                    {"ranks", ranks_json}};
  }
  json restarts_json = nullptr;
  if (restarts) {
    json events = json::array();
    for (const RestartEvent& e : restarts->events) {
      events.push_back({{"reason", e.reason},
                        {"failed_at_step", e.failed_at_step ? json(*e.failed_at_step) : json(nullptr)},
                        {"resumed_from_step", e.resumed_from_step},
                        {"lost_s", e.lost_s}});
    }
    restarts_json = {{"count", restarts->events.size()},     {"steps_redone", restarts->steps_redone},
                     {"lost_s", restarts->lost_s},           {"job_wall_s", restarts->job_wall_s},
                     {"lost_fraction", restarts->lost_fraction}, {"events", events}};
  }
  json candidates = json::array();
  for (const ThreadCandidate& c : threads.candidates) {
    candidates.push_back({{"intra_op", c.setting.intra_op}, {"blas", c.setting.blas}, {"step_ms", c.step_ms}});
  }
  json rechecks = json::array();
  for (const ThreadRecheck& r : threads.rechecks) {
    json measured = json::array();
    for (const ThreadCandidate& c : r.candidates) {
      measured.push_back({{"intra_op", c.setting.intra_op}, {"blas", c.setting.blas}, {"step_ms", c.step_ms}});
    }
    rechecks.push_back({{"step", r.step},
                        {"before_ms", r.before_ms},
                        {"moved_ms", r.moved_ms},
                        {"was", {{"intra_op", r.was.intra_op}, {"blas", r.was.blas}}},
                        {"chosen", {{"intra_op", r.chosen.intra_op}, {"blas", r.chosen.blas}}},
                        {"candidates", measured}});
  }
  json pools = json::object();
  for (const PoolCpu& p : cpu.pools) pools[p.pool] = {{"threads", p.threads}, {"cores", p.cores}};
  json actions_json = json::array();
  for (const Advice& a : verdict.actions) {
    actions_json.push_back({{"knob", a.knob}, {"from", a.from}, {"to", a.to}, {"expected_gain", a.expected_gain}});
  }
  json loader_changes = json::array();
  for (const LoaderChange& c : loader.changes) {
    loader_changes.push_back({{"at_s", c.at_s}, {"workers", c.workers}, {"prefetch", c.prefetch}, {"why", c.why}});
  }
  json model_json;  // null when not known
  if (model_summary) {
    json layers = json::array();
    for (const LayerSummary& l : model_summary->layers) {
      layers.push_back({{"name", l.name}, {"tensors", l.tensors}, {"parameters", l.parameters}, {"non_trainable", l.non_trainable}});
    }
    model_json = {{"layers", layers},
                  {"output_shape", model_summary->output_shape},
                  {"trainable", model_summary->trainable},
                  {"non_trainable", model_summary->non_trainable},
                  {"total", model_summary->total()}};
  }
  const json out = {
      {"model", model},
      {"model_summary", model_json},
      {"epochs", epochs},
      {"steps", steps},
      {"warmup_steps", warmup_steps},
      {"measured_steps", measured_steps},
      {"wall_s", wall_s},
      {"samples_per_s", samples_per_s},
      {"job_samples_per_s", job_samples_per_s},
      {"run",
       {{"startup", run.startup},
        {"training_steps", run.training_steps},
        {"validation", run.validation},
        {"epoch_end", run.epoch_end},
        {"shutdown", run.shutdown},
        {"unaccounted", run.unaccounted}}},
      {"interrupted", interrupted},
      {"settings", settings_json},
      {"failure", failure},
      {"threads",
       {{"intra_op", threads.setting.intra_op},
        {"blas", threads.setting.blas},
        {"blas_library", threads.blas_library},
        {"cores", threads.cores},
        {"cores_limit", threads.cores_limit},
        {"chosen_by", threads.chosen_by},
        {"search_steps", threads.search_steps},
        {"search_needs_steps", threads.search_needs_steps},
        {"candidates", candidates},
        {"rechecks", rechecks}}},
      {"logs", logs_json},
      {"world_size", world_size},
      {"batch_size", batch_size},
      {"device", device},
      {"step_ms",
       {{"mean", step_ms.mean}, {"p50", step_ms.p50}, {"p90", step_ms.p90}, {"p99", step_ms.p99}, {"max", step_ms.max}}},
      {"phases", phases_json},
      {"callbacks", callbacks_json},
      {"warnings", warnings},
      {"skipped_files", {{"count", skipped_files}, {"first", skipped_files_first}}},
      {"class_names", class_names},
      {"loader",
       {{"workers", loader.workers},
        {"prefetch", loader.prefetch},
        {"auto", {{"workers", loader.auto_workers}, {"prefetch", loader.auto_prefetch}}},
        {"batches", loader.batches},
        {"mean_queue_depth", loader.mean_queue_depth},
        {"batch_build_ms", loader.batch_build_ms},
        {"batch_build_cpu_ms", loader.batch_build_cpu_ms},
        {"changes", loader_changes}}},
      {"cpu_utilization",
       {{"process_cores", cpu.process_cores},
        {"training_thread_cores", cpu.training_cores},
        {"other_threads_cores", cpu.other_cores},
        {"machine_share", cpu.machine_share},
        {"cores", cpu.cores},
        {"throttled_periods", cpu.throttled_periods},
        {"throttled_s", cpu.throttled_s},
        {"others_cores", cpu.others_cores},
        {"pools", pools}}},
      {"gpu_utilization", optional_number(gpu_utilization)},
      {"gpu_memory_peak_mb", optional_number(gpu_memory_peak_mb)},
      {"gpu_samples", gpu_samples},
      {"ranks", ranks_json},
      {"stragglers", stragglers},
      {"straggler_margin", straggler_margin},
      {"phases_across_ranks", across},
      {"communication", communication_json},
      {"device_timing", device_json},
      {"cuda_graph", cuda_graph_json},
      {"layers", detail::layer_times_to_json(layers)},
      {"machine_peak", machine_peak ? detail::machine_peak_to_json(*machine_peak) : json(nullptr)},
      {"memory", detail::memory_to_json(memory)},
      {"restarts", restarts_json},
      {"streams", streams_json},
      {"clock_overhead_ns_per_step", clock_overhead_ns_per_step},
      {"verdict",
       {{"bound", verdict.bound},
        {"level", verdict.level},
        {"share", verdict.share},
        {"advice", verdict.advice},
        {"actions", actions_json},
        {"contention", verdict.contention},
        {"machine", verdict.machine},
        {"outside_steps", verdict.outside_steps},
        {"stragglers", verdict.stragglers}}},
  };
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // a path's bytes that are not UTF-8: U+FFFD
}

namespace {

PhaseSummary read_phase(const Reader& r, bool full) {
  PhaseSummary p;
  p.mean_ms = r.get<double>("mean_ms");
  p.p50_ms = r.get<double>("p50_ms");
  p.p99_ms = r.get<double>("p99_ms");
  if (full) {
    p.p90_ms = r.get<double>("p90_ms");
    p.max_ms = r.get<double>("max_ms");
    p.share = r.get<double>("share");
  }
  return p;
}

}  // namespace

RunSummary RunSummary::from_json(const std::string& text, const std::string& source) {
  const json j = detail::parse_bounded_json(text, source);
  const Reader r(j, source, "");
  RunSummary s;
  s.model = r.get<std::string>("model");
  if (r.raw().contains("model_summary") && !r.raw().at("model_summary").is_null()) {
    const Reader m = r.object("model_summary");
    ModelSummary summary;
    const json& layers = m.array("layers");
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const Reader l = m.element(layers[i], i, "layers");
      summary.layers.push_back({l.get<std::string>("name"), l.get<std::vector<std::string>>("tensors"),
                                l.get<int64_t>("parameters"), l.get<int64_t>("non_trainable")});
    }
    summary.output_shape = m.get<std::vector<int64_t>>("output_shape");
    summary.trainable = m.get<int64_t>("trainable");
    summary.non_trainable = m.get<int64_t>("non_trainable");
    s.model_summary = summary;
  }
  s.epochs = r.get<int64_t>("epochs");
  s.steps = r.get<int64_t>("steps");
  s.warmup_steps = r.get<int64_t>("warmup_steps");
  s.measured_steps = r.get<int64_t>("measured_steps");
  s.wall_s = r.get<double>("wall_s");
  s.samples_per_s = r.get<double>("samples_per_s");
  s.job_samples_per_s = r.raw().contains("job_samples_per_s") ? r.get<double>("job_samples_per_s") : s.samples_per_s;
  const Reader run = r.object("run");
  s.run = {run.get<double>("startup"),  run.get<double>("training_steps"), run.get<double>("validation"),
           run.get<double>("epoch_end"), run.get<double>("shutdown"),       run.get<double>("unaccounted")};
  s.interrupted = r.get<bool>("interrupted");
  if (r.raw().contains("settings")) {
    for (const auto& [key, value] : r.object("settings").raw().items()) {
      if (!value.is_string()) throw std::invalid_argument(source + ": settings." + key + ": expected a string");
      s.settings.emplace_back(key, value.get<std::string>());
    }
  }
  s.failure = r.get<std::string>("failure");
  const Reader threads = r.object("threads");
  s.threads.setting = {threads.get<int64_t>("intra_op"), threads.get<int64_t>("blas")};
  s.threads.blas_library = threads.get<std::string>("blas_library");
  s.threads.cores = threads.get<int64_t>("cores");
  if (threads.raw().contains("cores_limit")) s.threads.cores_limit = threads.get<std::string>("cores_limit");
  s.threads.chosen_by = threads.get<std::string>("chosen_by");
  s.threads.search_steps = threads.get<int64_t>("search_steps");
  if (threads.raw().contains("search_needs_steps")) s.threads.search_needs_steps = threads.get<int64_t>("search_needs_steps");
  const auto read_candidates = [](const Reader& from, std::vector<ThreadCandidate>& into) {
    const json& candidates = from.array("candidates");
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Reader c = from.element(candidates[i], i, "candidates");
      into.push_back({{c.get<int64_t>("intra_op"), c.get<int64_t>("blas")}, c.get<double>("step_ms")});
    }
  };
  read_candidates(threads, s.threads.candidates);
  if (threads.raw().contains("rechecks")) {  // older files have none
    const json& rechecks = threads.array("rechecks");
    for (std::size_t i = 0; i < rechecks.size(); ++i) {
      const Reader r = threads.element(rechecks[i], i, "rechecks");
      const Reader was = r.object("was"), chosen = r.object("chosen");
      ThreadRecheck recheck{r.get<int64_t>("step"), r.get<double>("before_ms"), r.get<double>("moved_ms"),
                            {was.get<int64_t>("intra_op"), was.get<int64_t>("blas")},
                            {chosen.get<int64_t>("intra_op"), chosen.get<int64_t>("blas")}, {}};
      read_candidates(r, recheck.candidates);
      s.threads.rechecks.push_back(std::move(recheck));
    }
  }
  const Reader logs = r.object("logs");
  for (const auto& item : logs.raw().items()) {
    s.logs.set(item.key(), logs.optional_number(item.key().c_str()).value_or(std::numeric_limits<double>::quiet_NaN()));
  }
  s.world_size = r.get<int64_t>("world_size");
  s.batch_size = r.get<int64_t>("batch_size");
  s.device = r.get<std::string>("device");
  const Reader step = r.object("step_ms");
  s.step_ms = {step.get<double>("mean"), step.get<double>("p50"), step.get<double>("p90"), step.get<double>("p99"),
               step.get<double>("max")};
  const Reader phases = r.object("phases");
  for (Phase p : all_phases()) {
    const std::string name(phase_name(p));
    if (p == Phase::graph && !phases.raw().contains(name)) {  // from before the captured step: none
      s.phases[name] = PhaseSummary{};
      continue;
    }
    s.phases[name] = read_phase(phases.object(name.c_str()), true);
  }
  const json& callbacks = r.array("callbacks");
  for (std::size_t i = 0; i < callbacks.size(); ++i) {
    const Reader c = r.element(callbacks[i], i, "callbacks");
    s.callbacks.push_back({c.get<std::string>("name"), c.get<std::string>("hook"), c.get<std::string>("mode"),
                           c.get<int64_t>("calls"), c.get<double>("mean_ms"), c.get<double>("p50_ms"),
                           c.get<double>("p99_ms"), c.get<double>("total_ms"), c.get<double>("stall_ms")});
  }
  s.warnings = r.get<std::vector<std::string>>("warnings");
  if (r.raw().contains("class_names")) s.class_names = r.get<std::vector<std::string>>("class_names");  // from before them: none
  if (r.raw().contains("skipped_files")) {  // from before them: none
    const Reader skipped = r.object("skipped_files");
    s.skipped_files = skipped.get<int64_t>("count");
    s.skipped_files_first = skipped.get<std::vector<std::string>>("first");
  }
  const Reader loader = r.object("loader");
  s.loader.workers = loader.get<int64_t>("workers");
  s.loader.prefetch = loader.get<int64_t>("prefetch");
  s.loader.auto_workers = loader.object("auto").get<bool>("workers");
  s.loader.auto_prefetch = loader.object("auto").get<bool>("prefetch");
  s.loader.batches = loader.get<int64_t>("batches");
  s.loader.mean_queue_depth = loader.get<double>("mean_queue_depth");
  s.loader.batch_build_ms = loader.get<double>("batch_build_ms");
  s.loader.batch_build_cpu_ms = loader.get<double>("batch_build_cpu_ms");
  const json& changes = loader.array("changes");
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const Reader c = loader.element(changes[i], i, "changes");
    s.loader.changes.push_back({c.get<double>("at_s"), 0, c.get<int64_t>("workers"), c.get<int64_t>("prefetch"),
                                c.get<std::string>("why")});
  }
  const Reader cpu = r.object("cpu_utilization");
  s.cpu.process_cores = cpu.get<double>("process_cores");
  s.cpu.training_cores = cpu.get<double>("training_thread_cores");
  s.cpu.other_cores = cpu.get<double>("other_threads_cores");
  s.cpu.machine_share = cpu.get<double>("machine_share");
  s.cpu.cores = cpu.get<int64_t>("cores");
  if (cpu.raw().contains("throttled_periods")) {
    s.cpu.throttled_periods = cpu.get<int64_t>("throttled_periods");
    s.cpu.throttled_s = cpu.get<double>("throttled_s");
  }
  if (cpu.raw().contains("others_cores")) {
    s.cpu.others_cores = cpu.get<double>("others_cores");
  }
  const Reader pools = cpu.object("pools");
  for (const auto& item : pools.raw().items()) {
    const Reader pool = pools.object(item.key().c_str());
    s.cpu.pools.push_back({item.key(), pool.get<int64_t>("threads"), pool.get<double>("cores")});
  }
  s.gpu_utilization = r.optional_number("gpu_utilization");
  s.gpu_memory_peak_mb = r.optional_number("gpu_memory_peak_mb");
  s.gpu_samples = r.get<int64_t>("gpu_samples");
  const json& ranks = r.array("ranks");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Reader k = r.element(ranks[i], i, "ranks");
    RankSummary rank{k.get<int64_t>("rank"), k.get<double>("step_ms_p50"), k.get<double>("step_ms_p99"),
                     k.get<double>("busy_ms_p50"), {}, {}};
    if (k.raw().contains("straggles")) {  // absent from older summaries
      rank.straggles = k.get<std::string>("straggles");
      rank.straggle_phase = k.get<std::string>("straggle_phase");
    }
    s.ranks.push_back(std::move(rank));
  }
  s.stragglers = r.get<std::vector<int64_t>>("stragglers");
  s.straggler_margin = r.get<double>("straggler_margin");
  const Reader across = r.object("phases_across_ranks");
  for (const auto& item : across.raw().items()) {
    const Reader a = across.object(item.key().c_str());
    s.phases_across_ranks[item.key()] = {a.get<double>("mean_ms"), a.get<double>("max_ms")};
  }
  if (const auto c = r.nullable_object("communication")) {
    s.communication = CommunicationSummary{c->get<double>("total_ms_mean"), c->get<double>("exposed_ms_mean"),
                                           c->get<double>("exposed_fraction"), c->get<std::vector<int64_t>>("bucket_bytes")};
  }
  if (const auto d = r.nullable_object("device_timing")) {
    DeviceTimingSummary t;
    t.phases_measured = d->get<std::vector<std::string>>("phases_measured");
    const Reader span = d->object("step_ms");
    t.step_ms_mean = span.get<double>("mean");
    t.step_ms_p50 = span.get<double>("p50");
    t.step_ms_p99 = span.get<double>("p99");
    const Reader timed = d->object("phases");
    for (const std::string& name : t.phases_measured) t.phases[name] = read_phase(timed.object(name.c_str()), false);
    t.steps_resolved_in_loop = d->get<int64_t>("steps_resolved_in_loop");
    t.steps_resolved_at_end = d->get<int64_t>("steps_resolved_at_end");
    if (d->raw().contains("busy_ms")) {  // from before the probes: none
      t.busy_ms = d->optional_number("busy_ms");
      t.idle_fraction = d->optional_number("idle_fraction");
      t.probes_made = d->get<int64_t>("probes_made");
      t.probes_valid = d->get<int64_t>("probes_valid");
      t.sampled_every = d->get<int64_t>("sampled_every");
    }
    s.device_timing = t;
  }
  if (r.raw().contains("cuda_graph")) {  // from before the captured step: none
    if (const auto g = r.nullable_object("cuda_graph")) {
      CudaGraphOutcome o;
      o.mode = g->get<std::string>("mode");
      o.tried = g->get<bool>("tried");
      o.kept = g->get<bool>("kept");
      o.reason = g->get<std::string>("reason");
      o.eager_ms = g->get<double>("eager_ms");
      o.graph_ms = g->get<double>("graph_ms");
      o.eager_windows_ms = g->get<std::vector<double>>("eager_windows_ms");
      o.graph_windows_ms = g->get<std::vector<double>>("graph_windows_ms");
      o.device_busy_ms = g->get<double>("device_busy_ms");
      o.checked_steps = g->get<int64_t>("checked_steps");
      o.max_loss_difference = g->get<double>("max_loss_difference");
      o.max_weight_difference = g->get<double>("max_weight_difference");
      o.replayed_steps = g->get<int64_t>("replayed_steps");
      o.eager_steps = g->get<int64_t>("eager_steps");
      o.trial_steps = g->get<int64_t>("trial_steps");
      s.cuda_graph = o;
    }
  }
  if (r.raw().contains("layers")) {
    s.layers = detail::layer_times_from_json(r.object("layers"));
  } else {
    s.layers.why_not = "not measured (a summary.json from before the layer probe)";
  }
  if (r.raw().contains("memory")) {
    s.memory = detail::memory_from_json(r.object("memory"));
  } else {
    s.memory.why_not = "not measured (a summary.json from before the memory count)";
  }
  if (r.raw().contains("machine_peak")) {
    if (const auto p = r.nullable_object("machine_peak")) s.machine_peak = detail::machine_peak_from_json(*p);
  }
  if (const auto k = r.nullable_object("restarts")) {
    RestartsSummary t;
    const json& events = k->array("events");
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Reader e = k->element(events[i], i, "events");
      const auto failed = e.optional_number("failed_at_step");
      t.events.push_back({e.get<std::string>("reason"), failed ? std::optional<int64_t>(static_cast<int64_t>(*failed)) : std::nullopt,
                          e.get<int64_t>("resumed_from_step"), e.get<double>("lost_s")});
    }
    t.steps_redone = k->get<int64_t>("steps_redone");
    t.lost_s = k->get<double>("lost_s");
    t.job_wall_s = k->get<double>("job_wall_s");
    t.lost_fraction = k->get<double>("lost_fraction");
    s.restarts = t;
  }
  if (r.raw().contains("streams")) {  // from before them: none
    if (const auto k = r.nullable_object("streams")) {
      StreamsSummary t;
      t.source = k->get<std::string>("source");
      t.shards = k->get<int64_t>("shards");
      t.shuffle_buffer = k->get<int64_t>("shuffle_buffer");
      t.records_per_epoch = k->get<int64_t>("records_per_epoch");
      t.skipped_records = k->get<int64_t>("skipped_records");
      const json& ranks = k->array("ranks");
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        const Reader e = k->element(ranks[i], i, "ranks");
        t.ranks.push_back({e.get<int64_t>("rank"), e.get<std::vector<std::string>>("shards"), e.get<int64_t>("records")});
      }
      s.streams = t;
    }
  }
  s.clock_overhead_ns_per_step = r.get<double>("clock_overhead_ns_per_step");
  const Reader verdict = r.object("verdict");
  s.verdict.bound = verdict.get<std::string>("bound");
  s.verdict.level = verdict.get<std::string>("level");
  s.verdict.share = verdict.get<double>("share");
  s.verdict.advice = verdict.get<std::string>("advice");
  const json& actions = verdict.array("actions");
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const Reader a = verdict.element(actions[i], i, "actions");
    s.verdict.actions.push_back({a.get<std::string>("knob"), a.get<std::string>("from"), a.get<std::string>("to"),
                                 a.get<std::string>("expected_gain")});
  }
  s.verdict.contention = verdict.get<std::string>("contention");
  if (verdict.raw().contains("machine")) s.verdict.machine = verdict.get<std::string>("machine");  // older runs: none
  s.verdict.outside_steps = verdict.get<std::string>("outside_steps");
  if (verdict.raw().contains("stragglers")) s.verdict.stragglers = verdict.get<std::string>("stragglers");
  return s;
}

}  // namespace fitscope
