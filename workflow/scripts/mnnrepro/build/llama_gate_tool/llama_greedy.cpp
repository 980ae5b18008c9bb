// llama_greedy: greedy token ids and top-k logits from llama.cpp (libllama), for the
// correctness gate: the control engine's twin of mnn_greedy, with the same output.
//
// Built by the workflow against the engine's own libraries, so the gate compares what that
// engine computes (KleidiAI's SME2 kernels, or not: GGML_KLEIDIAI_SME=0), as token ids. The
// context is set up as llama-bench sets up its own (batch 2048, micro-batch 512, flash
// attention auto, f16 KV cache, the given threads), so the gate runs the kernels that are
// timed. The prompt is tokenized with the model's vocabulary (special tokens parsed, BOS as
// the model says), forwarded as one batch, then the argmax is fed back one token at a time,
// recording the top-k logits and the logits' mean and standard deviation at every step.
//
// Teacher-forced (the optional forced.txt: per prompt one line of space-separated token ids,
// the reference's greedy answer): after the prompt it feeds those tokens instead of its own
// argmax, so every step is compared in the reference's context.
//
// usage: llama_greedy <model.gguf> <prompts.txt> <max_new_tokens> <out.json> <threads>
//                     [top_k [forced.txt]]
// Exit 0 once out.json is written; non-zero when the model cannot load or out.json cannot be
// written.
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Step {
    std::vector<std::pair<int, float>> top;  // (token id, logit), best first
    double mean = 0.0;
    double sd = 0.0;
};

Step describe(const float* row, int vocab, int topK) {
    Step step;
    std::vector<int> order(vocab);
    std::iota(order.begin(), order.end(), 0);
    const int k = std::min(topK, vocab);
    // ties broken by the lower id, as an argmax over the row would
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

void writeNumber(FILE* out, double value) {
    if (std::isfinite(value)) {
        std::fprintf(out, "%.9g", value);
    } else {
        std::fprintf(out, "null");  // JSON has no NaN/Inf: a broken kernel shows as null
    }
}

std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& text) {
    int n = -llama_tokenize(vocab, text.c_str(), text.size(), nullptr, 0, true, true);
    std::vector<llama_token> ids(std::max(n, 0));
    if (n > 0 && llama_tokenize(vocab, text.c_str(), text.size(), ids.data(), n, true, true) < 0) {
        ids.clear();
    }
    return ids;
}

}  // namespace

int main(int argc, const char* argv[]) {
    if (argc < 6) {
        std::fprintf(stderr,
                     "usage: %s <model.gguf> <prompts.txt> <max_new_tokens> <out.json> <threads> "
                     "[top_k [forced.txt]]\n",
                     argv[0]);
        return 2;
    }
    const std::string modelPath = argv[1];
    const int maxNew = std::atoi(argv[3]);
    const std::string outPath = argv[4];
    const int threads = std::atoi(argv[5]);
    const int topK = argc > 6 ? std::atoi(argv[6]) : 8;
    if (maxNew < 1 || topK < 2 || threads < 1) {
        std::fprintf(stderr, "max_new_tokens and threads must be >= 1, top_k >= 2\n");
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
    if (argc > 7) {
        std::ifstream in(argv[7]);
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
            std::fprintf(stderr, "%s: %zu token lines for %zu prompts\n", argv[7], forced.size(),
                         prompts.size());
            return 2;
        }
    }
    llama_backend_init();
    // the engine's feature line: what ggml was built with and found (`SME = 1` on an SME CPU)
    std::fprintf(stderr, "system_info: %s\n", llama_print_system_info());
    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model* model = llama_model_load_from_file(modelPath.c_str(), mparams);
    if (model == nullptr) {
        std::fprintf(stderr, "%s: the engine could not load the model\n", modelPath.c_str());
        return 3;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int nVocab = llama_vocab_n_tokens(vocab);
    const std::string partPath = outPath + ".part";
    FILE* out = std::fopen(partPath.c_str(), "w");
    if (out == nullptr) {
        std::fprintf(stderr, "%s: cannot write\n", partPath.c_str());
        return 4;
    }
    std::fprintf(out, "{\"tool\": \"llama_greedy\", \"top_k\": %d, \"answers\": [", topK);
    for (size_t p = 0; p < prompts.size(); ++p) {
        std::vector<llama_token> ids = tokenize(vocab, prompts[p]);
        const bool teacher = !forced.empty();
        const int length = teacher ? static_cast<int>(forced[p].size()) : maxNew;
        llama_context_params cparams = llama_context_default_params();  // as llama-bench
        cparams.n_ctx = static_cast<uint32_t>(ids.size() + length + 1);
        cparams.n_batch = 2048;
        cparams.n_ubatch = 512;
        cparams.n_threads = threads;
        cparams.n_threads_batch = threads;
        cparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
        cparams.type_k = GGML_TYPE_F16;
        cparams.type_v = GGML_TYPE_F16;
        llama_context* ctx = llama_init_from_model(model, cparams);  // a fresh context per prompt
        std::vector<int> tokens;
        std::vector<Step> steps;
        if (ctx != nullptr && !ids.empty()) {
            int status = llama_decode(ctx, llama_batch_get_one(ids.data(), ids.size()));
            while (status == 0) {
                const float* row = llama_get_logits_ith(ctx, -1);
                if (row == nullptr) {
                    break;
                }
                steps.push_back(describe(row, nVocab, topK));
                tokens.push_back(steps.back().top.front().first);
                if (static_cast<int>(tokens.size()) >= length) {
                    break;
                }
                llama_token fed = teacher ? forced[p][tokens.size() - 1] : tokens.back();
                status = llama_decode(ctx, llama_batch_get_one(&fed, 1));
            }
        }
        if (static_cast<int>(tokens.size()) != length) {
            std::fprintf(stderr, "prompt %zu: the engine stopped after %zu of %d tokens\n", p,
                         tokens.size(), length);
        }
        if (ctx != nullptr) {
            llama_free(ctx);
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
    llama_model_free(model);
    if (std::fclose(out) != 0 || std::rename(partPath.c_str(), outPath.c_str()) != 0) {
        std::fprintf(stderr, "%s: cannot write\n", outPath.c_str());
        return 4;
    }
    return 0;
}
