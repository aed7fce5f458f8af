// torq-sim's stand-in personas of the real Torq tools (DESIGN §7), so the
// toolchain backend can be tested end to end without a Torq release. Invoked
// as `torq-import-onnx`, `torq-compile` or `torq-run-module` (argv[0]'s base
// name: the symlinks in build/standin/, kept out of build/bin so that they
// never shadow a real toolchain on a user's PATH) or as `torq-sim <persona>
// ARGS...`. They honour the real
// tools' arguments, exit codes and raw .bin I/O, with the engine and the
// executor profiles underneath:
//
//  torq-import-onnx MODEL.onnx -o OUT.mlir [--data-prop]
//    writes the torch-mlir text the real importer writes (locations match)
//    and OUT.mlir.onnx, the sidecar the stand-in compile reads.
//  torq-compile IN.mlir -o OUT.vmfb [--torq-hw=SL2610|CUSTOM] [--torq-disable-slices]
//      [--torq-disable-css] [--torq-disable-host] [--torq-enable-profiling
//      --torq-dump-profiling=CSV]
//    refuses, as the real compiler, a --torq-hw other than exactly SL2610 or
//    a custom "id:lram:slices:css:nss..." spec, and any option the real tool
//    lacks (known real options it does not model are noted and have no
//    effect); picks the executor the disable flags leave (several left: the
//    first in priority order whose profile accepts the model), checks the
//    model against that profile (loading it and running it once on zeros),
//    and writes a module (header + the import's function + executor + the
//    ONNX bytes). The bf16 rounding comes from TORQ_FARM_BF16_ROUNDING
//    (rne | truncate; the real compiler has no such option). A rejection
//    exits 1 with "IN.mlir: error: <the profile's reason>". A simulated
//    board farm's latencies (the toolchain file's stand_in_latency) come
//    from TORQ_FARM_STANDIN_COMPILE_MS (this compile takes that much longer,
//    whatever its outcome) and TORQ_FARM_STANDIN_RUN_MS (written into the
//    module: each run of it takes that much longer, on a board too).
//  torq-run-module --module=M --function=F --torq_hw_type=sim|astra_machina|aws_fpga|soc_fpga
//      --input=SHAPExDTYPE=@FILE... --output=@FILE... [--torq_profile_host=CSV]
//    refuses a function the module does not export (the import's function,
//    named after the ONNX graph); runs the module under its executor's profile on the raw inputs and
//    writes the raw outputs (in the dtype the executor produces); exit 0,
//    1 on a runtime error ("error: ..."), 2 on bad arguments.
//
// Profiling CSVs come from the profile's cost model, in the columns of the
// real tools (worker/sim/persona_profiling.h). Each persona answers the
// probe of torq-worker --check-backend as its real tool does
// (worker/sim/persona_probes.h): torq-compile --version, torq-run-module
// --help, torq-import-onnx --help, exit 0.
#pragma once

#include <string>
#include <vector>

namespace torq::sim {

// The persona named `name` ("torq-compile", ...), or false when none is.
bool is_persona(const std::string& name);
// Runs persona `name` with its arguments (program name excluded); returns
// the exit code. Never throws.
int run_persona(const std::string& name, const std::vector<std::string>& args);

}  // namespace torq::sim
