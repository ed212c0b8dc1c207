#pragma once
/// Per-sample random numbers for augmentation: a pure function of (seed, epoch, sample index, stream),
/// so an example gets the same flip and brightness for a given seed and epoch whichever worker builds
/// its batch, and different ones in the next epoch. Counter-based (SplitMix64 finalizer): no state,
/// thread-safe, no libtorch.

#include <cstdint>

namespace fitscope {

/// SplitMix64's finalizer: a bijective 64-bit mix.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// 64 random bits for (seed, epoch, index, stream).
inline uint64_t sample_bits(uint64_t seed, int64_t epoch, int64_t index, uint64_t stream) {
  uint64_t h = mix64(seed ^ 0x5EEDULL);
  h = mix64(h ^ static_cast<uint64_t>(epoch));
  h = mix64(h ^ static_cast<uint64_t>(index));
  return mix64(h ^ stream);
}

/// Uniform in [0, 1) for (seed, epoch, index, stream).
inline double sample_uniform(uint64_t seed, int64_t epoch, int64_t index, uint64_t stream) {
  return static_cast<double>(sample_bits(seed, epoch, index, stream) >> 11) * 0x1.0p-53;
}

}  // namespace fitscope
