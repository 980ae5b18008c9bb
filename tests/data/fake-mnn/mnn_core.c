int MNNGemmInt8AddBiasScale_16x4_Unit(int x) { return x + 1; }
/* Like MNN 3.6.1's MNNSumByAxisLForMatmul_A_SME2: a NEON helper named for the SME2 tile
   layout, built into every arm64 build (SME2 OFF too); it executes no SME instruction. */
int MNNSumByAxisLForMatmul_A_SME2(int x) { return x - 1; }
/* Like KleidiAI's micro-kernels (kai_*), which MNN_SME2=OFF does not remove: named for SME2,
   executing SME instructions, and not MNN's own. */
int kai_kernel_matmul_clamp_f32_sme2_mopa(int x) {
#ifdef __aarch64__
  __asm__ volatile(".inst 0xd503477f\n\t.inst 0xd503467f" ::: "memory");
#endif
  return x;
}
