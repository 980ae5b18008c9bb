// mnn_greedy: greedy token ids and top-k logits from an MNN LLM, for the correctness gate.
//
// Built by the workflow against the engine's own libraries (same build, same toolchain), so the
// gate compares what that engine computes, as token ids, never as decoded text (a model's
// tokens may decode to nothing). It does exactly what the prebuilt runner's `greedy` mode does
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

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

using MNN::Express::VARP;
using MNN::Transformer::Llm;

namespace {

struct Step {
    std::vector<std::pair<int, float>> top;  // (token id, logit), best first
    double mean = 0.0;
    double sd = 0.0;
};

// The last position's logits as floats (the engine may compute in fp16).
std::vector<float> lastRow(VARP logits) {
    auto info = logits->getInfo();
    if (info == nullptr || info->dim.empty()) {
        return {};
    }
    if (info->type.code != halide_type_float || info->type.bits != 32) {
        logits = MNN::Express::_Cast<float>(logits);
        info = logits->getInfo();
    }
    const int vocab = info->dim.back();
    const float* data = logits->readMap<float>();
    if (data == nullptr || vocab <= 0 || info->size < vocab) {
        return {};
    }
    const float* row = data + (info->size - vocab);
    return std::vector<float>(row, row + vocab);
}

Step describe(const std::vector<float>& row, int topK) {
    Step step;
    std::vector<int> order(row.size());
    std::iota(order.begin(), order.end(), 0);
    const int k = std::min<int>(topK, static_cast<int>(row.size()));
    // ties broken by the lower id, as an argmax over the row would
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    for (int i = 0; i < k; ++i) {
        step.top.emplace_back(order[i], row[order[i]]);
    }
    double sum = 0.0, squares = 0.0;
    for (float v : row) {
        sum += v;
        squares += static_cast<double>(v) * v;
    }
    const double n = static_cast<double>(row.size());
    step.mean = sum / n;
    step.sd = std::sqrt(std::max(0.0, squares / n - step.mean * step.mean));
    return step;
}

void writeNumber(FILE* out, double value) {
    if (std::isfinite(value)) {
        std::fprintf(out, "%.9g", value);
    } else {
        std::fprintf(out, "null");  // JSON has no NaN/Inf: a broken kernel shows as null
    }
}

}  // namespace

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
    {
        std::ifstream in(argv[2]);
        std::string line;
        while (std::getline(in, line)) {
            if (!line.empty()) {
                prompts.push_back(line);
            }
        }
    }
    if (prompts.empty()) {
        std::fprintf(stderr, "%s: no prompt\n", argv[2]);
        return 2;
    }
    std::vector<std::vector<int>> forced;  // empty: free-running greedy
    if (argc > 6) {
        std::ifstream in(argv[6]);
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream words(line);
            std::vector<int> ids;
            int id = 0;
            while (words >> id) {
                ids.push_back(id);
            }
            forced.push_back(ids);
        }
        if (forced.size() != prompts.size()) {
            std::fprintf(stderr, "%s: %zu token lines for %zu prompts\n", argv[6], forced.size(),
                         prompts.size());
            return 2;
        }
    }
    std::unique_ptr<Llm, void (*)(Llm*)> llm(Llm::createLLM(configPath), Llm::destroy);
    if (!llm || !llm->load()) {
        std::fprintf(stderr, "%s: the engine could not load the model\n", configPath.c_str());
        return 3;
    }
    const std::string partPath = outPath + ".part";
    FILE* out = std::fopen(partPath.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "%s: cannot write\n", partPath.c_str());
        return 4;
    }
    std::fprintf(out, "{\"tool\": \"mnn_greedy\", \"top_k\": %d, \"answers\": [", topK);
    for (size_t p = 0; p < prompts.size(); ++p) {
        llm->reset();
        std::vector<int> ids = llm->tokenizer_encode(llm->apply_chat_template(prompts[p]));
        std::vector<int> tokens;
        std::vector<Step> steps;
        const bool teacher = !forced.empty();
        const int length = teacher ? static_cast<int>(forced[p].size()) : maxNew;
        VARP logits = llm->forward(ids);
        while (logits.get() != nullptr) {
            const std::vector<float> row = lastRow(logits);
            if (row.empty()) {
                break;
            }
            steps.push_back(describe(row, topK));
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
        std::fprintf(out, "%s\n {\"index\": %zu, \"prompt_tokens\": %zu, \"tokens\": [",
                     p ? "," : "", p, ids.size());
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::fprintf(out, "%s%d", i ? ", " : "", tokens[i]);
        }
        std::fprintf(out, "]");
        if (teacher) {
            std::fprintf(out, ", \"forced_tokens\": [");
            for (size_t i = 0; i < forced[p].size(); ++i) {
                std::fprintf(out, "%s%d", i ? ", " : "", forced[p][i]);
            }
            std::fprintf(out, "]");
        }
        std::fprintf(out, ", \"steps\": [");
        for (size_t i = 0; i < steps.size(); ++i) {
            std::fprintf(out, "%s\n  {\"mean\": ", i ? "," : "");
            writeNumber(out, steps[i].mean);
            std::fprintf(out, ", \"sd\": ");
            writeNumber(out, steps[i].sd);
            std::fprintf(out, ", \"top\": [");
            for (size_t j = 0; j < steps[i].top.size(); ++j) {
                std::fprintf(out, "%s[%d, ", j ? ", " : "", steps[i].top[j].first);
                writeNumber(out, steps[i].top[j].second);
                std::fprintf(out, "]");
            }
            std::fprintf(out, "]}");
        }
        std::fprintf(out, "]}");
    }
    std::fprintf(out, "\n]}\n");
    if (std::fclose(out) != 0 || std::rename(partPath.c_str(), outPath.c_str()) != 0) {
        std::fprintf(stderr, "%s: cannot write\n", outPath.c_str());
        return 4;
    }
    return 0;
}
