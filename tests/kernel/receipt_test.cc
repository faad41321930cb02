// Acceptance receipts: the DSSE encoding and signatures, the commit record schema, and a
// receipt built from a real ledger refused for every kind of tampering, each naming the
// part that failed.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/encoding.h"
#include "kernel/record/records.h"
#include "kernel/audit/dsse.h"
#include "kernel/audit/receipt.h"
#include "kernel/judge/verdict.h"
#include "ledger/ledger.h"
#include "tests/support/temp_dir.h"

namespace warden::kernel {
namespace {

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

CommitRecord sample_commit(std::string commit = kCommit) {
  CommitRecord c;
  c.run_id = "run-000001";
  c.step_id = "s2";
  c.attempt = 2;
  c.commit = std::move(commit);
  c.tree = "89abcdef0123456789abcdef0123456789abcdef";
  c.parent = "fedcba9876543210fedcba9876543210fedcba98";
  c.branch = "refs/heads/warden/calculator";
  c.plan_sha256 = sha256("plan");
  c.proposal_sha256 = sha256("proposal");
  c.run_result_sha256 = sha256("run result");
  c.policy_sha256 = sha256("policy");
  c.decision_seq = 3;
  return c;
}

NoteSigner make_signer(const std::string& name) { return NoteSigner::generate(name).value(); }

// The payload of a "decision" record about `c`'s run, step and attempt, as the build loop
// writes it.
Json decision_for(const CommitRecord& c, bool accepted) {
  return {{"run_id", c.run_id},
          {"step_id", c.step_id},
          {"attempt", c.attempt},
          {"plan_sha256", c.plan_sha256.str()},
          {"policy_sha256", c.policy_sha256.str()},
          {"completed_steps", Json::array({"s1"})},
          {"proposal_seq", 0},
          {"run_result_seq", nullptr},
          {"verdict", accepted ? kernel::Verdict{true, {}}.to_json()
                               : kernel::Verdict{false, {{"required_checks_failed", "tests: failed"}}}.to_json()}};
}

// A ledger holding filler records around commit records and their decisions.
struct TestLedger {
  explicit TestLedger(const NoteSigner& signer, const std::string& dir_name = "ledger") {
    dir = tmp / dir_name;
    Ledger::create(dir, {"warden.test/receipts", signer.verifier().encoded()}).value();
    ledger.emplace(Ledger::open(dir, Ledger::Mode::read_write, clock).value());
  }
  void filler(int n) {
    std::vector<AppendEntry> entries;
    for (int i = 0; i < n; ++i) entries.push_back({"run_event", Json{{"i", i}}});
    ledger->append_batch(entries).value();
  }
  uint64_t append(std::string_view kind, const Json& payload) { return ledger->append(kind, payload).value().seq; }
  // Appends an accepting decision about `c`, then `c` naming it (decision_seq is set here).
  uint64_t append_commit(CommitRecord& c) {
    c.decision_seq = append("decision", decision_for(c, true));
    return append(CommitRecord::kind, c.to_json());
  }

  test::TempDir tmp;
  std::filesystem::path dir;
  LogicalClock clock{1000, 1};
  std::optional<Ledger> ledger;
};

class ReceiptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ledger.filler(5);
    seq = ledger.append_commit(committed);
    ledger.filler(6);
    bundle = receipt_for(kCommit);
  }

  Json receipt_for(const std::string& commit) {
    auto snap = ledger.ledger->snapshot().value();
    auto located = find_commit_record(snap, commit).value();
    return make_receipt(*ledger.ledger, located, signer).value();
  }

  // Verification must fail as verification_failed with `part` in the message.
  void expect_refused(const Json& tampered, const std::string& part, const NoteVerifier* key = nullptr) {
    auto result = verify_receipt(tampered, key ? *key : signer.verifier());
    ASSERT_FALSE(result) << "tampered receipt verified (expected a failure naming " << part << ")";
    EXPECT_EQ(result.error().code, Errc::verification_failed) << result.error().message;
    EXPECT_NE(result.error().message.find(part), std::string::npos) << result.error().message;
  }

  // Edits the signed statement and signs it again with the right key, so what gets refused
  // is the edit and not the signature.
  Json resigned(Json b, const std::function<void(Json&)>& edit) {
    auto envelope = DsseEnvelope::from_json(b["envelope"]).value();
    Json statement = Json::parse(envelope.payload);
    edit(statement);
    b["envelope"] = dsse_sign(kInTotoPayloadType, canonicalize(statement).value(), signer).value().to_json();
    return b;
  }

  NoteSigner signer = make_signer("warden.test/kernel");
  TestLedger ledger{signer};
  CommitRecord committed = sample_commit();
  uint64_t seq = 0;
  Json bundle;
};

TEST(Dsse, PaeMatchesTheSpecExample) {
  EXPECT_EQ(dsse_pae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  EXPECT_EQ(dsse_pae("", ""), "DSSEv1 0  0 ");
}

TEST(Dsse, SignsAndVerifiesAndSurvivesJson) {
  NoteSigner signer = make_signer("example.com/dsse");
  auto envelope = dsse_sign("text/plain", "hello world", signer).value();
  ASSERT_EQ(envelope.signatures.size(), 1u);
  EXPECT_EQ(envelope.signatures[0].keyid, dsse_keyid(signer.verifier()));
  EXPECT_TRUE(ed25519_verify(signer.verifier().public_key(),
                             "DSSEv1 10 text/plain 11 hello world", envelope.signatures[0].sig));
  Json json = envelope.to_json();
  EXPECT_EQ(json["payload"], base64_encode(std::string_view("hello world")));
  auto back = DsseEnvelope::from_json(json).value();
  EXPECT_TRUE(dsse_verify(back, signer.verifier()));

  // The type is signed too: the same bytes under another type do not verify.
  back.payload_type = "text/html";
  EXPECT_FALSE(dsse_verify(back, signer.verifier()));
  back.payload_type = "text/plain";
  back.payload[0] = 'H';
  EXPECT_FALSE(dsse_verify(back, signer.verifier()));
  EXPECT_FALSE(dsse_verify(envelope, make_signer("example.com/other").verifier()));
}

TEST(Dsse, EnvelopeParsingIsStrict) {
  Json good = dsse_sign("t", "x", make_signer("example.com/dsse")).value().to_json();
  Json extra = good;
  extra["note"] = "hi";
  Json no_sigs = good;
  no_sigs["signatures"] = Json::array();
  Json bad_b64 = good;
  bad_b64["signatures"][0]["sig"] = "%%%";
  EXPECT_NE(DsseEnvelope::from_json(extra).error().message.find("envelope.note"), std::string::npos);
  EXPECT_NE(DsseEnvelope::from_json(no_sigs).error().message.find("signatures"), std::string::npos);
  EXPECT_NE(DsseEnvelope::from_json(bad_b64).error().message.find("signatures[0].sig"), std::string::npos);
}

TEST(CommitRecord, RoundTripsAndRefusesBadFields) {
  CommitRecord c = sample_commit();
  EXPECT_EQ(CommitRecord::from_json(c.to_json()).value(), c);
  EXPECT_EQ(c.to_json()["plan_sha256"], sha256("plan").str());

  Json short_id = c.to_json();
  short_id["tree"] = "abc123";
  Json unknown = c.to_json();
  unknown["extra"] = 1;
  Json bad_branch = c.to_json();
  bad_branch["branch"] = "warden/calculator";
  Json missing = c.to_json();
  missing.erase("decision_seq");
  EXPECT_NE(CommitRecord::from_json(short_id).error().message.find("commit record.tree"), std::string::npos);
  EXPECT_NE(CommitRecord::from_json(unknown).error().message.find("commit record.extra"), std::string::npos);
  EXPECT_NE(CommitRecord::from_json(bad_branch).error().message.find("branch"), std::string::npos);
  EXPECT_NE(CommitRecord::from_json(missing).error().message.find("decision_seq: missing"), std::string::npos);
}

TEST_F(ReceiptTest, VerifiesAndCarriesTheRecord) {
  auto verified = verify_receipt(bundle, signer.verifier());
  ASSERT_TRUE(verified) << verified.error().message;
  EXPECT_EQ(verified->commit, committed);
  EXPECT_EQ(verified->commit.decision_seq, seq - 1);
  EXPECT_EQ(verified->seq, seq);
  EXPECT_EQ(verified->tree_size, 13u);
  EXPECT_EQ(verified->origin, "warden.test/receipts");
  EXPECT_EQ(verified->root, ledger.ledger->snapshot().value().root().value());

  auto envelope = DsseEnvelope::from_json(bundle["envelope"]).value();
  EXPECT_EQ(envelope.payload_type, "application/vnd.in-toto+json");
  Json statement = Json::parse(envelope.payload);
  EXPECT_EQ(statement["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(statement["subject"][0]["name"], "git+commit:refs/heads/warden/calculator");
  EXPECT_EQ(statement["subject"][0]["digest"]["gitCommit"], kCommit);
  EXPECT_EQ(statement["subject"][1]["digest"]["gitTree"], sample_commit().tree);
  EXPECT_EQ(statement["predicate"]["proposal_sha256"], sha256("proposal").str());
  EXPECT_EQ(statement["predicate"]["ledger"]["seq"], seq);
  EXPECT_EQ(statement["predicate"]["ledger"]["record_hash"],
            ledger.ledger->snapshot().value().record_hash(seq).value().hex());
}

TEST_F(ReceiptTest, ReusesACoveringCheckpointAndSignsOneOtherwise) {
  // SetUp had no checkpoint to use, so it stored one for the whole tree.
  EXPECT_EQ(ledger.ledger->snapshot().value().checkpoints().value().size(), 1u);
  Json again = receipt_for(kCommit);
  EXPECT_EQ(again["ledger"], bundle["ledger"]);
  EXPECT_EQ(ledger.ledger->snapshot().value().checkpoints().value().size(), 1u);

  // A commit after the newest checkpoint needs a new one.
  const std::string later = "1111111111111111111111111111111111111111";
  CommitRecord next = sample_commit(later);
  ledger.append_commit(next);
  Json fresh = receipt_for(later);
  EXPECT_EQ(fresh["ledger"]["tree_size"], 15);
  EXPECT_EQ(ledger.ledger->snapshot().value().checkpoints().value().size(), 2u);
  EXPECT_TRUE(verify_receipt(fresh, signer.verifier()));
}

TEST_F(ReceiptTest, FindsOnlyCommitRecordsOfThatCommit) {
  auto snap = ledger.ledger->snapshot().value();
  EXPECT_EQ(find_commit_record(snap, "2222222222222222222222222222222222222222").error().code, Errc::not_found);
  EXPECT_EQ(find_commit_record(snap, "0123456").error().code, Errc::invalid_argument);
  EXPECT_EQ(find_commit_record(snap, kCommit).value().record.seq, seq);
}

// A commit record anyone could have appended (`warden ledger append`) is not an acceptance:
// each of these is refused before anything is signed.
TEST_F(ReceiptTest, NoReceiptWithoutAnAcceptingDecision) {
  int n = 0;
  // Appends a commit record as `forge` makes it; expects make_receipt to refuse it naming `part`.
  auto expect_no_receipt = [&](const std::function<void(CommitRecord&)>& forge, const std::string& part) {
    CommitRecord c = sample_commit(std::string(39, 'a') + std::to_string(n++));
    forge(c);
    ledger.append(CommitRecord::kind, c.to_json());
    auto snap = ledger.ledger->snapshot().value();
    auto made = make_receipt(*ledger.ledger, find_commit_record(snap, c.commit).value(), signer);
    ASSERT_FALSE(made) << "signed a receipt for a commit record expected to fail on " << part;
    EXPECT_EQ(made.error().code, Errc::verification_failed) << made.error().message;
    EXPECT_NE(made.error().message.find(part), std::string::npos) << made.error().message;
  };
  // An accepting decision, but about something `edit` changed.
  auto decided_for = [&](const std::function<void(CommitRecord&)>& edit) {
    return [&, edit](CommitRecord& c) {
      CommitRecord other = c;
      edit(other);
      c.decision_seq = ledger.append("decision", decision_for(other, true));
    };
  };

  expect_no_receipt([](CommitRecord& c) { c.decision_seq = 2; },
                    "names decision_seq 2, a record of kind \"run_event\", not a decision; no receipt");
  expect_no_receipt([](CommitRecord& c) { c.decision_seq = 1000; }, "which is not an earlier record");
  expect_no_receipt([&](CommitRecord& c) { c.decision_seq = ledger.append("decision", decision_for(c, false)); },
                    "a decision that did not accept the proposal");
  expect_no_receipt(decided_for([](CommitRecord& o) { o.attempt = 1; }), "a decision whose attempt is 1, not 2");
  expect_no_receipt(decided_for([](CommitRecord& o) { o.step_id = "s3"; }), "step_id is \"s3\", not \"s2\"");
  expect_no_receipt(decided_for([](CommitRecord& o) { o.run_id = "run-000002"; }), "run_id");
  expect_no_receipt(decided_for([](CommitRecord& o) { o.plan_sha256 = sha256("other plan"); }), "plan_sha256");
  expect_no_receipt(decided_for([](CommitRecord& o) { o.policy_sha256 = sha256("lax"); }), "policy_sha256");
  expect_no_receipt(
      [&](CommitRecord& c) {
        Json decision = decision_for(c, true);
        decision.erase("plan_sha256");
        c.decision_seq = ledger.append("decision", decision);
      },
      "a decision without plan_sha256");
  // Nothing was signed for any of them: SetUp's checkpoint is still the only one.
  EXPECT_EQ(ledger.ledger->snapshot().value().checkpoints().value().size(), 1u);
}

TEST_F(ReceiptTest, RefusesASignerThatIsNotTheLedgers) {
  auto snap = ledger.ledger->snapshot().value();
  auto located = find_commit_record(snap, kCommit).value();
  auto made = make_receipt(*ledger.ledger, located, make_signer("warden.test/kernel"));
  ASSERT_FALSE(made);
  EXPECT_NE(made.error().message.find("not this ledger's checkpoint key"), std::string::npos);
}

TEST_F(ReceiptTest, RefusesAFlippedPayloadByte) {
  Json tampered = bundle;
  std::string payload = base64_decode(tampered["envelope"]["payload"].get<std::string>()).value();
  payload[payload.find("s2")] = 't';
  tampered["envelope"]["payload"] = base64_encode(payload);
  expect_refused(tampered, "DSSE signature");
}

TEST_F(ReceiptTest, RefusesAnotherKey) {
  NoteVerifier other = make_signer("warden.test/kernel").verifier();
  expect_refused(bundle, "DSSE signature", &other);
}

TEST_F(ReceiptTest, RefusesAChangedPredicateField) {
  expect_refused(resigned(bundle, [](Json& s) { s["predicate"]["step_id"] = "s3"; }), "predicate.step_id");
  expect_refused(resigned(bundle, [](Json& s) { s["predicate"]["policy_sha256"] = sha256("lax").str(); }),
                 "predicate.policy_sha256");
  expect_refused(resigned(bundle, [](Json& s) { s["subject"][1]["digest"]["gitTree"] = std::string(40, 'a'); }),
                 "subject[1].digest.gitTree");
  expect_refused(resigned(bundle, [](Json& s) { s["predicate"]["approved_by"] = "me"; }),
                 "predicate.approved_by is not part");
  expect_refused(resigned(bundle, [](Json& s) { s["predicateType"] = "https://slsa.dev/provenance/v1"; }),
                 "predicateType");
}

TEST_F(ReceiptTest, RefusesAnAlteredRecord) {
  Json payload_edit = bundle;
  payload_edit["ledger"]["record"]["payload"]["step_id"] = "s9";
  expect_refused(payload_edit, "ledger record: hashes to");
  Json ts_edit = bundle;
  ts_edit["ledger"]["record"]["ts"] = 1;
  expect_refused(ts_edit, "ledger record: hashes to");
  Json kind_edit = bundle;
  kind_edit["ledger"]["record"]["kind"] = "refusal";
  expect_refused(kind_edit, "ledger record");
}

TEST_F(ReceiptTest, RefusesAFlippedProofElement) {
  Json tampered = bundle;
  std::string element = tampered["ledger"]["inclusion_proof"][1];
  element[0] = element[0] == '0' ? '1' : '0';
  tampered["ledger"]["inclusion_proof"][1] = element;
  expect_refused(tampered, "inclusion proof");
  Json dropped = bundle;
  dropped["ledger"]["inclusion_proof"].erase(0);
  expect_refused(dropped, "inclusion proof");
}

TEST_F(ReceiptTest, RefusesACheckpointFromAnotherLedgerOrKey) {
  // Same key, another log of the same size: the signature holds, the root does not.
  TestLedger twin(signer, "twin");
  twin.filler(13);
  Json same_key = bundle;
  same_key["ledger"]["checkpoint"] = twin.ledger->checkpoint(signer).value().note;
  expect_refused(same_key, "inclusion proof");

  NoteSigner stranger = make_signer("warden.test/stranger");
  TestLedger other(stranger, "other");
  other.filler(13);
  Json other_key = bundle;
  other_key["ledger"]["checkpoint"] = other.ledger->checkpoint(stranger).value().note;
  expect_refused(other_key, "checkpoint signature");

  Json other_size = bundle;
  other_size["ledger"]["tree_size"] = 14;
  expect_refused(other_size, "tree size");
}

TEST_F(ReceiptTest, RefusesARecordAtAnotherSeq) {
  Json claimed = bundle;
  claimed["ledger"]["seq"] = seq + 1;
  expect_refused(claimed, "ledger seq");

  // Move the record and re-sign a consistent statement: only the proof can tell.
  Json moved = bundle;
  moved["ledger"]["record"]["seq"] = seq + 1;
  moved["ledger"]["seq"] = seq + 1;
  Record record = Record::from_canonical(canonicalize(moved["ledger"]["record"]).value()).value();
  moved = resigned(moved, [&](Json& s) {
    s["predicate"]["ledger"] = {{"seq", seq + 1}, {"record_hash", record.hash().hex()}};
  });
  expect_refused(moved, "inclusion proof");
}

TEST_F(ReceiptTest, RefusesAMalformedBundle) {
  Json wrong_format = bundle;
  wrong_format["format"] = "warden.receipt/v0";
  expect_refused(wrong_format, "format");
  Json missing = bundle;
  missing.erase("ledger");
  expect_refused(missing, "receipt.ledger: missing");
  expect_refused(Json::array(), "must be a JSON object");
}

}  // namespace
}  // namespace warden::kernel
