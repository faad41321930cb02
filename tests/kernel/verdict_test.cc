// Verdict, RefusalReport and ProposalEvidence JSON: lossless round trips and strict reading;
// suggestions per reason code.
#include "kernel/judge/verdict.h"

#include <gtest/gtest.h>

#include "kernel/judge/decide.h"

namespace warden::kernel {
namespace {

Verdict refused() {
  return Verdict{false, {{"dependency_not_satisfied:s1", "step s2 depends on s1"}, {"hash_mismatch", "pre-image"}}};
}

TEST(Verdict, RoundTrips) {
  for (const Verdict& v : {refused(), Verdict{true, {}}}) {
    auto back = Verdict::from_json(v.to_json());
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(refused().reason_codes(), (std::vector<std::string>{"dependency_not_satisfied:s1", "hash_mismatch"}));
  EXPECT_EQ(refused().to_json().dump(),
            R"({"accepted":false,"reasons":[{"code":"dependency_not_satisfied:s1","detail":"step s2 depends on s1"},)"
            R"({"code":"hash_mismatch","detail":"pre-image"}]})");
}

TEST(Verdict, ReadsStrictly) {
  auto error = [](Json j) {
    auto v = Verdict::from_json(j);
    return v ? std::string("accepted") : v.error().message;
  };
  Json good = refused().to_json();
  Json j = good;
  j["extra"] = 1;
  EXPECT_EQ(error(j), "verdict.extra: unknown field");
  j = good;
  j["accepted"] = true;
  EXPECT_EQ(error(j), "verdict.accepted: an accepted verdict has no reasons");
  j = good;
  std::swap(j["reasons"][0], j["reasons"][1]);
  EXPECT_EQ(error(j), "verdict.reasons[1].code: reasons must be sorted by code, each once");
  j = good;
  j["reasons"][0].erase("detail");
  EXPECT_EQ(error(j), "verdict.reasons[0].detail: missing");
  EXPECT_EQ(error(Json{{"accepted", false}, {"reasons", Json::array()}}),
            "verdict.accepted: a refusal needs at least one reason");
}

TEST(RefusalReport, RoundTripsAndReadsStrictly) {
  RefusalReport r;
  r.run_id = "run-1";
  r.seed_sha256 = sha256("plan");
  r.step_id = "s2";
  r.attempt = 2;
  r.reasons = refused().reasons;
  r.evidence = {sha256("proposal"), sha256("run")};
  for (const Reason& reason : r.reasons) r.policy_suggestions.push_back(suggestion_for(reason));
  auto back = RefusalReport::from_json(r.to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->to_json(), r.to_json());

  Json bad = r.to_json();
  bad["evidence"][1] = "sha256:xyz";
  EXPECT_EQ(RefusalReport::from_json(bad).error().message, "refusal_report.evidence: [1] must be sha256:<64 hex>");
  bad = r.to_json();
  bad["attempt"] = 0;
  EXPECT_FALSE(RefusalReport::from_json(bad));
}

TEST(Suggestions, OnePerCodeWithPrefixCodes) {
  EXPECT_EQ(suggestion_for({"dependency_not_satisfied:s1", ""}), "wait until step s1 is completed, then propose again");
  EXPECT_EQ(suggestion_for({"invariant_not_proven:no_import_cycles", "cycle a -> b"}),
            "make the change satisfy invariant no_import_cycles (cycle a -> b)");
  EXPECT_EQ(suggestion_for({"path_not_allowed", "x.pem is denied"}), "touch only paths the plan and policy allow (x.pem is denied)");
  std::set<std::string> distinct;
  for (std::string_view code : {reason::step_not_in_plan, reason::step_already_completed, reason::malformed_diff,
                                reason::hash_mismatch, reason::content_mismatch, reason::path_not_allowed,
                                reason::protected_path, reason::approval_required, reason::diff_too_large,
                                reason::required_checks_failed, reason::dangerous_operation_detected,
                                reason::sandbox_unavailable}) {
    distinct.insert(suggestion_for({std::string(code), ""}));
  }
  EXPECT_EQ(distinct.size(), 12u);
}

ProposalEvidence evidence() {
  ProposalEvidence p;
  p.step_id = "s1";
  p.diff = Json{{"step_id", "s1"}, {"files", Json::array()}};
  p.base["src/a.py"] = BaseFileImage{std::string("print('hi')\n"), 0100644};
  p.base["bin/tool"] = BaseFileImage{std::string("\x7f" "ELF\xff\x00", 6), 0100755};
  p.base["new.py"] = BaseFileImage{std::nullopt, 0100644};
  p.workspace_refusal = Refusal{RefusalCode::path_case_collision, "A.py", "differs only by case from a.py"};
  return p;
}

TEST(ProposalEvidence, RoundTripsTextBinaryAndAbsentContent) {
  ProposalEvidence p = evidence();
  Json j = p.to_json();
  EXPECT_EQ(j["base"]["src/a.py"], (Json{{"content", "print('hi')\n"}, {"mode", "100644"}}));
  EXPECT_EQ(j["base"]["bin/tool"], (Json{{"content_base64", "f0VMRv8A"}, {"mode", "100755"}}));
  EXPECT_EQ(j["base"]["new.py"], (Json{{"content", nullptr}, {"mode", "100644"}}));
  auto back = ProposalEvidence::from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->step_id, p.step_id);
  EXPECT_EQ(back->diff, p.diff);
  EXPECT_EQ(back->base, p.base);
  ASSERT_TRUE(back->workspace_refusal);
  EXPECT_EQ(back->workspace_refusal->message(), p.workspace_refusal->message());

  p.workspace_refusal.reset();
  back = ProposalEvidence::from_json(p.to_json());
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->workspace_refusal);
}

// The build loop records the executor's raw text (a string) when it was neither a Diff nor a
// patch, and null when the executor failed; replay must read those back as they were.
TEST(ProposalEvidence, RoundTripsADiffThatIsNotAnObject) {
  for (const Json& diff : {Json("not a diff"), Json(nullptr), Json::array({1, 2})}) {
    ProposalEvidence p = evidence();
    p.diff = diff;
    auto back = ProposalEvidence::from_json(p.to_json());
    ASSERT_TRUE(back) << diff.dump() << ": " << back.error().message;
    EXPECT_EQ(back->diff, diff);
    EXPECT_EQ(back->to_json(), p.to_json());
  }
  Json missing = evidence().to_json();
  missing.erase("diff");
  EXPECT_EQ(ProposalEvidence::from_json(missing).error().message, "proposal.diff: missing");
}

TEST(ProposalEvidence, ReadsStrictly) {
  auto error = [](const Json& j) {
    auto p = ProposalEvidence::from_json(j);
    return p ? std::string("accepted") : p.error().message;
  };
  Json good = evidence().to_json();
  Json j = good;
  j["base"]["src/a.py"]["content_base64"] = "AA==";
  EXPECT_EQ(error(j), "proposal.base[\"src/a.py\"]: needs exactly one of content and content_base64");
  j = good;
  j["base"]["src/a.py"] = Json{{"content_base64", "aGk="}, {"mode", "100644"}};
  EXPECT_EQ(error(j), "proposal.base[\"src/a.py\"].content_base64: holds UTF-8 text, which goes in content");
  j = good;
  j["base"]["src/a.py"]["mode"] = "644";
  EXPECT_NE(error(j).find("mode"), std::string::npos);
  j = good;
  j.erase("workspace_refusal");
  EXPECT_EQ(error(j), "proposal.workspace_refusal: missing");
  j = good;
  j["workspace_refusal"]["why"] = "x";
  EXPECT_EQ(error(j), "proposal.workspace_refusal.why: unknown field");
  j = good;
  j["patch_refusal"] = nullptr;
  EXPECT_EQ(error(j), "proposal.patch_refusal: must be an object") << "none is spelled by its absence";
  j["patch_refusal"] = {{"code", "no_such_code"}, {"path", ""}, {"detail", ""}};
  EXPECT_EQ(error(j), "proposal.patch_refusal.code: unknown refusal code \"no_such_code\"");
}

// A patch that did not become a Diff keeps its refusal beside its text; evidence without one
// has no patch_refusal field at all, so it is byte for byte what it was before the field was.
TEST(ProposalEvidence, RoundTripsAPatchRefusalAndOmitsNone) {
  ProposalEvidence p = evidence();
  EXPECT_FALSE(p.to_json().contains("patch_refusal"));
  p.diff = "diff --git a/a.c b/a.c\n...";
  p.patch_refusal = Refusal{RefusalCode::hunk_mismatch, "a.c", "hunk 1 (@@ -5,3): line 5 does not match"};
  Json j = p.to_json();
  EXPECT_EQ(j["patch_refusal"], (Json{{"code", "hunk_mismatch"}, {"path", "a.c"}, {"detail", "hunk 1 (@@ -5,3): line 5 does not match"}}));
  auto back = ProposalEvidence::from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_TRUE(back->patch_refusal);
  EXPECT_EQ(back->patch_refusal->message(), "hunk_mismatch (a.c): hunk 1 (@@ -5,3): line 5 does not match");
  EXPECT_EQ(back->to_json(), j);
}

}  // namespace
}  // namespace warden::kernel
