// decide(): one test per reason code on a small plan built in code, an accepted proposal,
// several reasons at once, determinism, checkpoints, and the content rules' function finder.
#include "kernel/judge/decide.h"

#include <gtest/gtest.h>

#include "kernel/judge/content_rules.h"
#include "diff/diff.h"

namespace warden::kernel {
namespace {

using Codes = std::vector<std::string>;

BuildStep make_step(std::string id, StepAction action, std::vector<std::string> targets,
                    std::vector<std::string> deps = {}, std::vector<std::string> symbols = {}) {
  BuildStep s;
  s.id = std::move(id);
  s.action = action;
  s.targets = std::move(targets);
  s.dependencies = std::move(deps);
  s.symbols = std::move(symbols);
  return s;
}

FileChange add_file(std::string path, std::string content) {
  FileChange f;
  f.op = FileOp::add;
  f.path = std::move(path);
  f.new_mode = kModeFile;
  f.after_sha256 = sha256(content);
  f.after_content = std::move(content);
  return f;
}

// A whole-file replacement of `before` by `after`.
FileChange modify_file(std::string path, const std::string& before, std::string after) {
  FileChange f;
  f.op = FileOp::modify;
  f.path = std::move(path);
  f.old_mode = f.new_mode = kModeFile;
  f.before_sha256 = sha256(before);
  f.after_sha256 = sha256(after);
  f.after_content = std::move(after);
  return f;
}

class Decide : public ::testing::Test {
 protected:
  void SetUp() override {
    plan.name = "calc";
    plan.allowed_paths = {"src/**", "tests/**", "requirements.txt", "setup.py", ".warden/**"};
    plan.steps = {
        make_step("s1", StepAction::create_module, {"src/calc/__init__.py"}),
        make_step("s2", StepAction::create_function, {"src/calc/ops.py"}, {"s1"}, {"add"}),
        make_step("s3", StepAction::create_test, {"tests/test_ops.py"}, {"s2"}, {"test_add"}),
        make_step("s4", StepAction::add_dependency, {"requirements.txt"}),
        make_step("s5", StepAction::modify, {"src/calc/ops.py"}, {"s2"}),
    };
    plan.invariants = {"no_dangerous_operations"};
    plan.checks = {CheckSpec::shell("tests", "python3 -m pytest -q")};
    policy.name = "python";
    policy.required_checks = {"tests"};
    policy.deny_paths = {"**/*.pem"};
    policy.protected_paths = {"tests/**"};
    policy.approval_paths = {"setup.py"};
    done = {"s1"};
    propose("s2", {add_file("src/calc/ops.py", kOps)}, {{"src/calc/ops.py", {}}});
  }

  // The proposal for `step_id` of `files` against `base`, and a run that passed everything
  // on exactly that diff.
  void propose(const std::string& step_id, std::vector<FileChange> files, std::map<std::string, BaseFileImage> base) {
    diff = Diff{step_id, std::move(files)};
    proposal = ProposalEvidence{step_id, diff.to_json(), std::move(base), std::nullopt, std::nullopt, std::nullopt};
    run = RunResult{};
    run.preflight.ok = true;
    run.diff_sha256 = diff.digest();
    CheckResult tests;
    tests.name = "tests";
    tests.verdict = kPassed;
    run.checks = {tests};
    run.invariants["no_dangerous_operations"] = InvariantVerdict{true, "invariant:no_dangerous_operations"};
  }

  Verdict verdict(bool with_run = true) {
    return decide(DecisionInput{plan, done, proposal, with_run ? &run : nullptr, policy});
  }
  Codes codes(bool with_run = true) { return verdict(with_run).reason_codes(); }
  std::string detail(std::string_view code) {
    for (const Reason& r : verdict().reasons) {
      if (r.code == code) return r.detail;
    }
    return "";
  }

  static constexpr const char* kOps = "def add(a, b):\n    return a + b\n";
  BuildPlan plan;
  Policy policy;
  std::set<std::string> done;
  Diff diff;
  ProposalEvidence proposal;
  RunResult run;
};

TEST_F(Decide, AcceptsAProposalThatPassesEveryRule) {
  Verdict v = verdict();
  EXPECT_TRUE(v.accepted);
  EXPECT_TRUE(v.reasons.empty()) << v.to_json().dump();
}

TEST_F(Decide, StepNotInPlanStopsThere) {
  propose("s9", {add_file("src/calc/ops.py", "eval(x)\n")}, {});
  EXPECT_EQ(codes(false), Codes{"step_not_in_plan"});
}

TEST_F(Decide, StepAlreadyCompleted) {
  done = {"s1", "s2"};
  EXPECT_EQ(codes(), Codes{"step_already_completed"});
}

TEST_F(Decide, EveryMissingDependencyIsNamed) {
  plan.steps[1].dependencies = {"s1", "s4"};
  done = {};
  EXPECT_EQ(codes(), (Codes{"dependency_not_satisfied:s1", "dependency_not_satisfied:s4"}));
}

TEST_F(Decide, MalformedDiffs) {
  proposal.diff["files"][0]["colour"] = "red";
  EXPECT_EQ(codes(), Codes{"malformed_diff"});
  EXPECT_NE(detail("malformed_diff").find("colour"), std::string::npos);

  propose("s2", {add_file("src/calc/ops.py", kOps)}, {});  // no base image of the path
  EXPECT_EQ(codes(), Codes{"malformed_diff"});
  EXPECT_NE(detail("malformed_diff").find("no base image of src/calc/ops.py"), std::string::npos);

}

// diff_sha256 is optional: the kernel computes the digest it records; a wrong one is refused.
TEST_F(Decide, AnAbsentDiffSha256IsComputedAndAWrongOneRefused) {
  proposal.diff.erase("diff_sha256");
  EXPECT_EQ(codes(), Codes{});
  proposal.diff["diff_sha256"] = sha256("another diff").str();
  EXPECT_EQ(codes(), Codes{"hash_mismatch"});
  EXPECT_NE(detail("hash_mismatch").find("does not match the diff's content"), std::string::npos);
}

// An executor that gave nothing is refused for why, as the evidence records it, not as a
// malformed diff for the null left in place of one.
TEST_F(Decide, AnExecutorThatGaveNothingIsRefusedForWhy) {
  proposal.diff = nullptr;
  for (auto [code, reason] : {std::pair{RefusalCode::executor_timeout, "executor_timeout"},
                              std::pair{RefusalCode::executor_failed, "executor_failed"}}) {
    proposal.executor_refusal = Refusal{code, "", "executor timed out after 2000 ms"};
    auto read_back = ProposalEvidence::from_json(proposal.to_json());
    ASSERT_TRUE(read_back) << read_back.error().message;
    EXPECT_EQ(read_back->executor_refusal->code, code);
    proposal = *read_back;
    Verdict v = verdict(false);
    EXPECT_EQ(v.reason_codes(), Codes{reason});
    EXPECT_EQ(v.reasons.at(0).detail, "executor timed out after 2000 ms");
  }
}

// What the build loop records when the executor gave no Diff: its raw text, or null.
TEST_F(Decide, ADiffThatIsNotAnObjectIsMalformed) {
  for (const Json& raw : {Json("I could not write this step"), Json(nullptr)}) {
    proposal.diff = raw;
    auto read_back = ProposalEvidence::from_json(proposal.to_json());
    ASSERT_TRUE(read_back) << read_back.error().message;
    proposal = *read_back;
    EXPECT_EQ(codes(), Codes{"malformed_diff"}) << raw.dump();
    EXPECT_EQ(codes(false), Codes{"malformed_diff"}) << raw.dump();
  }
}

TEST_F(Decide, HashMismatches) {
  // diff_sha256 no longer matches the content.
  proposal.diff["files"][0]["after_content"] = "def add(a, b):\n    return b + a\n";
  EXPECT_EQ(codes(), Codes{"hash_mismatch"});

  // The pre-image the diff claims is not the recorded base.
  done = {"s1", "s2"};
  propose("s5", {modify_file("src/calc/ops.py", "old\n", kOps)}, {{"src/calc/ops.py", {std::string("other\n")}}});
  EXPECT_EQ(codes(), Codes{"hash_mismatch"});
  EXPECT_NE(detail("hash_mismatch").find("hash_mismatch (src/calc/ops.py)"), std::string::npos);

  // The run tested some other diff.
  propose("s5", {modify_file("src/calc/ops.py", "old\n", kOps)}, {{"src/calc/ops.py", {std::string("old\n")}}});
  EXPECT_TRUE(verdict().accepted);
  run.diff_sha256 = sha256("another diff");
  EXPECT_EQ(codes(), Codes{"hash_mismatch"});
}

TEST_F(Decide, HunkThatDoesNotMatchItsPreImageIsAHashMismatch) {
  done = {"s1", "s2"};
  FileChange f;
  f.op = FileOp::modify;
  f.path = "src/calc/ops.py";
  f.old_mode = f.new_mode = kModeFile;
  f.before_sha256 = sha256("a\nb\n");
  f.after_sha256 = sha256("a\nc\n");
  f.hunks = {Hunk{1, 2, 1, 2, {" a\n", "-x\n", "+c\n"}}};
  propose("s5", {f}, {{"src/calc/ops.py", {std::string("a\nb\n")}}});
  EXPECT_EQ(codes(), Codes{"hash_mismatch"});
  EXPECT_NE(detail("hash_mismatch").find("hunk_mismatch"), std::string::npos);
}

TEST_F(Decide, DiffTooLarge) {
  policy.max_diff_bytes = 64;
  EXPECT_EQ(codes(), Codes{"diff_too_large"});
  policy.max_diff_bytes = 1 << 20;
  policy.max_files = 0;
  EXPECT_EQ(codes(), Codes{"diff_too_large"});
}

TEST_F(Decide, DiffTooLargeCountsWhatTheChangeRemovesAndWrites) {
  // A whole-content replacement carries only the new bytes; the old ones it removes count too,
  // as they would in a line diff (and as git's binary patch carries them, reversed).
  done = {"s1", "s2"};
  // What the two sides share at the start and the end is neither removed nor written.
  const std::string head(5000, 'h');
  propose("s5", {modify_file("src/calc/ops.py", head + "old\n" + head, head + "new!\n" + head)},
          {{"src/calc/ops.py", {head + "old\n" + head}}});
  policy.max_diff_bytes = canonicalize(proposal.diff)->size();
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();

  const std::string before(700, 'a'), after(700, 'b');
  propose("s5", {modify_file("src/calc/ops.py", before, after)}, {{"src/calc/ops.py", {before}}});
  const uint64_t json_bytes = canonicalize(proposal.diff)->size();
  ASSERT_LT(json_bytes, 1200u);
  policy.max_diff_bytes = 1200;
  EXPECT_EQ(codes(), Codes{"diff_too_large"});
  EXPECT_EQ(detail("diff_too_large"), "1400 bytes (the Diff's JSON is " + std::to_string(json_bytes) +
                                          " bytes; the change removes 700 and writes 700), the policy allows 1200");
  policy.max_diff_bytes = 1400;
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();

  // A removal removes its whole pre-image.
  FileChange gone;
  gone.op = FileOp::remove;
  gone.path = "src/calc/ops.py";
  gone.old_mode = kModeFile;
  gone.before_sha256 = sha256(std::string(2000, 'a'));
  plan.steps[4].action = StepAction::modify;
  propose("s5", {gone}, {{"src/calc/ops.py", {std::string(2000, 'a')}}});
  EXPECT_EQ(codes(), Codes{"diff_too_large"});
  policy.max_diff_bytes = 2000;
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
}

TEST_F(Decide, PathsOutsideThePlanOrPolicyAreNotAllowed) {
  plan.steps[3].targets = {"docs/req.txt"};
  propose("s4", {add_file("docs/req.txt", "numpy\n")}, {{"docs/req.txt", {}}});
  EXPECT_EQ(codes(), Codes{"path_not_allowed"});
  EXPECT_NE(detail("path_not_allowed").find("plan's allowed paths"), std::string::npos);

  plan.steps[3].targets = {"src/key.pem"};
  propose("s4", {add_file("src/key.pem", "secret\n")}, {{"src/key.pem", {}}});
  EXPECT_EQ(codes(), Codes{"path_not_allowed"});
  EXPECT_NE(detail("path_not_allowed").find("denied by policy python"), std::string::npos);

  policy.allow_paths = {"src/**"};
  plan.steps[3].targets = {"requirements.txt"};
  propose("s4", {add_file("requirements.txt", "numpy\n")}, {{"requirements.txt", {}}});
  EXPECT_EQ(codes(), Codes{"path_not_allowed"});
}

TEST_F(Decide, DenyProtectedAndApprovalGlobsIgnoreCase) {
  policy.deny_paths = {"**/*.pem", "**/.env", "**/stra\u00DFe.key", "**/\u03C3\u03AD\u03C1\u03B2\u03B5\u03C1", "**/\u043A\u043B\u044E\u0447"};
  plan.allowed_paths.clear();
  for (const char* path : {"src/Key.PEM", "src/.ENV", "src/.Env", "src/\u212Aey.pem", "src/STRASSE.KEY", "src/stra\u1E9Ee.key",
                           "src/\u03A3\u0388\u03A1\u0392\u0395\u03A1", "src/\u041A\u041B\u042E\u0427"}) {
    plan.steps[3].targets = {path};
    propose("s4", {add_file(path, "secret\n")}, {{path, {}}});
    EXPECT_EQ(codes(), Codes{"path_not_allowed"}) << path;
    EXPECT_NE(detail("path_not_allowed").find("denied by policy python"), std::string::npos) << path;
  }
  // A name that only looks alike stays allowed.
  plan.steps[3].targets = {"src/.envrc"};
  propose("s4", {add_file("src/.envrc", "x\n")}, {{"src/.envrc", {}}});
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();

  // Protected (tests/**) and approval (setup.py) globs fold too.
  done = {"s1", "s2"};
  propose("s5", {modify_file("src/calc/ops.py", "old\n", kOps), modify_file("TESTS/test_ops.py", "x\n", "y\n")},
          {{"src/calc/ops.py", {std::string("old\n")}}, {"TESTS/test_ops.py", {std::string("x\n")}}});
  Codes got = codes();
  EXPECT_NE(std::find(got.begin(), got.end(), "protected_path"), got.end()) << verdict().to_json().dump();
  plan.steps[3].targets = {"Setup.PY"};
  propose("s4", {modify_file("Setup.PY", "a\n", "b\n")}, {{"Setup.PY", {std::string("a\n")}}});
  got = codes();
  EXPECT_NE(std::find(got.begin(), got.end(), "approval_required"), got.end()) << verdict().to_json().dump();
}

TEST_F(Decide, GitAttributesThatTransformACheckoutAreRefused) {
  plan.allowed_paths.clear();
  auto attributes = [&](const std::string& path, const std::string& text, const std::optional<std::string>& before = {}) {
    plan.steps[3].targets = {path};
    if (before) propose("s4", {modify_file(path, *before, text)}, {{path, {*before}}});
    else propose("s4", {add_file(path, text)}, {{path, {}}});
  };
  for (const char* line : {"*.py ident", "*.txt eol=crlf", "* text=auto", "*.c text", "*.sh text eol=lf", "*.bin -text eol=crlf",
                           "*.dat filter=lfs diff=lfs merge=lfs -text", "*.txt working-tree-encoding=UTF-16LE", "*.bat crlf",
                           "*.in crlf=input", "[attr]mine ident", "\"a b.py\" ident"}) {
    attributes(".gitattributes", std::string("# a comment\n") + line + "\n");
    EXPECT_EQ(codes(), Codes{"checkout_transform"}) << line;
    EXPECT_NE(detail("checkout_transform").find(std::string(".gitattributes:2 `") + line + "`"), std::string::npos)
        << detail("checkout_transform");
  }
  EXPECT_NE(detail("checkout_transform").find("sets ident"), std::string::npos) << detail("checkout_transform");
  // At any depth, whatever the case of its name.
  attributes("src/sub/.gitattributes", "*.py ident\n");
  EXPECT_EQ(codes(), Codes{"checkout_transform"});
  attributes("src/.GitAttributes", "*.py ident\n");
  EXPECT_EQ(codes(), Codes{"checkout_transform"});
  // Harmless attributes, unsetting and unspecifying transform nothing.
  attributes(".gitattributes", "*.png binary\n*.min.js -diff linguist-generated\ndocs/** linguist-documentation export-ignore\n"
                               "*.c -text -crlf -ident -filter !eol\n*.txt diff=text merge=union\n");
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  // A line already in the base is not the proposal's doing; one it adds next to it is.
  attributes(".gitattributes", "* text=auto\n*.png binary\n", std::string("* text=auto\n"));
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  attributes(".gitattributes", "* text=auto\n*.py ident\n", std::string("* text=auto\n"));
  EXPECT_EQ(codes(), Codes{"checkout_transform"});
  EXPECT_NE(detail("checkout_transform").find(".gitattributes:2 `*.py ident`"), std::string::npos) << detail("checkout_transform");
  // A file that only looks like one is no attributes file.
  attributes("docs/gitattributes.txt", "*.py ident\n");
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
}

TEST_F(Decide, RunnerPathRefusalsAreNotAllowedPaths) {
  plan.allowed_paths.clear();
  plan.steps[3].targets = {"src/../x"};
  propose("s4", {add_file("src/../x", "x\n")}, {{"src/../x", {}}});
  EXPECT_EQ(codes(), Codes{"path_not_allowed"});
  EXPECT_NE(detail("path_not_allowed").find("path_traversal"), std::string::npos);

  plan.steps[3].targets = {"requirements.txt"};
  propose("s4", {add_file("requirements.txt", "x\n")}, {{"requirements.txt", {}}});
  EXPECT_TRUE(verdict().accepted);
  proposal.workspace_refusal = Refusal{RefusalCode::path_case_collision, "requirements.txt", "differs only by case"};
  EXPECT_EQ(codes(), Codes{"path_not_allowed"});
}

TEST_F(Decide, ProtectedPathsNeedAStepThatTargetsThem) {
  done = {"s1", "s2"};
  std::string test = "def test_add():\n    assert True\n";
  propose("s5", {modify_file("src/calc/ops.py", "old\n", kOps), modify_file("tests/test_ops.py", "x\n", test)},
          {{"src/calc/ops.py", {std::string("old\n")}}, {"tests/test_ops.py", {std::string("x\n")}}});
  EXPECT_EQ(codes(), (Codes{"content_mismatch", "protected_path", "test_modified"}));

  // A step that targets the test may write it.
  propose("s3", {add_file("tests/test_ops.py", test)}, {{"tests/test_ops.py", {}}});
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();

  // An existing protected file stays as it is even for a step that names it: the targets of a
  // plan from an executor (or of `warden propose`) come from the very proposal being judged.
  plan.steps[2].targets.push_back("tests/test_ops.py");
  propose("s3", {add_file("tests/test_new.py", test), modify_file("tests/test_ops.py", "x\n", test)},
          {{"tests/test_new.py", {}}, {"tests/test_ops.py", {std::string("x\n")}}});
  Codes got = codes();
  EXPECT_NE(std::find(got.begin(), got.end(), "protected_path"), got.end()) << verdict().to_json().dump();

  // .warden never, whatever the step targets.
  plan.steps[3].targets = {".warden/state"};
  propose("s4", {add_file(".warden/state", "x\n")}, {{".warden/state", {}}});
  EXPECT_EQ(codes(), Codes{"protected_path"});
}

TEST_F(Decide, ApprovalRequired) {
  plan.steps[3].targets = {"setup.py"};
  propose("s4", {modify_file("setup.py", "a\n", "b\n")}, {{"setup.py", {std::string("a\n")}}});
  EXPECT_EQ(codes(), Codes{"approval_required"});
}

TEST_F(Decide, ContentMismatches) {
  // Touching a path that is not a target.
  propose("s2", {add_file("src/calc/ops.py", kOps), add_file("src/calc/extra.py", "x = 1\n")},
          {{"src/calc/ops.py", {}}, {"src/calc/extra.py", {}}});
  EXPECT_EQ(codes(), Codes{"content_mismatch"});
  EXPECT_NE(detail("content_mismatch").find("src/calc/extra.py is not a target of step s2"), std::string::npos);

  // create_function must create its file, and define its function.
  propose("s2", {modify_file("src/calc/ops.py", "x\n", "def sub(a, b):\n    return a - b\n")},
          {{"src/calc/ops.py", {std::string("x\n")}}});
  EXPECT_EQ(codes(), Codes{"content_mismatch"});
  std::string d = detail("content_mismatch");
  EXPECT_NE(d.find("creates new files; the diff does modify"), std::string::npos) << d;
  EXPECT_NE(d.find("function add is not defined"), std::string::npos) << d;

  // add_dependency touches its manifest only.
  propose("s4", {add_file("requirements.txt", "numpy\n"), add_file("src/x.py", "")},
          {{"requirements.txt", {}}, {"src/x.py", {}}});
  EXPECT_NE(detail("content_mismatch").find("exactly one file"), std::string::npos);

  // The diff names another step than the proposal.
  propose("s2", {add_file("src/calc/ops.py", kOps)}, {{"src/calc/ops.py", {}}});
  proposal.diff = Diff{"s1", diff.files}.to_json();
  run.diff_sha256 = Diff{"s1", diff.files}.digest();
  EXPECT_EQ(codes(), Codes{"content_mismatch"});
}

TEST_F(Decide, ExactContentOnlyWhenThePolicyAsksForIt) {
  plan.steps[1].content = FileContents{{"src/calc/ops.py", "def add(a, b):\n    return a+b\n"}};
  EXPECT_TRUE(verdict().accepted);
  policy.exact_content = true;
  EXPECT_EQ(codes(), Codes{"content_mismatch"});
  EXPECT_NE(detail("content_mismatch").find("exact content at line 2"), std::string::npos);
  plan.steps[1].content = FileContents{{"src/calc/ops.py", kOps}};
  EXPECT_TRUE(verdict().accepted);
}

TEST_F(Decide, DangerousOperationDetected) {
  propose("s2", {add_file("src/calc/ops.py", "import os\ndef add(a, b):\n    return eval(f'{a}+{b}')\n")},
          {{"src/calc/ops.py", {}}});
  EXPECT_EQ(codes(), Codes{"dangerous_operation_detected"});
  EXPECT_EQ(detail("dangerous_operation_detected"), "src/calc/ops.py:3 py.eval `return eval(f'{a}+{b}')`");
  policy.dangerous_operations = false;
  EXPECT_TRUE(verdict().accepted);
}

TEST_F(Decide, DangerousOperationsAreJudgedOnWhatTheChangeIntroduces) {
  done = {"s1", "s2"};
  const std::string before = "import os\n\n\ndef add(a, b):\n    return eval(f'{a}+{b}')\n";
  // Re-indented into a block and moved below a new line: the same one eval.
  const std::string moved = "import os\n\n\ndef add(a, b):\n    total = None\n    if total is None:\n        return eval(f'{a}+{b}')\n";
  propose("s5", {modify_file("src/calc/ops.py", before, moved)}, {{"src/calc/ops.py", {before}}});
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  // A second eval and a shell-out are new, each named at its line.
  const std::string grown = moved + "\n\ndef run(c):\n    os.system(c)\n    return eval(c)\n";
  propose("s5", {modify_file("src/calc/ops.py", before, grown)}, {{"src/calc/ops.py", {before}}});
  EXPECT_EQ(codes(), Codes{"dangerous_operation_detected"});
  EXPECT_EQ(detail("dangerous_operation_detected"),
            "src/calc/ops.py:11 py.os_system `os.system(c)`; src/calc/ops.py:12 py.eval `return eval(c)`");
}

TEST_F(Decide, ARenamedFileKeepsItsCallsACopyDoesNot) {
  done = {"s1", "s2"};
  const std::string content = "import os\n\n\ndef add(a, b):\n    return os.system('true')\n";
  plan.steps[4].targets = {"src/calc/ops.py", "src/calc/arith.py"};
  FileChange rename;
  rename.op = FileOp::rename;
  rename.path = "src/calc/arith.py";
  rename.old_path = "src/calc/ops.py";
  rename.old_mode = rename.new_mode = kModeFile;
  rename.before_sha256 = rename.after_sha256 = sha256(content);
  propose("s5", {rename}, {{"src/calc/ops.py", {content}}, {"src/calc/arith.py", {}}});
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  FileChange copy = rename;
  copy.op = FileOp::copy;
  propose("s5", {copy}, {{"src/calc/ops.py", {content}}, {"src/calc/arith.py", {}}});
  EXPECT_EQ(detail("dangerous_operation_detected"), "src/calc/arith.py:5 py.os_system `return os.system('true')`");
}

TEST_F(Decide, LintRulesRunOnlyWhenThePolicyNamesThem) {
  done = {"s1", "s2"};
  plan.allowed_paths.push_back("native/**");
  plan.steps[4].targets = {"native/fmt.c"};
  const std::string before = "void fmt(char* b, int n) {\n}\n";
  const std::string after = "#include <stdio.h>\nvoid fmt(char* b, int n) {\n  sprintf(b, \"%d\", n);\n}\n";
  propose("s5", {modify_file("native/fmt.c", before, after)}, {{"native/fmt.c", {before}}});
  EXPECT_TRUE(verdict().accepted) << verdict().to_json().dump();
  policy.dangerous_operation_rules = {"c.sprintf"};
  EXPECT_EQ(detail("dangerous_operation_detected"), "native/fmt.c:3 c.sprintf `sprintf(b, \"%d\", n);`");
  policy.dangerous_operation_rules = {"unbounded_buffer"};
  EXPECT_EQ(codes(), Codes{"dangerous_operation_detected"});
}

TEST_F(Decide, WithoutPostImagesTheAddedLinesAreScanned) {
  // The hunk does not apply to the recorded base: the added line is judged alone.
  done = {"s1", "s2"};
  FileChange f;
  f.op = FileOp::modify;
  f.path = "src/calc/ops.py";
  f.old_mode = f.new_mode = kModeFile;
  f.before_sha256 = sha256("a\nb\n");
  f.after_sha256 = sha256("a\neval(b)\n");
  f.hunks = {Hunk{1, 2, 1, 2, {" a\n", "-x\n", "+eval(b)\n"}}};
  propose("s5", {f}, {{"src/calc/ops.py", {std::string("a\nb\n")}}});
  EXPECT_EQ(codes(), (Codes{"dangerous_operation_detected", "hash_mismatch"}));
  EXPECT_EQ(detail("dangerous_operation_detected"), "src/calc/ops.py:2 py.eval `eval(b)`");
}

TEST_F(Decide, APatchThatDidNotApplyIsRefusedForWhatThePatchSaid) {
  done = {"s1", "s2"};
  propose("s5", {}, {});
  proposal.diff = "diff --git a/src/calc/ops.py b/src/calc/ops.py\n...";
  proposal.patch_refusal = Refusal{RefusalCode::hunk_mismatch, "src/calc/ops.py", "hunk 1 (@@ -5,3): line 5 does not match"};
  EXPECT_EQ(codes(false), Codes{"hash_mismatch"});
  EXPECT_EQ(detail("hash_mismatch"), "hunk_mismatch (src/calc/ops.py): hunk 1 (@@ -5,3): line 5 does not match");
  proposal.patch_refusal = Refusal{RefusalCode::malformed_patch, "", "line 3: a hunk header was expected"};
  EXPECT_EQ(codes(false), Codes{"malformed_diff"});
  EXPECT_EQ(detail("malformed_diff").find("diff: must be a JSON object"), std::string::npos) << detail("malformed_diff");
  // Long or binary text is not kept; the refusal still is.
  proposal.diff = nullptr;
  proposal.patch_refusal = Refusal{RefusalCode::hash_mismatch, "a.c", "the patch's index line names blob ca82, the base has d7c7"};
  EXPECT_EQ(codes(false), Codes{"hash_mismatch"});
}

TEST_F(Decide, RequiredChecksFailed) {
  run.checks[0].verdict = kFailed;
  EXPECT_EQ(codes(), Codes{"required_checks_failed"});
  EXPECT_EQ(detail("required_checks_failed"), "tests: failed");
  run.checks.clear();
  EXPECT_EQ(detail("required_checks_failed"), "tests: not run");
}

TEST_F(Decide, NoRunIsAFailureOnlyWhenNothingElseExplainsIt) {
  EXPECT_EQ(codes(false), Codes{"required_checks_failed"});
  EXPECT_NE(verdict(false).reasons[0].detail.find("not run"), std::string::npos);
  done = {};
  EXPECT_EQ(codes(false), Codes{"dependency_not_satisfied:s1"});
}

TEST_F(Decide, InvariantsOfPlanAndStepMustBeProven) {
  plan.steps[1].invariants = {"type_hints_required"};
  EXPECT_EQ(codes(), Codes{"invariant_not_proven:type_hints_required"});
  run.invariants["type_hints_required"] = InvariantVerdict{false, "invariant:type_hints_required"};
  EXPECT_EQ(detail("invariant_not_proven:type_hints_required"), "check invariant:type_hints_required did not prove it");
  // Only the policy's program speaks for an invariant, whatever another check claims.
  run.invariants["type_hints_required"] = InvariantVerdict{true, "plan-check"};
  EXPECT_EQ(codes(), Codes{"invariant_not_proven:type_hints_required"});
  run.invariants["type_hints_required"] = InvariantVerdict{true, "invariant:type_hints_required"};
  run.invariants.erase("no_dangerous_operations");
  EXPECT_EQ(codes(), Codes{"invariant_not_proven:no_dangerous_operations"});
}

TEST_F(Decide, SandboxUnavailable) {
  run.preflight.ok = false;
  run.preflight.checks = {PreflightCheck{"seccomp", false, "Seccomp is 0"}};
  EXPECT_EQ(codes(), Codes{"sandbox_unavailable"});
}

TEST_F(Decide, ACheckpointIsCheckedByTheStepThatCompletesIt) {
  plan.verification_checkpoints = {VerificationCheckpoint{"final", {"s1", "s2"}, {"lint"}, {"all_functions_have_tests"}}};
  EXPECT_EQ(codes(), (Codes{"invariant_not_proven:all_functions_have_tests", "required_checks_failed"}));
  EXPECT_EQ(detail("required_checks_failed"), "lint: not run");
  // A checkpoint waiting for a step still to come is not due yet.
  plan.verification_checkpoints[0].after = {"s1", "s2", "s3"};
  EXPECT_TRUE(verdict().accepted);
}

TEST_F(Decide, EveryFailingReasonIsGivenSortedByCode) {
  done = {};
  propose("s2",
          {add_file("src/calc/ops.py", "def sub(a, b):\n    return os.system('x')\n"), add_file("tests/t.py", "")},
          {{"src/calc/ops.py", {}}, {"tests/t.py", {}}});
  run.checks[0].verdict = kTimeout;
  EXPECT_EQ(codes(), (Codes{"content_mismatch", "dangerous_operation_detected", "dependency_not_satisfied:s1",
                            "protected_path", "required_checks_failed"}));
}

TEST_F(Decide, SameInputsGiveTheSameBytes) {
  done = {};
  run.checks[0].verdict = kFailed;
  auto first = canonicalize(verdict().to_json());
  auto second = canonicalize(verdict().to_json());
  ASSERT_TRUE(first && second);
  EXPECT_EQ(*first, *second);
}

TEST_F(Decide, RunResultReadBackFromJson) {
  run.tree = std::string(40, 'a');
  auto parsed = RunResult::from_json(run.to_json());
  ASSERT_TRUE(parsed) << parsed.error().message;
  Verdict v = decide(DecisionInput{plan, done, proposal, &*parsed, policy});
  EXPECT_TRUE(v.accepted) << v.to_json().dump();
}

TEST(ContentRules, PythonDefinitions) {
  auto names = defined_functions("m.py",
                                 "def a(x):\n"
                                 "    async def b():\n"
                                 "class C:\n"
                                 "    def  c (self):\n"
                                 "# def d(x):\n"
                                 "s = '''\n"
                                 "def e():\n"
                                 "'''\n"
                                 "define(x)\n"
                                 "def test_f():\n");
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::set<std::string>{"a", "b", "c", "test_f"}));
}

TEST(ContentRules, CDefinitions) {
  auto names = defined_functions("m.cc",
                                 "int add(int a, int b) {\n"
                                 "  if (check(a)) { return mul(a, b); }\n"
                                 "  return sub(a, b);\n"
                                 "}\n"
                                 "int proto(int);\n"
                                 "static const char*\n"
                                 "name(void)\n"
                                 "{ return \"f(x) {\"; }\n"
                                 "// int commented(void) {\n"
                                 "int Calc::total(int x) const noexcept {\n"
                                 "  while (more(x)) { x = step(x); }\n"
                                 "}\n"
                                 "TEST(CalcTest, Adds) {\n"
                                 "}\n");
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, (std::set<std::string>{"add", "name", "total", "Calc::total", "TEST", "Adds", "CalcTest.Adds"}));
  EXPECT_FALSE(defined_functions("notes.txt", "def a():"));
}

}  // namespace
}  // namespace warden::kernel
