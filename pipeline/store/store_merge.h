// The results column family's MergeOperator and its operand format
// (internal to the store; see store.h).
//
// A stored value is an encoded LayerRecord holding at most one Result per
// executor, in executor priority order (nss, css, host). An operand is either
//  - an encoded Result: put it in the record, replacing that executor's result, or
//  - an erase marker (erase_operand): remove that executor's result.
// The marker starts with "TORQERASE"; read as a FlatBuffer its root offset
// would be ~1.3 GB, beyond the decoder's 64 MiB cap, so it can never be
// mistaken for a valid Result.
//
// Corruption never fails a merge (a failing merge would stop compactions and
// turn the database read-only): an undecodable operand is logged to stderr
// and skipped; an undecodable existing record is logged and replaced by the
// valid operands. When nothing is valid (a corrupt record and no valid
// operand) the corrupt record is kept as it is, so readers still see it and
// report it as a PipelineError naming the key.
#pragma once

#include <memory>
#include <string>

#include "pipeline/core/types.h"

namespace rocksdb {
class MergeOperator;
}

namespace torq::pipeline::store_detail {

// The operand that erases executor `e`'s result from a layer record.
std::string erase_operand(Executor e);

// A new instance of the LayerRecord MergeOperator (stateless, thread-safe).
std::shared_ptr<rocksdb::MergeOperator> make_layer_record_merge_operator();

}  // namespace torq::pipeline::store_detail
