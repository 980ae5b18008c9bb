// mnn_greedy: greedy token ids and top-k logits from an MNN LLM, for the correctness gate.
//
// Built by the workflow against the engine's own libraries (same build, same toolchain), so the
// gate compares what that engine computes, as token ids, never as decoded text (a model's
// tokens may decode to nothing). It does exactly what the Python runner's `greedy` mode does
// through the Python bindings: reset, encode the chat-templated prompt (MNN's multimodal
// `<img>path</img>` syntax included), forward the prompt, then feed back the argmax, recording
// the top-k logits and the logits' mean and standard deviation at every step.
//
// Teacher-forced (the optional forced.txt: per prompt one line of space-separated token ids,
// the reference engine's greedy answer): after the prompt it feeds those tokens instead of its
// own argmax, one step per token, so every step is compared in the reference's context.
//
// usage: mnn_greedy <config.json> <prompts.txt: one prompt per line> <max_new_tokens> <out.json>
//                   [top_k [forced.txt]]
// Exit 0 once out.json is written, whatever the engine produced (the gate judges a short or
// empty answer, and says so); non-zero when the model cannot load or out.json cannot be written.
#include <MNN/expr/ExprCreator.hpp>
#include <llm/llm.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gate_output.hpp"
#include "mnn_logits.hpp"

using MNN::Express::VARP;
using MNN::Transformer::Llm;

using mnn_gate::lastRow;

int main(int argc, const char* argv[]) {
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: %s <config.json> <prompts.txt> <max_new_tokens> <out.json> [top_k]\n",
                     argv[0]);
        return 2;
    }
    const std::string configPath = argv[1];
    const int maxNew = std::atoi(argv[3]);
    const std::string outPath = argv[4];
    const int topK = argc > 5 ? std::atoi(argv[5]) : 8;
    if (maxNew < 1 || topK < 2) {
        std::fprintf(stderr, "max_new_tokens must be >= 1 and top_k >= 2\n");
        return 2;
    }
    std::vector<std::string> prompts;
    std::vector<std::vector<int>> forced;  // empty: free-running greedy
    if (!gate::readQuestions(argv[2], argc > 6 ? argv[6] : nullptr, prompts, forced)) {
        return 2;
    }
    std::unique_ptr<Llm, void (*)(Llm*)> llm(Llm::createLLM(configPath), Llm::destroy);
    if (!llm || !llm->load()) {
        std::fprintf(stderr, "%s: the engine could not load the model\n", configPath.c_str());
        return 3;
    }
    gate::Writer out(outPath, "mnn_greedy", topK);
    if (!out.ok()) {
        std::fprintf(stderr, "%s.part: cannot write\n", outPath.c_str());
        return 4;
    }
    for (size_t p = 0; p < prompts.size(); ++p) {
        llm->reset();
        std::vector<int> ids = llm->tokenizer_encode(llm->apply_chat_template(prompts[p]));
        std::vector<int> tokens;
        std::vector<gate::Step> steps;
        const bool teacher = !forced.empty();
        const int length = teacher ? static_cast<int>(forced[p].size()) : maxNew;
        VARP logits = llm->forward(ids);
        while (logits.get() != nullptr) {
            const std::vector<float> row = lastRow(logits);
            if (row.empty()) {
                break;
            }
            steps.push_back(gate::describe(row.data(), static_cast<int>(row.size()), topK));
            tokens.push_back(steps.back().top.front().first);
            if (static_cast<int>(tokens.size()) >= length) {
                break;
            }
            const int fed = teacher ? forced[p][tokens.size() - 1] : tokens.back();
            logits = llm->forward(std::vector<int>{fed});
        }
        if (static_cast<int>(tokens.size()) != length) {
            std::fprintf(stderr, "prompt %zu: the engine stopped after %zu of %d tokens\n", p,
                         tokens.size(), length);
        }
        out.answer(p, ids.size(), tokens, teacher ? &forced[p] : nullptr, steps);
    }
    return out.close() ? 0 : 4;
}
