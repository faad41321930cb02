// The embedded StateStore: one LMDB environment in a directory, shared by every thread of a
// process through one store object and by several processes each opening the directory.
//
// Ownership and sharing: the StateStore open_lmdb_state_store returns owns its LMDB
// environment and closes it on destruction; the caller owns the unique_ptr. Open a directory
// at most once per process (LMDB's locks are per process: a second environment on the same
// files in one process breaks them) and share that object between threads; other processes
// open their own. Every mutating call is one LMDB write transaction, and LMDB lets one writer
// in at a time across all threads and processes, so a claim is atomic everywhere the
// directory is shared. Reads use their own read transaction and never wait for writers.
//
// Durability: with LmdbStateStoreOptions::sync (the default) a call that returned has been
// fsynced and survives a power loss; each call then costs LMDB's two fsyncs (data, then meta
// page), which bounds the rate at the disk's: 150 to 1,000 calls a second on a virtual disk.
// Without sync, commits are written straight into the shared map (MDB_WRITEMAP, no pwrite per
// page) and never flushed by the store: a process crash loses nothing, an OS crash may undo
// the last calls or, on a file system that reorders writes, damage the file; an
// enqueue+claim+ack cycle then costs a few microseconds. The data file is then as large as the
// map (sparse). Every process sharing a directory should open it with the same setting.
//
// Layout (named LMDB databases; integers big-endian so byte order is numeric order):
//   agents     agent id -> AgentRecord
//   tasks      task id -> the task, its enqueue seq, attempts, current claim (token 0: none)
//              and enqueued_ms (appended last; a row written before it had none and reads 0)
//   ready      (priority descending, enqueue seq) -> task id, kind: the unclaimed tasks, so
//              a claim takes the first entry (or the first whose kind matches) without a scan
//   leases     (expires_ms, token) -> task id: the claimed tasks by expiry. A claim first
//              moves every lease with expires_ms <= now_ms back into `ready` at its old key
//              (the first entries of `leases`, stopping at the first live one), then takes
//              from `ready`; so a dead agent's task returns in its place, in the claim's
//              own transaction, at a cost proportional to the leases that expired.
//   events     seq -> bytes;  positions  consumer -> seq
//   meta       "next_task_seq", "next_claim_token" -> u64; "retired:<agent id>" -> the last
//              version of a removed agent (its next incarnation goes on from there)
//   done       acknowledged task id -> "agent token" of the claim that acked it (a task id is
//              done once; the same claim's retried ack is answered ok); expired task id ->
//              "expired" (no space, so no claim's "agent token" equals it)
//
// lmdb_state_store.cc is one unit (~740 lines): one StateStore implementation, each call one
// transaction over the layout above, with the row encodings and cursor helpers only it uses.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>

#include "store/state_store.h"

namespace warden::store {

struct LmdbStateStoreOptions {
  bool sync = true;                   // fsync each commit (see Durability above)
  size_t map_size = size_t{1} << 30;  // the most the file may grow to; limit_exceeded past it
};

// Creates `dir` if absent and opens (or creates) the store in it. The caller chooses a
// directory only Warden writes: the queue decides what agents run. Errors: io_error (the
// directory cannot be made, LMDB cannot open it), corrupt (check_files in common/lmdb.h).
// No LMDB type crosses this header: the supervisor sees a StateStore and nothing else.
Result<std::unique_ptr<StateStore>> open_lmdb_state_store(const std::filesystem::path& dir,
                                                          const LmdbStateStoreOptions& options = {});

}  // namespace warden::store
