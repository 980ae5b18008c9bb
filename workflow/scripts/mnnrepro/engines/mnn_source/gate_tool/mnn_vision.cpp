// mnn_vision: the vision phase of a built MNN engine (docs/vision.md).
//
// Built beside mnn_greedy, against the same engine's headers and libraries. It asks each image
// question exactly as the Python runner's `time_vision` does through the Python bindings
// (engines/runner/python_runner.py), so both kinds measure the same three phases:
//   vision        MNN's own timer of the image encoder (LlmContext::vision_us, filled by
//                 tokenizer_encode, with pixels_mp: the pixels it encoded after resizing);
//                 tokens = the image tokens (ids equal to the model's image_pad id);
//   image_prefill the prefill of the whole image prompt, around forward();
//   first_token   from the question to its first token: encode + prefill + the greedy pick.
// Each image: reset, chat template, `<img>path</img>text` into an empty context. `warmup`
// unmeasured passes over the image set come first, in the same process (the model loads once).
//
// Why not llm_demo: it prints the vision time as `%.2f s` (a small image's encoder prints 0.00),
// no time to the first token and no image-token count.
//
// usage: mnn_vision <config.json> <images.txt: one image path per line> <text> <image_pad id>
//                   <warmup> <out.json>
// out.json (written to out.json.part, then renamed): the sums over the image set, per image
// the same figures, and `window`: the measured pass's start and end on CLOCK_BOOTTIME (the
// clock the power samples carry). Exit 0 once it is written; non-zero when the model cannot
// load, an image question yields no logits, or out.json cannot be written.
#include <MNN/expr/ExprCreator.hpp>
#include <llm/llm.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "gate_output.hpp"

using MNN::Transformer::Llm;

namespace {

double bootClock() {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

double since(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// The greedy pick from the last position's logits (as the runner's argmax); -1 without logits.
int greedyPick(MNN::Express::VARP logits) {
    if (logits.get() == nullptr || logits->getInfo() == nullptr) {
        return -1;
    }
    if (logits->getInfo()->type.code != halide_type_float || logits->getInfo()->type.bits != 32) {
        logits = MNN::Express::_Cast<float>(logits);
    }
    const auto* info = logits->getInfo();
    const float* data = logits->readMap<float>();
    const int vocab = info->dim.empty() ? 0 : info->dim.back();
    if (data == nullptr || vocab <= 0 || info->size < vocab) {
        return -1;
    }
    const float* row = data + (info->size - vocab);
    int best = 0;
    for (int i = 1; i < vocab; ++i) {
        best = row[i] > row[best] ? i : best;
    }
    return best;
}

struct Question {
    double vision_s = 0, prefill_s = 0, first_token_s = 0, pixels_mp = 0;
    long image_tokens = 0, prompt_tokens = 0;
};

// One image question into an empty context; false when the engine gave no logits.
bool ask(Llm* llm, const std::string& image, const std::string& text, int imagePad, Question& q) {
    llm->reset();
    const std::string prompt = llm->apply_chat_template("<img>" + image + "</img>" + text);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int> ids = llm->tokenizer_encode(prompt);  // runs the vision encoder
    const auto encoded = std::chrono::steady_clock::now();
    if (greedyPick(llm->forward(ids)) < 0) {
        return false;
    }
    const auto first = std::chrono::steady_clock::now();
    const auto* context = llm->getContext();
    q.vision_s = context->vision_us / 1e6;
    q.pixels_mp = context->pixels_mp;
    q.prefill_s = since(encoded, first);
    q.first_token_s = since(start, first);
    q.prompt_tokens = static_cast<long>(ids.size());
    q.image_tokens = 0;
    for (int id : ids) {
        q.image_tokens += id == imagePad;
    }
    return true;
}

void write(std::FILE* f, const Question& q) {
    std::fprintf(f,
                 "\"vision_s\": %.9g, \"pixels_mp\": %.9g, \"image_tokens\": %ld, "
                 "\"prefill_s\": %.9g, \"prompt_tokens\": %ld, \"first_token_s\": %.9g",
                 q.vision_s, q.pixels_mp, q.image_tokens, q.prefill_s, q.prompt_tokens,
                 q.first_token_s);
}

}  // namespace

int main(int argc, const char* argv[]) {
    if (argc != 7) {
        std::fprintf(stderr,
                     "usage: %s <config.json> <images.txt> <text> <image_pad> <warmup> <out.json>\n",
                     argv[0]);
        return 2;
    }
    const std::vector<std::string> images = gate::readPrompts(argv[2]);
    const std::string text = argv[3];
    const int imagePad = std::atoi(argv[4]);
    const int warmup = std::atoi(argv[5]);
    const std::string outPath = argv[6];
    if (images.empty() || warmup < 0) {
        std::fprintf(stderr, "%s: no image, or a negative warmup\n", argv[2]);
        return 2;
    }
    std::unique_ptr<Llm, void (*)(Llm*)> llm(Llm::createLLM(argv[1]), Llm::destroy);
    if (!llm || !llm->load()) {
        std::fprintf(stderr, "%s: the engine could not load the model\n", argv[1]);
        return 3;
    }
    Question q;
    for (int w = 0; w < warmup; ++w) {
        for (const auto& image : images) {
            if (!ask(llm.get(), image, text, imagePad, q)) {
                std::fprintf(stderr, "%s: no logits (warm-up)\n", image.c_str());
                return 3;
            }
        }
    }
    std::vector<Question> asked;
    Question total;
    const double from = bootClock();
    for (const auto& image : images) {
        if (!ask(llm.get(), image, text, imagePad, q)) {
            std::fprintf(stderr, "%s: no logits\n", image.c_str());
            return 3;
        }
        asked.push_back(q);
        total.vision_s += q.vision_s;
        total.pixels_mp += q.pixels_mp;
        total.image_tokens += q.image_tokens;
        total.prefill_s += q.prefill_s;
        total.prompt_tokens += q.prompt_tokens;
        total.first_token_s += q.first_token_s;
    }
    const double to = bootClock();
    const std::string part = outPath + ".part";
    std::FILE* f = std::fopen(part.c_str(), "w");
    if (f == nullptr) {
        std::fprintf(stderr, "%s: cannot write\n", part.c_str());
        return 4;
    }
    std::fprintf(f, "{\"tool\": \"mnn_vision\", \"warmup\": %d, \"questions\": %zu, ", warmup,
                 asked.size());
    write(f, total);
    std::fprintf(f, ", \"window\": [%.6f, %.6f], \"per_image\": [", from, to);
    for (size_t i = 0; i < asked.size(); ++i) {
        std::fprintf(f, "%s{", i ? ", " : "");
        write(f, asked[i]);
        std::fprintf(f, "}");
    }
    std::fprintf(f, "]}\n");
    const bool ok = std::fclose(f) == 0 && std::rename(part.c_str(), outPath.c_str()) == 0;
    return ok ? 0 : 4;
}
