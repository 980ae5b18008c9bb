// What the gate tools that drive an engine one forward call at a time share (ort_genai_tool,
// executorch_tool): the feature line, the greedy (or teacher-forced) loop of one prompt, one
// benchmark repetition by the Python runner's definitions (engines/runner/runner_timing.
// time_phases) and its JSON line. An engine is a type with `using Id`, `reset()` (an empty
// context), `forward(std::vector<Id>)` (the last position's logits after appending the ids) and
// `context()` (the tokens in it).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <sys/utsname.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "gate_output.hpp"

namespace gate {

constexpr int kSyntheticToken = 16;  // engines/runner/runner_timing.SYNTHETIC_TOKEN

// What the kernel tells the process of SME and SME2 (AT_HWCAP2, where cpuinfo reads them), in
// genai_llm.hwcap2_line's words, so that every runner's line reads alike.
inline void printSupports() {
#if defined(__aarch64__) && defined(__linux__)
    const unsigned long hwcap2 = getauxval(AT_HWCAP2);
    const bool sme = hwcap2 & (1UL << 23), sme2 = hwcap2 & (1UL << 37);  // uapi hwcap.h
    std::fprintf(stderr, "The process supports (AT_HWCAP2, what cpuinfo reads): sme:%d, sme2:%d\n",
                 sme, sme2);
#else
    struct utsname name {};
    uname(&name);
    std::fprintf(stderr, "The process supports (AT_HWCAP2, %s: no Arm features): sme:0, sme2:0\n",
                 name.machine);
#endif
}

// The first largest logit's id (numpy's argmax, as the Python runner's): one pass, inside the
// timed decode loop (describe also sorts and takes the mean and sd, which the gate needs)
inline int argmax(const std::vector<float>& row) {
    return static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
}

// One prompt's answer: its ids forwarded at once, then its argmax (or, teacher-forced, the
// reference's token) fed back one at a time, `length` tokens; written to out as answer p.
template <class Engine>
void answer(Engine& engine, Writer& out, size_t p, const std::vector<typename Engine::Id>& ids,
            int length, const std::vector<int>* forced, int topK) {
    engine.reset();
    std::vector<int> tokens;
    std::vector<Step> steps;
    std::vector<float> row = engine.forward(ids);
    while (true) {
        steps.push_back(describe(row.data(), static_cast<int>(row.size()), topK));
        tokens.push_back(steps.back().top.front().first);
        if (static_cast<int>(tokens.size()) >= length) {
            break;
        }
        const int next = forced != nullptr ? (*forced)[tokens.size() - 1] : tokens.back();
        row = engine.forward({static_cast<typename Engine::Id>(next)});
    }
    out.answer(p, ids.size(), tokens, forced, steps);
}

struct Timed {
    double prefillS = 0.0, decodeS = 0.0;
    size_t afterPrefill = 0, afterDecode = 0;
    int last = 0;
};

// One repetition: P tokens into an empty context (the argmax forces the result), then N tokens
// each fed its predecessor's argmax.
template <class Engine>
Timed timePhases(Engine& engine, int prompt, int generate) {
    using Clock = std::chrono::steady_clock;
    using Id = typename Engine::Id;
    engine.reset();
    Timed timed;
    const auto prefillStart = Clock::now();
    int token = argmax(engine.forward(std::vector<Id>(prompt, static_cast<Id>(kSyntheticToken))));
    const auto prefillEnd = Clock::now();
    timed.afterPrefill = engine.context();
    for (int i = 0; i < generate; ++i) {
        token = argmax(engine.forward({static_cast<Id>(token)}));
    }
    const auto decodeEnd = Clock::now();
    timed.prefillS = std::chrono::duration<double>(prefillEnd - prefillStart).count();
    timed.decodeS = std::chrono::duration<double>(decodeEnd - prefillEnd).count();
    timed.afterDecode = engine.context();
    timed.last = token;
    return timed;
}

// W unmeasured warm-up repetitions, then one measured: its JSON line on stdout
// (engines/device_io.parse_tool_bench reads it).
template <class Engine>
void bench(Engine& engine, const char* tool, int prompt, int generate, int warmup) {
    for (int i = 0; i < warmup; ++i) {
        timePhases(engine, prompt, generate);
    }
    const Timed t = timePhases(engine, prompt, generate);
    std::printf("{\"tool\": \"%s\", \"warmup\": %d, \"prompt_tokens\": %d, "
                "\"generate_tokens\": %d, \"prefill_s\": %.9g, \"decode_s\": %.9g, "
                "\"context_after_prefill\": %zu, \"context_after_decode\": %zu, "
                "\"last_token\": %d}\n",
                tool, warmup, prompt, generate, t.prefillS, t.decodeS, t.afterPrefill,
                t.afterDecode, t.last);
}

// The tools' command line: `greedy <model> <setting> <prompts.txt> <max_new_tokens> <out.json>
// [top_k [forced.txt]]` or `bench <model> <setting> <prompt_tokens> <generate_tokens>
// <warmup>` (model and setting: what the tool names them); the feature line, then the mode.
inline int run(int argc, const char* argv[], const char* model, const char* setting,
               int (*greedy)(int, const char*[]), int (*bench)(const char*[])) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (!((mode == "greedy" && argc >= 7) || (mode == "bench" && argc == 7))) {
        std::fprintf(stderr,
                     "usage: %s greedy %s %s <prompts.txt> <max_new_tokens> <out.json> "
                     "[top_k [forced.txt]]\n"
                     "       %s bench %s %s <prompt_tokens> <generate_tokens> <warmup>\n",
                     argv[0], model, setting, argv[0], model, setting);
        return 2;
    }
    printSupports();
    return mode == "greedy" ? greedy(argc, argv) : bench(argv);
}

}  // namespace gate
