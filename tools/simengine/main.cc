// SPDX-License-Identifier: Apache-2.0
//
// tarmac-simengine stands in for an inference server (Ollama, or an
// OpenAI-compatible one such as vLLM or llama.cpp's server) on tarmac's
// simulated GPUs, as tarmac-simload stands in for a CUDA program. It serves
// Ollama's /api/generate, /api/chat, /api/ps, /api/tags and /api/version and
// OpenAI's /v1/completions, /v1/chat/completions and /v1/models, streaming
// and not; holds its model's memory and SM on the GPUs in
// CUDA_VISIBLE_DEVICES while the model is loaded (an Ollama unload,
// keep_alive 0 with no prompt, frees them); answers deterministically
// (answers.h) after a configurable latency; and fails when told: every Nth
// request a 500, a hang, a crash mid-answer, a slow stream, or an unload
// that is refused. On SIGTERM it frees its GPUs and exits at once: answers
// in flight are abandoned, as a real server abandons those whose clients
// have gone (a backfill runner closes its requests before it stops the
// engine).
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "answers.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/units.h"
#include "sim/cuda_context.h"
#include "sim/load.h"
#include "sim/process_title.h"
#include "sim/world.h"
#include "sim_options.h"

namespace {

using nlohmann::json;
using tarmac::simengine::Api;

struct Options {
  std::string host = "127.0.0.1";
  int port = 11434;
  std::string port_file;
  std::vector<std::string> models{"sim-model"};
  std::string memory = "4GiB";
  double util_percent = 90;
  int latency_ms = 20;
  int token_ms = 0;
  int tokens = 16;
  bool preload = false;
  int fail_every = 0;
  int hang_every = 0;
  std::string title;  // --title: the command line /proc shows.
  int crash_after = 0;
  int slow_stream_ms = 0;
  bool refuse_unload = false;
  tarmac::sim::WorldOptions world;
};

void Sleep(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The model's memory on the simulated GPUs: a sim load while it is loaded.
class Residency {
 public:
  Residency(tarmac::sim::World* world, tarmac::sim::CudaDevices gpus, int64_t memory_bytes, double util,
            std::string command)
      : world_(world),
        gpus_(std::move(gpus)),
        memory_bytes_(memory_bytes),
        util_(util),
        command_(std::move(command)) {}

  // Loads `model` (unloading another first); an error text when it does not fit.
  std::string Load(const std::string& model) {
    std::lock_guard<std::mutex> lock(mu_);
    if (model == loaded_) return "";
    EndLocked();
    tarmac::Status fits = tarmac::sim::CheckMemoryFits(*world_->State(), gpus_, memory_bytes_);
    if (!fits.ok()) return fits.message();
    load_ = tarmac::sim::Load{};
    load_.pid = getpid();
    load_.start_ticks = tarmac::sim::ProcessStartTicks(load_.pid).value_or(0);
    load_.gpus = gpus_.gpus;
    load_.mig_uuids = gpus_.mig_uuids;
    load_.memory_bytes = memory_bytes_;
    load_.utilization_ratio = util_;
    load_.started_at = tarmac::RealClock()->WallNow();
    load_.command = command_ + " (" + model + ")";
    tarmac::Result<std::string> path = world_->registry().Register(load_, ++serial_);
    if (!path.ok()) return path.status().message();
    path_ = path.value();
    loaded_ = model;
    return "";
  }
  void Unload() {
    std::lock_guard<std::mutex> lock(mu_);
    EndLocked();
  }
  std::string loaded() {
    std::lock_guard<std::mutex> lock(mu_);
    return loaded_;
  }
  void Heartbeat() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!path_.empty()) world_->registry().Heartbeat(path_).IgnoreError();
  }
  int64_t memory_bytes() const { return memory_bytes_; }

 private:
  void EndLocked() {
    if (path_.empty()) return;
    world_->registry().End(path_, load_, tarmac::RealClock()->WallNow()).IgnoreError();
    path_.clear();
    loaded_.clear();
  }

  tarmac::sim::World* world_;
  tarmac::sim::CudaDevices gpus_;
  int64_t memory_bytes_;
  double util_;
  std::string command_;
  std::mutex mu_;
  std::string loaded_;
  std::string path_;
  tarmac::sim::Load load_;
  int serial_ = 0;
};

bool IsZero(const json& keep_alive) {
  if (keep_alive.is_number()) return keep_alive.get<double>() == 0;
  if (keep_alive.is_string()) {
    std::string s = keep_alive.get<std::string>();
    return s == "0" || s == "0s" || s == "0m";
  }
  return false;
}

class Engine {
 public:
  Engine(const Options& o, Residency* residency) : o_(o), residency_(residency) {}

  void Serve(httplib::Server* server) {
    server->Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("Ollama is running", "text/plain");
    });
    server->Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    server->Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"version":"0.0.0-tarmac-simengine"})", "application/json");
    });
    server->Get("/api/tags", [this](const httplib::Request&, httplib::Response& res) {
      json models = json::array();
      for (const std::string& m : o_.models)
        models.push_back({{"name", m}, {"model", m}, {"size", residency_->memory_bytes()}});
      res.set_content(json{{"models", models}}.dump(), "application/json");
    });
    server->Get("/api/ps", [this](const httplib::Request&, httplib::Response& res) {
      json models = json::array();
      std::string loaded = residency_->loaded();
      if (!loaded.empty()) {
        models.push_back({{"name", loaded},
                          {"model", loaded},
                          {"size", residency_->memory_bytes()},
                          {"size_vram", residency_->memory_bytes()},
                          {"expires_at", "2318-01-01T00:00:00Z"}});
      }
      res.set_content(json{{"models", models}}.dump(), "application/json");
    });
    server->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      json data = json::array();
      for (const std::string& m : o_.models)
        data.push_back({{"id", m}, {"object", "model"}, {"owned_by", "tarmac"}});
      res.set_content(json{{"object", "list"}, {"data", data}}.dump(), "application/json");
    });
    for (auto [path, api] :
         {std::pair{"/api/generate", Api::kOllamaGenerate}, std::pair{"/api/chat", Api::kOllamaChat},
          std::pair{"/v1/completions", Api::kOpenAiCompletions},
          std::pair{"/v1/chat/completions", Api::kOpenAiChat}}) {
      server->Post(path, [this, api = api](const httplib::Request& req, httplib::Response& res) {
        Infer(api, req, res);
      });
    }
  }

  void Stop() { is_stopping_ = true; }

 private:
  void Fail(Api api, httplib::Response& res, int status, const std::string& message, const char* type) {
    res.status = status;
    res.set_content(tarmac::simengine::ErrorBody(api, message, type).dump(), "application/json");
  }

  void Infer(Api api, const httplib::Request& req, httplib::Response& res) {
    bool is_ollama = api == Api::kOllamaGenerate || api == Api::kOllamaChat;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object())
      return Fail(api, res, 400, "invalid JSON in the request body", "invalid_request_error");
    if (!body.contains("model") || !body["model"].is_string()) {
      return Fail(api, res, 400, "model is required", "invalid_request_error");
    }
    std::string model = body["model"].get<std::string>();
    if (std::find(o_.models.begin(), o_.models.end(), model) == o_.models.end()) {
      return Fail(api, res, 404, fmt::format("model \"{}\" not found, try pulling it first", model),
                  "not_found_error");
    }
    if (!is_ollama && body.contains("max_tokens") &&
        (!body["max_tokens"].is_number_integer() || body["max_tokens"].get<int64_t>() < 1)) {
      return Fail(api, res, 400, "max_tokens must be at least 1", "invalid_request_error");
    }
    std::string prompt = tarmac::simengine::PromptOf(body);
    if (is_ollama && prompt.empty()) {  // Load only, or unload (keep_alive 0).
      bool unload = body.contains("keep_alive") && IsZero(body["keep_alive"]);
      if (unload && !o_.refuse_unload) residency_->Unload();
      if (!unload) {
        std::string error = residency_->Load(model);
        if (!error.empty()) return Fail(api, res, 500, error, "api_error");
      }
      res.set_content(
          json{{"model", model}, {"done", true}, {"done_reason", unload ? "unload" : "load"}}.dump(),
          "application/json");
      return;
    }
    int n = ++served_;
    if (o_.fail_every > 0 && n % o_.fail_every == 0)
      return Fail(api, res, 500, "simulated engine failure", "api_error");
    if (o_.hang_every > 0 && n % o_.hang_every == 0) {
      while (!is_stopping_) Sleep(50);
      return Fail(api, res, 503, "shutting down", "api_error");
    }
    std::string error = residency_->Load(model);
    if (!error.empty()) return Fail(api, res, 500, error, "api_error");
    std::vector<std::string> words = tarmac::simengine::AnswerWords(prompt, o_.tokens);
    bool crash = o_.crash_after > 0 && n == o_.crash_after;
    if (!tarmac::simengine::IsStreamed(api, body)) {
      Sleep(o_.latency_ms + o_.token_ms * o_.tokens);
      if (crash) _exit(70);
      res.set_content(tarmac::simengine::WholeAnswer(api, model, words).dump(), "application/json");
      return;
    }
    const char* type = is_ollama ? "application/x-ndjson" : "text/event-stream";
    res.set_chunked_content_provider(type, [this, api, model, words, crash](size_t, httplib::DataSink& sink) {
      Sleep(o_.latency_ms);
      for (size_t i = 0; i <= words.size(); ++i) {
        bool last = i == words.size();
        if (crash && i == words.size() / 2) _exit(70);  // Mid-answer, as a runner that died.
        std::string chunk = tarmac::simengine::StreamChunk(api, model, last ? "" : words[i], last,
                                                           static_cast<int>(words.size()));
        if (!sink.is_writable() || !sink.write(chunk.data(), chunk.size())) return false;
        Sleep(o_.token_ms + o_.slow_stream_ms);
      }
      sink.done();
      return true;
    });
  }

  const Options& o_;
  Residency* residency_;
  std::atomic<int> served_{0};
  std::atomic<bool> is_stopping_{false};
};

int Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "tarmac-simengine: %s\n", message.c_str());
  return code;
}

// Every option of the line, into `o`.
void AddOptions(CLI::App* app_, Options* options) {
  CLI::App& app = *app_;
  Options& o = *options;
  app.add_option("--host", o.host, "Address to listen on")->default_str("127.0.0.1");
  app.add_option("--port", o.port, "Port to listen on; 0 picks a free one")->default_str("11434");
  app.add_option("--port-file", o.port_file, "Write the port listened on to this file");
  app.add_option("--model", o.models, "A model it serves (repeatable)")->default_str("sim-model");
  app.add_option("--memory", o.memory, "GPU memory a loaded model holds on each GPU")->default_str("4GiB");
  app.add_option("--util", o.util_percent, "SM utilization while a model is loaded, in percent")
      ->check(CLI::Range(0.0, 100.0))
      ->default_str("90");
  app.add_option("--latency-ms", o.latency_ms, "Time to the first token")
      ->check(CLI::NonNegativeNumber)
      ->default_str("20");
  app.add_option("--token-ms", o.token_ms, "Time per token after the first")
      ->check(CLI::NonNegativeNumber)
      ->default_str("0");
  app.add_option("--tokens", o.tokens, "Tokens per answer")->check(CLI::Range(1, 100000))->default_str("16");
  app.add_flag("--preload", o.preload, "Load the first model at start");
  app.add_option("--fail-every", o.fail_every, "Every Nth request answers 500")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--hang-every", o.hang_every, "Every Nth request never answers")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--crash-after", o.crash_after, "The Nth request kills the server mid-answer (exit 70)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--slow-stream-ms", o.slow_stream_ms, "Extra pause between streamed chunks")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--refuse-unload", o.refuse_unload,
               "Answer unload requests but keep the model (and its memory)");
  tarmac::sim::AddStandInOptions(&app, &o.world, &o.title, "vllm serve llama3.2");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tarmac;  // NOLINT: main only.
  Options o;
  CLI::App app(
      "tarmac-simengine: a stand-in inference server (Ollama and OpenAI APIs) on tarmac's simulated GPUs.\n"
      "Uses the GPUs in CUDA_VISIBLE_DEVICES (indices or UUIDs; unset means all).",
      "tarmac-simengine");
  AddOptions(&app, &o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // What the load file says the process is (read before the title overwrites argv).
  Result<std::string> titled = sim::TakeTitle(argc, argv, o.title);
  if (!titled.ok()) return Fail("--title: " + titled.status().message(), 2);
  const std::string command = titled.value();
  Result<int64_t> bytes = ParseBytes(o.memory);
  if (!bytes.ok()) return Fail("--memory: " + bytes.status().message(), 2);
  o.world.live_loads_only = true;  // Its memory check needs no ended load.
  Result<std::unique_ptr<sim::World>> world = sim::World::Open(o.world, RealClock());
  if (!world.ok()) return Fail(world.status().message());
  Result<sim::CudaDevices> gpus = sim::VisibleDevices(*world.value());
  if (!gpus.ok()) return Fail(gpus.status().message());

  // Signals are taken by one thread, which stops the server.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  Residency residency(world.value().get(), gpus.value(), bytes.value(), o.util_percent / 100.0, command);
  if (o.preload) {
    std::string error = residency.Load(o.models.front());
    if (!error.empty()) return Fail(error);
  }
  Engine engine(o, &residency);
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  // As Go's servers (Ollama, and most others) do: no Nagle delay between a
  // response's header and its body.
  server.set_tcp_nodelay(true);
  engine.Serve(&server);
  int port = o.port;
  if (port == 0) {
    port = server.bind_to_any_port(o.host);
  } else if (!server.bind_to_port(o.host, port)) {
    port = -1;
  }
  if (port < 0) return Fail(fmt::format("cannot listen on {}:{}", o.host, o.port));
  if (!o.port_file.empty()) {
    Status written = WriteFileAtomically(o.port_file, std::to_string(port) + "\n");
    if (!written.ok()) return Fail(written.message());
  }
  std::fprintf(stderr,
               "tarmac-simengine: pid %d serving %s on http://%s:%d (GPU memory %s per GPU when loaded)\n",
               getpid(), o.models.front().c_str(), o.host.c_str(), port, FormatBytes(bytes.value()).c_str());
  std::atomic<bool> done{false};
  std::thread beats([&] {
    while (!done) {
      residency.Heartbeat();
      Sleep(500);
    }
  });
  std::thread signals([&] {
    int sig = 0;
    sigwait(&set, &sig);
    engine.Stop();
    residency.Unload();
    std::_Exit(0);
  });
  server.listen_after_bind();
  residency.Unload();
  done = true;
  beats.join();
  signals.detach();
  return 0;
}
