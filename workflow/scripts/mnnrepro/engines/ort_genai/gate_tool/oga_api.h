// The few functions of ONNX Runtime GenAI's C API (ort_genai_c.h) that ort_genai_tool calls,
// declared here as onnxruntime-genai 0.15.2 and 0.18.0 both declare them: the opaque handles,
// and each function as libonnxruntime-genai.so exports it. A function the library does not
// export fails the tool's link, naming it. Where the engine's archive ships genai's own header
// (an AAR's headers/ort_genai_c.h: the version the phone runs), the build includes it first
// (OGA_C_HEADER, toolchain/tools.build_ort_genai_tool): a declaration here that differs from
// that version's fails the build, naming the function (tests/unit/test_ort_genai_tool.py).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
struct OgaResult;
struct OgaConfig;
struct OgaModel;
struct OgaTokenizer;
struct OgaSequences;
struct OgaGeneratorParams;
struct OgaGenerator;
struct OgaTensor;
#ifdef OGA_C_HEADER
#include OGA_C_HEADER
#else
enum OgaElementType { OgaElementType_undefined, OgaElementType_float32 };  // the first two
#endif

const char* OgaResultGetError(const OgaResult* result);
void OgaDestroyResult(OgaResult* result);
void OgaDestroyString(const char* string);

OgaResult* OgaCreateConfig(const char* config_path, OgaConfig** out);
OgaResult* OgaConfigOverlay(OgaConfig* config, const char* json);
void OgaDestroyConfig(OgaConfig* config);
OgaResult* OgaCreateModelFromConfig(const OgaConfig* config, OgaModel** out);
void OgaDestroyModel(OgaModel* model);

OgaResult* OgaCreateTokenizer(const OgaModel* model, OgaTokenizer** out);
void OgaDestroyTokenizer(OgaTokenizer* tokenizer);
OgaResult* OgaTokenizerApplyChatTemplate(const OgaTokenizer* tokenizer, const char* template_str,
                                         const char* messages, const char* tools,
                                         bool add_generation_prompt, const char** out_string);
OgaResult* OgaCreateSequences(OgaSequences** out);
void OgaDestroySequences(OgaSequences* sequences);
OgaResult* OgaTokenizerEncode(const OgaTokenizer* tokenizer, const char* str,
                              OgaSequences* sequences);
size_t OgaSequencesGetSequenceCount(const OgaSequences* sequences, size_t sequence_index);
const int32_t* OgaSequencesGetSequenceData(const OgaSequences* sequences, size_t sequence_index);

OgaResult* OgaCreateGeneratorParams(const OgaModel* model, OgaGeneratorParams** out);
void OgaDestroyGeneratorParams(OgaGeneratorParams* params);
OgaResult* OgaCreateGenerator(const OgaModel* model, const OgaGeneratorParams* params,
                              OgaGenerator** out);
void OgaDestroyGenerator(OgaGenerator* generator);
OgaResult* OgaGenerator_AppendTokens(OgaGenerator* generator, const int32_t* input_ids,
                                     size_t input_ids_count);
size_t OgaGenerator_TokenCount(const OgaGenerator* generator);
OgaResult* OgaGenerator_GetLogits(OgaGenerator* generator, OgaTensor** out);

OgaResult* OgaTensorGetType(OgaTensor* tensor, OgaElementType* out);
OgaResult* OgaTensorGetShapeRank(OgaTensor* tensor, size_t* out);
OgaResult* OgaTensorGetShape(OgaTensor* tensor, int64_t* shape_dims, size_t shape_dims_count);
OgaResult* OgaTensorGetData(OgaTensor* tensor, void** out);
void OgaDestroyTensor(OgaTensor* tensor);
}
