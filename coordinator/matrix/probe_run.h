// The coordinator's probe mode (issue 34): `torq-coordinator --spec S.yaml`
// where S has a `probe:` section (docs/probe.md, docs/matrix-spec.md). The
// probe spec's points run on the spec's executors for each of its targets,
// fanned out over the fleet like every job (cached, resumable in the
// store), with the refinement rounds of torq-gen-config probe; each
// target's envelope and derived profiles go to <export>/probe/<target>/,
// and <export>/junit.xml has one case per (target, executor, op group),
// failed when its rules explain less than min_explained of its points.
#pragma once

#include <ostream>

#include "coordinator/matrix/matrix_run.h"
#include "pipeline/matrix/matrix.h"

namespace torq::coordinator {

// Exit: 0 every case passed, 1 a case failed, 2 an error, 3 stopped early.
int run_probe_matrix(const MatrixRunOptions& o, const pipeline::matrix::Spec& spec, std::ostream& out,
                     std::ostream& err);

}  // namespace torq::coordinator
