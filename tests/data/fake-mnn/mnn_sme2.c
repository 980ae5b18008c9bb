int MNNGemmInt8AddBiasScaleHp128_SME2_w4_Fp16(int x) { return x * 2; }
int MNNPackedMatMulRemainFP16_SME2(int x) { return x * 3; }
