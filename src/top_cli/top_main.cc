// SPDX-License-Identifier: Apache-2.0
//
// tarmac-top: `tarmac top`, the interactive terminal view (docs/cli.md
// "tarmac top"). A program of its own, which `tarmac top` runs, so that
// tarmac's other commands never load the terminal library.
//
// The screen is drawn by top/top_view.h into a virtual terminal and copied
// to ncurses; data comes from cli/top_feed.h on its own thread, so a slow
// agent or a hung GPU never freezes the keys (the header says what is
// stale). --plain prints the screen as text every interval instead, for
// dumb terminals, logs and scripts.
#include <fmt/format.h>
#include <langinfo.h>
#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/completion.h"
#include "cli/help_format.h"
#include "cli/options.h"
#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/terminal.h"
#include "leases/process_control.h"
#include "top/process_table.h"
#include "top/top_keys.h"
#include "top/top_view.h"
#include "top_cli/top_feed.h"

// Last: its macros (OK, ERR, ...) would rename what the headers above declare.
#include <ncurses.h>

#ifndef TARMAC_VERSION
#define TARMAC_VERSION "dev"
#endif

namespace {

using namespace tarmac;  // NOLINT: main only.

struct TopOptions {
  double interval_seconds = 1.0;
  bool plain = false;
  std::string color = "auto";
  int frames = 0;  // --plain: stop after this many screens (0: never).
};

// ncurses' colour pair of each top::Color (pair 0 is the default).
short PairOf(top::Color c) { return static_cast<short>(c); }

void Paint(const top::Screen& screen, bool is_colored) {
  for (int r = 0; r < screen.height(); ++r) {
    for (int c = 0; c < screen.width(); ++c) {
      const top::Cell& cell = screen.At(r, c);
      attr_t attr = A_NORMAL;
      if (cell.style.bold) attr |= A_BOLD;
      if (cell.style.reverse) attr |= A_REVERSE;
      if (cell.style.dim) attr |= A_DIM;
      if (is_colored && cell.style.color != top::Color::kDefault)
        attr |= COLOR_PAIR(PairOf(cell.style.color));
      attrset(attr);
      mvaddstr(r, c, cell.glyph.c_str());
    }
  }
  attrset(A_NORMAL);
}

int MapKey(int ch) {
  switch (ch) {
    case KEY_UP:
      return top::kKeyUp;
    case KEY_DOWN:
      return top::kKeyDown;
    case KEY_PPAGE:
      return top::kKeyPageUp;
    case KEY_NPAGE:
      return top::kKeyPageDown;
    case KEY_HOME:
      return top::kKeyHome;
    case KEY_END:
      return top::kKeyEnd;
    case KEY_BACKSPACE:
      return top::kKeyBackspace;
    case KEY_ENTER:
    case '\r':
      return top::kKeyEnter;
    default:
      return ch;
  }
}

// Sends `signal` to `pid` as top last saw it, through the agent's own
// PID-reuse-safe path (a pidfd, the owner and start time checked again).
std::string SendSignal(const top::TopData& data, int64_t pid, int signal) {
  const top::TopProcess* p = nullptr;
  for (const top::TopProcess& candidate : data.processes) {
    if (candidate.pid == pid) p = &candidate;
  }
  const char* name = signal == SIGKILL ? "SIGKILL" : "SIGTERM";
  if (p == nullptr) return fmt::format("PID {} is gone", pid);
  if (p->start_ticks == 0) return fmt::format("PID {}: its start time cannot be read; not signalled", pid);
  uid_t me = ::getuid();
  if (me != 0 && p->uid != static_cast<int64_t>(me)) {
    return fmt::format("PID {} is {}'s: only its owner or root may signal it", pid, p->user);
  }
  Status s = leases::MakeProcessControl()->Signal({p->pid, p->start_ticks}, p->uid, signal);
  if (!s.ok()) return fmt::format("{} to PID {} not sent: {}", name, pid, s.message());
  return fmt::format("{} sent to PID {} ({})", name, pid, p->name);
}

// One screen per reading, as text, until --frames screens.
int RunPlain(top::TopFeed* feed, const TopOptions& options, const top::TopUi& ui,
             std::chrono::milliseconds interval) {
  // One screen per reading, as text.
  // Not a terminal: COLUMNS when set, else 100 (as status prints to a pipe).
  const char* columns = std::getenv("COLUMNS");
  int width = ::isatty(STDOUT_FILENO) == 1          ? TerminalColumns(STDOUT_FILENO)
              : columns != nullptr && *columns != 0 ? std::clamp(std::atoi(columns), 40, 400)
                                                    : 100;
  int frames = 0;
  for (;;) {
    pollfd wake{feed->wake_fd(), POLLIN, 0};
    ::poll(&wake, 1, static_cast<int>(interval.count()) * 3);
    feed->DrainWake();
    top::TopData data = feed->Latest();
    if (!data.has_data && data.stale_why.empty()) continue;
    top::Screen screen(width, 40);
    try {
      top::RenderTop(data, ui, &screen);
    } catch (const nlohmann::json::exception& e) {
      screen = top::Screen(width, 40);
      screen.Put(0, 0, std::string("tarmac top: cannot draw the agent's answer: ") + e.what());
    }
    std::string text = screen.Text();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::printf("%s\n\n", text.c_str());
    std::fflush(stdout);
    if (options.frames > 0 && ++frames >= options.frames) break;
  }
  return kExitOk;
}

// The full-screen view with keys and the mouse, until q.
void RunCurses(top::TopFeed* feed, top::TopUi ui) {
  ::setenv("ESCDELAY", "25", 0);
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  curs_set(0);
  mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED, nullptr);
  bool is_colored = ui.is_color && has_colors();
  if (is_colored) {
    start_color();
    use_default_colors();  // The terminal's own background: dark or light.
    init_pair(PairOf(top::Color::kGreen), COLOR_GREEN, -1);
    init_pair(PairOf(top::Color::kYellow), COLOR_YELLOW, -1);
    init_pair(PairOf(top::Color::kRed), COLOR_RED, -1);
    init_pair(PairOf(top::Color::kBlue), COLOR_BLUE, -1);
    init_pair(PairOf(top::Color::kMagenta), COLOR_MAGENTA, -1);
    init_pair(PairOf(top::Color::kCyan), COLOR_CYAN, -1);
  }
  ui.is_color = is_colored;
  top::Layout layout;
  bool quit = false;
  while (!quit) {
    top::TopData data = feed->Latest();
    top::Screen screen(COLS, LINES);
    try {
      layout = top::RenderTop(data, ui, &screen);
    } catch (const nlohmann::json::exception& e) {
      // An answer of an unexpected shape: said, never a crash.
      screen = top::Screen(COLS, LINES);
      screen.Put(0, 0, std::string("tarmac top: cannot draw the agent's answer: ") + e.what());
    }
    ui.scroll = layout.scroll;
    erase();
    Paint(screen, is_colored);
    refresh();
    // Wait for a key, a reading, or a second (the age in the header).
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {feed->wake_fd(), POLLIN, 0}};
    ::poll(fds, 2, 1000);
    if ((fds[1].revents & POLLIN) != 0) feed->DrainWake();
    for (int ch = getch(); ch != ERR && !quit; ch = getch()) {
      if (ch == KEY_RESIZE) continue;
      if (ch == KEY_MOUSE) {
        MEVENT event;
        if (getmouse(&event) == OK) top::HandleClick(event.y, event.x, layout, &ui);
        continue;
      }
      top::KeyOutcome out = top::HandleKey(MapKey(ch), data, layout, &ui);
      if (out.action == top::TopAction::kQuit) quit = true;
      if (out.action == top::TopAction::kSignal) ui.message = SendSignal(data, out.pid, out.signal);
      if (out.action == top::TopAction::kReadDetails) {
        Result<std::vector<std::string>> env = top::GpuEnvironment(out.pid);
        feed->SetDetails(out.pid, env.ok() ? env.value() : std::vector<std::string>{},
                         env.ok() ? "" : env.status().message());
      }
    }
  }
  endwin();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "tarmac top: every GPU, process, lease and the queue, live in the terminal: sort, filter, select, "
      "signal your own processes (docs/cli.md)",
      "tarmac top");
  app.set_version_flag("--version", std::string("tarmac ") + TARMAC_VERSION);
  app.formatter(std::make_shared<cli::HelpFormatter>(static_cast<size_t>(TerminalColumns(STDOUT_FILENO))));
  cli::GlobalOptions global;
  cli::AddGlobalOptions(&app, &global);
  TopOptions options;
  app.add_option("-d,--interval", options.interval_seconds, "Seconds between readings (default 1)")
      ->check(CLI::Range(0.1, 3600.0))
      ->type_name("SECONDS");
  app.add_flag("--plain", options.plain,
               "Print the screen as text every interval, no keys (default when TERM=dumb or not a terminal)");
  app.add_option("--frames", options.frames, "With --plain: stop after N screens")
      ->check(CLI::NonNegativeNumber)
      ->type_name("N");
  app.add_option("--color", options.color, "Colours: auto (not with NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");
  // tarmac completion asks for the options above (cli/completion.h).
  if (argc == 2 && std::string(argv[1]) == cli::kCompletionEntriesFlag) {
    std::fputs(cli::CompletionEntries(app).c_str(), stdout);
    return kExitOk;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (Result<gpu::BackendOptions> backend = cli::MakeBackendOptions(global); !backend.ok()) {
    std::fprintf(stderr, "tarmac: top: %s\n", backend.status().ToString().c_str());
    return kExitUsage;
  }
  std::setlocale(LC_ALL, "");
  const char* term = std::getenv("TERM");
  bool is_terminal = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1;
  bool plain = options.plain || !is_terminal || term == nullptr || std::strcmp(term, "dumb") == 0;
  const char* no_color = std::getenv("NO_COLOR");
  top::TopUi ui;
  ui.is_color = options.color == "always" ||
                (options.color == "auto" && (no_color == nullptr || *no_color == '\0') && !plain);
  ui.is_unicode = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;

  Logger logger(LogLevel::kOff);
  auto interval = std::chrono::milliseconds(static_cast<int64_t>(options.interval_seconds * 1000));
  std::shared_ptr<top::TopFeed> feed = top::TopFeed::Start(global, interval, RealClock(), &logger);
  if (feed == nullptr) {
    std::fprintf(stderr, "tarmac: top: cannot make a pipe\n");
    return kExitError;
  }

  int code = plain ? RunPlain(feed.get(), options, ui, interval) : (RunCurses(feed.get(), ui), kExitOk);
  feed->Stop();
  return code;
}
