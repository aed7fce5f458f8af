#!/usr/bin/env bash
# The rooms of DESIGN §2: the pipeline library includes nothing of worker/
# (its foundations are pipeline/base/, the lowest room, which includes
# nothing of the project but itself), and the coordinator's fleet side
# (broker, unit runs) includes no engine header.
# Usage: check_layout.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 2
bad=0
if grep -rn '#include "worker/' pipeline/ ; then echo "layout: pipeline/ includes worker/"; bad=1; fi
if grep -rn '#include "\(pipeline/[a-z_]*\.h\|worker/\|coordinator/\)' pipeline/base/ ; then
  echo "layout: pipeline/base/ includes another room"; bad=1
fi
for f in coordinator/fleet_broker.cc coordinator/unit_run.cc coordinator/assigned_run.cc coordinator/matrix_run.cc; do
  if grep -n '#include "worker/engine/' "$f"; then echo "layout: $f includes the engine"; bad=1; fi
done
[ "$bad" = 0 ] && echo "layout: ok (pipeline/ -> pipeline/base/ only; the fleet side of coordinator/ knows no engine)"
exit "$bad"
