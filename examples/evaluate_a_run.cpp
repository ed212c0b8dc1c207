// A finished run of `fitscope train`, opened from its directory: its data and model from config.toml,
// its best weights, evaluated on the examples it held out, as `fitscope evaluate RUN --weights best`.
//   ./evaluate_a_run RUN_DIR
#include <fitscope/fitscope.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: evaluate_a_run RUN_DIR\n";
    return 2;
  }
  try {
    const fitscope::RunDirectory run(argv[1]);
    const fitscope::RunSpec spec = fitscope::RunSpec::from_config(run.path());
    const fitscope::TrainedRun trained = fitscope::open_trained_run(run, spec, {}, /*best=*/true);
    const fitscope::JudgedData judged = fitscope::judged_data(spec, trained.data);
    const fitscope::Logs logs = trained.trainer->evaluate(judged.examples, {});
    std::cout << trained.weights << " on " << judged.examples->size() << " examples of " << judged.name << ":\n";
    for (const auto& [key, value] : logs) std::cout << "  " << key << " " << value << "\n";
  } catch (const std::invalid_argument& e) {
    std::cerr << "evaluate_a_run: " << e.what() << "\n";
    return 2;
  }
}
