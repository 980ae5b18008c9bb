// ort_genai_tool: ONNX Runtime GenAI through its C API, where no Python runs (an Android
// phone): the correctness gate's answers and one benchmark repetition, by the definitions the
// Python runner (engines/runner/python_runner.py with genai_llm.py) uses on the same model.
//
// The model is genai's model directory; the overlay is genai's config overlay (JSON), which
// carries the variant's threads (intra_op_num_threads) and ONNX Runtime session options, so
// `mlas.disable_kleidiai` turns KleidiAI off in the same library.
//
//   greedy: per prompt (one per line), the chat template applied and encoded by the model's
//     tokenizer, forwarded at once, then its argmax (or, teacher-forced, the reference's
//     token: forced.txt) fed back one at a time; top-k logits, mean and sd at every step, in
//     the JSON the other gate tools write (gate_loop.hpp).
//   bench: after W unmeasured warm-up runs, prefill of P tokens (token 16 repeated, as
//     llm_bench's synthetic prompt) into an empty context, then N decode tokens each fed its
//     predecessor's argmax; prints one JSON line with the seconds of each and the context
//     length after each.
//
// Both print to stderr what the kernel tells the process of SME and SME2 (AT_HWCAP2, where
// ONNX Runtime's cpuinfo reads them): ONNX Runtime prints no feature line of its own.
//
// usage: ort_genai_tool greedy <model dir> <overlay json> <prompts.txt> <max_new_tokens>
//                              <out.json> [top_k [forced.txt]]
//        ort_genai_tool bench <model dir> <overlay json> <prompt_tokens> <generate_tokens>
//                             <warmup>
// Exit 0 on success; 2 bad arguments; 3 the model cannot load or run; 4 out.json unwritten.
#include <cstdlib>
#include <string>
#include <vector>

#include "gate_loop.hpp"
#include "oga_api.h"

namespace {

// A failed call: its message on stderr, the tool ends with 3.
void check(OgaResult* result, const char* what) {
    if (result != nullptr) {
        std::fprintf(stderr, "%s: %s\n", what, OgaResultGetError(result));
        OgaDestroyResult(result);
        std::exit(3);
    }
}

struct Genai {
    using Id = int32_t;
    OgaConfig* config = nullptr;
    OgaModel* model = nullptr;
    OgaTokenizer* tokenizer = nullptr;
    OgaGeneratorParams* params = nullptr;
    OgaGenerator* generator = nullptr;

    Genai(const char* modelDir, const char* overlay) {
        check(OgaCreateConfig(modelDir, &config), modelDir);
        check(OgaConfigOverlay(config, overlay), "config overlay");
        check(OgaCreateModelFromConfig(config, &model), modelDir);
        check(OgaCreateTokenizer(model, &tokenizer), "tokenizer");
        check(OgaCreateGeneratorParams(model, &params), "generator params");
    }
    ~Genai() {
        OgaDestroyGenerator(generator);
        OgaDestroyGeneratorParams(params);
        OgaDestroyTokenizer(tokenizer);
        OgaDestroyModel(model);
        OgaDestroyConfig(config);
    }
    void reset() {  // an empty context
        OgaDestroyGenerator(generator);
        generator = nullptr;
        check(OgaCreateGenerator(model, params, &generator), "generator");
    }
    // The last position's logits after appending ids.
    std::vector<float> forward(const std::vector<int32_t>& ids) {
        check(OgaGenerator_AppendTokens(generator, ids.data(), ids.size()), "append tokens");
        OgaTensor* tensor = nullptr;
        check(OgaGenerator_GetLogits(generator, &tensor), "logits");
        OgaElementType type = OgaElementType_undefined;
        size_t rank = 0;
        check(OgaTensorGetType(tensor, &type), "logits type");
        check(OgaTensorGetShapeRank(tensor, &rank), "logits rank");
        std::vector<int64_t> shape(rank);
        check(OgaTensorGetShape(tensor, shape.data(), rank), "logits shape");
        void* data = nullptr;
        check(OgaTensorGetData(tensor, &data), "logits data");
        if (type != OgaElementType_float32 || rank == 0) {
            std::fprintf(stderr, "logits of element type %d, rank %zu: expected float32\n",
                         static_cast<int>(type), rank);
            std::exit(3);
        }
        size_t total = 1;
        for (int64_t dim : shape) {
            total *= static_cast<size_t>(dim);
        }
        const size_t vocab = static_cast<size_t>(shape.back());
        const float* row = static_cast<const float*>(data) + (total - vocab);
        std::vector<float> last(row, row + vocab);
        OgaDestroyTensor(tensor);
        return last;
    }
    std::vector<int32_t> encodeChat(const std::string& prompt) {
        const std::string messages = "[{\"role\": \"user\", \"content\": " + quoted(prompt) + "}]";
        const char* text = nullptr;
        check(OgaTokenizerApplyChatTemplate(tokenizer, nullptr, messages.c_str(), nullptr, true,
                                            &text),
              "chat template");
        OgaSequences* sequences = nullptr;
        check(OgaCreateSequences(&sequences), "sequences");
        check(OgaTokenizerEncode(tokenizer, text, sequences), "encode");
        const int32_t* ids = OgaSequencesGetSequenceData(sequences, 0);
        std::vector<int32_t> out(ids, ids + OgaSequencesGetSequenceCount(sequences, 0));
        OgaDestroySequences(sequences);
        OgaDestroyString(text);
        return out;
    }
    size_t context() const { return OgaGenerator_TokenCount(generator); }

    static std::string quoted(const std::string& text) {  // a JSON string
        std::string out = "\"";
        for (unsigned char c : text) {
            if (c == '"' || c == '\\') {
                out += '\\';
                out += static_cast<char>(c);
            } else if (c < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
                out += escaped;
            } else {
                out += static_cast<char>(c);
            }
        }
        return out + "\"";
    }
};

int greedy(int argc, const char* argv[]) {
    const int maxNew = std::atoi(argv[5]);
    const int topK = argc > 7 ? std::atoi(argv[7]) : 8;
    if (maxNew < 1 || topK < 2) {
        std::fprintf(stderr, "max_new_tokens must be >= 1, top_k >= 2\n");
        return 2;
    }
    std::vector<std::string> prompts;
    std::vector<std::vector<int>> forced;  // empty: free-running greedy
    if (!gate::readQuestions(argv[4], argc > 8 ? argv[8] : nullptr, prompts, forced)) {
        return 2;
    }
    Genai genai(argv[2], argv[3]);
    gate::Writer out(argv[6], "ort_genai_tool", topK);
    if (!out.ok()) {
        std::fprintf(stderr, "%s.part: cannot write\n", argv[6]);
        return 4;
    }
    for (size_t p = 0; p < prompts.size(); ++p) {
        const bool teacher = !forced.empty();
        const int length = teacher ? static_cast<int>(forced[p].size()) : maxNew;
        const std::vector<int32_t> ids = genai.encodeChat(prompts[p]);
        gate::answer(genai, out, p, ids, length, teacher ? &forced[p] : nullptr, topK);
    }
    return out.close() ? 0 : 4;
}

int bench(const char* argv[]) {
    const int prompt = std::atoi(argv[4]), generate = std::atoi(argv[5]);
    const int warmup = std::atoi(argv[6]);
    if (prompt < 1 || generate < 1 || warmup < 0) {
        std::fprintf(stderr, "prompt_tokens and generate_tokens must be >= 1, warmup >= 0\n");
        return 2;
    }
    Genai genai(argv[2], argv[3]);
    gate::bench(genai, "ort_genai_tool", prompt, generate, warmup);
    return 0;
}

}  // namespace

int main(int argc, const char* argv[]) {
    return gate::run(argc, argv, "<model dir>", "<overlay json>", greedy, bench);
}
