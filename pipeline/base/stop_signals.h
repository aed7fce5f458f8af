// A long-running command's signals: SIGTERM and SIGINT call `handler` (which
// asks the command to stop cleanly; it must be async-signal-safe), and
// SIGPIPE is ignored, so a peer or pipe that goes away is an error return
// rather than death (torq-coordinator, torq-worker).
#pragma once

namespace torq::base {

void install_stop_signals(void (*handler)(int));

}  // namespace torq::base
