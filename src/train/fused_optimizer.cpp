#include "fitscope/train/fused_optimizer.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "optimizer_state.hpp"

// The kernels are compiled twice, for AVX2 with fused multiply-adds and for the baseline, and the one
// that matches libtorch's own kernels runs (chosen when the program runs, never by the machine that
// built it). libtorch's vectorized `add(other, alpha)` and `addcmul` round a multiply-add once where
// its kernels are built with FMA (AVX2, AVX-512), and twice in its baseline kernels; the kernels here
// do the same, so their results match libtorch's bit for bit. The file is built with -fno-math-errno
// (sqrt vectorizes) and -ffp-contract=off (no multiply-add is fused unless written as one).

namespace fitscope {
namespace {

/// a * b + c, rounded once (`Fma`) or twice.
template <bool Fma>
inline float multiply_add(float a, float b, float c) {
  if constexpr (Fma) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

/// One parameter's Adam or AdamW update, in torch::optim's float32 operations and order:
///   g' = g + l2 * p (Adam's weight decay; l2 = 0: g' = g);  p = p * decay (AdamW's; 1 for Adam)
///   m = m * b1 + (1 - b1) * g';  v = v * b2 + (1 - b2) * g' * g';  [vmax = max(vmax, v)]
///   p = p + (-step_size) * m / (sqrt(v or vmax) / sqrt_bc2 + eps)
struct AdamScalars {
  float l2, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bc2, eps, neg_step_size;
};

template <bool Fma, bool Amsgrad>
__attribute__((always_inline)) inline void adam_body(float* __restrict p, const float* __restrict g, float* __restrict m,
                                                     float* __restrict v, float* __restrict vmax, int64_t n,
                                                     const AdamScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    const float grad = s.l2 != 0.0f ? multiply_add<Fma>(p[i], s.l2, g[i]) : g[i];
    const float param = p[i] * s.decay;
    const float first = multiply_add<Fma>(grad, s.one_minus_beta1, m[i] * s.beta1);
    const float second = multiply_add<Fma>(s.one_minus_beta2 * grad, grad, v[i] * s.beta2);
    m[i] = first;
    v[i] = second;
    float largest = second;
    if constexpr (Amsgrad) {
      largest = std::max(vmax[i], second);
      vmax[i] = largest;
    }
    p[i] = param + s.neg_step_size * first / (std::sqrt(largest) / s.sqrt_bc2 + s.eps);
  }
}

/// One parameter's SGD update, in torch::optim's order:
///   d = g + wd * p;  buf = first ? d : buf * momentum + (1 - dampening) * d;
///   d = nesterov ? d + momentum * buf : buf;  p = p + (-lr) * d
struct SgdScalars {
  float weight_decay, momentum, one_minus_dampening, neg_lr;
  bool nesterov, first;
};

template <bool Fma>
__attribute__((always_inline)) inline void sgd_body(float* __restrict p, const float* __restrict g, float* __restrict buf,
                                                    int64_t n, const SgdScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    const float d = s.weight_decay != 0.0f ? multiply_add<Fma>(p[i], s.weight_decay, g[i]) : g[i];
    if (buf == nullptr) {
      p[i] = multiply_add<Fma>(d, s.neg_lr, p[i]);
      continue;
    }
    const float b = s.first ? d : multiply_add<Fma>(d, s.one_minus_dampening, buf[i] * s.momentum);
    buf[i] = b;
    p[i] = multiply_add<Fma>(s.nesterov ? multiply_add<Fma>(b, s.momentum, d) : b, s.neg_lr, p[i]);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#define FITSCOPE_FMA_TARGET __attribute__((target("avx2,fma")))
#define FITSCOPE_HAS_FMA_KERNELS 1
#else
#define FITSCOPE_FMA_TARGET
#define FITSCOPE_HAS_FMA_KERNELS 0
#endif

FITSCOPE_FMA_TARGET void adam_fma(float* p, const float* g, float* m, float* v, float* vmax, int64_t n, const AdamScalars& s) {
  if (vmax) {
    adam_body<true, true>(p, g, m, v, vmax, n, s);
  } else {
    adam_body<true, false>(p, g, m, v, vmax, n, s);
  }
}
void adam_baseline(float* p, const float* g, float* m, float* v, float* vmax, int64_t n, const AdamScalars& s) {
  if (vmax) {
    adam_body<false, true>(p, g, m, v, vmax, n, s);
  } else {
    adam_body<false, false>(p, g, m, v, vmax, n, s);
  }
}
FITSCOPE_FMA_TARGET void sgd_fma(float* p, const float* g, float* buf, int64_t n, const SgdScalars& s) {
  sgd_body<true>(p, g, buf, n, s);
}
void sgd_baseline(float* p, const float* g, float* buf, int64_t n, const SgdScalars& s) { sgd_body<false>(p, g, buf, n, s); }

/// Whether libtorch's CPU kernels run with fused multiply-adds here: its AVX2 and AVX-512 kernels do,
/// and it picks them on a CPU with AVX2 and FMA unless ATEN_CPU_CAPABILITY=default says otherwise (as
/// ATen's own choice, which libtorch 1.13 does not export).
bool kernels_fuse_multiply_add() {
#if FITSCOPE_HAS_FMA_KERNELS
  static const bool fused = [] {
    const char* asked = std::getenv("ATEN_CPU_CAPABILITY");
    if (asked != nullptr && std::string(asked) == "default") return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return fused;
#else
  return false;
#endif
}

void adam_update(float* p, const float* g, float* m, float* v, float* vmax, int64_t n, const AdamScalars& s) {
  (kernels_fuse_multiply_add() ? adam_fma : adam_baseline)(p, g, m, v, vmax, n, s);
}

void sgd_update(float* p, const float* g, float* buf, int64_t n, const SgdScalars& s) {
  (kernels_fuse_multiply_add() ? sgd_fma : sgd_baseline)(p, g, buf, n, s);
}

/// Runs `update(begin, end)` over [0, n): on the intra-op pool for a large parameter, inline for a
/// small one (the pool's wake-up costs more than the pass).
template <typename Update>
void over_ranges(int64_t n, const Update& update) {
  constexpr int64_t kGrain = 1 << 16;
  if (n <= kGrain) {
    update(0, n);
  } else {
    at::parallel_for(0, n, kGrain, update);
  }
}

/// What copy_state hands out for a range of a flat buffer: a CPU tensor of the parameter's shape, a
/// copy or (`share`) a view of the range.
void copy_range(at::Tensor& into, const float* from, at::IntArrayRef sizes, bool share) {
  if (share) {
    into = at::from_blob(const_cast<float*>(from), sizes, at::TensorOptions().dtype(at::kFloat));
    return;
  }
  if (!into.defined() || !into.sizes().equals(sizes) || into.scalar_type() != at::kFloat || !into.is_contiguous() ||
      !into.is_cpu()) {
    into = at::empty(sizes, at::TensorOptions().dtype(at::kFloat));
  }
  std::memcpy(into.data_ptr<float>(), from, static_cast<std::size_t>(into.numel()) * sizeof(float));
}

bool has_values(const at::Tensor& t) { return t.defined() && t.numel() > 0; }

/// Whether the fused step updates `p` in place: float32, dense and contiguous, on the CPU.
bool updatable(const at::Tensor& p) {
  return p.defined() && p.is_cpu() && p.layout() == at::kStrided && p.scalar_type() == at::kFloat && p.is_contiguous();
}

}  // namespace

bool FusedOptimizer::supports(const std::vector<at::Tensor>& params) {
  return std::all_of(params.begin(), params.end(), updatable);
}

FusedOptimizer::FusedOptimizer(const std::vector<at::Tensor>& params,
                               std::unique_ptr<torch::optim::OptimizerOptions> defaults, OptimizerKind kind)
    : torch::optim::Optimizer(params, std::move(defaults)), kind_(kind) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!updatable(params[i])) {
      const at::Tensor& p = params[i];
      throw std::invalid_argument("the fused optimizer updates float32 contiguous CPU tensors; parameter " + std::to_string(i) +
                                  (p.defined() ? " is " + std::string(c10::toString(p.scalar_type())) + " on " +
                                                     p.device().str() + (p.is_contiguous() ? "" : ", not contiguous")
                                               : std::string(" is undefined")));
    }
  }
  lay_out();
}

FusedOptimizer::FusedOptimizer(const std::vector<at::Tensor>& params, const torch::optim::AdamOptions& options)
    : FusedOptimizer(params, std::make_unique<torch::optim::AdamOptions>(options), OptimizerKind::adam) {}
FusedOptimizer::FusedOptimizer(const std::vector<at::Tensor>& params, const torch::optim::AdamWOptions& options)
    : FusedOptimizer(params, std::make_unique<torch::optim::AdamWOptions>(options), OptimizerKind::adamw) {}
FusedOptimizer::FusedOptimizer(const std::vector<at::Tensor>& params, const torch::optim::SGDOptions& options)
    : FusedOptimizer(params, std::make_unique<torch::optim::SGDOptions>(options), OptimizerKind::sgd) {}

void FusedOptimizer::lay_out_if_changed() {
  std::size_t index = 0;
  for (const auto& group : param_groups()) {
    for (const at::Tensor& p : group.params()) {
      if (index >= slots_.size() || slots_[index++].param != p.unsafeGetTensorImpl()) return lay_out();
    }
  }
  if (index != slots_.size()) lay_out();
}

void FusedOptimizer::lay_out() {
  std::unordered_map<const c10::TensorImpl*, std::size_t> before;
  for (std::size_t i = 0; i < slots_.size(); ++i) before[slots_[i].param] = i;
  std::vector<Slot> slots;
  int64_t total = 0;
  for (const auto& group : param_groups()) {
    for (const at::Tensor& p : group.params()) {
      Slot s;
      s.param = p.unsafeGetTensorImpl();
      s.offset = total;
      s.numel = p.numel();
      total += s.numel;
      slots.push_back(s);
    }
  }
  std::vector<float> first(static_cast<std::size_t>(total)), second(first.size());
  std::vector<float> max_second(max_second_.empty() ? 0 : first.size());
  std::vector<char> has_max(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const auto found = before.find(slots[i].param);
    if (found == before.end()) continue;
    const Slot& old = slots_[found->second];
    slots[i].steps = old.steps;
    const auto move = [&](const std::vector<float>& from, std::vector<float>& to) {
      if (!from.empty()) std::copy_n(from.begin() + old.offset, old.numel, to.begin() + slots[i].offset);
    };
    move(first_, first);
    move(second_, second);
    move(max_second_, max_second);
    has_max[i] = has_max_[found->second];
  }
  slots_ = std::move(slots);
  first_ = std::move(first);
  second_ = std::move(second);
  max_second_ = std::move(max_second);
  has_max_ = std::move(has_max);
}

at::Tensor FusedOptimizer::step(LossClosure closure) {
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  lay_out_if_changed();  // before any update: parameters added or replaced since the last step
  std::size_t index = 0;
  for (auto& group : param_groups()) {
    for (at::Tensor& p : group.params()) {
      Slot& slot = slots_[index++];
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      if (grad.is_sparse()) throw std::invalid_argument("the fused optimizer does not take sparse gradients");
      if (!updatable(p)) {
        throw std::invalid_argument("the fused optimizer updates float32 contiguous CPU tensors; a parameter became " +
                                    std::string(c10::toString(p.scalar_type())) + " on " + p.device().str());
      }
      const at::Tensor g = grad.scalar_type() == at::kFloat && grad.is_contiguous() && grad.is_cpu()
                               ? grad
                               : grad.to(at::kCPU, at::kFloat).contiguous();
      if (kind_ == OptimizerKind::sgd) {
        step_sgd(p, g, slot, static_cast<const torch::optim::SGDOptions&>(group.options()));
      } else {
        step_adam(p, g, slot, group.options());
      }
      p.unsafeGetTensorImpl()->bump_version();  // as an in-place op would: autograd sees the weights changed
    }
  }
  return loss;
}

void FusedOptimizer::step_adam(at::Tensor& param, const at::Tensor& grad, Slot& slot,
                               const torch::optim::OptimizerOptions& group) {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad;
  if (kind_ == OptimizerKind::adam) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(group);
    lr = o.lr(), beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas()), eps = o.eps(), weight_decay = o.weight_decay();
    amsgrad = o.amsgrad();
  } else {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group);
    lr = o.lr(), beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas()), eps = o.eps(), weight_decay = o.weight_decay();
    amsgrad = o.amsgrad();
  }
  const std::size_t index = static_cast<std::size_t>(&slot - slots_.data());
  if (slot.steps < 0) {  // a new state: zeros, as torch::optim's
    std::fill_n(first_.begin() + slot.offset, slot.numel, 0.0f);
    std::fill_n(second_.begin() + slot.offset, slot.numel, 0.0f);
    slot.steps = 0;
    if (amsgrad) {
      if (max_second_.empty()) max_second_.resize(first_.size());
      std::fill_n(max_second_.begin() + slot.offset, slot.numel, 0.0f);
      has_max_[index] = 1;
    }
  }
  slot.steps += 1;
  const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(slot.steps));
  const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(slot.steps));
  AdamScalars s{};
  s.l2 = kind_ == OptimizerKind::adam ? static_cast<float>(weight_decay) : 0.0f;
  s.decay = kind_ == OptimizerKind::adamw && weight_decay != 0 ? static_cast<float>(1 - lr * weight_decay) : 1.0f;
  s.beta1 = static_cast<float>(beta1);
  s.one_minus_beta1 = static_cast<float>(1 - beta1);
  s.beta2 = static_cast<float>(beta2);
  s.one_minus_beta2 = static_cast<float>(1 - beta2);
  s.sqrt_bc2 = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(eps);
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  float* p = param.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  float* m = first_.data() + slot.offset;
  float* v = second_.data() + slot.offset;
  float* vmax = amsgrad && has_max_[index] ? max_second_.data() + slot.offset : nullptr;
  over_ranges(slot.numel, [&](int64_t begin, int64_t end) {
    adam_update(p + begin, g + begin, m + begin, v + begin, vmax ? vmax + begin : nullptr, end - begin, s);
  });
}

void FusedOptimizer::step_sgd(at::Tensor& param, const at::Tensor& grad, Slot& slot,
                              const torch::optim::SGDOptions& o) {
  SgdScalars s{};
  s.weight_decay = static_cast<float>(o.weight_decay());
  s.momentum = static_cast<float>(o.momentum());
  s.one_minus_dampening = static_cast<float>(1 - o.dampening());
  s.neg_lr = static_cast<float>(-1 * o.lr());
  s.nesterov = o.nesterov();
  float* buf = nullptr;
  if (o.momentum() != 0) {  // torch::optim keeps a momentum buffer only when there is momentum
    s.first = slot.steps < 0;
    slot.steps = 0;
    buf = first_.data() + slot.offset;
  }
  float* p = param.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  over_ranges(slot.numel, [&](int64_t begin, int64_t end) {
    sgd_update(p + begin, g + begin, buf ? buf + begin : nullptr, end - begin, s);
  });
}

void clear_gradients(torch::optim::Optimizer& optimizer) {
  for (auto& group : optimizer.param_groups()) {
    for (at::Tensor& p : group.params()) {
      if (p.grad().defined()) p.mutable_grad().reset();
    }
  }
}

void FusedOptimizer::copy_state(std::vector<at::Tensor>& tensors, std::vector<int64_t>& counts, bool share) {
  lay_out_if_changed();
  const std::size_t per = kind_ == OptimizerKind::sgd ? 1 : 3;
  tensors.resize(slots_.size() * per);
  counts.assign(slots_.size(), -1);
  std::size_t i = 0;
  for (const auto& group : param_groups()) {
    for (const at::Tensor& p : group.params()) {
      const Slot& slot = slots_[i];
      at::Tensor* out = &tensors[i * per];
      counts[i] = slot.steps;
      if (slot.steps < 0) {
        for (std::size_t k = 0; k < per; ++k) out[k] = at::empty({0});
      } else if (kind_ == OptimizerKind::sgd) {
        copy_range(out[0], first_.data() + slot.offset, p.sizes(), share);
      } else {
        copy_range(out[0], first_.data() + slot.offset, p.sizes(), share);
        copy_range(out[1], second_.data() + slot.offset, p.sizes(), share);
        if (has_max_[i]) {
          copy_range(out[2], max_second_.data() + slot.offset, p.sizes(), share);
        } else {
          out[2] = at::empty({0});
        }
      }
      ++i;
    }
  }
}

void FusedOptimizer::load_state(const std::vector<at::Tensor>& tensors, const std::vector<int64_t>& counts) {
  lay_out_if_changed();
  const std::size_t per = kind_ == OptimizerKind::sgd ? 1 : 3;
  detail::check_optimizer_state(*this, kind_, tensors, counts);  // before anything changes
  const auto load = [](const at::Tensor& from, std::vector<float>& into, const Slot& slot) {
    const at::Tensor t = from.to(at::kCPU, at::kFloat).contiguous();
    std::copy_n(t.data_ptr<float>(), slot.numel, into.begin() + slot.offset);
  };
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    slot.steps = counts[i];
    has_max_[i] = 0;
    if (counts[i] < 0) continue;
    const at::Tensor* in = &tensors[i * per];
    if (kind_ == OptimizerKind::sgd) {
      if (has_values(in[0])) {
        load(in[0], first_, slot);
      } else {
        slot.steps = -1;  // no momentum buffer: nothing to resume
      }
      continue;
    }
    load(in[0], first_, slot);
    load(in[1], second_, slot);
    if (has_values(in[2])) {
      if (max_second_.empty()) max_second_.resize(first_.size());
      load(in[2], max_second_, slot);
      has_max_[i] = 1;
    }
  }
}

void FusedOptimizer::save(torch::serialize::OutputArchive&) const {
  throw std::logic_error("FusedOptimizer keeps its state outside torch::serialize: save it with copy_state (a Trainer's "
                         "checkpoints do)");
}

void FusedOptimizer::load(torch::serialize::InputArchive&) {
  throw std::logic_error("FusedOptimizer keeps its state outside torch::serialize: load it with load_state (a Trainer's "
                         "checkpoints do)");
}

}  // namespace fitscope
