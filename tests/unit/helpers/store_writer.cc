// torq_store_writer: stores one model blob of seeded random bytes with
// Store::put_model, says "stored" on stdout, then waits to be killed. The
// store tests SIGKILL it there to see what a killed writer left on disk
// (test_store_models.cc). A process of its own, not a fork of the test
// runner: a fork inherits RocksDB's background thread pool without its
// threads, and a flush waited for there never comes.
// Usage: torq_store_writer DIR HASH BYTES SEED
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>

#include "pipeline/store/store.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: torq_store_writer DIR HASH BYTES SEED\n");
    return 2;
  }
  try {
    std::mt19937 rng(static_cast<unsigned>(std::stoul(argv[4])));
    std::string bytes(std::stoull(argv[3]), '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    auto store = torq::pipeline::Store::open(argv[1]);
    // A run's record first, as a coordinator has in its memtables when it
    // stores a model: the write-ahead log it is in stays until it is
    // flushed, with whatever else went into that log.
    store->put_run_meta("run", "{}");
    store->put_model(argv[2], bytes);
    std::printf("stored\n");
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torq_store_writer: %s\n", e.what());
    return 1;
  }
  for (;;) pause();
}
