// The remote executor's kernel side over a real socketpair, the test playing the server
// (on a thread where it must answer what it reads): answers and their identity, error
// answers, answers to other ids, timeouts and the late answer after one, a stop, EOF, an
// oversize line, malformed lines, a server that never reads, and the learn, replan and end
// lines.
#include "executor/channel_proposer.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace warden::executor {
namespace {

using namespace std::chrono_literals;

// The server's end of the channel: whole lines in and out.
class ServerEnd {
 public:
  explicit ServerEnd(int fd) : fd_(fd) {}
  void write(const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::send(fd_.get(), text.data() + done, text.size() - done, MSG_NOSIGNAL);
      ASSERT_GT(n, 0) << "the kernel end is gone";
      done += static_cast<size_t>(n);
    }
  }
  void answer(const Json& line) { write(line.dump() + "\n"); }
  // The next line the kernel sent, parsed; null when none came within `wait`.
  Json read(std::chrono::milliseconds wait = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (size_t end = buffer_.find('\n'); end != std::string::npos) {
        Json line = Json::parse(buffer_.substr(0, end));
        buffer_.erase(0, end + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_.get(), POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return nullptr;
      char chunk[65536];
      ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
      if (n <= 0) return nullptr;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void close() { fd_.reset(); }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  std::string buffer_;
};

struct Channel {
  std::unique_ptr<ChannelProposer> proposer;
  std::unique_ptr<ServerEnd> server;
};

Channel connect(size_t max_line = ChannelProposer::kDefaultMaxLineBytes) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return {std::make_unique<ChannelProposer>("calc", UniqueFd(fds[0]), max_line), std::make_unique<ServerEnd>(fds[1])};
}

ProposalRequest request(std::chrono::milliseconds timeout = 5s) {
  ProposalRequest r;
  r.step = Json{{"id", "s1"}};
  r.context = Json{{"attempt", 1}};
  r.timeout = timeout;
  return r;
}

Json answer(const std::string& id, const std::string& proposal) {
  return {{"type", "answer"}, {"request_id", id}, {"proposal", proposal}, {"executor_identity", "alice"}};
}

TEST(ChannelProposer, SendsTheCommandExecutorsRequestAndTakesTheAnswerWithItsIdentity) {
  auto c = connect();
  EXPECT_EQ(c.proposer->name(), "remote:calc");
  EXPECT_FALSE(c.proposer->confinement());
  std::jthread server([&] {
    Json line = c.server->read();
    ASSERT_TRUE(line.is_object());
    EXPECT_EQ(line["type"], "propose");
    EXPECT_EQ(line["request"], (Json{{"step", {{"id", "s1"}}}, {"context", {{"attempt", 1}}}}));
    EXPECT_EQ(line["timeout_ms"], 5000);
    c.server->answer(answer(line["request_id"], "{\"diff\":1}"));
  });
  auto text = c.proposer->propose(request());
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "{\"diff\":1}");
  EXPECT_EQ(c.proposer->answered_by(), "alice");
}

TEST(ChannelProposer, RequestIdsAreUniqueAndAnIdentityIsOptional) {
  auto c = connect();
  std::jthread server([&] {
    Json first = c.server->read();
    c.server->answer({{"type", "answer"}, {"request_id", first["request_id"]}, {"proposal", "p1"}});
    Json second = c.server->read();
    EXPECT_NE(first["request_id"], second["request_id"]);
    c.server->answer(answer(second["request_id"], "p2"));
  });
  auto one = c.proposer->propose(request());
  ASSERT_TRUE(one);
  EXPECT_FALSE(c.proposer->answered_by());
  auto two = c.proposer->propose(request());
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, "p2");
}

TEST(ChannelProposer, AnErrorAnswerIsTheExecutorsRefusalWithItsCode) {
  auto c = connect();
  std::jthread server([&] {
    Json line = c.server->read();
    c.server->answer({{"type", "answer"}, {"request_id", line["request_id"]}, {"error", "no executor attached"},
                      {"code", "executor_timeout"}, {"executor_identity", "bob"}});
    line = c.server->read();
    c.server->answer({{"type", "answer"}, {"request_id", line["request_id"]}, {"error", "crashed"}});
  });
  auto timed_out = c.proposer->propose(request());
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code, RefusalCode::executor_timeout);
  EXPECT_NE(timed_out.error().detail.find("no executor attached"), std::string::npos);
  EXPECT_EQ(c.proposer->answered_by(), "bob");
  auto failed = c.proposer->propose(request());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, RefusalCode::executor_failed);
  EXPECT_FALSE(c.proposer->answered_by());
}

TEST(ChannelProposer, AnAnswerToAnotherRequestIsIgnored) {
  auto c = connect();
  std::jthread server([&] {
    Json line = c.server->read();
    c.server->answer(answer("not-" + line["request_id"].get<std::string>(), "WRONG"));
    c.server->answer(answer(line["request_id"], "RIGHT"));
  });
  auto text = c.proposer->propose(request());
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "RIGHT");
}

TEST(ChannelProposer, AnAnswerWrittenBeforeItsRequestCannotGuessItsId) {
  auto c = connect();
  for (const char* guess : {"1", "2", "0-1", "0000000000000000-1"}) c.server->answer(answer(guess, "PRESENT"));
  std::jthread server([&] {
    Json line = c.server->read();
    const std::string id = line["request_id"];
    EXPECT_EQ(id.size(), 18u) << id;
    EXPECT_TRUE(id.ends_with("-1")) << id;
    c.server->answer(answer(id, "ASKED"));
  });
  auto text = c.proposer->propose(request());
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "ASKED");
}

TEST(ChannelProposer, ALateAnswerToATimedOutRequestIsNeverTakenForTheNext) {
  auto c = connect();
  const auto start = std::chrono::steady_clock::now();
  auto timed_out = c.proposer->propose(request(200ms));
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code, RefusalCode::executor_timeout);
  EXPECT_EQ(timed_out.error().detail, "executor timed out after 200 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  Json first = c.server->read();
  // The late answer arrives before the next request is even sent.
  c.server->answer(answer(first["request_id"], "LATE"));
  std::jthread server([&] {
    Json second = c.server->read();
    c.server->answer(answer(second["request_id"], "CURRENT"));
  });
  auto text = c.proposer->propose(request());
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "CURRENT");
}

TEST(ChannelProposer, AFloodOfAnswersToOtherIdsCannotHoldTheRequestPastItsTime) {
  auto c = connect();
  std::atomic<bool> done{false};
  std::jthread server([&] {
    c.server->read();
    const std::string stale = answer("stale", std::string(1000, 's')).dump() + "\n";
    std::string burst;
    for (int i = 0; i < 100; ++i) burst += stale;
    // Whole lines only; it stops when the kernel's end closes.
    while (!done) {
      for (size_t sent = 0; sent < burst.size();) {
        const ssize_t n = ::send(c.server->fd(), burst.data() + sent, burst.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<size_t>(n);
      }
    }
  });
  const auto start = std::chrono::steady_clock::now();
  auto timed_out = c.proposer->propose(request(300ms));
  done = true;
  c.proposer.reset();
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code, RefusalCode::executor_timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(ChannelProposer, AStopReturnsAtOnce) {
  auto c = connect();
  std::stop_source stop;
  ProposalRequest r = request(60s);
  r.stop = stop.get_token();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(100ms);
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  auto stopped = c.proposer->propose(r);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().code, RefusalCode::executor_timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(c.server->read()["type"], "propose");
  // Already stopped: not even sent.
  stopped = c.proposer->propose(r);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().code, RefusalCode::executor_timeout);
  EXPECT_TRUE(c.server->read(200ms).is_null());
}

TEST(ChannelProposer, EndOfFileFailsThisAndEveryLaterRequestAtOnce) {
  auto c = connect();
  std::jthread server([&] {
    c.server->read();
    c.server->close();
  });
  auto failed = c.proposer->propose(request(30s));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, RefusalCode::executor_failed);
  EXPECT_EQ(failed.error().detail, "the executor channel closed");
  server.join();
  const auto start = std::chrono::steady_clock::now();
  failed = c.proposer->propose(request(30s));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, RefusalCode::executor_failed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(ChannelProposer, ALineOverTheBoundFailsNamingItAndClosesTheChannel) {
  auto c = connect(1024);
  std::jthread server([&] {
    c.server->read();
    // Never a newline: the kernel must stop reading at the bound, not wait for one.
    c.server->write(std::string(100'000, 'x'));
  });
  auto failed = c.proposer->propose(request(30s));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, RefusalCode::executor_failed);
  EXPECT_NE(failed.error().detail.find("1024 bytes"), std::string::npos) << failed.error().detail;
  server.join();
  failed = c.proposer->propose(request());
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().detail.find("1024 bytes"), std::string::npos);
}

TEST(ChannelProposer, AnAnswerJustUnderTheBoundIsTaken) {
  auto c = connect(1024);
  std::jthread server([&] {
    Json line = c.server->read();
    Json a = answer(line["request_id"], "");
    const size_t overhead = a.dump().size();
    a["proposal"] = std::string(1024 - overhead, 'p');
    c.server->answer(a);
  });
  auto text = c.proposer->propose(request());
  ASSERT_TRUE(text) << text.error().message();
}

TEST(ChannelProposer, MalformedAnswersFailTheRequestWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{not json", "JSON"},
      {"[1]", "not a JSON object"},
      {R"({"type":"hello","request_id":"1"})", "type is not \"answer\""},
      {R"({"type":"answer","proposal":"x"})", "request_id"},
      {R"({"type":"answer","request_id":"1"})", "exactly one of"},
      {R"({"type":"answer","request_id":"1","proposal":"x","error":"y"})", "exactly one of"},
      {R"({"type":"answer","request_id":"1","proposal":{"files":[]}})", "not a string"},
      {R"({"type":"answer","request_id":"1","proposal":""})", "proposed nothing"},
      {R"({"type":"answer","request_id":"1","error":"e","code":"hash_mismatch"})", "neither executor_failed"},
      {R"({"type":"answer","request_id":"1","proposal":"x","executor_identity":7})", "executor_identity"},
      {R"({"type":"answer","request_id":"1","proposal":"x","executor_identity":""})", "executor_identity"},
      {R"({"type":"answer","request_id":"1","proposal":"x","executor_identity":")" + std::string(300, 'a') + "\"}",
       "longer than 256"},
  };
  for (const auto& [line, reason] : cases) {
    auto c = connect();
    std::jthread server([&] {
      // Each case answers the request it was sent (the "1" it spells is the request's id).
      const std::string id = c.server->read()["request_id"];
      std::string text = line;
      if (size_t at = text.find(R"("request_id":"1")"); at != std::string::npos) text.replace(at + 14, 1, id);
      c.server->write(text + "\n");
    });
    auto failed = c.proposer->propose(request());
    ASSERT_FALSE(failed) << line;
    EXPECT_EQ(failed.error().code, RefusalCode::executor_failed) << line;
    EXPECT_NE(failed.error().detail.find(reason), std::string::npos) << line << " -> " << failed.error().detail;
    EXPECT_FALSE(c.proposer->answered_by()) << line;
  }
}

TEST(ChannelProposer, TheChannelStaysUsableAfterAMalformedLine) {
  auto c = connect();
  std::jthread server([&] {
    c.server->read();
    c.server->write("garbage\n");
    c.server->answer(answer(c.server->read()["request_id"], "fine"));
  });
  ASSERT_FALSE(c.proposer->propose(request()));
  auto text = c.proposer->propose(request());
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "fine");
}

TEST(ChannelProposer, AServerThatNeverReadsCannotHangTheKernel) {
  auto c = connect();
  ProposalRequest r = request(300ms);
  r.context["files"] = Json{{"big.txt", {{"content", std::string(8 << 20, 'b')}}}};
  const auto start = std::chrono::steady_clock::now();
  auto timed_out = c.proposer->propose(r);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.error().code, RefusalCode::executor_timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  // Half a request is on the wire: nothing more can be framed.
  auto failed = c.proposer->propose(request());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, RefusalCode::executor_failed);
}

TEST(ChannelProposer, LearnReplanAndEndLinesReachTheServer) {
  auto c = connect();
  c.proposer->learn(Json{{"code", "hash_mismatch"}});
  Json learn = c.server->read();
  EXPECT_EQ(learn, (Json{{"type", "learn"}, {"refusal", {{"code", "hash_mismatch"}}}}));

  std::jthread server([&] {
    Json line = c.server->read();
    EXPECT_EQ(line["type"], "replan");
    EXPECT_EQ(line["request"], (Json{{"failed_step", "s1"}}));
    EXPECT_EQ(line["timeout_ms"], 4000);
    c.server->answer({{"type", "answer"}, {"request_id", line["request_id"]}, {"plan", "{\"steps\":[]}"}});
    line = c.server->read();
    c.server->answer({{"type", "answer"}, {"request_id", line["request_id"]}, {"error", "cannot"}});
  });
  auto plan = c.proposer->replan(Json{{"failed_step", "s1"}}, 4000ms);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(*plan, "{\"steps\":[]}");
  auto refused = c.proposer->replan(Json{{"failed_step", "s1"}}, 4000ms);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::invalid_argument);
  server.join();

  c.proposer.reset();
  EXPECT_EQ(c.server->read(), (Json{{"type", "end"}}));
}

}  // namespace
}  // namespace warden::executor
