// executorch_tool: an ExecuTorch program (.pte) exported by ExecuTorch's LLM exporter with the
// XNNPACK delegate, run through the runtime's Module API: the correctness gate's answers and
// one benchmark repetition, by the definitions of the other runners (engines/runner/
// runner_timing.time_phases).
//
// The program's `forward(tokens [1, n], input_pos [1])` returns the last position's logits and
// keeps the key/value cache in the program's own buffers: a new context starts at position 0
// (positions past the one given are masked, so what an earlier prompt left there is not read).
//
//   greedy: per prompt (one line of token ids: the export put it in the chat template and
//     encoded it with the model's tokenizer, prompts.json), forwarded at once, then its argmax
//     (or, teacher-forced, the reference's token: forced.txt) fed back one at a time; top-k
//     logits, mean and sd at every step, in the JSON the other gate tools write (gate_loop.hpp).
//   bench: after W unmeasured warm-up runs, prefill of P tokens (token 16 repeated, as
//     llm_bench's synthetic prompt) into an empty context, then N decode tokens each fed its
//     predecessor's argmax; prints one JSON line with the seconds of each and the context
//     length after each.
//
// Threads: ExecuTorch's thread pool (XNNPACK's), reset to the asked count. Both modes print
// to stderr what the kernel tells the process of SME and SME2 (AT_HWCAP2, where cpuinfo, and
// so XNNPACK, reads them).
//
// usage: executorch_tool greedy <model.pte> <threads> <prompts.txt> <max_new_tokens>
//                               <out.json> [top_k [forced.txt]]
//        executorch_tool bench <model.pte> <threads> <prompt_tokens> <generate_tokens> <warmup>
// Exit 0 on success; 2 bad arguments; 3 the model cannot load or run; 4 out.json unwritten.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include "gate_loop.hpp"

// The wheel ships no threadpool.h: the two members called, as libexecutorch_threadpool.so
// defines them (extension/threadpool/threadpool.h)
namespace executorch::extension::threadpool {
class ThreadPool {
public:
    bool _unsafe_reset_threadpool(uint32_t count);
    size_t get_thread_count() const;
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool

namespace {

using executorch::aten::ScalarType;
using executorch::extension::Module;
using executorch::extension::from_blob;

[[noreturn]] void fail(const char* what, int error) {
    std::fprintf(stderr, "%s failed (ExecuTorch error %d)\n", what, error);
    std::exit(3);
}

struct Program {
    using Id = int64_t;
    Module module;
    int64_t contextLimit = 0;  // the program's static cache: at most this many positions
    int64_t position = 0;      // the context so far

    Program(const char* path, int threads) : module(path, Module::LoadMode::Mmap) {
        auto* pool = executorch::extension::threadpool::get_threadpool();
        if (pool == nullptr || !pool->_unsafe_reset_threadpool(static_cast<uint32_t>(threads))) {
            std::fprintf(stderr, "cannot set ExecuTorch's thread pool to %d threads\n", threads);
            std::exit(3);
        }
        const auto loaded = module.load_method("forward");
        if (loaded != executorch::runtime::Error::Ok) {
            fail(path, static_cast<int>(loaded));
        }
        const auto limit = module.get("get_max_context_len");  // the exporter's metadata method
        if (!limit.ok()) {
            fail("get_max_context_len", static_cast<int>(limit.error()));
        }
        contextLimit = limit.get().toInt();
        std::fprintf(stderr, "ExecuTorch threads: %zu, context limit %lld\n",
                     pool->get_thread_count(), static_cast<long long>(contextLimit));
    }
    void reset() { position = 0; }
    size_t context() const { return static_cast<size_t>(position); }
    // The last position's logits after appending ids at the current position.
    std::vector<float> forward(std::vector<int64_t> ids) {
        const int64_t count = static_cast<int64_t>(ids.size());
        if (position + count > contextLimit) {
            std::fprintf(stderr, "context of %lld tokens: the program holds %lld\n",
                         static_cast<long long>(position + count),
                         static_cast<long long>(contextLimit));
            std::exit(3);
        }
        int64_t at = position;
        auto tokens = from_blob(ids.data(), {1, static_cast<int>(count)}, ScalarType::Long);
        auto where = from_blob(&at, {1}, ScalarType::Long);
        const auto ran = module.forward({tokens, where});
        if (!ran.ok()) {
            fail("forward", static_cast<int>(ran.error()));
        }
        const auto logits = ran.get()[0].toTensor();
        if (logits.scalar_type() != ScalarType::Float) {
            std::fprintf(stderr, "logits of scalar type %d: expected float32\n",
                         static_cast<int>(logits.scalar_type()));
            std::exit(3);
        }
        const int64_t vocab = logits.size(logits.dim() - 1);
        const float* row = logits.const_data_ptr<float>() + (logits.numel() - vocab);
        position += count;
        return std::vector<float>(row, row + vocab);
    }
};

std::vector<int64_t> tokenIds(const std::string& line) {
    std::istringstream words(line);
    std::vector<int64_t> ids;
    int64_t id = 0;
    while (words >> id) {
        ids.push_back(id);
    }
    return ids;
}

int greedy(int argc, const char* argv[]) {
    const int threads = std::atoi(argv[3]), maxNew = std::atoi(argv[5]);
    const int topK = argc > 7 ? std::atoi(argv[7]) : 8;
    if (threads < 1 || maxNew < 1 || topK < 2) {
        std::fprintf(stderr, "threads and max_new_tokens must be >= 1, top_k >= 2\n");
        return 2;
    }
    std::vector<std::string> prompts;
    std::vector<std::vector<int>> forced;  // empty: free-running greedy
    if (!gate::readQuestions(argv[4], argc > 8 ? argv[8] : nullptr, prompts, forced)) {
        return 2;
    }
    Program program(argv[2], threads);
    gate::Writer out(argv[6], "executorch_tool", topK);
    if (!out.ok()) {
        std::fprintf(stderr, "%s.part: cannot write\n", argv[6]);
        return 4;
    }
    for (size_t p = 0; p < prompts.size(); ++p) {
        const std::vector<int64_t> ids = tokenIds(prompts[p]);
        if (ids.empty()) {
            std::fprintf(stderr, "%s: prompt %zu holds no token id\n", argv[4], p);
            return 2;
        }
        const bool teacher = !forced.empty();
        const int length = teacher ? static_cast<int>(forced[p].size()) : maxNew;
        gate::answer(program, out, p, ids, length, teacher ? &forced[p] : nullptr, topK);
    }
    return out.close() ? 0 : 4;
}

int bench(const char* argv[]) {
    const int threads = std::atoi(argv[3]), prompt = std::atoi(argv[4]);
    const int generate = std::atoi(argv[5]), warmup = std::atoi(argv[6]);
    if (threads < 1 || prompt < 1 || generate < 1 || warmup < 0) {
        std::fprintf(stderr, "threads, prompt_tokens and generate_tokens must be >= 1, "
                             "warmup >= 0\n");
        return 2;
    }
    Program program(argv[2], threads);
    gate::bench(program, "executorch_tool", prompt, generate, warmup);
    return 0;
}

}  // namespace

int main(int argc, const char* argv[]) {
    return gate::run(argc, argv, "<model.pte>", "<threads>", greedy, bench);
}
