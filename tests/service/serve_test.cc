// `warden serve`: the process, its socket and the Ledger service, from outside — a real
// server process, a real unix socket, the generated stubs. What a client must be able to
// rely on: health says SERVING only when the server can answer, proofs verify against the
// signed checkpoint, bad requests get the status code that says why, the socket is private,
// one server per socket, and SIGTERM stops it cleanly.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <health/v1/health.grpc.pb.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <warden.grpc.pb.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/sha256.h"
#include "common/clock.h"
#include "ledger/checkpoint.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "tests/service/serve_fixture.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/warden_cli.h"

namespace warden::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Serve : public ServeFixture {};

TEST_F(Serve, HealthAndLedgerRecordsProofsAndCheckpoints) {
  Child server = start();
  wait_serving(server);
  auto ch = channel();
  EXPECT_EQ(health_status(ch, "warden.v1.Ledger"), 1);
  EXPECT_EQ(health_status(ch, "warden.v1.Kernel"), 1) << "the sandbox preflight passes on this host";
  auto ledger_client = v1::Ledger::NewStub(ch);

  // Every record, then only one kind, then a range.
  auto list = [&](v1::ListRecordsRequest request) {
    grpc::ClientContext context;
    auto reader = ledger_client->ListRecords(&context, request);
    std::vector<v1::LedgerRecord> out;
    v1::LedgerRecord r;
    while (reader->Read(&r)) out.push_back(r);
    EXPECT_TRUE(reader->Finish().ok());
    return out;
  };
  auto all = list({});
  ASSERT_EQ(all.size(), 5u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].seq(), i);
    EXPECT_EQ(all[i].payload_json(), "{\"n\":" + std::to_string(i) + "}");
  }
  v1::ListRecordsRequest odd;
  odd.set_kind("odd");
  auto odds = list(odd);
  ASSERT_EQ(odds.size(), 2u);
  EXPECT_EQ(odds[0].seq(), 1u);
  EXPECT_EQ(odds[1].seq(), 3u);
  v1::ListRecordsRequest range;
  range.set_from_seq(2);
  range.set_to_seq(4);
  EXPECT_EQ(list(range).size(), 2u);

  // The checkpoint verifies with the ledger's key, and an inclusion proof leads from a
  // record's hash to the root it signs.
  v1::Checkpoint cp;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(ledger_client->GetCheckpoint(&context, {}, &cp).ok());
  }
  EXPECT_EQ(cp.size(), 5u);
  EXPECT_EQ(cp.verifier_key(), verifier);
  auto key = NoteVerifier::parse(verifier);
  ASSERT_TRUE(key);
  auto opened = open_note(cp.note(), {*key});
  ASSERT_TRUE(opened) << opened.error().message;
  auto root = Digest::from_hex(cp.root());
  ASSERT_TRUE(root);
  v1::ProveInclusionRequest prove;
  prove.set_seq(3);
  prove.set_tree_size(5);
  v1::InclusionProof proof;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(ledger_client->ProveInclusion(&context, prove, &proof).ok());
  }
  EXPECT_EQ(proof.root(), cp.root());
  EXPECT_EQ(proof.leaf_hash(), all[3].hash());
  std::vector<Digest> path;
  for (const auto& h : proof.proof()) path.push_back(*Digest::from_hex(h));
  EXPECT_TRUE(verify_inclusion(*Digest::from_hex(proof.leaf_hash()), 3, 5, path, *root));
  // The same proof for another leaf does not verify: the test can fail.
  EXPECT_FALSE(verify_inclusion(*Digest::from_hex(all[2].hash()), 3, 5, path, *root));

  v1::ProveConsistencyRequest consistent;
  consistent.set_size1(2);
  v1::ConsistencyProof cproof;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(ledger_client->ProveConsistency(&context, consistent, &cproof).ok());
  }
  std::vector<Digest> cpath;
  for (const auto& h : cproof.proof()) cpath.push_back(*Digest::from_hex(h));
  EXPECT_EQ(cproof.size2(), 5u);
  EXPECT_TRUE(verify_consistency(2, 5, *Digest::from_hex(cproof.root1()), *root, cpath));

  EXPECT_TRUE(stop(server).exited_with(0));
}

TEST_F(Serve, BadRequestsGetTheStatusThatSaysWhy) {
  Child server = start();
  wait_serving(server);
  auto ledger_client = v1::Ledger::NewStub(channel());
  auto code_of = [&](auto call) {
    grpc::ClientContext context;
    return call(context).error_code();
  };
  v1::InclusionProof proof;
  v1::ProveInclusionRequest beyond;
  beyond.set_seq(9);
  EXPECT_EQ(code_of([&](auto& c) { return ledger_client->ProveInclusion(&c, beyond, &proof); }), grpc::StatusCode::INVALID_ARGUMENT);
  v1::ProveInclusionRequest too_big;
  too_big.set_seq(0);
  too_big.set_tree_size(6);
  EXPECT_EQ(code_of([&](auto& c) { return ledger_client->ProveInclusion(&c, too_big, &proof); }), grpc::StatusCode::INVALID_ARGUMENT);
  v1::Blob blob;
  v1::GetBlobRequest malformed;
  malformed.set_digest("sha256:xyz");
  EXPECT_EQ(code_of([&](auto& c) { return ledger_client->GetBlob(&c, malformed, &blob); }), grpc::StatusCode::INVALID_ARGUMENT);
  v1::GetBlobRequest absent;
  absent.set_digest(sha256("never stored").str());
  EXPECT_EQ(code_of([&](auto& c) { return ledger_client->GetBlob(&c, absent, &blob); }), grpc::StatusCode::NOT_FOUND);
  v1::ListRecordsRequest no_run;
  no_run.set_run_id("run-nobody");
  grpc::ClientContext context;
  auto reader = ledger_client->ListRecords(&context, no_run);
  v1::LedgerRecord r;
  EXPECT_FALSE(reader->Read(&r));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  auto pipeline = v1::Pipeline::NewStub(channel());
  v1::PipelineRunResponse ran;
  grpc::ClientContext pipeline_context;
  EXPECT_EQ(pipeline->Run(&pipeline_context, {}, &ran).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(stop(server).exited_with(0));
}

TEST_F(Serve, ThePrivateSocketServesOneServerAndSigtermRemovesIt) {
  Child server = start();
  wait_serving(server);
  struct stat st;
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // Another user cannot connect (the socket and its directory are the server's alone).
  ProcessResult other = run({"/usr/bin/python3", "-c",
                             "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1])\nexcept OSError as e:\n "
                             "print(e.errno); sys.exit(3)\n",
                             socket.string()},
                            SpawnOptions{.stdin_data = {}, .uid = 65534, .gid = 65534});
  EXPECT_TRUE(other.exited_with(3)) << describe(other);

  // A second server on the same socket is refused and the first one keeps serving.
  ProcessResult second = run({warden_binary(), "serve", "--state", state.string()});
  EXPECT_TRUE(second.exited_with(6)) << describe(second);
  EXPECT_NE(second.err.find("already listening"), std::string::npos) << describe(second);
  EXPECT_EQ(health_status(channel(), ""), 1);

  ProcessResult stopped = stop(server);
  EXPECT_TRUE(stopped.exited_with(0)) << describe(stopped);
  EXPECT_NE(stopped.err.find("SIGTERM"), std::string::npos) << describe(stopped);
  EXPECT_EQ(stopped.err.find("failed"), std::string::npos) << "a clean stop logs no failure: " << describe(stopped);
  EXPECT_FALSE(fs::exists(socket));
}

// The Python client (clients/python, built into <build>/clients/python) against the same
// server: its calls, its exception classes, and proofs recomputed in Python.
TEST_F(Serve, ThePythonClient) {
  Child server = start();
  wait_serving(server);
  fs::path package = fs::path(WARDEN_BINARY).parent_path() / "clients" / "python";
  fs::path check = fs::path(WARDEN_SOURCE_DIR) / "tests" / "service" / "python_client_check.py";
  auto other = NoteSigner::generate("warden.local/ledger");
  ASSERT_TRUE(other);
  ProcessResult r = run({"/usr/bin/env", "PYTHONPATH=" + package.string(), "/usr/bin/python3", check.string(),
                         socket.string(), "5", verifier, other->verifier().encoded()});
  EXPECT_TRUE(r.exited_with(0)) << describe(r);
  EXPECT_NE(r.out.find("errors ok"), std::string::npos) << describe(r);
  EXPECT_TRUE(stop(server).exited_with(0));
}

// With a tokens file every call but health needs a token that hashes to an entry with the
// call's role; the file holds hashes only.
// Revoking a token takes effect on the next call, without a restart: an entry marked revoked
// or removed is refused at once, and a file that no longer loads refuses everyone.
TEST_F(Serve, ARevokedTokenIsRefusedAtItsNextCall) {
  fs::path tokens = tmp / "tokens.json";
  auto publish = [&](const std::string& text) {  // as an admin should: a new file, renamed over
    fs::path next = tmp / "tokens.json.new";
    write_file(next, text);
    fs::permissions(next, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    fs::rename(next, tokens);
  };
  auto entry = [](const std::string& name, const std::string& secret, bool revoked = false) {
    return "{\"name\": \"" + name + "\", \"sha256\": \"" + sha256(secret).str() + "\", \"roles\": [\"observer\"]" +
           (revoked ? ", \"revoked\": true" : "") + "}";
  };
  publish("{\"tokens\": [" + entry("a", "secret-a") + ", " + entry("b", "secret-b") + "]}");
  Child server = start({"--tokens", tokens.string()});
  wait_serving(server);
  auto ledger_client = v1::Ledger::NewStub(channel());
  auto call = [&](const std::string& token, std::string* message = nullptr) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    v1::Checkpoint cp;
    grpc::Status st = ledger_client->GetCheckpoint(&context, {}, &cp);
    if (message) *message = st.error_message();
    return st.error_code();
  };
  EXPECT_EQ(call("secret-a"), grpc::StatusCode::OK);
  EXPECT_EQ(call("secret-b"), grpc::StatusCode::OK);
  publish("{\"tokens\": [" + entry("a", "secret-a", true) + ", " + entry("b", "secret-b") + "]}");
  std::string why;
  EXPECT_EQ(call("secret-a", &why), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(why.find("revoked"), std::string::npos) << why;
  EXPECT_EQ(call("secret-b"), grpc::StatusCode::OK);
  publish("{\"tokens\": [" + entry("a", "secret-a", true) + "]}");
  EXPECT_EQ(call("secret-b"), grpc::StatusCode::UNAUTHENTICATED) << "a removed entry";
  // Half an edit: everyone is refused, nobody revoked comes back; UNAVAILABLE, the server's
  // own fault, so clients and runners retry rather than give up on their tokens.
  publish("{\"tokens\": [");
  EXPECT_EQ(call("secret-a"), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(call("secret-b", &why), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(why.find("no longer loads"), std::string::npos) << why;
  // Why is the server log's: a refused caller learns nothing of the file (its path, its entries).
  EXPECT_EQ(why.find(tokens.string()), std::string::npos) << why;
  server.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  EXPECT_NE(server.err().find("the tokens file no longer loads: "), std::string::npos) << server.err();
  publish("{\"tokens\": [" + entry("b", "secret-b") + "]}");
  EXPECT_EQ(call("secret-b"), grpc::StatusCode::OK);
  server.pump(std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  EXPECT_NE(server.err().find("loads again"), std::string::npos) << server.err();
  EXPECT_TRUE(stop(server).exited_with(0));
}

TEST_F(Serve, TokensDecideWhoMayCallWhat) {
  fs::path tokens = tmp / "tokens.json";
  write_file(tokens, "{\"tokens\": [{\"name\": \"auditor\", \"sha256\": \"" + sha256("observer-secret").str() +
                         "\", \"roles\": [\"observer\"]}, {\"name\": \"agent\", \"sha256\": \"" +
                         sha256("executor-secret").str() + "\", \"roles\": [\"executor\"]}, {\"name\": \"ops\", "
                         "\"sha256\": \"" + sha256("admin-secret").str() + "\", \"roles\": [\"admin\"]}]}");
  fs::permissions(tokens, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  Child server = start({"--tokens", tokens.string()});
  wait_serving(server);  // health needs no token
  auto ledger_client = v1::Ledger::NewStub(channel());
  auto list_with = [&](const std::string& token) {
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    auto reader = ledger_client->ListRecords(&context, {});
    v1::LedgerRecord r;
    int n = 0;
    while (reader->Read(&r)) ++n;
    grpc::Status status = reader->Finish();
    return std::pair{status.error_code(), n};
  };
  EXPECT_EQ(list_with(""), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));
  EXPECT_EQ(list_with("guessed"), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0));
  EXPECT_EQ(list_with(sha256("observer-secret").hex()), std::pair(grpc::StatusCode::UNAUTHENTICATED, 0))
      << "the stored hash is not a token";
  EXPECT_EQ(list_with("executor-secret"), std::pair(grpc::StatusCode::PERMISSION_DENIED, 0));
  EXPECT_EQ(list_with("observer-secret"), std::pair(grpc::StatusCode::OK, 5));
  EXPECT_EQ(list_with("admin-secret"), std::pair(grpc::StatusCode::OK, 5));
  EXPECT_TRUE(stop(server).exited_with(0));

  // A tokens file another user could write decides nothing.
  fs::permissions(tokens, fs::perms::others_write, fs::perm_options::add);
  ProcessResult writable = run({warden_binary(), "serve", "--state", state.string(), "--tokens", tokens.string()});
  EXPECT_TRUE(writable.exited_with(3)) << describe(writable);
  fs::permissions(tokens, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  write_file(tokens, "{\"tokens\": [{\"name\": \"x\", \"sha256\": \"" + sha256("t").str() + "\", \"roles\": [\"root\"]}]}");
  ProcessResult bad_role = run({warden_binary(), "serve", "--state", state.string(), "--tokens", tokens.string()});
  EXPECT_TRUE(bad_role.exited_with(3)) << describe(bad_role);
  EXPECT_NE(bad_role.err.find("tokens.tokens[0].roles"), std::string::npos) << describe(bad_role);
}

// Server reflection's list_services, asked with a hand-encoded ServerReflectionRequest (field
// 7, list_services, empty: bytes 3a 00) so the test needs no reflection library: the status
// and the raw answer, which names the services when it is served.
std::pair<grpc::StatusCode, std::string> list_services(const std::shared_ptr<grpc::Channel>& channel, const std::string& token) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  grpc::CompletionQueue cq;
  auto call = stub.PrepareCall(&context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  cq.Next(&tag, &ok);
  const std::string request("\x3a\x00", 2);
  grpc::Slice slice(request.data(), request.size());
  grpc::ByteBuffer out(&slice, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  cq.Next(&tag, &ok);
  call->WritesDone(reinterpret_cast<void*>(3));
  cq.Next(&tag, &ok);
  std::string answer;
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(4));
  cq.Next(&tag, &ok);
  if (ok) {
    std::vector<grpc::Slice> slices;
    if (in.Dump(&slices).ok()) {
      for (const auto& s : slices) answer.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  while (cq.Next(&tag, &ok) && tag != reinterpret_cast<void*>(5)) {
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return {status.error_code(), answer};
}

// Reflection follows the tokens: without a tokens file (the 0600 socket admits its owner
// alone) it answers; with one it needs a token the file knows, of any role (before, it listed
// every service to a caller with no token at all). Health stays open.
TEST_F(Serve, ReflectionFollowsTheTokens) {
  Child open_server = start();
  wait_serving(open_server);
  auto open = list_services(channel(), "");
  EXPECT_EQ(open.first, grpc::StatusCode::OK);
  EXPECT_NE(open.second.find("warden.v1.Kernel"), std::string::npos) << "reflection without tokens lists the services";
  EXPECT_TRUE(stop(open_server).exited_with(0));

  fs::path tokens = tmp / "tokens.json";
  write_file(tokens, "{\"tokens\": [{\"name\": \"auditor\", \"sha256\": \"" + sha256("observer-secret").str() +
                         "\", \"roles\": [\"observer\"]}]}");
  fs::permissions(tokens, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  Child server = start({"--tokens", tokens.string()});
  wait_serving(server);  // health needs no token
  for (const std::string& token : {std::string(), std::string("guessed")}) {
    auto refused = list_services(channel(), token);
    EXPECT_NE(refused.first, grpc::StatusCode::OK) << "token '" << token << "'";
    EXPECT_EQ(refused.second.find("warden.v1"), std::string::npos) << "token '" << token << "'";
  }
  auto known = list_services(channel(), "observer-secret");
  EXPECT_EQ(known.first, grpc::StatusCode::OK);
  EXPECT_NE(known.second.find("warden.v1.Ledger"), std::string::npos);
  EXPECT_TRUE(stop(server).exited_with(0));
}

// A checkpoint written into the store by hand, even one signed with the ledger's own key, is
// not served unless it signs this ledger's tree: a client would otherwise verify proofs
// against a root the ledger never had.
TEST_F(Serve, AStoredCheckpointThatDoesNotSignTheTreeIsNotServed) {
  auto key_text = read_file(ledger / "signer.key");
  auto signer = NoteSigner::parse(key_text.substr(0, key_text.find_last_not_of("\n") + 1));
  ASSERT_TRUE(signer) << signer.error().message;
  auto other = NoteSigner::generate(signer->name());
  ASSERT_TRUE(other);
  auto forge = [&](const NoteSigner& by, const Digest& root) {
    SystemClock clock;
    auto opened = Ledger::open(ledger, Ledger::Mode::read_write, clock);
    ASSERT_TRUE(opened) << opened.error().message;
    warden::Checkpoint lie{opened->origin(), 5, root, {}};
    auto note = sign_note(lie.body(), by);
    ASSERT_TRUE(note) << note.error().message;
    ASSERT_TRUE(opened->write([&](WriteTxn& w) { return w.put_checkpoint(5, *note); }));
  };
  auto served_code = [&] {
    Child server = start();
    wait_serving(server);
    auto ledger_client = v1::Ledger::NewStub(channel());
    v1::Checkpoint cp;
    grpc::ClientContext context;
    grpc::StatusCode code = ledger_client->GetCheckpoint(&context, {}, &cp).error_code();
    EXPECT_TRUE(stop(server).exited_with(0));
    return code;
  };
  ASSERT_EQ(served_code(), grpc::StatusCode::OK) << "the honest checkpoint is served";
  forge(*signer, sha256("a root this ledger never had"));
  EXPECT_EQ(served_code(), grpc::StatusCode::DATA_LOSS) << "the ledger's own key on a wrong root";
  SystemClock clock;
  Digest true_root;
  {
    auto opened = Ledger::open(ledger, Ledger::Mode::read_only, clock);
    ASSERT_TRUE(opened);
    auto snap = opened->snapshot();
    ASSERT_TRUE(snap);
    true_root = *snap->root_at(5);
  }
  forge(*other, true_root);
  EXPECT_EQ(served_code(), grpc::StatusCode::DATA_LOSS) << "the true root under another key";
  forge(*signer, true_root);
  EXPECT_EQ(served_code(), grpc::StatusCode::OK);
}

TEST_F(Serve, AStaleSocketIsReplaced) {
  // What a SIGKILLed server leaves: a socket file nobody listens on.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
  ASSERT_TRUE(fs::exists(socket));
  Child server = start();
  wait_serving(server);
  EXPECT_TRUE(stop(server).exited_with(0));
}

TEST_F(Serve, RefusesAStateDirectoryOthersCanWriteAndAMissingLedger) {
  fs::permissions(state, fs::perms::all, fs::perm_options::replace);
  ProcessResult open = run({warden_binary(), "serve", "--state", state.string()});
  EXPECT_TRUE(open.exited_with(3)) << describe(open);
  EXPECT_NE(open.err.find("chmod 0700"), std::string::npos) << describe(open);
  EXPECT_FALSE(fs::exists(socket));

  fs::permissions(state, fs::perms::owner_all, fs::perm_options::replace);
  ProcessResult no_ledger = run({warden_binary(), "serve", "--state", state.string(), "--ledger", (tmp / "none").string()});
  EXPECT_TRUE(no_ledger.exited_with(4)) << describe(no_ledger);
  EXPECT_NE(no_ledger.err.find("warden ledger init"), std::string::npos) << describe(no_ledger);

  // A link where the socket goes is not followed or replaced: whatever it points at stays.
  fs::path victim = tmp / "victim.txt";
  write_file(victim, "keep\n");
  fs::create_symlink(victim, socket);
  ProcessResult linked = run({warden_binary(), "serve", "--state", state.string()});
  EXPECT_TRUE(linked.exited_with(6)) << describe(linked);
  EXPECT_EQ(read_file(victim), "keep\n");
  EXPECT_TRUE(fs::is_symlink(socket));
  fs::remove(socket);
  // Nor is a state directory that is a link.
  fs::path link_state = tmp / "state-link";
  fs::create_directory_symlink(state, link_state);
  ProcessResult via_link = run({warden_binary(), "serve", "--state", link_state.string()});
  EXPECT_TRUE(via_link.exited_with(3)) << describe(via_link);

  ProcessResult long_path = run({warden_binary(), "serve", "--state", state.string(), "--socket",
                                 (state / std::string(120, 's')).string()});
  EXPECT_TRUE(long_path.exited_with(3)) << describe(long_path);
}

}  // namespace
}  // namespace warden::test
