// The last position's logits of an MNN LLM's forward pass, read out as floats (the engine may
// compute in fp16): what mnn_greedy records and picks from, and what
// benchmarks/llm_bench_timers/mnn_timers.cpp times as the runners' "logits read".
#pragma once

#include <MNN/expr/ExprCreator.hpp>

#include <vector>

namespace mnn_gate {

inline std::vector<float> lastRow(MNN::Express::VARP logits) {
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

}  // namespace mnn_gate
