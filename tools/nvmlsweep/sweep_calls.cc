// SPDX-License-Identifier: Apache-2.0
#include "sweep_calls.h"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <sstream>

#include "calls.h"

namespace tarmac::nvmlsweep {
namespace {

using namespace gpu::nvml;  // NOLINT: the ABI's names.

constexpr size_t kBufferBytes = 4096;
constexpr size_t kListBytes = 256 * 1024;
constexpr unsigned kListCapacity = 1024;  // Entries of up to 256 bytes.
constexpr unsigned kFieldIds[] = {1,  2,  29,  30,  31,  45,  52,  59,  82,  83,
                                  91, 94, 138, 139, 142, 143, 144, 145, 197, 198};

// The zeroed buffers of one call, freed after it.
class Arena {
 public:
  unsigned char* Take(size_t bytes) {
    blocks_.push_back(std::make_unique<unsigned char[]>(bytes));
    std::memset(blocks_.back().get(), 0, bytes);
    return blocks_.back().get();
  }

 private:
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;
};

// One value an argument token takes for one call.
struct Choice {
  enum Kind { kWord, kOut, kVersioned, kText, kCount, kList, kFields, kRest, kSample } kind = kWord;
  Word value = 0;     // kWord: the word; kVersioned: the version; kText: the length.
  std::string label;  // What the report says of it ("" for outputs).
};

// What a call is about: a device, a GPU or compute instance, or nothing.
struct Subject {
  const SweptDevice* device = nullptr;
  const SweptInstance* instance = nullptr;
  Where where;
};

std::vector<std::string> Split(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

std::vector<Word> Enumerated(const std::string& body) {
  std::vector<Word> values;
  size_t dash = body.find('-');
  if (dash != std::string::npos) {
    for (unsigned long v = std::stoul(body.substr(0, dash)); v <= std::stoul(body.substr(dash + 1)); ++v)
      values.push_back(v);
    return values;
  }
  std::istringstream in(body);
  for (std::string v; std::getline(in, v, ',');) values.push_back(std::stoul(v, nullptr, 0));
  return values;
}

std::vector<Choice> Words(const std::string& name, const std::vector<unsigned>& values) {
  std::vector<Choice> out;
  for (unsigned v : values) out.push_back({Choice::kWord, v, name + "=" + std::to_string(v)});
  if (out.empty()) out.push_back({Choice::kWord, 0, name + "=0(none)"});
  return out;
}

// The values `token` takes for `s`, in `world`.
std::vector<Choice> Choices(const std::string& token, const Subject& s, const SweptWorld& world, void* set) {
  const SweptDevice* d = s.device;
  const SweptInstance* in = s.instance;
  if (token == "D" || token == "G" || token == "C")
    return {{Choice::kWord, W(d != nullptr ? d->handle : in->handle), ""}};
  if (token == "P") {  // The next GPU the library handed out, else itself.
    void* peer = world.Gpu(d->gpu);
    for (int i = 1; i < world.gpu_count; ++i) {
      void* next = world.Gpu((d->gpu + i) % world.gpu_count);
      if (next != nullptr) {
        peer = next;
        break;
      }
    }
    return {{Choice::kWord, W(peer), "peer"}};
  }
  if (token == "E") return {{Choice::kWord, W(set), ""}};
  if (token == "S") return {{Choice::kSample, 0, ""}};
  if (token == "o") return {{Choice::kOut, 0, ""}};
  if (token[0] == 'v') return {{Choice::kVersioned, std::stoul(token.substr(1), nullptr, 0), ""}};
  if (token == "n") return {{Choice::kCount, 0, ""}};
  if (token == "l") return {{Choice::kList, 0, ""}};
  if (token == "F") return {{Choice::kFields, 0, "fields"}};
  if (token == "*") return {{Choice::kRest, 0, ""}};
  if (token == "z") return {{Choice::kWord, 0, ""}};
  if (token[0] == 'b' && token != "busid") return {{Choice::kText, std::stoul(token.substr(1)), ""}};
  if (token[0] == 'i' && token != "ix") {
    std::vector<Choice> out;
    for (Word v : Enumerated(token.substr(1))) out.push_back({Choice::kWord, v, std::to_string(v)});
    return out;
  }
  if (token == "I") return Words("profile_id", d->gi_profile_ids);
  if (token == "K") return Words("gi", d->gi_ids);
  if (token == "J") return Words("ci_profile_id", in->ci_profile_ids);
  if (token == "k") return Words("ci", in->ci_ids);
  if (token == "ix") {
    std::vector<unsigned> all;
    for (int i = 0; i < world.gpu_count; ++i) all.push_back(static_cast<unsigned>(i));
    return Words("index", all);
  }
  if (token == "pid")
    return Words("pid", d->pids.empty() ? std::vector<unsigned>{unsigned(::getpid())} : d->pids);
  if (token == "self") return Words("pid", {static_cast<unsigned>(::getpid())});
  if (token == "evt") return {{Choice::kWord, d->event_types, "types=" + std::to_string(d->event_types)}};
  if (token == "mclk") return Words("memory_mhz", {d->max_memory_clock_mhz});
  if (token == "uuid") return {{Choice::kWord, W(d->uuid.c_str()), "uuid"}};
  if (token == "busid") return {{Choice::kWord, W(d->bus_id.c_str()), "bus_id"}};
  if (token == "serial") return {{Choice::kWord, W(d->serial.c_str()), "serial"}};
  if (token == "pci") return {{Choice::kWord, W(&d->pci), "pci"}};
  return {{Choice::kWord, 0, "?" + token}};
}

// One call: the choices made, turned into words.
struct Call {
  std::vector<Word> words;
  std::string args;
  unsigned* count = nullptr;  // The size protocol's count, if any.
  Word* list_word = nullptr;  // Where the list pointer went, if any.
  std::vector<void*> samples;
};

Call Build(const std::vector<Choice>& picked, Arena* arena, Library& lib) {
  Call call;
  call.words.reserve(16);
  for (const Choice& c : picked) {
    if (!c.label.empty()) call.args += (call.args.empty() ? "" : " ") + c.label;
    switch (c.kind) {
      case Choice::kWord:
        call.words.push_back(c.value);
        break;
      case Choice::kOut:
        call.words.push_back(W(arena->Take(kBufferBytes)));
        break;
      case Choice::kVersioned: {
        unsigned char* b = arena->Take(kBufferBytes);
        unsigned version = static_cast<unsigned>(c.value);
        std::memcpy(b, &version, sizeof version);
        call.words.push_back(W(b));
        break;
      }
      case Choice::kText:
        call.words.push_back(W(arena->Take(kBufferBytes)));
        call.words.push_back(c.value);
        break;
      case Choice::kCount:
        call.count = reinterpret_cast<unsigned*>(arena->Take(sizeof(unsigned)));
        call.words.push_back(W(call.count));
        break;
      case Choice::kList:
        call.words.push_back(W(arena->Take(kListBytes)));
        break;
      case Choice::kFields: {
        auto* values = reinterpret_cast<FieldValue*>(arena->Take(sizeof(FieldValue) * std::size(kFieldIds)));
        for (size_t i = 0; i < std::size(kFieldIds); ++i) values[i].fieldId = kFieldIds[i];
        call.words.push_back(std::size(kFieldIds));
        call.words.push_back(W(values));
        break;
      }
      case Choice::kRest:
        while (call.words.size() < 6) call.words.push_back(W(arena->Take(kBufferBytes)));
        break;
      case Choice::kSample: {
        void* sample = nullptr;
        lib.Call("nvmlGpmSampleAlloc", {W(&sample)});
        call.samples.push_back(sample);
        call.words.push_back(W(sample));
        break;
      }
    }
  }
  return call;
}

// Makes `name`'s call with `picked`: by the size protocol when it has a
// count and a list.
void Make(Library& lib, const std::string& name, const std::vector<std::string>& tokens,
          const std::vector<Choice>& picked, const Subject& s) {
  Arena arena;
  Call call = Build(picked, &arena, lib);
  size_t list_at = tokens.size();
  for (size_t i = 0, w = 0; i < tokens.size(); ++i, ++w) {
    if (tokens[i] == "l") list_at = w;
    if (tokens[i][0] == 'b' || tokens[i] == "F") ++w;
  }
  if (call.count != nullptr && list_at < call.words.size()) {
    Word list = call.words[list_at];
    call.words[list_at] = 0;
    *call.count = 0;
    int code = lib.Record(name + "#size", s.where, call.args, call.words);
    unsigned answered = *call.count;
    if (code == kErrorInsufficientSize && answered == 0)
      lib.Line({"check", "size-protocol", s.where.handle, s.where.tags, "disagree",
                name + " answered INSUFFICIENT_SIZE without the count needed"});
    call.words[list_at] = list;
    *call.count = std::min(answered + 4, kListCapacity);
  }
  lib.Record(name, s.where, call.args, call.words);
  for (void* sample : call.samples) lib.Call("nvmlGpmSampleFree", {W(sample)});
}

// Every combination of the tokens' choices.
void Expand(Library& lib, const std::string& name, const std::vector<std::string>& tokens, const Subject& s,
            const SweptWorld& world, void* set) {
  std::vector<std::vector<Choice>> per_token;
  for (const std::string& t : tokens) per_token.push_back(Choices(t, s, world, set));
  std::vector<size_t> at(tokens.size(), 0);
  while (true) {
    std::vector<Choice> picked;
    for (size_t i = 0; i < tokens.size(); ++i) picked.push_back(per_token[i][at[i]]);
    Make(lib, name, tokens, picked, s);
    size_t i = 0;
    for (; i < tokens.size(); ++i) {
      if (++at[i] < per_token[i].size()) break;
      at[i] = 0;
    }
    if (i == tokens.size()) return;
  }
}

bool Mentions(const std::vector<std::string>& tokens, std::initializer_list<const char*> names) {
  for (const std::string& t : tokens)
    for (const char* n : names)
      if (t == n) return true;
  return false;
}

}  // namespace

void SweepCalls(Library& lib, const SweptWorld& world, void* event_set, const SweepOptions& options) {
  for (const CallSpec& spec : Calls()) {
    std::vector<std::string> tokens = Split(spec.args);
    std::string flag;
    if (!tokens.empty() && tokens.back()[0] == '!') {
      flag = tokens.back();
      tokens.pop_back();
    }
    if (!lib.Has(spec.name)) {
      lib.Line({"missing", spec.name});
      continue;
    }
    if (flag == "!life" || flag == "!special" || flag == "!mut" || (flag == "!set" && !options.settings))
      continue;
    if (flag == "!none") {
      Expand(lib, spec.name, {"z", "*"}, {nullptr, nullptr, {"none", "none," + world.caller}}, world,
             event_set);
    } else if (Mentions(tokens, {"D", "uuid", "busid", "serial", "pci"})) {
      for (const SweptDevice& d : world.devices) {
        Expand(lib, spec.name, tokens, {&d, nullptr, {d.Label(), d.Tags(world.caller)}}, world, event_set);
      }
    } else if (Mentions(tokens, {"G"})) {
      for (const SweptInstance& g : world.gpu_instances)
        Expand(lib, spec.name, tokens, {nullptr, &g, {g.Label(), "gi," + world.caller}}, world, event_set);
    } else if (Mentions(tokens, {"C"})) {
      for (const SweptInstance& c : world.compute_instances)
        Expand(lib, spec.name, tokens, {nullptr, &c, {c.Label(), "ci," + world.caller}}, world, event_set);
    } else if (Mentions(tokens, {"E"})) {
      Expand(lib, spec.name, tokens, {nullptr, nullptr, {"events", "event-set," + world.caller}}, world,
             event_set);
    } else {
      Expand(lib, spec.name, tokens, {nullptr, nullptr, {"system", "system," + world.caller}}, world,
             event_set);
    }
  }
}

}  // namespace tarmac::nvmlsweep
