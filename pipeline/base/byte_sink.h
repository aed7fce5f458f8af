// A consumer of bytes handed over in pieces, in order: how a model's
// serialisation reaches a hash, a file or the store without the whole blob
// ever being in memory (a 346 MB model, issue 32).
#pragma once

#include <cstddef>
#include <functional>

namespace torq::base {

using ByteSink = std::function<void(const char* data, size_t size)>;

}  // namespace torq::base
