#include "pipeline/base/thread_name.h"

#include <pthread.h>

#include <string>

namespace torq::base {

void name_this_thread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace torq::base
