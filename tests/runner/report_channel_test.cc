// The authenticated report channel and the passed-tests file, end to end through LocalRunner
// on a real git repository and the real sandbox: a check that declares an authenticated
// report gets a nonce pipe and a report descriptor; only a report whose last line is a right
// HMAC-SHA256 over the rest is parsed (missing, truncated, wrong MAC and trailing bytes all
// fail with a report_detail saying why), stdout never counts, and what is recorded does not
// depend on the nonce. A check that declares tests_from reads the passed ids of the named
// earlier checks from a sealed read-only file.
#include <gtest/gtest.h>

#include "common/encoding.h"
#include "runner/model/check_spec.h"
#include "runner/check/local_runner.h"
#include "runner/check/report_channel.h"
#include "tests/support/git_fixture.h"
#include "tests/support/sandbox_support.h"

namespace warden::test {
namespace {

const ReportNonce kNonce = [] {
  ReportNonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(i * 7 + 1);
  return n;
}();

constexpr std::string_view kBody = "TAP version 13\n1..2\nok 1 - a\nok 2 - b\n";

std::string mac_line(const ReportNonce& nonce, std::string_view body) {
  return std::string(kReportMacPrefix) + report_mac(nonce, body) + "\n";
}

TEST(VerifyReport, OnlyARightMacAsTheLastLineAuthenticatesTheBody) {
  const std::string right = std::string(kBody) + mac_line(kNonce, kBody);
  ChannelReport ok = verify_report(right, kNonce);
  EXPECT_EQ(ok.status, ChannelReport::Status::authenticated) << ok.detail;
  EXPECT_EQ(ok.body, kBody);

  EXPECT_EQ(verify_report("", kNonce).status, ChannelReport::Status::missing);
  ReportNonce other = kNonce;
  other[0] ^= 1;
  auto refused = [](std::string_view report, const ReportNonce& nonce) {
    ChannelReport r = verify_report(report, nonce);
    EXPECT_EQ(r.status, ChannelReport::Status::unauthenticated) << report;
    EXPECT_TRUE(r.body.empty());
    return r.detail;
  };
  EXPECT_NE(refused(right, other).find("does not verify"), std::string::npos);  // wrong key
  EXPECT_NE(refused(kBody, kNonce).find("does not end with its MAC line"), std::string::npos);  // no MAC at all
  EXPECT_NE(refused(right.substr(0, right.size() - 1), kNonce).find("does not end with its MAC line"), std::string::npos);
  EXPECT_NE(refused(right.substr(0, right.size() - 10) + "\n", kNonce).find("does not verify"), std::string::npos);
  EXPECT_NE(refused("ok 3 - injected\n" + right, kNonce).find("does not verify"), std::string::npos);
  EXPECT_NE(refused(right + "ok 3 - appended\n", kNonce).find("does not end with its MAC line"), std::string::npos);
  EXPECT_NE(refused(right + right, kNonce).find("does not verify"), std::string::npos);
  // A MAC line alone authenticates the empty body only.
  EXPECT_EQ(verify_report(mac_line(kNonce, ""), kNonce).status, ChannelReport::Status::authenticated);
}

TEST(VerifyReport, RandomNoncesAreFreshAndMacsAreHmacSha256) {
  auto a = random_nonce(), b = random_nonce();
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  // A vector computed independently, as run_tests.py computes it: python3 -c 'import hmac;
  // print(hmac.new(bytes(range(32)), b"what do ya want for nothing?", "sha256").hexdigest())'.
  ReportNonce key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(report_mac(key, "what do ya want for nothing?"), "099805f4ac310786968565c098db515cc50862b420ae31e20238312344bed36a");
}

TEST(CheckSpecChannel, AuthenticatedReportAndTestsFromAreValidatedAndOnlyInTheDigestWhenSet) {
  auto spec = CheckSpec::from_json(parse_json(R"({"name":"t","argv":["x"],"report_format":"tap",
      "authenticated_report":true,"tests_from":["u"]})").value());
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->authenticated_report);
  EXPECT_EQ(spec->tests_from, std::vector<std::string>{"u"});
  EXPECT_EQ(CheckSpec::from_json(spec->to_json())->digest(), spec->digest());
  CheckSpec plain = CheckSpec::shell("t", "true");
  EXPECT_FALSE(plain.to_json().contains("authenticated_report"));
  EXPECT_FALSE(plain.to_json().contains("tests_from"));
  auto refused = [](const char* text) { return CheckSpec::from_json(parse_json(text).value()).error().message; };
  EXPECT_NE(refused(R"({"name":"t","argv":["x"],"authenticated_report":true})").find("needs a report_format"), std::string::npos);
  EXPECT_NE(refused(R"({"name":"t","argv":["x"],"report_format":"tap","report_path":"r.tap","authenticated_report":true})")
                .find("not a file"),
            std::string::npos);
  EXPECT_NE(refused(R"({"name":"t","argv":["x"],"tests_from":["t"]})").find("must name other checks"), std::string::npos);
}

class ReportChannelRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("a.txt", "alpha\n");
    auto commit = repo_.commit_all("base");
    auto git = GitRepo::open(repo_.repo());
    ASSERT_TRUE(git);
    git_.emplace(std::move(*git));
    tree_ = *git_->tree_of(*git_->resolve_commit(commit));
    auto cache = ScratchDir::create("/tmp", "warden-channel-test-", 0711);
    ASSERT_TRUE(cache);
    cache_.emplace(std::move(*cache));
  }

  LocalRunner make_runner(NonceSource nonces = [] { return Result<ReportNonce>(kNonce); }) {
    RunnerOptions o;
    o.cache_dir = cache_->path() / "cache";
    o.use_cache = false;
    o.nonce_source = std::move(nonces);
    auto r = LocalRunner::create(test_profile(), o);
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
  }

  RunResult run(LocalRunner& runner, std::vector<CheckSpec> checks) {
    RunRequest req;
    req.base_tree = tree_;
    req.tree = tree_;
    req.checks = std::move(checks);
    auto out = runner.run(*git_, req);
    if (!out) throw std::runtime_error(out.error().message());
    return std::move(out->result);
  }

  // A shell check with an authenticated TAP report.
  static CheckSpec channel_check(const std::string& name, const std::string& command) {
    CheckSpec c = CheckSpec::shell(name, command);
    c.report_format = "tap";
    c.authenticated_report = true;
    return c;
  }

  // printf's format for `bytes` (octal escapes: no shell quoting questions).
  static std::string printf_format(std::string_view bytes) {
    std::string out;
    char buf[8];
    for (unsigned char ch : bytes) {
      std::snprintf(buf, sizeof buf, "\\%03o", ch);
      out += buf;
    }
    return out;
  }

  static std::string write_report(std::string_view report) {
    return "printf '" + printf_format(report) + "' >&$WARDEN_REPORT_FD";
  }

  GitRepoFixture repo_;
  std::optional<GitRepo> git_;
  ObjectId tree_;
  std::optional<ScratchDir> cache_;
};

TEST_F(ReportChannelRunTest, ARightMacPassesAndTheRecordedRunDoesNotDependOnTheNonce) {
  LocalRunner runner = make_runner();
  // The nonce arrives on its pipe, exactly 32 bytes and then EOF; the variables name numbers.
  const std::string report = std::string(kBody) + mac_line(kNonce, kBody);
  RunResult r = run(runner, {channel_check("right", "od -An -tx1 -v <&$WARDEN_NONCE_FD | tr -d ' \\n' >&2; " +
                                                        write_report(report) + "; echo 'not ok 1 - stdout is not the report'")});
  const CheckRun& run0 = r.checks.at(0).runs.at(0);
  EXPECT_EQ(r.checks.at(0).verdict, kPassed) << run0.report << ": " << run0.report_detail << run0.err.head;
  EXPECT_EQ(run0.report, "parsed");
  EXPECT_EQ(run0.tests, (std::vector<TestCase>{{"a", "passed"}, {"b", "passed"}}));
  EXPECT_EQ(run0.err.head, to_hex(std::span<const uint8_t>(kNonce)));

  // A check that signs its own report with whatever nonce it is given: the same recorded run
  // under two nonces, byte for byte.
  CheckSpec signer = channel_check(
      "signer",
      "python3 -c 'import hmac, os, sys; key = os.read(int(os.environ[\"WARDEN_NONCE_FD\"]), 64); "
      "body = b\"TAP version 13\\n1..1\\nok 1 - signed\\n\"; "
      "os.write(int(os.environ[\"WARDEN_REPORT_FD\"]), body + b\"# warden-report-hmac-sha256: \" + "
      "hmac.new(key, body, \"sha256\").hexdigest().encode() + b\"\\n\")'");
  ReportNonce other = kNonce;
  other[31] ^= 0xff;
  LocalRunner runner2 = make_runner([other] { return Result<ReportNonce>(other); });
  RunResult r1 = run(runner, {signer});
  RunResult r2 = run(runner2, {signer});
  EXPECT_EQ(r1.checks.at(0).verdict, kPassed) << r1.checks.at(0).runs.at(0).report_detail << r1.checks.at(0).runs.at(0).err.head;
  EXPECT_EQ(r1.checks.at(0).tests, (std::vector<TestCase>{{"signed", "passed"}}));
  EXPECT_EQ(r1.deterministic_digest(), r2.deterministic_digest());
}

TEST_F(ReportChannelRunTest, MissingTruncatedWrongAndStdoutOnlyReportsFail) {
  LocalRunner runner = make_runner();
  const std::string right = std::string(kBody) + mac_line(kNonce, kBody);
  ReportNonce other = kNonce;
  other[5] ^= 0x10;
  RunResult r = run(runner, {
      // A passing TAP stream on stdout, exit 0: the code under test's forgery.
      channel_check("stdout", "printf 'TAP version 13\\n1..1\\nok 1 - a\\n'"),
      // Ended before the MAC line.
      channel_check("truncated", write_report(kBody)),
      channel_check("cut", write_report(right.substr(0, right.size() - 20))),
      channel_check("wrong", write_report(std::string(kBody) + mac_line(other, kBody))),
      channel_check("appended", write_report(right + "ok 3 - c\n")),
  });
  ASSERT_EQ(r.checks.size(), 5u);
  auto expect = [&](size_t i, const std::string& report, const std::string& detail) {
    const CheckResult& c = r.checks.at(i);
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.verdict, kFailed);
    EXPECT_EQ(c.runs.at(0).exit_code, 0);
    EXPECT_EQ(c.runs.at(0).report, report);
    EXPECT_NE(c.runs.at(0).report_detail.find(detail), std::string::npos) << c.runs.at(0).report_detail;
    EXPECT_TRUE(c.runs.at(0).tests.empty());
  };
  expect(0, "missing", "report channel: the check wrote nothing");
  expect(1, "unauthenticated", "does not end with its MAC line");
  expect(2, "unauthenticated", "does not end with its MAC line");
  expect(3, "unauthenticated", "does not verify");
  expect(4, "unauthenticated", "does not end with its MAC line");
}

TEST_F(ReportChannelRunTest, AFailingNonceSourceIsARunErrorNotAPass) {
  LocalRunner runner = make_runner([]() -> Result<ReportNonce> { return fail(Errc::io_error, "no entropy"); });
  RunResult r = run(runner, {channel_check("t", write_report(std::string(kBody) + mac_line(kNonce, kBody)))});
  EXPECT_EQ(r.checks.at(0).verdict, kError);
  EXPECT_NE(r.checks.at(0).runs.at(0).error.find("no entropy"), std::string::npos) << r.checks.at(0).runs.at(0).error;
}

TEST_F(ReportChannelRunTest, TestsFromGivesTheNamedEarlierChecksPassedIdsReadOnly) {
  LocalRunner runner = make_runner();
  CheckSpec suite = CheckSpec::shell("suite", "printf 'TAP version 13\\n1..3\\nok 1 - z\\nnot ok 2 - y\\nok 3 - x # SKIP later\\nok 4 - w\\n'");
  suite.report_format = "tap";
  CheckSpec other = CheckSpec::shell("other", "printf 'ok 1 - q\\n'");
  other.report_format = "tap";
  CheckSpec reader = CheckSpec::shell("reader", "cat <&$WARDEN_TESTS_FROM_FD; echo; echo overwrite >/proc/self/fd/$WARDEN_TESTS_FROM_FD");
  reader.tests_from = {"suite", "other"};
  RunResult r = run(runner, {suite, other, reader});
  const CheckRun& read = r.checks.at(2).runs.at(0);
  EXPECT_EQ(read.out.head, R"({"checks":{"other":["q"],"suite":["w","z"]}})" "\n");
  EXPECT_NE(read.exit_code, 0) << "the file is sealed against writes";

  RunRequest later;
  later.base_tree = tree_;
  later.tree = tree_;
  reader.tests_from = {"suite"};
  later.checks = {reader, suite};
  auto refused = runner.run(*git_, later);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, RefusalCode::invalid_check);
  EXPECT_NE(refused.error().message().find("not an earlier check"), std::string::npos) << refused.error().message();
}

}  // namespace
}  // namespace warden::test
