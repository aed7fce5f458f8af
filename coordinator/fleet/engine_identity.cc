// engine_identity() (unit_run.h): the generated digest. Alone in this file
// so that a changed executor source recompiles only this, not unit_run.cc.
#include "coordinator/fleet/unit_run.h"
#include "engine_identity.h"  // generated: cmake/engine_identity.cmake

namespace torq::coordinator {

const char* engine_identity() { return TORQ_ENGINE_IDENTITY; }

}  // namespace torq::coordinator
