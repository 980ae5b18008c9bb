int MNNGemmInt8AddBiasScale_16x4_Unit(int x) { return x + 1; }
/* Like MNN 3.6.1's MNNSumByAxisLForMatmul_A_SME2: a NEON helper named for the SME2 tile
   layout, built into every arm64 build (SME2 OFF too); it executes no SME instruction. */
int MNNSumByAxisLForMatmul_A_SME2(int x) { return x - 1; }
