#pragma once

#include <string_view>

#include "fitscope/io/file_system.hpp"

namespace c10 {
struct IValue;
}

namespace fitscope {

/// torch::jit::pickle_save's zip archive of `value`, streamed into `out` (a tensor's bytes handed over
/// from its own storage, never gathered into one buffer). `tag_aggregates` false leaves out the type
/// tags that torch.load(weights_only=True) refuses.
void write_pickle_archive(const c10::IValue& value, bool tag_aggregates, const ByteSink& out);

/// Checks a zip archive written by libtorch's pickle_save before libtorch 1.13's reader and unpickler
/// see it, since neither checks what a file declares: the reader copies records past the end of the
/// buffer, and the unpickler pops an empty stack, indexes a scalar-type table with any integer,
/// allocates whatever a memo index asks for and trusts a storage's element count over its record's
/// size. Every record must lie inside the archive; data.pkl is run on a model of the unpickler's stack
/// that admits only the opcodes, globals and shapes a training state holds, with each storage no
/// larger than its record and containers nested at most 32 deep. Throws std::invalid_argument naming
/// the byte offset, in the archive or in data.pkl.
void check_pickle_archive(std::string_view zip);

}  // namespace fitscope
