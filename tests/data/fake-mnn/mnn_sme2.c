/* MNN's SME2 kernels (MNN_SME2=ON only). On arm64 each body executes SME instructions, as
   MNN's hand-written .S kernels do (raw .inst words: smstart, smstop). */
static void sme_region(void) {
#ifdef __aarch64__
  __asm__ volatile(".inst 0xd503477f\n\t.inst 0xd503467f" ::: "memory");
#endif
}
int MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16(int x) { sme_region(); return x * 2; }
int MNNPackedMatMulRemainFP16_SME2(int x) { sme_region(); return x * 3; }
