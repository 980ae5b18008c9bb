// mnn_timers: MNN's llm_bench timers and the workflow's runner timers on one engine, in one
// process, so that their difference is the timers' alone (benchmarks/llm_bench_timers.py).
//
//   llm_bench  what llm_bench 3.6.1 -kv true times: Llm::response(P tokens of id 16, no output,
//              N new tokens), then the context's prefill_us (the prompt's forward pass, its
//              embeddings computed before the clock) and decode_us (per new token: detokenising
//              and the forward pass with its embedding; the sampler outside), over gen_seq_len
//   runner     the workflow's runners (engines/timers.py RUNNER_STEPS): reset, Llm::forward on
//              the P ids, the last logits row read out and its argmax (prefill); N times the same
//              on the last token (decode), around a steady clock
//
// usage: mnn_timers <config.json> <prompt_tokens> <generate_tokens> <repetitions> <out.jsonl>
// One unmeasured run of each first; then per repetition both, in alternating order. One JSON
// line per run: {"method","rep","prefill_us","decode_us","prompt_tokens","decode_tokens"}.
#include <MNN/expr/ExprCreator.hpp>
#include <llm/llm.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "mnn_logits.hpp"  // engines/mnn_source/gate_tool/: mnn_greedy's

using MNN::Express::VARP;
using MNN::Transformer::Llm;

namespace {

const int kPromptToken = 16;  // llm_bench's

int64_t nowUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The last position's logits read out as floats (mnn_greedy's lastRow) and their argmax.
int greedyPick(VARP logits) {
    const std::vector<float> row = mnn_gate::lastRow(logits);
    if (row.empty()) {
        return -1;
    }
    int best = 0;
    for (int i = 1; i < static_cast<int>(row.size()); ++i) {
        if (row[i] > row[best]) {
            best = i;
        }
    }
    return best;
}

struct Run {
    int64_t prefillUs = 0;
    int64_t decodeUs = 0;
    int decodeTokens = 0;
};

Run llmBench(Llm* llm, int prompt, int generate) {
    std::vector<int> tokens(prompt, kPromptToken);
    llm->response(tokens, nullptr, nullptr, generate);
    const auto* context = llm->getContext();
    return {context->prefill_us, context->decode_us, context->gen_seq_len};
}

Run runner(Llm* llm, int prompt, int generate) {
    llm->reset();
    std::vector<int> tokens(prompt, kPromptToken);
    Run run;
    int64_t start = nowUs();
    int token = greedyPick(llm->forward(tokens));
    run.prefillUs = nowUs() - start;
    start = nowUs();
    for (int i = 0; i < generate && token >= 0; ++i) {
        token = greedyPick(llm->forward(std::vector<int>{token}));
        run.decodeTokens += token >= 0;
    }
    run.decodeUs = nowUs() - start;
    return run;
}

}  // namespace

int main(int argc, const char* argv[]) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s <config.json> <P> <N> <repetitions> <out.jsonl>\n",
                     argv[0]);
        return 2;
    }
    const int prompt = std::atoi(argv[2]), generate = std::atoi(argv[3]);
    const int repetitions = std::atoi(argv[4]);
    if (prompt < 1 || generate < 1 || repetitions < 1) {
        std::fprintf(stderr, "P, N and repetitions must be >= 1\n");
        return 2;
    }
    std::unique_ptr<Llm, void (*)(Llm*)> llm(Llm::createLLM(argv[1]), Llm::destroy);
    if (!llm || !llm->load()) {
        std::fprintf(stderr, "%s: the engine could not load the model\n", argv[1]);
        return 3;
    }
    FILE* out = std::fopen(argv[5], "w");
    if (out == nullptr) {
        std::fprintf(stderr, "%s: cannot write\n", argv[5]);
        return 4;
    }
    llmBench(llm.get(), prompt, generate);  // unmeasured, as llm_bench drops its first
    runner(llm.get(), prompt, generate);
    for (int rep = 0; rep < repetitions; ++rep) {
        for (int k = 0; k < 2; ++k) {
            const bool bench = (rep + k) % 2 == 0;  // alternating which runs first
            const Run run = bench ? llmBench(llm.get(), prompt, generate)
                                  : runner(llm.get(), prompt, generate);
            std::fprintf(out,
                         "{\"method\": \"%s\", \"rep\": %d, \"prefill_us\": %lld, "
                         "\"decode_us\": %lld, \"prompt_tokens\": %d, \"decode_tokens\": %d}\n",
                         bench ? "llm_bench" : "runner", rep, (long long)run.prefillUs,
                         (long long)run.decodeUs, prompt, run.decodeTokens);
            std::fflush(out);
        }
    }
    return std::fclose(out) == 0 ? 0 : 4;
}
