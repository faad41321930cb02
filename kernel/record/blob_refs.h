// Which ledger records refer to blobs, and in which fields: the schema knowledge the ledger's
// verify lacks (it takes it as a BlobReferences, ledger/verify.h), for every record kind the
// kernel (kernel/record/records.h, kernel/record/run_lifecycle.h) and the executor (executor/run_records.h)
// write. With it `warden ledger verify`, `replay` and `ledger import` name the record, kind
// and field that refers to a missing or altered blob.
//
// The table also lists, per kind, the digest-valued fields that do not name a blob (digests
// of inline values, of git trees, of other records), so that tests can hold every digest a
// real ledger carries to the table: a new field or kind that names a blob cannot be missed.
//
// Everything here is immutable after first use and safe to share between threads. A field
// that is absent, null or "" names no blob (its schema is replay's to judge); a field
// present but not a `sha256:<hex>` digest is an Error from of(), reported at its record.
#pragma once

#include <string_view>
#include <vector>

#include "ledger/verify.h"

namespace warden::kernel {

// A payload field naming a blob. `path` is dotted; a segment ending in "[]" walks every
// element of an array ("run_result.checks[].runs[].stdout.blob"). With `when_field`, only
// records whose top-level `when_field` equals `when_value` name a blob there.
struct BlobField {
  std::string_view path;
  std::string_view when_field = {}, when_value = {};
};

struct RecordKindDigests {
  std::string_view kind;
  std::vector<BlobField> blobs;
  // Digest fields that name no blob, in the same path form; a path ending in ".*" covers
  // everything under it (free-form values such as a toolchain's file digests).
  std::vector<std::string_view> other_digests;
};

// Every record kind the kernel and the executor write, in no particular order.
const std::vector<RecordKindDigests>& record_kind_digests();

// The table as ledger verification takes it.
const BlobReferences& blob_references();

}  // namespace warden::kernel
