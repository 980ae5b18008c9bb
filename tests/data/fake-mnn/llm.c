int MNNGemmInt8AddBiasScale_16x4_Unit(int x);
int llm_step(int x) { return MNNGemmInt8AddBiasScale_16x4_Unit(x); }
