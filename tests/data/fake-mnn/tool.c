#include <stdio.h>
int llm_step(int x);
int main(void) { printf("The device supports: i8sdot:0, fp16:0, i8mm: 0, sve2: 0, sme2: 0\n"); return llm_step(0) == 1 ? 0 : 1; }
