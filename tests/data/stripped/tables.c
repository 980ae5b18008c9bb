#include <stddef.h>
typedef struct {
    const char *name;
    size_t (*get_m_step)(void);
    void (*run_matmul)(float *, int);
} ukernel;
typedef struct {   /* a table whose name is its second slot: shifted by an unrelocated field */
    long id;
    const char *name;
    size_t (*get_n_step)(void);
    void (*run_matmul)(float *, int);
} shifted_ukernel;
void body_a(float *, int);
void body_b(float *, int);
void body_c(float *, int);
void body_d(float *, int);
void convert_e(float *, int);
void body_e(float *, int);
void shared_helper(void);
__attribute__((noinline)) static size_t step_a(void) { return 4; }
__attribute__((noinline)) static size_t step_b(void) { return 8; }
__attribute__((noinline)) static size_t step_c(void) { return 16; }
__attribute__((noinline)) static size_t step_d(void) { return 32; }
__attribute__((noinline)) static void run_a(float *d, int n) { shared_helper(); body_a(d, n); }
__attribute__((noinline)) static void run_b(float *d, int n) { shared_helper(); body_b(d, n); }
__attribute__((noinline)) static void run_c(float *d, int n) { shared_helper(); body_c(d, n); }
/* a kernel of two routines (as KleidiAI's f16 ones: a converter, then the body) */
__attribute__((noinline)) static void run_e(float *d, int n) {
    shared_helper();
    convert_e(d, n);
    body_e(d, n);
}
__attribute__((noinline)) static void run_d(float *d, int n) { shared_helper(); body_d(d, n); }
static const ukernel kernels[] = {
    {"kai_run_matmul_a_sme2_mopa", step_a, run_a},
    {"kai_run_matmul_b_sme2_dot", step_b, run_b},
    {"kai_run_matmul_e_sme2_mla", step_b, run_e},
};
static const shifted_ukernel shifted[] = {
    {7, "kai_run_matmul_c_neon", step_c, run_c},
    {9, "kai_run_matmul_d_neon", step_d, run_d},
};
__attribute__((visibility("default"))) void dispatch(int which, float *d, int n) {
    if (which < 3) kernels[which].run_matmul(d, n + (int)kernels[which].get_m_step());
    else shifted[which - 3].run_matmul(d, n + (int)shifted[which - 3].get_n_step());
}
