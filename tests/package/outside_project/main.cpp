// Trains the seed MLP for one short epoch through the installed fitscope and prints the loss.
#include <fitscope/fitscope.hpp>

#include <iostream>

int main() {
  fitscope::SyntheticOptions data;
  data.size = 256;
  fitscope::Trainer trainer{fitscope::models::Mlp()};
  fitscope::FitOptions fit;
  fit.loader.batch_size = 64;
  const fitscope::History history = trainer.fit(fitscope::make_synthetic(data), fit);
  std::cout << "outside project trained: steps=" << trainer.global_step()
            << " loss=" << history.last().at("loss") << "\n";
  return trainer.global_step() == 4 ? 0 : 1;
}
