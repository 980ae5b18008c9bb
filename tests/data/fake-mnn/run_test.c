/* A stand-in for MNN's run_test.out at its interface: `run_test.out NAME BACKEND PRECISION
   THREADS` runs every test whose name starts with NAME, prints "\trunning NAME." before each,
   then MNN's summary lines, and exits with the number of failed tests (test/MNNTestSuite.cpp at
   3.6.1). Its tests compute with the stand-in library's kernels and compare with a plain C
   reference: they pass wherever the library computes what it should. */
#include <stdio.h>
#include <string.h>
int MNNGemmInt8AddBiasScale_16x4_Unit(int x);

static int matmul(void) {
  float a[4][4], b[4][4], c[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) { a[i][j] = (float)(i + j); b[i][j] = (float)(i == j); }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      c[i][j] = 0;
      for (int k = 0; k < 4; ++k) c[i][j] += a[i][k] * b[k][j];
      if (c[i][j] != a[i][j]) { printf("MatMul: test failed!\n"); return 0; }
    }
  return 1;
}

static int gemm_unit(void) {
  for (int x = 0; x < 100; ++x)
    if (MNNGemmInt8AddBiasScale_16x4_Unit(x) != x + 1) { printf("gemm: test failed!\n"); return 0; }
  return 1;
}

static const struct { const char* name; int (*run)(void); } TESTS[] = {
  {"op/matmul", matmul},
  {"op/lowMemory/gemm", gemm_unit},
};

int main(int argc, char** argv) {
  const char* key = argc > 1 ? argv[1] : "";
  int ran = 0, wrong = 0;
  const char* wrongs[sizeof TESTS / sizeof TESTS[0]];
  printf("The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0\n");
  for (unsigned i = 0; i < sizeof TESTS / sizeof TESTS[0]; ++i) {
    if (strncmp(TESTS[i].name, key, strlen(key)) != 0) continue;
    printf("\trunning %s.\n", TESTS[i].name);
    ++ran;
    if (!TESTS[i].run()) wrongs[wrong++] = TESTS[i].name;
  }
  if (wrong == 0) printf("\xe2\x88\x9a\xe2\x88\x9a\xe2\x88\x9a all <%s> tests passed.\n", key);
  for (int i = 0; i < wrong; ++i) printf("Error: %s\n", wrongs[i]);
  printf("TEST_NAME_UNIT: Unit Test \nTEST_CASE_AMOUNT_UNIT: ");
  printf("{\"blocked\":0,\"failed\":%d,\"passed\":%d,\"skipped\":0}\n", wrong, ran - wrong);
  printf("TEST_CASE={\"name\":\"Unit Test \",\"failed\":%d,\"passed\":%d}\n", wrong, ran - wrong);
  return wrong;
}
