// JobRunner's state of one model (job_runner.h): the graph, its layers and
// the lazily taken reference run whose values feed the layer jobs. Only
// job_runner.cc includes it.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "pipeline/model/layer_nodes.h"
#include "pipeline/core/types.h"
#include "worker/engine/session.h"
#include "worker/engine/tensor.h"
#include "worker/runner/job_runner.h"
#include "worker/runner/reference_release.h"

namespace torq::runner {

// A released reference value that a failed second run could not give back.
struct ReferenceLost : pipeline::PipelineError {
  using pipeline::PipelineError::PipelineError;
};

// A model as a worker holds it: the graph, its layers, and the reference
// run on the seeded input that gives every layer its real inputs. That run
// is taken lazily, node by node, by whichever job first needs a value it
// has not reached; the jobs running concurrently in this process share it
// (each waits only for the nodes it reads). Thread-safe.
struct JobRunner::ModelState {
  onnx::ModelProto proto;
  std::vector<pipeline::LayerNodes> layers;
  std::map<std::string, const onnx::ValueInfoProto*> value_info;
  std::set<std::string> constants;
  std::optional<pipeline::RangeOutputs> outputs_of;  // of a range of layers

  // The value `name` takes in the reference run (advancing the run until
  // it is defined or the run ends); nullopt if the run never defines it.
  std::optional<engine::Tensor> value(const std::string& name) {
    std::unique_lock<std::mutex> lk(mu_);
    if (release_ && release_->released(name)) {
      rewind(lk, name);
      if (release_->released(name))
        throw ReferenceLost("the reference value '" + name +
                            "' was let go and a second reference run could not give it back: " + error_);
    }
    if (!values_.count(name)) {
      advance(lk, [&] { return values_.count(name) > 0; }, true);
      demand_ = std::max(demand_, steps_done_);
    }
    auto v = values_.find(name);
    if (v == values_.end()) return std::nullopt;
    return v->second;
  }
  // Runs a few nodes of the reference past the furthest one a job has
  // needed, unless it is far enough ahead or another thread is stepping:
  // a lane that has finished a job does this while the others run theirs,
  // so the lanes do not wait for the run in turn at every layer.
  void step_ahead() {
    constexpr size_t kAhead = 16, kChunk = 2;
    std::unique_lock<std::mutex> lk(mu_);
    const size_t stop = steps_done_ + kChunk;
    advance(lk, [&] { return steps_done_ >= demand_ + kAhead || steps_done_ >= stop; }, false);
  }
  // Releasing what no job will read (reference_release.h): set up once the
  // layers are known, before the run starts; `restart` makes a second run
  // (its session and steps) for a rewind.
  using Restart = std::function<std::pair<std::unique_ptr<engine::Session>, std::unique_ptr<engine::Session::Steps>>()>;
  void release_behind(ReferenceRelease r, Restart restart) {
    std::lock_guard<std::mutex> lk(mu_);
    release_.emplace(std::move(r));
    restart_ = std::move(restart);
  }
  // A job of layers [first, last] starts (it reads nothing before this) or ends.
  void job_started(uint32_t first, uint32_t last) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!release_) return;
    release_->job_started(first, last);
    release_due();
  }
  void job_ended(uint32_t first) {
    std::lock_guard<std::mutex> lk(mu_);
    if (release_) release_->job_ended(first);
  }
  // A value fixed whatever the run (the constants when the run cannot start).
  void keep(const std::string& name, engine::Tensor t) {
    std::lock_guard<std::mutex> lk(mu_);
    values_.emplace(name, std::move(t));
  }
  // The stand-in for a value the run does not define: the first `t` given
  // for `name` (every job then sees the same one). Never a reference.
  engine::Tensor stand_in(const std::string& name, engine::Tensor t) {
    std::lock_guard<std::mutex> lk(mu_);
    return stand_ins_.emplace(name, std::move(t)).first->second;
  }
  // Runs the reference to its end; why it stopped early ("" if it did not).
  std::string finish() {
    std::unique_lock<std::mutex> lk(mu_);
    advance(lk, [] { return false; }, true);
    return error_;
  }
  // Starts the lazy run on its session and steps, both made by the caller
  // (the first node runs when a value is asked for).
  void start(std::unique_ptr<engine::Session> s, std::unique_ptr<engine::Session::Steps> steps) {
    session_ = std::move(s);
    steps_ = std::move(steps);
  }
  void stopped(const std::string& why) { error_ = why; }

 private:
  // Steps the run until done() holds or the run ends. One thread steps at a
  // time, outside the lock; the others wait for what it defines (or, with
  // wait false, return).
  template <class Done>
  void advance(std::unique_lock<std::mutex>& lk, Done done, bool wait) {
    for (;;) {
      if (done()) return;
      if (stepping_) {
        if (!wait) return;
        cv_.wait(lk);
        continue;
      }
      if (!steps_ || steps_->done()) return;
      stepping_ = true;
      lk.unlock();
      std::vector<std::pair<std::string, engine::Tensor>> got;
      std::string err;
      try {
        got = steps_->step();
      } catch (const std::exception& e) {
        err = e.what();
      }
      lk.lock();
      stepping_ = false;
      ++steps_done_;
      for (auto& [name, t] : got)
        if (values_.emplace(name, std::move(t)).second && release_ && !constants.count(name)) release_->held(name);
      release_due();
      if (!err.empty()) error_ = err;
      if (steps_->done()) {
        steps_.reset();
        session_.reset();
      }
      cv_.notify_all();
    }
  }
  void release_due() {
    if (release_)
      for (const auto& name : release_->due()) values_.erase(name);
  }
  // `name` was released: a second run from the start gives back every
  // released value (they equal the first run's: same session, inputs and
  // threads) and from then on nothing is released. Steps like advance().
  // Should that run fail, what it did not give back stays released: asked
  // for, it is a ReferenceLost (the job's error), never a stand-in.
  void rewind(std::unique_lock<std::mutex>& lk, const std::string& name) {
    cv_.wait(lk, [&] { return !stepping_; });
    if (!release_->released(name)) return;  // another job's rewind gave it back
    std::set<std::string> wanted = release_->released();
    release_->stop();
    stepping_ = true;
    lk.unlock();
    std::fprintf(stderr,
                 "[reference] '%s' was released, with %zu values in all: running the reference again from its start "
                 "to give them back (this model's values are kept from now on)\n",
                 name.c_str(), wanted.size());
    std::vector<std::pair<std::string, engine::Tensor>> back;
    std::string err;
    try {
      auto [session, steps] = restart_();
      while (back.size() < wanted.size() && !steps->done())
        for (auto& [n, t] : steps->step())
          if (wanted.count(n)) back.emplace_back(std::move(n), std::move(t));
    } catch (const std::exception& e) {
      err = e.what();
    }
    lk.lock();
    stepping_ = false;
    for (auto& [n, t] : back) {
      release_->given_back(n);
      values_.emplace(std::move(n), std::move(t));
    }
    if (!err.empty() && error_.empty()) error_ = "the second reference run failed: " + err;
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool stepping_ = false;
  std::optional<ReferenceRelease> release_;
  Restart restart_;
  size_t steps_done_ = 0, demand_ = 0;  // steps taken; the most a value() needed
  std::unique_ptr<engine::Session> session_;
  std::unique_ptr<engine::Session::Steps> steps_;
  std::map<std::string, engine::Tensor> values_;     // of the reference run (plain)
  std::map<std::string, engine::Tensor> stand_ins_;  // random values past where it stopped
  std::string error_;                     // why the run stopped early, if it did
};

}  // namespace torq::runner
