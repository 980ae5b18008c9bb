/* sme_mask: hides SME and SME2 from the process it is preloaded into (LD_PRELOAD).

   Every stack this workflow runs decides whether to use its SME kernels from the hardware
   capabilities the kernel hands the process, asked through getauxval(AT_HWCAP2) (MNN's
   CPURuntime, ggml's CPU backend, cpuinfo for ONNX Runtime's MLAS and XNNPACK; cpuinfo
   imports glibc's alias __getauxval). This library defines both: they return the real value
   with every SME bit cleared, so one binary runs as on a CPU without SME, whatever its own
   switch is. The bits are Linux's (arch/arm64/include/uapi/asm/hwcap.h, 6.16):
     AT_HWCAP:  SME2P2 and the SME extensions after it, bits 42-47;
     AT_HWCAP2: SME and its first extensions, bits 23-30; SME2, SME2P1 and the SME_I16I32 ..
                SME_F16F16 extensions, bits 37-42; SME_LUTV2 .. SME_SF8DP2, bits 57-62.
   What it cannot hide: a stack that reads /proc/self/auxv or /proc/cpuinfo, runs an SME
   instruction to see whether it traps, or is linked statically. Such a stack keeps running
   its SME2 kernels under the mask, and the workflow's check of what ran names it.
   Off arm64 there is no SME: the library hides nothing (the host's pair is an equality). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef AT_HWCAP
#define AT_HWCAP 16
#endif
#ifndef AT_HWCAP2
#define AT_HWCAP2 26
#endif

#if defined(__aarch64__)
static const unsigned long SME_HWCAP = 0x3FUL << 42;
static const unsigned long SME_HWCAP2 = (0xFFUL << 23) | (0x3FUL << 37) | (0x3FUL << 57);
#else
static const unsigned long SME_HWCAP = 0;
static const unsigned long SME_HWCAP2 = 0;
#endif

typedef unsigned long (*getauxval_fn)(unsigned long);

/* The C library's getauxval: the next definition after this library's. Without it the
   process cannot learn anything about its CPU, so it stops rather than run blind. */
static unsigned long real_getauxval(unsigned long type) {
    static getauxval_fn real;
    getauxval_fn found = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!found) {
        found = (getauxval_fn)dlsym(RTLD_NEXT, "getauxval");
        if (!found) {
            fprintf(stderr, "sme_mask: no getauxval after this library: %s\n", dlerror());
            abort();
        }
        __atomic_store_n(&real, found, __ATOMIC_RELEASE);
    }
    return found(type);
}

unsigned long getauxval(unsigned long type) {
    unsigned long value = real_getauxval(type);
    if (type == AT_HWCAP) {
        return value & ~SME_HWCAP;
    }
    if (type == AT_HWCAP2) {
        return value & ~SME_HWCAP2;
    }
    return value;
}

unsigned long __getauxval(unsigned long type) { return getauxval(type); }
