#!/usr/bin/env bash
# The rooms of DESIGN §2: the pipeline library includes nothing of worker/
# (its foundations are pipeline/base/, the lowest room, which includes
# nothing of the project but itself), its own rooms include only those
# below them, coordinator/'s rooms likewise, and the coordinator's fleet side
# (broker, unit runs) includes no engine header.
# Usage: check_layout.sh SOURCE_DIR
set -uo pipefail
cd "$1" || exit 2
bad=0
if grep -rn '#include "worker/' pipeline/ ; then echo "layout: pipeline/ includes worker/"; bad=1; fi
if grep -rn '#include "\(pipeline/[a-z_]*\.h\|pipeline/[a-z]*/\|worker/\|coordinator/\)' pipeline/base/ |
   grep -v '#include "pipeline/base/' ; then
  echo "layout: pipeline/base/ includes another room"; bad=1
fi
# pipeline/targets/ (executor profiles as data, read by the engine and the
# coordinator alike) stands on base/ only.
if grep -rn '#include "\(pipeline/\|worker/\|coordinator/\)' pipeline/targets/ | grep -v '#include "pipeline/\(base\|targets\)/'; then
  echo "layout: pipeline/targets/ includes a room other than base/"; bad=1
fi
# pipeline/'s rooms, lowest first: each includes only itself, base/ and the
# rooms before it (pipeline/CMakeLists.txt says what each holds).
rooms=(core wire model store plan report probe matrix)
if ls pipeline/*.cc pipeline/*.h >/dev/null 2>&1; then
  echo "layout: sources at pipeline/'s top level (each belongs in a room):"; ls pipeline/*.cc pipeline/*.h; bad=1
fi
for i in "${!rooms[@]}"; do
  r=${rooms[$i]}
  above=("${rooms[@]:$((i + 1))}")
  [ ${#above[@]} -eq 0 ] && continue
  pat=$(IFS='|'; echo "${above[*]}")
  if grep -rnE "#include \"pipeline/($pat)/" "pipeline/$r/"; then
    echo "layout: pipeline/$r/ includes a room above it ($pat)"; bad=1
  fi
done
# coordinator/'s rooms: fleet/ below gen_config/ and matrix/, which know
# nothing of each other; fleet/ and matrix/ include no engine header.
if grep -rnE '#include "coordinator/(gen_config|matrix)/' coordinator/fleet/; then
  echo "layout: coordinator/fleet/ includes a room above it"; bad=1
fi
# observe/ (the run's status, progress and --http server) stands on fleet/'s
# RunObserver; fleet/ knows nothing of it, and it nothing of gen_config/ or matrix/.
if grep -rn '#include "coordinator/observe/' coordinator/fleet/; then
  echo "layout: coordinator/fleet/ includes coordinator/observe/"; bad=1
fi
if grep -rnE '#include "coordinator/(gen_config|matrix)/' coordinator/observe/; then
  echo "layout: coordinator/observe/ includes a room above it"; bad=1
fi
if grep -rn '#include "coordinator/matrix/' coordinator/gen_config/; then
  echo "layout: coordinator/gen_config/ includes coordinator/matrix/"; bad=1
fi
if grep -rn '#include "coordinator/gen_config/' coordinator/matrix/; then
  echo "layout: coordinator/matrix/ includes coordinator/gen_config/"; bad=1
fi
if ls coordinator/*.h >/dev/null 2>&1 || ls coordinator/*.cc | grep -vE '/(coordinator|gen_config)_main\.cc$'; then
  echo "layout: sources at coordinator/'s top level other than the two mains"; bad=1
fi
if grep -rn '#include "worker/engine/' coordinator/fleet/ coordinator/matrix/ coordinator/gen_config/; then
  echo "layout: a room of coordinator/ includes the engine (profiles are pipeline/targets/)"; bad=1
fi
# worker/runner/ knows no backend: torq-worker's main (worker/worker_main.cc)
# composes it with the sim and the toolchain.
if grep -rn '#include "worker/\(sim\|toolchain\)/' worker/runner/; then
  echo "layout: worker/runner/ includes a backend"; bad=1
fi
if ls worker/*.cc | grep -v '/worker_main\.cc$'; then
  echo "layout: sources at worker/'s top level other than torq-worker's main"; bad=1
fi
[ "$bad" = 0 ] && echo "layout: ok (pipeline/ -> pipeline/base/ only; targets/ on base/; pipeline's rooms in order ${rooms[*]}; coordinator's fleet/ below observe/, gen_config/ and matrix/, and no engine in coordinator/'s rooms; worker/runner/ without backends)"
exit "$bad"
