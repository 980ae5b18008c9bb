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

#include <cstdlib>
#include <string>
#include <vector>

#include "gate_output.hpp"

namespace {

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
    const int threads = std::atoi(argv[5]);
    const int topK = argc > 6 ? std::atoi(argv[6]) : 8;
    if (maxNew < 1 || topK < 2 || threads < 1) {
        std::fprintf(stderr, "max_new_tokens and threads must be >= 1, top_k >= 2\n");
        return 2;
    }
    std::vector<std::string> prompts;
    std::vector<std::vector<int>> forced;  // empty: free-running greedy
    if (!gate::readQuestions(argv[2], argc > 7 ? argv[7] : nullptr, prompts, forced)) {
        return 2;
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
    gate::Writer out(argv[4], "llama_greedy", topK);
    if (!out.ok()) {
        std::fprintf(stderr, "%s.part: cannot write\n", argv[4]);
        return 4;
    }
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
        std::vector<gate::Step> steps;
        if (ctx != nullptr && !ids.empty()) {
            int status = llama_decode(ctx, llama_batch_get_one(ids.data(), ids.size()));
            while (status == 0) {
                const float* row = llama_get_logits_ith(ctx, -1);
                if (row == nullptr) {
                    break;
                }
                steps.push_back(gate::describe(row, nVocab, topK));
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
        out.answer(p, ids.size(), tokens, teacher ? &forced[p] : nullptr, steps);
    }
    llama_model_free(model);
    return out.close() ? 0 : 4;
}
