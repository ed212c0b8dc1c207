// libFuzzer target: the tar reader (ustar, GNU and pax headers) and the grouping of its members into
// WebDataset samples must either read or throw std::invalid_argument, never crash; every member read
// must be the archive's bytes at its data offset and read back the same once written again, and every
// sample must hold the parts it was asked for, within its byte budget (with members over it stepped over).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "fitscope/data/formats/tar_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  fitscope::TarReaderOptions options;
  options.max_member_bytes = int64_t{1} << 20;
  options.max_extended_header_bytes = int64_t{1} << 16;
  try {
    std::istringstream in(input);
    fitscope::TarReader reader(in, "fuzz", options);
    fitscope::TarMember member;
    while (reader.next(member)) {
      // the reader's promise: a member it returns is the file's bytes at its data offset, after its headers
      const int64_t at = reader.data_offset();
      if (member.name.empty() || member.offset != reader.offset() || member.offset % 512 != 0 ||
          member.offset + 512 > at || at + static_cast<int64_t>(member.bytes.size()) > static_cast<int64_t>(size) ||
          input.compare(static_cast<std::size_t>(at), member.bytes.size(), member.bytes) != 0 ||
          reader.position() % 512 != 0) {
        __builtin_trap();
      }
      // what the writer takes (a ustar name) reads back the same
      std::ostringstream out;
      try {
        fitscope::write_tar_member(out, member.name, member.bytes);
      } catch (const std::invalid_argument&) {
        continue;
      }
      fitscope::finish_tar(out);
      std::istringstream written(out.str());
      fitscope::TarReader again(written, "again");
      fitscope::TarMember back;
      if (!again.next(back) || back.name != member.name || back.bytes != member.bytes || again.next(back)) {
        __builtin_trap();
      }
    }
  } catch (const std::invalid_argument&) {
  }
  // samples as a stream reads them: members over a small budget stepped over (their sample refused)
  for (const bool step_over : {false, true}) try {
    std::istringstream in(input);
    fitscope::TarReaderOptions member_options = options;
    if (step_over) member_options.max_member_bytes = 256;
    member_options.step_over_large_members = step_over;
    fitscope::TarSampleOptions sample_options;
    sample_options.required = {"jpg|png", "cls"};
    sample_options.max_sample_bytes = member_options.max_member_bytes;
    fitscope::TarSampleReader samples(fitscope::TarReader(in, "fuzz", member_options), sample_options);
    fitscope::TarSample sample;
    for (;;) {
      const int64_t before = samples.position();
      try {
        if (!samples.next(sample)) break;
      } catch (const std::invalid_argument&) {
        if (samples.position() == before) break;  // the reader's own error, which stays; a bad sample is skipped
        continue;
      }
      const auto split = fitscope::split_tar_sample_name(sample.key + ".x");
      if (sample.offset < before || sample.offset % 512 != 0 || !split || split->key != sample.key ||
          (sample.parts.count("jpg") == 0 && sample.parts.count("png") == 0) || sample.parts.count("cls") == 0) {
        __builtin_trap();
      }
      std::size_t held = 0;
      for (const auto& part : sample.parts) held += part.second.size();
      if (held > static_cast<std::size_t>(sample_options.max_sample_bytes)) __builtin_trap();  // nothing over the budget held
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
