// A command agent for the executor's process tests, one behaviour per mode:
//
//   answer [OUTPUT_JSON [LLM_CALLS]]  read the request, answer OUTPUT plus what it saw
//                                     ("seen_stage", "seen_input", "seen_params", "seen_iteration")
//   slow MS                           like answer, after sleeping MS milliseconds
//   approve                           raise an approval interrupt, or after resume answer
//                                     {"approved": response == "yes"}
//   crash                             die of SIGSEGV
//   exit CODE                         write to stderr and exit CODE
//   hang                              never answer
//   garbage                           answer text that is not JSON
//   binary                            answer bytes that are not UTF-8, and write some to stderr
//   float                             answer a floating-point number
//   unknown                           answer a field the protocol does not have
//   flood                             write to stdout without end
//   fork-forever PGID_FILE            note its process group, then fork sleepers forever
//   background PGID_FILE              leave a sleeper holding stdout, answer and exit
//   ignore-stdin                      answer without reading the request
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace {

using Json = nlohmann::json;

Json read_request() {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  return Json::parse(text);
}

void sleep_ms(long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void write_pgid(const char* path) {
  std::ofstream(path) << getpgrp() << "\n";
}

int answer(const Json& request, Json output, long llm_calls) {
  const Json& envelope = request.at("envelope");
  output["seen_stage"] = request.at("stage");
  output["seen_input"] = envelope.at("raw_input");
  output["seen_params"] = request.at("params");
  output["seen_iteration"] = envelope.at("iteration");
  const char* env_stage = std::getenv("WARDEN_STAGE");
  output["seen_env_stage"] = env_stage ? env_stage : "";
  std::cout << Json{{"output", output}, {"llm_calls", llm_calls}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "answer";
  auto arg = [&](int i, const char* fallback) { return argc > i ? argv[i] : fallback; };

  if (mode == "answer") return answer(read_request(), Json::parse(arg(2, "{}")), std::atol(arg(3, "0")));
  if (mode == "slow") {
    Json request = read_request();
    sleep_ms(std::atol(arg(2, "100")));
    return answer(request, Json::object(), 1);
  }
  if (mode == "approve") {
    Json request = read_request();
    const Json& interrupt = request.at("envelope").at("interrupt");
    if (interrupt.is_object() && interrupt.at("response").is_string()) {
      std::cout << Json{{"output", {{"approved", interrupt.at("response") == "yes"}}}}.dump() << "\n";
    } else {
      std::cout << R"({"interrupt": {"kind": "approval", "question": "merge?", "payload": {"files": 2}}, "llm_calls": 1})"
                << "\n";
    }
    return 0;
  }
  if (mode == "crash") {
    read_request();
    std::cerr << "about to crash\n";
    rlimit no_core{0, 0};  // no core file in the test's directory
    setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGSEGV, SIG_DFL);  // a sanitizer build would otherwise catch it and exit 1
    raise(SIGSEGV);
  }
  if (mode == "exit") {
    read_request();
    std::cout << R"({"llm_calls": 4, "error": "gave up"})" << "\n";
    std::cerr << "something went wrong\n";
    return std::atoi(arg(2, "3"));
  }
  if (mode == "hang") {
    while (true) sleep_ms(1000);
  }
  if (mode == "garbage") {
    read_request();
    std::cout << "this is not json {\n";
    return 0;
  }
  if (mode == "binary") {
    read_request();
    std::cout << "\xff\xfe{\xc3" << std::flush;
    std::cerr << "bad bytes \xc3\x28 \xf0\x9f\x98" << std::flush;
    return 1;
  }
  if (mode == "float") {
    read_request();
    std::cout << R"({"output": {"score": 0.5}})" << "\n";
    return 0;
  }
  if (mode == "unknown") {
    read_request();
    std::cout << R"({"output": {}, "confidence": 3})" << "\n";
    return 0;
  }
  if (mode == "flood") {
    std::string line(4096, 'x');
    while (true) std::fwrite(line.data(), 1, line.size(), stdout);
  }
  if (mode == "fork-forever") {
    write_pgid(arg(2, "/dev/null"));
    while (true) {
      if (fork() == 0) {
        sleep_ms(60'000);
        _exit(0);
      }
      sleep_ms(20);
    }
  }
  if (mode == "background") {
    Json request = read_request();
    write_pgid(arg(2, "/dev/null"));
    if (fork() == 0) {  // keeps our stdout open for a minute
      sleep_ms(60'000);
      _exit(0);
    }
    return answer(request, Json::object(), 0);
  }
  if (mode == "ignore-stdin") {
    std::cout << R"({"output": {"ignored": true}})" << "\n";
    return 0;
  }
  std::cerr << "test_agent: unknown mode " << mode << "\n";
  return 2;
}
