// SPDX-License-Identifier: Apache-2.0
//
// The web console's JSON (/api/v1/) and its live stream, on a real agent
// over real TCP: the same answers as the socket API, pushed after every
// sample, read-only, and behind a token when one is configured.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "testutil/agent_fixture.h"
#include "web/web_redaction.h"
#include "web/web_routes.h"

namespace tarmac::testing {
namespace {

using nlohmann::json;

// A response split into its status code, headers and body.
// `zipped` (one gzip member) inflated; "" when it is not gzip.
std::string Gunzip(const std::string& zipped) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return "";
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zipped.data()));
  z.avail_in = static_cast<uInt>(zipped.size());
  std::string out;
  char chunk[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : "";
}

struct Answer {
  int status = 0;
  std::string headers;
  std::string body;
};

Answer Split(const std::string& response) {
  Answer a;
  size_t end = response.find("\r\n\r\n");
  if (response.size() < 12 || end == std::string::npos) return a;
  a.status = std::stoi(response.substr(9, 3));
  a.headers = response.substr(0, end);
  a.body = response.substr(end + 4);
  return a;
}

// One server-sent event.
struct Event {
  std::string name;
  std::string id;
  json data;
};

// Reads an event stream off `fd` as it comes.
class StreamReader {
 public:
  explicit StreamReader(int fd) : fd_(fd) {}
  ~StreamReader() { ::close(fd_); }

  // The next event, or nothing when the stream ends (or stays silent for
  // the socket's read timeout).
  std::optional<Event> Next() {
    for (;;) {
      size_t end = events_.find("\n\n");
      if (end != std::string::npos) {
        std::string block = events_.substr(0, end);
        events_.erase(0, end + 2);
        Event e;
        std::istringstream lines(block);
        for (std::string line; std::getline(lines, line);) {
          if (line.rfind("event: ", 0) == 0) e.name = line.substr(7);
          if (line.rfind("id: ", 0) == 0) e.id = line.substr(4);
          if (line.rfind("data: ", 0) == 0) e.data = json::parse(line.substr(6), nullptr, false);
        }
        if (!e.name.empty()) return e;
        continue;  // retry: or a comment.
      }
      if (!Fill()) return std::nullopt;
    }
  }
  const std::string& head() const { return head_; }

 private:
  // Reads more: the head once, then the body as it comes (no length, no
  // chunks: it ends with the connection).
  bool Fill() {
    char buf[65536];
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    if (!head_.empty()) {
      events_.append(buf, static_cast<size_t>(n));
      return true;
    }
    raw_.append(buf, static_cast<size_t>(n));
    size_t end = raw_.find("\r\n\r\n");
    if (end == std::string::npos) return true;
    head_ = raw_.substr(0, end);
    events_ += raw_.substr(end + 4);
    return true;
  }

  int fd_;
  std::string raw_;
  std::string head_;
  std::string events_;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class WebTest : public AgentFixture {
 protected:
  json Socket(const std::string& method, json params = json::object()) {
    ipc::Request request;
    request.method = method;
    request.params = std::move(params);
    Result<json> r = ipc::CallAgent(AgentFixture::Socket(), request, std::chrono::seconds(5));
    return r.ok() ? r.value() : json();
  }
  json Http(const std::string& path, int* status = nullptr) {
    Answer a = Split(HttpGet(path));
    if (status != nullptr) *status = a.status;
    return json::parse(a.body, nullptr, false);
  }
  std::unique_ptr<StreamReader> OpenStream(const std::string& extra_headers = "") {
    int fd = HttpConnect();
    std::string request = "GET /api/v1/stream HTTP/1.1\r\nHost: x\r\n" + extra_headers + "\r\n";
    EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    return std::make_unique<StreamReader>(fd);
  }
  std::string Reserve(const std::string& gpus) {
    RunResult r =
        Tarmac({"reserve", "--socket", AgentFixture::Socket(), "--gpus", gpus, "--for", "1h", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::to_string(json::parse(r.out)["id"].get<int64_t>());
  }
};

// Scripts get what the page gets, and what the socket gives: for each read
// method, the HTTP body is the socket answer's `result`.
TEST_F(WebTest, EveryApiRouteAnswersAsTheSocketDoes) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartAgent();
  Reserve("1");
  struct Question {
    std::string path;
    std::string method;
    json params;
  };
  std::vector<Question> questions = {
      {"/api/v1/leases", "leases", json::object()},
      {"/api/v1/queue", "queue", json::object()},
      {"/api/v1/zombies", "zombies", json::object()},
      {"/api/v1/backfill", "backfill.list", json::object()},
      {"/api/v1/events?after=0&limit=50", "events", {{"after", 0}, {"limit", 50}}},
      {"/api/v1/events?limit=1&newest=true", "events", {{"limit", 1}, {"newest", true}}},
  };
  for (const Question& q : questions) {
    // A lease's held_seconds moves with the clock: asked again until both
    // fall in the same second.
    // The test runs as root, whom the socket shows each lease's token; the
    // web asks as nobody.
    // Command lines are left out on the web by default ([web]).
    auto socket = [&] {
      json j = Socket(q.method, q.params);
      if (j.contains("leases")) {
        for (json& l : j["leases"]) l.erase("token");
      }
      web::DropCommandLines(&j);
      return j;
    };
    bool is_same = WaitFor([&] { return Http(q.path) == socket(); }, 20);
    EXPECT_TRUE(is_same) << q.path << "\nhttp:   " << Http(q.path).dump() << "\nsocket: " << socket().dump();
  }
  json leases = Http("/api/v1/leases");
  ASSERT_EQ(leases["leases"].size(), 1u);
  // Read as nobody: the lease's token is never on the web.
  EXPECT_FALSE(leases["leases"][0].contains("token")) << leases.dump();
  // The newest event: the grant, or one logged since (the agent's doctor
  // records its scheduled findings whenever they run), never an older one.
  json newest = Http("/api/v1/events?limit=1&newest=true");
  ASSERT_EQ(newest["events"].size(), 1u);
  json all = Http("/api/v1/events?after=0&limit=1000");
  int64_t granted_seq = -1;
  for (const json& e : all["events"]) {
    if (e["kind"] == "granted") granted_seq = e["seq"].get<int64_t>();
  }
  ASSERT_GE(granted_seq, 0) << all.dump();
  EXPECT_GE(newest["events"][0]["seq"].get<int64_t>(), granted_seq) << newest.dump();
  // The status of the same sample is the same object.
  EXPECT_TRUE(WaitFor(
      [&] {
        json http = Http("/api/v1/status");
        json socket = Socket("status");
        web::DropCommandLines(&socket);
        return http.contains("sequence") && http == socket;
      },
      50));
  // A malformed parameter: refused as the socket refuses it, with its words.
  int status = 0;
  json refused = Http("/api/v1/events?limit=0", &status);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(refused["error"]["code"], "bad_request") << refused.dump();
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("params.limit"), std::string::npos);
  // Methods that change something are not served.
  for (const char* path :
       {"/api/v1/lease.release?id=1", "/api/v1/lease/release?id=1", "/api/v1/zombies.kill"}) {
    Http(path, &status);
    EXPECT_EQ(status, 404) << path;
  }
  EXPECT_EQ(Http("/api/v1/leases")["leases"].size(), 1u);
}

// One stream per page: a status after every sample (its id the sample's
// sequence), the leases and queue with it, and each new event once.
// One name for the node everywhere: with [http] hostname, the console's
// header (the status answer), the socket's status and the metrics' label
// all say it, so the console and the fleet view name the node alike.
TEST_F(WebTest, TheConfiguredHostnameIsTheNodesNameEverywhere) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent({"--config", dir_.Write("tarmac.toml", "[http]\nhostname = \"node-a\"\n")});
  EXPECT_EQ(Http("/api/v1/status").value("host", ""), "node-a");
  RunResult status = Tarmac({"status", "--socket", AgentFixture::Socket(), "--color", "never"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(status.out.rfind("node-a  1 GPU", 0), 0u) << status.out;
  std::string metrics = Split(HttpGet("/metrics")).body;
  EXPECT_NE(metrics.find("tarmac_gpu_utilization_ratio{hostname=\"node-a\""), std::string::npos) << metrics;
}

TEST_F(WebTest, TheStreamPushesEverySampleAndEachNewEvent) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartAgent();
  std::unique_ptr<StreamReader> stream = OpenStream();
  int64_t previous = 0;
  for (int statuses = 0; statuses < 3;) {
    std::optional<Event> e = stream->Next();
    ASSERT_TRUE(e.has_value()) << "the stream ended";
    if (e->name != "status") continue;
    ++statuses;
    int64_t id = std::stoll(e->id);
    EXPECT_GT(id, previous);
    EXPECT_EQ(e->data["sequence"], id);
    EXPECT_EQ(e->data["gpus"].size(), 2u);
    previous = id;
  }
  EXPECT_NE(stream->head().find("Content-Type: text/event-stream"), std::string::npos) << stream->head();
  std::string id = Reserve("1");
  bool saw_lease = false;
  int granted = 0;
  for (int i = 0; i < 200 && !(saw_lease && granted == 1); ++i) {
    std::optional<Event> e = stream->Next();
    ASSERT_TRUE(e.has_value());
    if (e->name == "leases" && e->data["leases"].size() == 1) {
      saw_lease = true;
      EXPECT_EQ(std::to_string(e->data["leases"][0]["id"].get<int64_t>()), id);
    }
    if (e->name == "events") {
      for (const json& ev : e->data["events"]) granted += ev["kind"] == "granted" ? 1 : 0;
    }
  }
  EXPECT_TRUE(saw_lease);
  EXPECT_EQ(granted, 1);
  // Events are sent once: no second "granted" in the next samples.
  for (int statuses = 0; statuses < 3;) {
    std::optional<Event> e = stream->Next();
    ASSERT_TRUE(e.has_value());
    statuses += e->name == "status" ? 1 : 0;
    if (e->name == "events") {
      for (const json& ev : e->data["events"]) EXPECT_NE(ev["kind"], "granted") << ev.dump();
    }
  }
}

// Open streams never hold the agent up: SIGTERM ends it, and the stream.
TEST_F(WebTest, AnOpenStreamDoesNotKeepTheAgentFromStopping) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  Child* agent = StartAgent();
  std::unique_ptr<StreamReader> one = OpenStream();
  std::unique_ptr<StreamReader> two = OpenStream();
  ASSERT_TRUE(one->Next().has_value());
  ASSERT_TRUE(two->Next().has_value());
  int status = agent->KillAndWait(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << ReadLog();
  // Drained to the end: the agent closed it.
  while (one->Next().has_value()) {
  }
}

// Streams have their own cap (so pages cannot starve /metrics): the next is
// answered 503, and a stream whose page went gives its place back.
TEST_F(WebTest, AtMost32StreamsAtOnceAndAClosedOneGivesItsPlaceBack) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  // One client here: its share raised to the whole.
  StartAgent({"--config", dir_.Write("tarmac.toml", "[web]\nmax_streams_per_client = 32\n")});
  std::vector<std::unique_ptr<StreamReader>> open;
  for (int i = 0; i < web::kMaxStreams; ++i) {
    open.push_back(OpenStream());
    ASSERT_TRUE(open.back()->Next().has_value()) << "stream " << i;
  }
  std::unique_ptr<StreamReader> refused = OpenStream("Connection: close\r\n");
  EXPECT_FALSE(refused->Next().has_value());  // An answer, then the end: no event.
  EXPECT_EQ(refused->head().rfind("HTTP/1.1 503", 0), 0u) << refused->head();
  open.pop_back();  // The page went: its stream ends at its next write.
  EXPECT_TRUE(WaitFor([&] { return OpenStream("Connection: close\r\n")->Next().has_value(); }));
}

// One user cannot hold every stream: past their share (8) theirs are
// answered 503 naming the setting, and another user still gets one.
TEST_F(WebTest, RegressionOneClientHoldsAtMostItsShareOfTheStreams) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent();
  std::vector<std::unique_ptr<StreamReader>> open;
  for (int i = 0; i < 8; ++i) {
    open.push_back(OpenStream());
    ASSERT_TRUE(open.back()->Next().has_value()) << "stream " << i;
  }
  std::unique_ptr<StreamReader> refused = OpenStream("Connection: close\r\n");
  EXPECT_FALSE(refused->Next().has_value());
  EXPECT_EQ(refused->head().rfind("HTTP/1.1 503", 0), 0u) << refused->head();
  if (::geteuid() != 0) GTEST_SKIP() << "another user's stream needs root to become nobody";
  std::string script =
      "import socket,sys\n"
      "s=socket.create_connection(('127.0.0.1'," +
      std::to_string(HttpPort()) +
      "))\n"
      "s.sendall(b'GET /api/v1/stream HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
      "s.settimeout(10)\n"
      "print(s.recv(200).split(b'\\r\\n')[0].decode())\n";
  RunResult other = RunCommand(
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script}, {});
  EXPECT_EQ(other.out.rfind("HTTP/1.1 200", 0), 0u) << other.out << other.err;
}

TEST_F(WebTest, HistoryIsDownsampledOnTheServerToThePointsAsked) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartLoad("0", {"--memory", "2GiB", "--util", "50"});
  StartAgent();
  ASSERT_TRUE(WaitFor([&] { return Http("/api/v1/history?gpu=0&since=1m&points=600")["rows"].size() >= 3; }));
  json fine = Http("/api/v1/history?gpu=0&since=1m&points=600");
  EXPECT_EQ(fine["step_seconds"], 1);
  EXPECT_EQ(fine["columns"][0], "utilization_percent");
  for (const json& row : fine["rows"]) EXPECT_EQ(row["gpu"], 0);
  json coarse = Http("/api/v1/history?gpu=0&since=1h&points=4");
  EXPECT_EQ(coarse["step_seconds"], 900);
  EXPECT_LE(coarse["rows"].size(), 5u);  // 4 steps, and the one the range's end falls in.
  int status = 0;
  for (const char* bad : {"/api/v1/history?points=0", "/api/v1/history?points=100000",
                          "/api/v1/history?since=later", "/api/v1/history?gpu=9"}) {
    json refused = Http(bad, &status);
    EXPECT_TRUE(status == 400 || status == 404) << bad << " " << status;
    EXPECT_TRUE(refused.contains("error")) << bad << refused.dump();
  }
}

// A GPU's history carries what happened to it (for the time axis): its
// Xids and throttling, and the machine's events, never another GPU's.
TEST_F(WebTest, HistoryCarriesTheGpusStoredEvents) {
  UseScenarioText(
      "[[gpu]]\ncount = 2\n"
      "[[fault]]\nkind = \"thermal_throttle\"\ngpu = 1\nat = \"0s\"\n"
      "[[fault]]\nkind = \"xid\"\ngpu = 1\nat = \"1s\"\nxid = 13\n");
  StartAgent();
  auto kinds = [&](const char* gpu) {
    std::set<std::string> out;
    json history = Http(std::string("/api/v1/history?since=10m&gpu=") + gpu);
    for (const json& e : history["events"]) {
      out.insert(e["kind"].get<std::string>() +
                 (e["gpu"].is_null() ? "" : "@" + std::to_string(e["gpu"].get<int>())));
    }
    return out;
  };
  ASSERT_TRUE(WaitFor([&] { return kinds("1").count("xid@1") == 1; })) << json(kinds("1")).dump();
  std::set<std::string> one = kinds("1");
  EXPECT_EQ(one.count("throttle_start@1"), 1u) << json(one).dump();
  EXPECT_EQ(one.count("agent_start"), 1u) << json(one).dump();
  json xid;
  json history = Http("/api/v1/history?since=10m&gpu=1");
  for (const json& e : history["events"]) {
    if (e["kind"] == "xid") xid = e;
  }
  EXPECT_NE(xid["detail"].get<std::string>().find("Xid 13"), std::string::npos) << xid.dump();
  EXPECT_GT(xid["t"].get<int64_t>(), 0);
  std::set<std::string> zero = kinds("0");
  EXPECT_EQ(zero.count("xid@1"), 0u) << json(zero).dump();
  EXPECT_EQ(zero.count("throttle_start@1"), 0u) << json(zero).dump();
  EXPECT_EQ(zero.count("agent_start"), 1u) << json(zero).dump();
  // Every GPU's without ?gpu.
  EXPECT_EQ(Http("/api/v1/history?since=10m")["events"].size(),
            Http("/api/v1/history?since=10m&gpu=1")["events"].size());
}

TEST_F(WebTest, TheReportAndTheDoctorAsTheCommandsGiveThem) {
  UseScenarioText("[[gpu]]\ncount = 2\n");
  StartAgent();
  json report = Http("/api/v1/report?since=1d&by=gpu");
  EXPECT_EQ(report["by"], "gpu") << report.dump();
  EXPECT_TRUE(report.contains("verdict"));
  Answer csv = Split(HttpGet("/api/v1/report?since=1d&by=gpu&format=csv"));
  EXPECT_EQ(csv.body.rfind("gpu,uuid,name,", 0), 0u) << csv.body;
  EXPECT_NE(csv.headers.find("attachment"), std::string::npos);
  Answer html = Split(HttpGet("/api/v1/report?since=1d&format=html"));
  EXPECT_NE(html.body.find("<html"), std::string::npos);
  int status = 0;
  Http("/api/v1/report?by=everyone", &status);
  EXPECT_EQ(status, 400);
  Http("/api/v1/report?format=pdf", &status);
  EXPECT_EQ(status, 400);
  json doctor = Http("/api/v1/doctor", &status);
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(doctor["findings"].is_array()) << doctor.dump();
  EXPECT_TRUE(doctor["runs"].is_number_integer());
}

TEST_F(WebTest, ThePageIsServedWithAPolicyThatRunsOnlyItsOwnScript) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartAgent();
  Answer page = Split(HttpGet("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers.find("Content-Type: text/html"), std::string::npos);
  EXPECT_NE(
      page.headers.find("Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self';"),
      std::string::npos)
      << page.headers;
  EXPECT_EQ(page.headers.find("unsafe-inline"), std::string::npos) << page.headers;
  EXPECT_NE(page.headers.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_NE(page.headers.find("X-Content-Type-Options: nosniff"), std::string::npos);
  // No inline script or style for the policy to refuse.
  EXPECT_EQ(page.body.find("<script>"), std::string::npos);
  EXPECT_EQ(page.body.find("<style"), std::string::npos);
  EXPECT_EQ(page.body.find("style="), std::string::npos);
  // The script is ES modules served as written: the page loads main.js,
  // which imports the others; each one is there, as JavaScript.
  Answer script = Split(HttpGet("/console/main.js"));
  EXPECT_EQ(script.status, 200);
  EXPECT_NE(script.headers.find("Content-Type: text/javascript"), std::string::npos);
  EXPECT_NE(page.body.find("<script type=\"module\" src=\"console/main.js?v="), std::string::npos)
      << page.body;
  // Each import names its module by content too (the one change made to a
  // module as it is served); the page preloads what main.js imports before
  // it runs, and the other views' modules are imported when shown.
  std::regex import_line(R"re((from |import\()"\./([a-z_]+\.js)\?v=([0-9a-f]{16})")re");
  int imports = 0;
  int preloaded = 0;
  std::string modules;
  for (std::sregex_iterator it(script.body.begin(), script.body.end(), import_line), end; it != end; ++it) {
    std::string versioned = "/console/" + (*it)[2].str() + "?v=" + (*it)[3].str();
    Answer module = Split(HttpGet(versioned));
    EXPECT_EQ(module.status, 200) << versioned;
    EXPECT_NE(module.headers.find("Content-Type: text/javascript"), std::string::npos) << versioned;
    EXPECT_NE(module.headers.find("Cache-Control: max-age=31536000, immutable"), std::string::npos)
        << versioned;
    bool is_preloaded = page.body.find("<link rel=\"modulepreload\" href=\"console/" + (*it)[2].str() +
                                       "?v=" + (*it)[3].str()) != std::string::npos;
    EXPECT_EQ(is_preloaded, (*it)[1].str() == "from ") << versioned;
    preloaded += is_preloaded ? 1 : 0;
    modules += module.body;
    ++imports;
  }
  EXPECT_GE(preloaded, 5) << script.body;
  EXPECT_GE(imports, 11) << script.body;
  EXPECT_NE(modules.find("new EventSource(\"api/v1/stream\")"), std::string::npos);
  // The page puts what the agent says into the document as text only.
  EXPECT_EQ(modules.find("innerHTML"), std::string::npos);
  EXPECT_EQ(modules.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(modules.find("style:"), std::string::npos);
  EXPECT_EQ(Split(HttpGet("/console/nope.js")).status, 404);
  // An asset the browser has: 304, no body.
  size_t at = script.headers.find("ETag: ");
  ASSERT_NE(at, std::string::npos);
  std::string etag = script.headers.substr(at + 6, script.headers.find("\r\n", at) - at - 6);
  Answer again = Split(HttpGet("/console/main.js", "If-None-Match: " + etag + "\r\n"));
  EXPECT_EQ(again.status, 304) << etag;
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(Split(HttpGet("/console/main.js", "If-None-Match: \"0\"\r\n")).status, 200);
  EXPECT_EQ(Split(HttpGet("/console.css")).status, 200);
  // The page names its entry module and style by content: a browser keeps
  // those for good and asks again only when a page names new ones; the
  // modules main.js imports are revalidated on each load.
  size_t v = page.body.find("console/main.js?v=");
  ASSERT_NE(v, std::string::npos) << page.body;
  std::string versioned = "/" + page.body.substr(v, page.body.find('"', v) - v);
  Answer kept = Split(HttpGet(versioned));
  EXPECT_EQ(kept.status, 200);
  EXPECT_NE(kept.headers.find("Cache-Control: max-age=31536000, immutable"), std::string::npos)
      << kept.headers;
  EXPECT_TRUE(kept.body == script.body);
  EXPECT_NE(script.headers.find("Cache-Control: no-cache"), std::string::npos) << script.headers;
  EXPECT_NE(Split(HttpGet("/console/main.js?v=0123")).headers.find("Cache-Control: no-cache"),
            std::string::npos);
  EXPECT_NE(Split(HttpGet("/console/now.js")).headers.find("Cache-Control: no-cache"), std::string::npos);
  EXPECT_NE(page.headers.find("Cache-Control: no-cache"), std::string::npos) << page.headers;
  EXPECT_NE(page.body.find("console.css?v="), std::string::npos);
  // Compressed once, sent compressed to a client that accepts gzip: the
  // same bytes once inflated, and smaller.
  Answer now = Split(HttpGet("/console/now.js"));
  Answer zipped = Split(HttpGet("/console/now.js", "Accept-Encoding: br;q=0.5, gzip\r\n"));
  EXPECT_EQ(zipped.status, 200);
  EXPECT_NE(zipped.headers.find("Content-Encoding: gzip"), std::string::npos) << zipped.headers;
  EXPECT_NE(zipped.headers.find("Vary: Accept-Encoding"), std::string::npos) << zipped.headers;
  EXPECT_LT(zipped.body.size(), now.body.size() / 2);
  EXPECT_TRUE(Gunzip(zipped.body) == now.body);
  // Without Accept-Encoding: plain.
  EXPECT_EQ(script.headers.find("Content-Encoding"), std::string::npos) << script.headers;
}

// Command lines can carry secrets: the web leaves them out unless
// [web] show_command_lines; names and users stay.
TEST_F(WebTest, CommandLinesAreLeftOutUnlessTheConfigShowsThem) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  StartLoad("0", {"--memory", "2GiB", "--util", "10"});
  StartAgent();
  auto first_process = [this] {
    json status = Http("/api/v1/status");
    return status["gpus"][0]["processes"].empty() ? json() : status["gpus"][0]["processes"][0];
  };
  ASSERT_TRUE(WaitFor([&] { return !first_process().is_null(); }));
  json hidden = first_process();
  EXPECT_FALSE(hidden.contains("command")) << hidden.dump();
  EXPECT_EQ(hidden["name"], "tarmac-simload");
  EXPECT_TRUE(hidden.contains("user"));
  agents_.back()->KillAndWait(SIGTERM);
  std::string config = dir_.Write("tarmac.toml", "[web]\nshow_command_lines = true\n");
  StartAgent({"--config", config});
  ASSERT_TRUE(WaitFor([&] { return !first_process().is_null(); }));
  EXPECT_NE(first_process().value("command", std::string()).find("--memory 2GiB"), std::string::npos)
      << first_process().dump();
}

// A secret on a command line (a GPU process's, a lease's, a queued
// request's) reaches no route under /api/ and not the stream: the web's one
// redaction point (web/web_redaction.h), whatever the route.
TEST_F(WebTest, RegressionASecretOnACommandLineReachesNoApiRouteNorTheStream) {
  // GPU 0 runs the process; the reservation takes GPU 1; the request
  // queued behind them finds neither free.
  UseScenarioText("[[gpu]]\ncount = 2\n");
  const std::string secret = "hf_PLANTEDSECRET";
  std::map<std::string, std::string> env = Env();
  env["CUDA_VISIBLE_DEVICES"] = "0";
  children_.push_back(std::make_unique<Child>(
      std::vector<std::string>{"bash", "-c",
                               "exec -a \"python serve.py --hf-token=" + secret + "\" \"$0\" --pattern idle",
                               BinDir() + "/tarmac-simload"},
      env));
  StartAgent();
  ASSERT_TRUE(WaitFor([&] { return !Socket("status")["gpus"][0]["processes"].empty(); }));
  json held =
      Socket("lease.request", {{"gpus", 1}, {"kind", "reservation"}, {"command", "train --token=" + secret}});
  ASSERT_EQ(held.value("state", ""), "granted") << held.dump();
  json queued = Socket("lease.request", {{"gpus", 1}, {"wait", true}, {"command", "eval --token=" + secret}});
  ASSERT_EQ(queued.value("state", ""), "queued") << queued.dump();
  // The socket, for its callers, has them all.
  ASSERT_NE(Socket("queue").dump().find(secret), std::string::npos);
  ASSERT_NE(Socket("status").dump().find(secret), std::string::npos);

  for (const char* path :
       {"/api/v1/status", "/api/v1/leases", "/api/v1/queue", "/api/v1/events?limit=1000", "/api/v1/zombies",
        "/api/v1/backfill", "/api/v1/doctor", "/api/v1/history?gpu=0&since=10m", "/api/v1/report?since=1h",
        "/api/v1/report?since=1h&format=csv", "/api/v1/report?since=1h&format=html", "/api/v1/fleet"}) {
    std::string answer = HttpGet(path);
    EXPECT_NE(answer.find("HTTP/1.1 "), std::string::npos) << path;
    EXPECT_EQ(answer.find(secret), std::string::npos) << path << ":\n" << answer.substr(0, 2000);
    EXPECT_EQ(answer.find("hf_PLANTED"), std::string::npos) << path;
  }
  // The stream: its first batch (status, leases), then the events of a
  // request made while it is open, with a secret of its own.
  std::unique_ptr<StreamReader> stream = OpenStream();
  std::set<std::string> seen;
  bool asked = false;
  for (int i = 0; i < 50 && seen.size() < 3; ++i) {
    std::optional<Event> e = stream->Next();
    ASSERT_TRUE(e.has_value()) << "the stream ended";
    seen.insert(e->name);
    EXPECT_EQ(e->data.dump().find(secret), std::string::npos)
        << e->name << ": " << e->data.dump().substr(0, 2000);
    if (!asked && seen.count("status") == 1 && seen.count("leases") == 1) {
      json more =
          Socket("lease.request", {{"gpus", 1}, {"wait", true}, {"command", "sweep --token=" + secret}});
      ASSERT_EQ(more.value("state", ""), "queued") << more.dump();
      asked = true;
    }
  }
  EXPECT_TRUE(seen.count("status") == 1 && seen.count("leases") == 1 && seen.count("events") == 1)
      << seen.size();
}

// Beyond loopback the agent starts only with a token or an explicit
// allow_anonymous; with a token, everything but /health, /metrics and the
// page's shell asks for it.
// Files named in [http] tls_cert/tls_key and [fleet]'s credentials are
// read by the agent as root: a FIFO or a link to one that another user
// planted is refused at once, naming it, never waited on.
TEST_F(WebTest, AFifoPlantedAsACertificateOrACredentialIsRefusedNotWaitedOn) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  std::string planted = dir_.path() + "/planted";
  ASSERT_EQ(::mkdir(planted.c_str(), 0755), 0);
  ASSERT_EQ(::chown(planted.c_str(), 65534, 65534), 0);  // A folder nobody owns.
  std::string fifo = planted + "/cert.pem";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  ASSERT_EQ(::chown(fifo.c_str(), 65534, 65534), 0);
  std::string link = planted + "/key.pem";
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  std::vector<std::string> argv = {BinDir() + "/tarmac",
                                   "agent",
                                   "--backend",
                                   "nvml",
                                   "--nvml-library",
                                   FakeNvmlPath(),
                                   "--socket",
                                   AgentFixture::Socket(),
                                   "--state-dir",
                                   dir_.path() + "/state",
                                   "--http-listen",
                                   "127.0.0.1:0",
                                   "--config"};
  for (const auto& [name, cert, key] :
       {std::tuple{"cert", fifo, link}, std::tuple{"key", dir_.path() + "/none.pem", link}}) {
    std::vector<std::string> args = argv;
    args.push_back(dir_.Write(std::string(name) + ".toml",
                              "[http]\ntls_cert = \"" + cert + "\"\ntls_key = \"" + key + "\"\n"));
    Child agent(args, Env(), dir_.path() + "/" + name + ".log");
    EXPECT_NE(agent.Wait(), 0);
    std::string why = ReadText(dir_.path() + "/" + name + ".log");
    EXPECT_NE(why.find("tls_cert"), std::string::npos) << why;
    if (std::string(name) == "cert") {
      EXPECT_NE(why.find("FIFO"), std::string::npos) << why;
    }
  }
  // A credential of the fleet page: the route says why, at once.
  std::string config =
      dir_.Write("fleet.toml",
                 "[fleet]\nprometheus_url = \"http://127.0.0.1:1\"\nbearer_token_file = \"" + link + "\"\n");
  StartAgent({"--config", config});
  int status = 0;
  json refused = Http("/api/v1/fleet", &status);
  EXPECT_EQ(status, 400) << refused.dump();
  EXPECT_NE(refused.dump().find("FIFO"), std::string::npos) << refused.dump();
}

TEST_F(WebTest, ATokenGuardsTheApiAndListeningBeyondLoopbackNeedsOne) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  std::vector<std::string> base = {BinDir() + "/tarmac", "agent",
                                   "--backend",          "nvml",
                                   "--nvml-library",     FakeNvmlPath(),
                                   "--socket",           AgentFixture::Socket(),
                                   "--state-dir",        dir_.path() + "/state"};
  std::vector<std::string> open_argv = base;
  for (const char* a : {"--http-listen", "0.0.0.0:0"}) open_argv.push_back(a);
  Child refused(open_argv, Env(), dir_.path() + "/refused.log");
  EXPECT_NE(refused.Wait(), 0);
  std::string why = ReadText(dir_.path() + "/refused.log");
  EXPECT_NE(why.find("beyond loopback"), std::string::npos) << why;
  EXPECT_NE(why.find("allow_anonymous"), std::string::npos) << why;

  std::string token = "s3cret-token-0123456789abcdef";
  std::string token_file = dir_.Write("http-token", token + "\n");
  std::string config = dir_.Write("tarmac.toml", "[http]\nauth = \"" + token_file + "\"\n");
  StartAgent({"--config", config});
  EXPECT_EQ(Split(HttpGet("/api/v1/status")).status, 401);
  EXPECT_EQ(Split(HttpGet("/api/v1/stream")).status, 401);
  EXPECT_EQ(Split(HttpGet("/api/v1/status", "Authorization: Bearer wrong-token-0123456789abcd\r\n")).status,
            401);
  EXPECT_EQ(Split(HttpGet("/api/v1/status", "Authorization: Bearer " + token + "\r\n")).status, 200);
  EXPECT_EQ(Split(HttpGet("/metrics")).status, 200);
  EXPECT_EQ(Split(HttpGet("/health")).status, 200);
  EXPECT_EQ(Split(HttpGet("/")).status, 200);
  // The console's login: the header's token becomes an HttpOnly,
  // SameSite=Strict cookie, which then stands for it.
  EXPECT_EQ(Split(HttpGet("/api/v1/login")).status, 401);
  Answer login = Split(HttpGet("/api/v1/login", "Authorization: Bearer " + token + "\r\n"));
  EXPECT_EQ(login.status, 200);
  EXPECT_NE(login.headers.find("Set-Cookie: tarmac_token=" + token + "; Path=/; HttpOnly; SameSite=Strict"),
            std::string::npos)
      << login.headers;
  EXPECT_EQ(Split(HttpGet("/api/v1/leases", "Cookie: theme=dark; tarmac_token=" + token + "\r\n")).status,
            200);
  EXPECT_EQ(Split(HttpGet("/api/v1/leases", "Cookie: tarmac_token=" + token + "x\r\n")).status, 401);
  agents_.back()->KillAndWait(SIGTERM);
  // A token too short to guard anything is refused at start.
  std::string weak = dir_.Write("weak-token", "1234\n");
  std::string weak_config = dir_.Write("weak.toml", "[http]\nauth = \"" + weak + "\"\n");
  std::vector<std::string> weak_argv = base;
  for (const std::string& a :
       {std::string("--http-listen"), std::string("127.0.0.1:0"), std::string("--config"), weak_config}) {
    weak_argv.push_back(a);
  }
  Child weak_agent(weak_argv, Env(), dir_.path() + "/weak.log");
  EXPECT_NE(weak_agent.Wait(), 0);
  EXPECT_NE(ReadText(dir_.path() + "/weak.log").find("at least 16 characters"), std::string::npos)
      << ReadText(dir_.path() + "/weak.log");
}

TEST_F(WebTest, AllowAnonymousServesBeyondLoopbackWithoutAToken) {
  UseScenarioText("[[gpu]]\ncount = 1\n");
  std::string config = dir_.Write("tarmac.toml", "[http]\nallow_anonymous = true\n");
  std::vector<std::string> argv = {BinDir() + "/tarmac", "agent",
                                   "--backend",          "nvml",
                                   "--nvml-library",     FakeNvmlPath(),
                                   "--socket",           AgentFixture::Socket(),
                                   "--state-dir",        dir_.path() + "/state",
                                   "--http-listen",      "0.0.0.0:0",
                                   "--config",           config};
  agents_.push_back(std::make_unique<Child>(argv, Env(), Log()));
  ASSERT_TRUE(WaitUntilServing()) << ReadLog();
  EXPECT_NE(ReadLog().find("http: listening on http://0.0.0.0:"), std::string::npos) << ReadLog();
}

}  // namespace
}  // namespace tarmac::testing
