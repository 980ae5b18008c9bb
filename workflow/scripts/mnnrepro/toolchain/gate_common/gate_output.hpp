// What the correctness gate's token-id tools share (mnn_greedy, llama_greedy): their arguments'
// files, the description of one step's logits, and the JSON they write. One engine-specific
// loop per tool sits between reading and writing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gate {

struct Step {
    std::vector<std::pair<int, float>> top;  // (token id, logit), best first
    double mean = 0.0;
    double sd = 0.0;
};

// The top-k of one row of logits (ties broken by the lower id, as an argmax would), and the
// row's mean and standard deviation.
inline Step describe(const float* row, int vocab, int topK) {
    Step step;
    std::vector<int> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    const int k = std::min(topK, vocab);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    for (int i = 0; i < k; ++i) {
        step.top.emplace_back(order[i], row[order[i]]);
    }
    double sum = 0.0, squares = 0.0;
    for (int i = 0; i < vocab; ++i) {
        sum += row[i];
        squares += static_cast<double>(row[i]) * row[i];
    }
    step.mean = sum / vocab;
    step.sd = std::sqrt(std::max(0.0, squares / vocab - step.mean * step.mean));
    return step;
}

inline void writeNumber(FILE* out, double value) {
    if (std::isfinite(value)) {
        std::fprintf(out, "%.9g", value);
    } else {
        std::fprintf(out, "null");  // JSON has no NaN/Inf: a broken kernel shows as null
    }
}

// One prompt per non-empty line.
inline std::vector<std::string> readPrompts(const char* path) {
    std::vector<std::string> prompts;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) {
            prompts.push_back(line);
        }
    }
    return prompts;
}

// Per prompt one line of space-separated token ids (the reference's answer); false (with a
// message) when the lines do not match the prompts.
inline bool readForced(const char* path, size_t prompts, std::vector<std::vector<int>>& forced) {
    std::ifstream in(path);
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
    if (forced.size() != prompts) {
        std::fprintf(stderr, "%s: %zu token lines for %zu prompts\n", path, forced.size(), prompts);
        return false;
    }
    return true;
}

// The prompts and, where forcedPath is given, the reference's tokens for each; false (with a
// message) when there is no prompt or the token lines do not match the prompts.
inline bool readQuestions(const char* promptsPath, const char* forcedPath,
                          std::vector<std::string>& prompts,
                          std::vector<std::vector<int>>& forced) {
    prompts = readPrompts(promptsPath);
    if (prompts.empty()) {
        std::fprintf(stderr, "%s: no prompt\n", promptsPath);
        return false;
    }
    return forcedPath == nullptr || readForced(forcedPath, prompts.size(), forced);
}

// out.json is written as out.json.part, then renamed: never found half-written.
class Writer {
public:
    Writer(const std::string& path, const char* tool, int topK) : path_(path) {
        out_ = std::fopen((path_ + ".part").c_str(), "w");
        if (out_ != nullptr) {
            std::fprintf(out_, "{\"tool\": \"%s\", \"top_k\": %d, \"answers\": [", tool, topK);
        }
    }
    bool ok() const { return out_ != nullptr; }

    void answer(size_t index, size_t promptTokens, const std::vector<int>& tokens,
                const std::vector<int>* forced, const std::vector<Step>& steps) {
        std::fprintf(out_, "%s\n {\"index\": %zu, \"prompt_tokens\": %zu, \"tokens\": [",
                     index ? "," : "", index, promptTokens);
        ids(tokens);
        std::fprintf(out_, "]");
        if (forced != nullptr) {
            std::fprintf(out_, ", \"forced_tokens\": [");
            ids(*forced);
            std::fprintf(out_, "]");
        }
        std::fprintf(out_, ", \"steps\": [");
        for (size_t i = 0; i < steps.size(); ++i) {
            std::fprintf(out_, "%s\n  {\"mean\": ", i ? "," : "");
            writeNumber(out_, steps[i].mean);
            std::fprintf(out_, ", \"sd\": ");
            writeNumber(out_, steps[i].sd);
            std::fprintf(out_, ", \"top\": [");
            for (size_t j = 0; j < steps[i].top.size(); ++j) {
                std::fprintf(out_, "%s[%d, ", j ? ", " : "", steps[i].top[j].first);
                writeNumber(out_, steps[i].top[j].second);
                std::fprintf(out_, "]");
            }
            std::fprintf(out_, "]}");
        }
        std::fprintf(out_, "]}");
    }

    // false (with a message) when the file could not be completed
    bool close() {
        std::fprintf(out_, "\n]}\n");
        if (std::fclose(out_) != 0 || std::rename((path_ + ".part").c_str(), path_.c_str()) != 0) {
            std::fprintf(stderr, "%s: cannot write\n", path_.c_str());
            return false;
        }
        return true;
    }

private:
    void ids(const std::vector<int>& values) {
        for (size_t i = 0; i < values.size(); ++i) {
            std::fprintf(out_, "%s%d", i ? ", " : "", values[i]);
        }
    }
    std::string path_;
    FILE* out_ = nullptr;
};

}  // namespace gate
