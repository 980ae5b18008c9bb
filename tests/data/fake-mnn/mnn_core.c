int MNNGemmInt8AddBiasScale_16x4_Unit(int x) { return x + 1; }
